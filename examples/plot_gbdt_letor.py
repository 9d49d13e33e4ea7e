"""
==============================================
Training GPUHistGBDTRanker on the LETOR sample
==============================================

Train :class:`skltr.GPUHistGBDTRanker` (LambdaMART on binned features) on a real
learning-to-rank sample, watch NDCG on held-out queries round by round through
``evals_result_``, and let early stopping keep the best round.

The sample (LightGBM's ``examples/lambdarank`` data: 300 sparse web-search features, grades
0-4) is stored beside the repository in ``../shared/data/letor_small``; pass another folder
as the first argument (without the sample, a synthetic one in the same layout is written).
``test.letor`` is passed as an ``eval_set``: with
``early_stopping=True`` the first eval set is monitored (NDCG at the first ``eval_at``
cut-off) and training stops after ``n_iter_no_change`` rounds without improvement. In real
work, monitor a validation split rather than the test set you report on.

The figure is written to ``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a temporary folder when unset);
the script never opens a window.
"""

import os
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from skltr import GPUHistGBDTRanker  # noqa: E402
from skltr.datasets import load_letor  # noqa: E402

# the examples folder (sphinx-gallery runs the scripts from it, without __file__)
HERE = Path(globals().get("__file__", Path.cwd() / "example.py")).resolve().parent
DEFAULT_DIR = HERE.parent.parent / "shared" / "data" / "letor_small"


def synthetic_sample() -> Path:
    """The sample's four files written from make_ranking data, for a checkout without it."""
    from skltr.datasets import dump_letor, make_ranking

    folder = Path(tempfile.mkdtemp(prefix="skltr-letor-"))
    for split, n_queries, seed in (("train", 200, 0), ("test", 50, 1)):
        X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=15, n_features=40,
                                 random_state=seed)
        dump_letor(folder / f"{split}.letor", X, y, qid)
        dump_letor(folder / f"rank.{split}", X, y, qid, query_file=True)
    print(f"SYNTHETIC DATA: the LETOR sample is not at {DEFAULT_DIR}, so make_ranking data "
          f"written to {folder} is used and the figures below are not the sample's")
    return folder


if len(sys.argv) > 1:
    data_dir = Path(sys.argv[1])
elif (DEFAULT_DIR / "train.letor").is_file():
    data_dir = DEFAULT_DIR
    print(f"data: the LETOR sample in {data_dir}")
else:
    data_dir = synthetic_sample()

X_train, y_train, qid_train = load_letor(data_dir / "train.letor")
X_test, y_test, qid_test = load_letor(data_dir / "test.letor", n_features=X_train.shape[1])

# %%
# Train with NDCG@1, @5 and @10 recorded on the training and the test queries after every
# round; early stopping watches the first eval set's first cut-off (here test NDCG@10).
ranker = GPUHistGBDTRanker(n_estimators=300, learning_rate=0.05, max_leaves=31,
                           min_samples_leaf=20, eval_at=[10, 5, 1], early_stopping=True,
                           n_iter_no_change=30, random_state=0)
ranker.fit(X_train, y_train, qid=qid_train,
           eval_set=[(X_test, y_test, qid_test), (X_train, y_train, qid_train)])
print(f"rounds run: {ranker.n_iter_}; best iteration: {ranker.best_iteration_} "
      f"(the model keeps {ranker.n_estimators_} trees)")
print(f"test NDCG@10 of the kept model: {ranker.score(X_test, y_test, qid=qid_test):.4f}")

top = np.argsort(ranker.feature_importances_)[::-1][:5]
print("most important features (share of total split gain):")
for j in top:
    print(f"  feature {j + 1:3d}: {ranker.feature_importances_[j]:.3f}")

# %%
# Plot validation NDCG per round. The dashed line marks the best round; rounds after it
# were run only to confirm that it was the best, and are dropped from the model.
results = ranker.evals_result_
rounds = np.arange(1, ranker.n_iter_ + 1)
fig, ax = plt.subplots(figsize=(7, 4))
for metric in ("ndcg@1", "ndcg@5", "ndcg@10"):
    ax.plot(rounds, results["valid_0"][metric], label=f"test {metric}")
ax.plot(rounds, results["valid_1"]["ndcg@10"], color="grey", linestyle=":",
        label="train ndcg@10")
ax.axvline(ranker.best_iteration_, color="k", linestyle="--", linewidth=1,
           label=f"best iteration ({ranker.best_iteration_})")
ax.set_xlabel("boosting round")
ax.set_ylabel("NDCG")
ax.set_title("GPUHistGBDTRanker on the LETOR sample")
ax.legend(loc="lower right")
fig.tight_layout()

out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-"))
path = out_dir / "gbdt_letor_ndcg_per_round.png"
fig.savefig(path, dpi=100)
print(f"figure written to {path}")
