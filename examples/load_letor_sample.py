"""
========================
Loading the LETOR sample
========================

Read a real learning-to-rank sample in the LETOR / SVMlight format with
:func:`skltr.datasets.load_letor` and describe it: shapes, number of queries, documents per
query and the distribution of relevance grades.

The sample (LightGBM's ``examples/lambdarank`` data: 300 sparse web-search features, grades
0-4) is stored beside the repository in ``../shared/data/letor_small``; pass another folder
as the first argument (without one, the script writes a synthetic sample in the same
layout). It holds each split twice:

* ``train.letor`` / ``test.letor``: one document per line, ``label qid:N idx:value ...``;
* ``rank.train`` / ``rank.test``: the same lines without ``qid:``, the grouping in a
  LightGBM-style ``rank.train.query`` file (how many consecutive lines each query has),
  which ``load_letor`` picks up by itself.

Both give the same ``X`` and ``y``; the ``qid`` values differ (the written ids, or
``0 .. n_queries - 1`` from group sizes) but group the rows identically.
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

from skltr.datasets import load_letor
from skltr.utils import group_by_qid

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

# %%
# Load train and test. A test file may use fewer feature indices than the training file:
# pass n_features so both matrices have the same width.
X_train, y_train, qid_train = load_letor(data_dir / "train.letor")
X_test, y_test, qid_test = load_letor(data_dir / "test.letor", n_features=X_train.shape[1])


def describe(name, X, y, qid):
    groups = group_by_qid(qid)
    sizes = groups.sizes
    print(f"{name}: X {X.shape} {X.dtype}, y {y.shape}, qid {qid.shape}")
    print(f"  {groups.n_queries} queries; documents per query: min {sizes.min()}, "
          f"median {int(np.median(sizes))}, max {sizes.max()}")
    print(f"  non-zero feature values: {np.count_nonzero(X) / X.size:.1%}")
    grades, counts = np.unique(y, return_counts=True)
    print("  grade  documents  share")
    for g, c in zip(grades, counts):
        print(f"  {g:5.0f}  {c:9d}  {c / y.size:5.1%}")
    no_relevant = sum(y[groups.order[a:b]].max() == 0
                      for a, b in zip(groups.group_ptr[:-1], groups.group_ptr[1:]))
    print(f"  queries without a relevant document: {no_relevant}")


describe("train", X_train, y_train, qid_train)
describe("test", X_test, y_test, qid_test)

# %%
# The qid-less copy with its .query file of group sizes gives the same data.
X_alt, y_alt, qid_alt = load_letor(data_dir / "rank.train", n_features=X_train.shape[1])
assert np.array_equal(X_alt, X_train) and np.array_equal(y_alt, y_train)
assert np.array_equal(group_by_qid(qid_alt).sizes, group_by_qid(qid_train).sizes)
print(f"\nrank.train + rank.train.query: same X and y, same {len(np.unique(qid_alt))} "
      f"queries (ids {qid_alt.min()}..{qid_alt.max()} instead of "
      f"{qid_train.min()}..{qid_train.max()})")
