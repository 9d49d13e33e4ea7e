"""Per-query ranking metrics: NDCG, DCG, MAP, MRR, ERR and precision@k on ragged queries.

All functions take per-row ``y_true``, ``y_score`` and ``qid`` (any order, any orderable
dtype) and return the mean over queries, or the per-query values with
``return_per_query=True``. Every default is invariant to the order of rows within a query;
see :mod:`skltr.metrics._ranking` for the tie and empty-query policies.
"""

from ._evaluator import NDCGEvaluator
from ._ranking import (
    average_precision_score,
    dcg_score,
    err_score,
    map_score,
    mrr_score,
    ndcg_score,
    precision_at_k,
)

__all__ = [
    "NDCGEvaluator",
    "average_precision_score",
    "dcg_score",
    "err_score",
    "map_score",
    "mrr_score",
    "ndcg_score",
    "precision_at_k",
]
