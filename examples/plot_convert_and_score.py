"""
=================================================
Scoring fitted XGBoost and LightGBM models faster
=================================================

A model that is already fitted needs no retraining: :class:`skltr.QuickScorerPredictor`
converts a fitted XGBoost or LightGBM model (or a scikit-learn tree ensemble, or a model
file) into a :class:`~skltr.trees.TreeEnsemble` and scores it with QuickScorer, giving the
library's own ``predict`` output bit for bit. Here both libraries' rankers are fitted on
synthetic ranking data, converted, checked for equal scores, and timed against their own
``predict`` (median of several calls after a warm-up, in this one process).

The figure is written to ``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a temporary folder when unset);
the script never opens a window.
"""

import os
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import lightgbm as lgb  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xgboost as xgb  # noqa: E402

from skltr import QuickScorerPredictor  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402

# %%
# Fit one ranker of each library (queries of 50 documents, rows grouped by query).
X, y, qid = make_ranking(n_queries=200, docs_per_query=50, n_features=60, random_state=0)
X_new, _, _ = make_ranking(n_queries=200, docs_per_query=50, n_features=60, random_state=1)
sizes = np.unique(qid, return_counts=True)[1]
models = {
    "LightGBM": lgb.LGBMRanker(n_estimators=200, num_leaves=31, verbose=-1).fit(
        X, y, group=sizes),
    "XGBoost": xgb.XGBRanker(n_estimators=200, max_depth=6).fit(X, y, qid=qid),
}


# %%
# Convert and compare: the same scores, element for element, then the time per call.
def median_time(fn, repeat=7):
    fn()  # warm-up: kernels, thread pools
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


timings = {}
for name, model in models.items():
    fast = QuickScorerPredictor.from_model(model)
    assert np.array_equal(fast.predict(X_new), model.predict(X_new)), name
    timings[name] = (median_time(lambda: model.predict(X_new)),
                     median_time(lambda: fast.predict(X_new)))
    own, qs = timings[name]
    print(f"{name}: {X_new.shape[0]} documents, own predict {own * 1e3:.1f} ms, "
          f"QuickScorerPredictor {qs * 1e3:.1f} ms ({own / qs:.1f}x), scores equal")

# %%
# Plot the time per call of each library's predict and of QuickScorerPredictor.
fig, ax = plt.subplots(figsize=(6, 3))
pos = np.arange(len(timings))
ax.barh(pos - 0.2, [t[0] * 1e3 for t in timings.values()], height=0.4,
        label="library's own predict")
ax.barh(pos + 0.2, [t[1] * 1e3 for t in timings.values()], height=0.4,
        label="QuickScorerPredictor (same scores)")
ax.set_yticks(pos, list(timings))
ax.set_xlabel(f"milliseconds to score {X_new.shape[0]} documents")
ax.legend(fontsize=8)
fig.tight_layout()
out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-"))
path = out_dir / "convert_and_score.png"
fig.savefig(path, dpi=100)
print(f"figure written to {path}")
