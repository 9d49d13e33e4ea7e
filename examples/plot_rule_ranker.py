"""
=========================================
OnDemandRuleRanker: rules mined per query
=========================================

:class:`skltr.OnDemandRuleRanker` (LRAR, lazy association rules) learns nothing up front: its
``fit`` cuts each feature into intervals and indexes the training documents; ``predict``
mines, for each document, the rules "these intervals -> this relevance" that its own
feature values make, and scores by their confidence. The cost is at predict time and grows
with ``max_rule_size`` (the itemsets of a document: C(features, size)), so this example
uses a small synthetic data set (``make_ranking``, 12 features, each cut into 5
quantile intervals) and measures both the
quality and the predict time per document for rules of 1, 2 and 3 items.

Needs matplotlib. The figure is written to ``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a temporary
folder when unset).
"""

import os
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import matplotlib.pyplot as plt  # noqa: E402

from skltr import OnDemandRuleRanker  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402
from skltr.model_selection import train_test_split_by_query  # noqa: E402

print("data: synthetic (make_ranking: 120 queries x 15 documents x 12 features)")
X, y, qid = make_ranking(n_queries=120, docs_per_query=15, n_features=12, n_informative=6,
                         random_state=0)
X_train, X_test, y_train, y_test, qid_train, qid_test = train_test_split_by_query(
    X, y, qid=qid, test_size=0.25, random_state=0)

# %%
# One ranker per rule size; the first predict of a process also loads the kernels, so a
# few rows are scored before the timing.
sizes, ndcg, ms_per_doc = [1, 2, 3], [], []
for size in sizes:
    ranker = OnDemandRuleRanker(max_rule_size=size, discretization="quantile", n_bins=5,
                                random_state=0)
    ranker.fit(X_train, y_train, qid=qid_train)
    ranker.predict(X_test[:8])
    t = time.perf_counter()
    ranker.predict(X_test)
    ms_per_doc.append(1000 * (time.perf_counter() - t) / len(y_test))
    ndcg.append(ranker.score(X_test, y_test, qid=qid_test))
    print(f"rules of up to {size} items: test NDCG@10 {ndcg[-1]:.4f}, "
          f"{ms_per_doc[-1]:.3f} ms a document ({ranker.n_items_} items)")

# %%
# The quality / predict-time trade-off of the rule size.
fig, ax1 = plt.subplots(figsize=(6, 4))
ax1.plot(sizes, ndcg, "o-", color="tab:blue")
ax1.set_xlabel("max_rule_size")
ax1.set_ylabel("test NDCG@10", color="tab:blue")
ax1.set_xticks(sizes)
ax2 = ax1.twinx()
ax2.plot(sizes, ms_per_doc, "s--", color="tab:red")
ax2.set_ylabel("predict ms per document", color="tab:red")
fig.tight_layout()
out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-"))
fig.savefig(out_dir / "rule_ranker_size.png", dpi=100)
print(f"figure written to {out_dir / 'rule_ranker_size.png'}")
