"""
=====================================================
Query-grouped cross-validation of a pointwise ranker
=====================================================

Tune a scikit-learn ``Pipeline`` with ``GridSearchCV``, folding by query with
:class:`skltr.model_selection.QueryKFold` and scoring with
``make_ranking_scorer("ndcg@10")``, and plot the cross-validated NDCG@10 against the
regularisation strength ``alpha``.

The model is a *pointwise* baseline: spline features and a ridge regression of the relevance
grades, plain scikit-learn estimators that know nothing about queries. Ranking scorers only
need ``predict``, so any regressor can be evaluated as a ranker. With scikit-learn's
metadata routing on, ``search.fit(X, y, qid=qid)`` sends ``qid`` to the splitter (so that
every query lands whole in one fold) and to the scorer (so that NDCG is computed query by
query); ``Ridge`` does not take ``qid`` and is left alone.

A ``DummyRegressor`` gives every document the same score; since tied scores are averaged
over all their orderings, its NDCG@10 is that of a random ranking, drawn as a reference.

The figure is written to ``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a temporary folder when unset);
the script never opens a window.
"""

import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.dummy import DummyRegressor  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_validate  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import SplineTransformer, StandardScaler  # noqa: E402

from skltr.datasets import make_ranking  # noqa: E402
from skltr.model_selection import QueryKFold, make_ranking_scorer  # noqa: E402

# Route metadata such as qid through Pipeline, GridSearchCV and cross_validate.
sklearn.set_config(enable_metadata_routing=True)

# %%
# Data
# ----
# A small problem (80 queries of about 20 documents, 30 features) on which a flexible
# model can overfit, so that the regularisation strength matters.
X, y, qid = make_ranking(n_queries=80, docs_per_query=20, n_features=30, n_informative=10,
                         random_state=0)
print(f"{X.shape[0]} rows, {X.shape[1]} features, {len(np.unique(qid))} queries")

# %%
# Grid search over alpha
# ----------------------
cv = QueryKFold(n_splits=4)
scorer = make_ranking_scorer("ndcg@10")
pipe = make_pipeline(StandardScaler(), SplineTransformer(n_knots=6), Ridge())
alphas = np.logspace(-2, 5, 15)
search = GridSearchCV(pipe, {"ridge__alpha": alphas}, cv=cv, scoring=scorer,
                      error_score="raise")
search.fit(X, y, qid=qid)

mean = search.cv_results_["mean_test_score"]
std = search.cv_results_["std_test_score"]
print(f"\n{'alpha':>10}  mean NDCG@10  std")
for a, m, s in zip(alphas, mean, std):
    print(f"{a:10.3g}  {m:12.4f}  {s:.4f}")
print(f"best: alpha={search.best_params_['ridge__alpha']:.3g}, "
      f"NDCG@10={search.best_score_:.4f}")

# %%
# Reference: a constant scorer
# ----------------------------
# cross_validate routes qid the same way; its metadata go in ``params``.
dummy = cross_validate(DummyRegressor(), X, y, cv=cv, scoring=scorer, params={"qid": qid},
                       error_score="raise")
random_ndcg = dummy["test_score"].mean()
print(f"constant scores (= expected NDCG@10 of a random order): {random_ndcg:.4f}")

# %%
# Plot
# ----
fig, ax = plt.subplots(figsize=(6.4, 4.0))
ax.semilogx(alphas, mean, marker="o", label="StandardScaler + SplineTransformer + Ridge")
ax.fill_between(alphas, mean - std, mean + std, alpha=0.2, label="± 1 std over folds")
ax.axhline(random_ndcg, color="gray", linestyle=":", label="constant scores (random order)")
ax.axvline(search.best_params_["ridge__alpha"], color="black", linestyle="--", linewidth=1,
           label="best alpha")
ax.set_xlabel("ridge alpha")
ax.set_ylabel(f"mean NDCG@10 over {cv.get_n_splits()} query folds")
ax.set_title("Cross-validated NDCG@10 of a pointwise baseline")
ax.set_ylim(random_ndcg - 0.02, (mean + std).max() + 0.08)  # head room for the legend
ax.legend(loc="upper right", fontsize="small")
fig.tight_layout()

out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-"))
out_dir.mkdir(parents=True, exist_ok=True)
path = out_dir / "query_cross_validation.png"
fig.savefig(path, dpi=100)
print(f"\nfigure written to {path}")
