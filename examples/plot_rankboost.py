"""
======================================
RankBoostRanker on the LETOR sample
======================================

Train :class:`skltr.RankBoostRanker` (RankBoost: one threshold stump a round, weighted by the
pairs it still orders wrongly) with its defaults, record NDCG@10 on held-out queries every
round through ``eval_set``, and compare with :class:`skltr.GPUHistGBDTRanker`'s defaults.

Needs matplotlib. The sample (LightGBM's ``examples/lambdarank`` data) is read from
``../shared/data/letor_small`` beside the repository, or from the folder given as the first
argument; without it the script says so on its first line and uses synthetic data, whose
NDCG is not the sample's. The figure is written to ``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a
temporary folder when unset).
"""

import os
import sys
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from skltr import GPUHistGBDTRanker, RankBoostRanker  # noqa: E402
from skltr.datasets import load_letor, make_ranking  # noqa: E402
from skltr.model_selection import train_test_split_by_query  # noqa: E402

HERE = Path(globals().get("__file__", Path.cwd() / "example.py")).resolve().parent
DATA = Path(sys.argv[1]) if len(sys.argv) > 1 else (
    HERE.parent.parent / "shared" / "data" / "letor_small")

if (DATA / "train.letor").is_file():
    print(f"data: the LETOR sample in {DATA}")
    X_train, y_train, qid_train = load_letor(DATA / "train.letor")
    X_test, y_test, qid_test = load_letor(DATA / "test.letor", n_features=X_train.shape[1])
else:
    print(f"SYNTHETIC DATA: the LETOR sample is not at {DATA}, so make_ranking data is used "
          f"and the NDCG figures below are not the sample's")
    X, y, qid = make_ranking(n_queries=250, docs_per_query=15, n_features=40, random_state=0)
    X_train, X_test, y_train, y_test, qid_train, qid_test = train_test_split_by_query(
        X, y, qid=qid, test_size=0.2, random_state=0)

# %%
# The defaults: 300 rounds, 255 candidate thresholds per feature, every query weighing the
# same. The test queries are recorded each round (never used to stop: early_stopping is off).
t = time.perf_counter()
rankboost = RankBoostRanker(random_state=0).fit(
    X_train, y_train, qid=qid_train, eval_set=[(X_test, y_test, qid_test)])
rb_s = time.perf_counter() - t
t = time.perf_counter()
gbdt = GPUHistGBDTRanker(random_state=0).fit(
    X_train, y_train, qid=qid_train, eval_set=[(X_test, y_test, qid_test)])
gbdt_s = time.perf_counter() - t
for name, model, seconds in (("RankBoostRanker()", rankboost, rb_s),
                             ("GPUHistGBDTRanker()", gbdt, gbdt_s)):
    print(f"{name:20s} test NDCG@10 {model.score(X_test, y_test, qid=qid_test):.4f}, "
          f"fit {seconds:.2f} s (first fit of a process includes loading the kernels)")

# %%
# NDCG@10 of the test queries per round.
fig, ax = plt.subplots(figsize=(7, 4))
for name, model in (("RankBoostRanker()", rankboost), ("GPUHistGBDTRanker()", gbdt)):
    curve = model.evals_result_["valid_0"]["ndcg@10"]
    ax.plot(np.arange(1, len(curve) + 1), curve, label=name)
ax.set_xlabel("round")
ax.set_ylabel("test NDCG@10")
ax.legend(loc="lower right")
fig.tight_layout()
out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-"))
fig.savefig(out_dir / "rankboost_ndcg_per_round.png", dpi=100)
print(f"figure written to {out_dir / 'rankboost_ndcg_per_round.png'}")
