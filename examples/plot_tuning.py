"""
=====================================
Tuning a ranker with GridSearchCV
=====================================

Tune :class:`skltr.GPUHistGBDTRanker` with scikit-learn's ``GridSearchCV``: folds by query
(:class:`skltr.model_selection.QueryKFold`), NDCG@10 per query
(``make_ranking_scorer("ndcg@10")``), and ``qid`` routed to both by scikit-learn's metadata
routing. The held-out queries of a final split are scored once, by the refitted best model.

Data: synthetic (``make_ranking``), so the script runs anywhere in seconds. Needs
matplotlib; the figure is written to ``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a temporary folder
when unset).
"""

import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

from skltr import GPUHistGBDTRanker  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402
from skltr.model_selection import (QueryKFold, make_ranking_scorer,  # noqa: E402
                                   train_test_split_by_query)

sklearn.set_config(enable_metadata_routing=True)  # qid reaches fit, QueryKFold and the scorer

print("data: synthetic (make_ranking: 200 queries x 15 documents x 20 features)")
X, y, qid = make_ranking(n_queries=200, docs_per_query=15, n_features=20, random_state=0)
X_tr, X_te, y_tr, y_te, q_tr, q_te = train_test_split_by_query(X, y, qid=qid, test_size=0.2,
                                                               random_state=0)

# %%
# A 3 x 3 grid over leaves per tree and learning rate, 3 query folds; n_jobs=1 keeps the
# folds in one process (the ranker itself uses every core).
grid = {"max_leaves": [7, 15, 31], "learning_rate": [0.05, 0.1, 0.2]}
search = GridSearchCV(GPUHistGBDTRanker(n_estimators=30, random_state=0), grid,
                      cv=QueryKFold(n_splits=3), scoring=make_ranking_scorer("ndcg@10"),
                      n_jobs=1)
search.fit(X_tr, y_tr, qid=q_tr)
print(f"best parameters: {search.best_params_}, cross-validated NDCG@10 "
      f"{search.best_score_:.4f}")
print(f"held-out NDCG@10 of the refitted best model: "
      f"{search.score(X_te, y_te, qid=q_te):.4f}")

# %%
# The cross-validated NDCG@10 of every cell of the grid.
scores = search.cv_results_["mean_test_score"].reshape(len(grid["learning_rate"]),
                                                       len(grid["max_leaves"]))
fig, ax = plt.subplots(figsize=(5, 4))
image = ax.imshow(scores, cmap="viridis")
ax.set_xticks(range(len(grid["max_leaves"])), grid["max_leaves"])
ax.set_yticks(range(len(grid["learning_rate"])), grid["learning_rate"])
ax.set_xlabel("max_leaves")
ax.set_ylabel("learning_rate")
for (i, j), value in np.ndenumerate(scores):
    ax.text(j, i, f"{value:.3f}", ha="center", va="center", color="w", fontsize=8)
fig.colorbar(image, label="CV NDCG@10")
fig.tight_layout()
out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-"))
fig.savefig(out_dir / "tuning_grid.png", dpi=100)
print(f"figure written to {out_dir / 'tuning_grid.png'}")
sklearn.set_config(enable_metadata_routing=False)
