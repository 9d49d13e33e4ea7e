"""
=====================================================
Categorical features: a shop column of 300 categories
=====================================================

A search log often carries columns that name things rather than measure them: the shop, the
brand, the category of a product. Their codes have no order, so a threshold on them ("shop id
<= 141") splits nothing meaningful. :class:`skltr.GPUHistGBDTRanker` splits such a column by
category instead -- LightGBM's many-vs-many rule: per node, the categories sorted by their
gradient statistics, a prefix of that order sent left -- when the column is a pandas
``category`` column (``categorical_features="from_dtype"``, the default) or named in
``categorical_features``.

The data: :func:`skltr.datasets.make_ranking` with one categorical column of 300 levels
(Zipf-distributed, each level with its own effect on relevance), given to the ranker as a
DataFrame whose ``shop`` column holds strings. Three models, the same trees otherwise: the
column as a category, the same codes read as numbers, and no shop column at all. The test
queries' NDCG@10 is recorded round by round (``staged_predict``). A shop that never
appeared in training counts as missing at ``predict``, as in LightGBM.

The figure is written to ``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a temporary folder when unset);
the script never opens a window.
"""

import os
import tempfile

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from skltr import GPUHistGBDTRanker  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402
from skltr.metrics import ndcg_score  # noqa: E402

X, y, qid = make_ranking(n_queries=600, docs_per_query=30, n_features=20, n_informative=8,
                         categorical_levels=(300,), random_state=0)
frame = pd.DataFrame(X[:, :-1], columns=[f"f{i}" for i in range(X.shape[1] - 1)])
frame["shop"] = pd.Categorical([f"shop-{int(c)}" for c in X[:, -1]])
train, test = qid < 450, qid >= 450

kw = dict(n_estimators=150, learning_rate=0.1, random_state=0)
inputs = {
    "shop as a category": frame,
    "shop codes as numbers": frame.assign(shop=frame["shop"].cat.codes.astype(float)),
    "no shop column": frame.drop(columns="shop"),
}
curves = {}
for name, data in inputs.items():
    ranker = GPUHistGBDTRanker(**kw).fit(data[train], y[train], qid=qid[train])
    curves[name] = [ndcg_score(y[test], s, qid=qid[test], k=10)
                    for s in ranker.staged_predict(data[test])]
    categorical = ([] if ranker.is_categorical_ is None
                   else data.columns[ranker.is_categorical_].tolist())
    print(f"{name:24s} test NDCG@10 after {len(curves[name])} rounds: {curves[name][-1]:.4f}"
          f"  (split by category: {categorical})")

# a DataFrame whose categories come in another order, and a shop never seen: the same scores
# for the known shops (the ranker codes the column against its training categories)
ranker = GPUHistGBDTRanker(**kw).fit(frame[train], y[train], qid=qid[train])
shuffled = frame[test].copy()
shuffled["shop"] = shuffled["shop"].cat.reorder_categories(
    shuffled["shop"].cat.categories[::-1])
assert np.array_equal(ranker.predict(shuffled), ranker.predict(frame[test]))
unseen = frame[test].copy()
unseen["shop"] = unseen["shop"].cat.add_categories(["shop-new"])
unseen.loc[unseen.index[:5], "shop"] = "shop-new"
print("scores of 5 rows moved to an unseen shop:", np.round(ranker.predict(unseen)[:5], 3))

fig, ax = plt.subplots(figsize=(6, 4))
for name, curve in curves.items():
    ax.plot(np.arange(1, len(curve) + 1), curve, label=name)
ax.set_xlabel("boosting round")
ax.set_ylabel("test NDCG@10")
ax.set_title("A 300-level shop column")
ax.legend()
fig.tight_layout()
out_dir = os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-")
path = os.path.join(out_dir, "categorical_features.png")
fig.savefig(path, dpi=100)
print(f"figure written to {path}")
