"""
=========================
Ranking metrics per query
=========================

Generate synthetic learning-to-rank data with :func:`skltr.datasets.make_ranking`, score the
held-out queries with a simple pointwise model (ridge regression of the relevance grades,
trained on other queries), and compute every metric of :mod:`skltr.metrics` *per query*
with ``return_per_query=True``. A mean over queries hides how uneven ranking quality is;
the histogram of per-query NDCG@10 shows it.

The script also shows the zero-relevance policy at work: queries without any relevant
document score 1.0 by default (LightGBM/XGBoost convention), 0.0 with
``zero_relevance="zero"`` (scikit-learn's convention) or are left out with ``"skip"``.

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
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skltr.datasets import make_ranking  # noqa: E402
from skltr.metrics import (  # noqa: E402
    dcg_score,
    err_score,
    map_score,
    mrr_score,
    ndcg_score,
    precision_at_k,
)
from skltr.model_selection import train_test_split_by_query  # noqa: E402

K = 10

# %%
# Data and a simple scorer
# ------------------------
# 400 queries of about 40 documents, grades 0-4 skewed towards 0. The model is fitted on
# 75 % of the queries and scores the other 25 %: queries are never split.
X, y, qid = make_ranking(n_queries=400, docs_per_query=40, n_features=30, n_informative=8,
                         random_state=0)
X_tr, X_te, y_tr, y_te, qid_tr, qid_te = train_test_split_by_query(
    X, y, qid=qid, test_size=0.25, random_state=0)
model = make_pipeline(StandardScaler(), Ridge(alpha=1.0)).fit(X_tr, y_tr)
scores = model.predict(X_te)
print(f"train: {len(np.unique(qid_tr))} queries, {len(y_tr)} rows; "
      f"test: {len(np.unique(qid_te))} queries, {len(y_te)} rows")

# %%
# Every metric, per query
# -----------------------
# With ``return_per_query=True`` each function returns ``(values, unique_qid)``: one value
# per query, queries in sorted-id order, so the arrays of different metrics line up.
metrics = {
    f"NDCG@{K}": ndcg_score,
    f"DCG@{K}": dcg_score,
    f"MAP@{K}": map_score,
    f"MRR@{K}": mrr_score,
    f"ERR@{K}": lambda *a, **kw: err_score(*a, max_grade=4, **kw),  # grades are 0..4
    f"P@{K}": precision_at_k,
}
per_query = {}
for name, metric in metrics.items():
    values, queries = metric(y_te, scores, qid=qid_te, k=K, return_per_query=True)
    per_query[name] = values
assert all(v.shape == queries.shape for v in per_query.values())

print(f"\n{'metric':<8} {'mean':>7} {'median':>7} {'min':>7} {'max':>7}")
for name, values in per_query.items():
    print(f"{name:<8} {np.mean(values):7.4f} {np.median(values):7.4f} "
          f"{np.min(values):7.4f} {np.max(values):7.4f}")

# The mean of the per-query values is what the function returns without
# return_per_query (no query is skipped with the default policies).
assert np.isclose(np.mean(per_query[f"NDCG@{K}"]), ndcg_score(y_te, scores, qid=qid_te, k=K))

# %%
# Queries without a relevant document
# -----------------------------------
# Their NDCG is 0/0; the ``zero_relevance`` policy decides what they count as.
no_relevant = np.array([y_te[qid_te == q].max() == 0 for q in queries])
print(f"\n{no_relevant.sum()} of {queries.size} test queries have no relevant document")
for policy in ("one", "zero", "skip"):
    mean = ndcg_score(y_te, scores, qid=qid_te, k=K, zero_relevance=policy)
    print(f"  mean NDCG@{K} with zero_relevance={policy!r:7}: {mean:.4f}")

# %%
# Histogram of per-query NDCG@10
# ------------------------------
ndcg = per_query[f"NDCG@{K}"]
fig, ax = plt.subplots(figsize=(6.4, 4.0))
counts, _, _ = ax.hist([ndcg[~no_relevant], ndcg[no_relevant]], bins=np.linspace(0, 1, 21),
                       stacked=True, color=["tab:blue", "tab:gray"],
                       label=["queries with a relevant document",
                              "no relevant document (scored 1.0)"])
ax.set_ylim(0, 1.45 * counts[-1].max())  # head room for the legend
ax.axvline(ndcg.mean(), color="black", linestyle="--", label=f"mean {ndcg.mean():.3f}")
ax.set_xlabel(f"NDCG@{K} of the query")
ax.set_ylabel("number of queries")
ax.set_title(f"Per-query NDCG@{K} of a ridge baseline ({ndcg.size} test queries)")
ax.legend(loc="upper left")
fig.tight_layout()

out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-"))
out_dir.mkdir(parents=True, exist_ok=True)
path = out_dir / "ranking_metrics_ndcg_hist.png"
fig.savefig(path, dpi=100)
print(f"\nfigure written to {path}")
