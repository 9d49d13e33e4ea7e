"""
=============================================
Explaining why a document ranks where it does
=============================================

:meth:`~skltr.GPUHistGBDTRanker.predict_contribs` gives exact SHAP values (path-dependent
TreeSHAP) of every feature for every document: how much each feature moved the document's
score away from the model's expected score. Each row sums to the document's score, so within
a query the values say why one document ranks above another. :func:`skltr.explain` wraps
them in a ``shap.Explanation`` for the ``shap`` package's plots.

The data are **synthetic** (:func:`skltr.datasets.make_ranking`, features named ``f0`` ..).
The figures are written to ``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a temporary folder when unset);
the script never opens a window.
"""

import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import shap  # noqa: E402

import skltr  # noqa: E402
from skltr import GPUHistGBDTRanker  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402

out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-"))

# %%
# Fit a LambdaMART ranker on synthetic queries (a DataFrame, so features have names).
X, y, qid = make_ranking(n_queries=200, docs_per_query=30, n_features=12, n_informative=6,
                         random_state=0)
X = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
ranker = GPUHistGBDTRanker(n_estimators=100, max_leaves=15, random_state=0).fit(X, y, qid=qid)

# %%
# SHAP values of one query's documents: one column per feature and the expected score last;
# every row adds up to the document's score. (The expected score of a LambdaMART model is
# about 0: each leaf's value is -G/(H + lambda), weighted by its hessians H, and the pairwise
# gradients G of every query sum to zero.)
query = X[qid == qid[0]]
contribs = ranker.predict_contribs(query)
scores = ranker.predict(query)
assert np.allclose(contribs.sum(axis=1), scores)
top = int(np.argmax(scores))
print(f"query of {len(query)} documents; the top document scores {scores[top]:.3f} = "
      f"expected {contribs[top, -1]:.3f} + the sum of its SHAP values")

# %%
# A waterfall plot of the top document: which features lifted it to the top.
explanation = skltr.explain(ranker, query)
shap.plots.waterfall(explanation[top], max_display=8, show=False)
plt.tight_layout()
plt.savefig(out_dir / "explain_waterfall.png", dpi=100)
plt.close("all")

# %%
# A beeswarm plot over many documents: each feature's effect on the score, coloured by the
# feature's value.
shap.plots.beeswarm(skltr.explain(ranker, X.iloc[:1000]), max_display=10, show=False)
plt.tight_layout()
plt.savefig(out_dir / "explain_beeswarm.png", dpi=100)
plt.close("all")
print(f"figures written to {out_dir}")
