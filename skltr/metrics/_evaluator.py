"""``NDCGEvaluator``: NDCG@k of one fixed set of queries for many score vectors.

What a boosting loop records after every round, and what an early-stopping rule watches: the
labels are validated, grouped by query and turned into gains once, and each call only runs
the metric kernel (parallel over queries) for every cut-off.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_params

from . import _kernels
from ._ranking import _gains, _Grouped, _run, mean_over_queries

__all__ = ["NDCGEvaluator"]


class NDCGEvaluator:
    """NDCG at one or more cut-offs, for many score vectors of the same queries.

    Equal to :func:`~skltr.metrics.ndcg_score` with its defaults (ties averaged, all-zero
    queries score 1.0, single-document queries included) at every ``k`` of ``eval_at``,
    without re-validating or re-grouping the labels on each call.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance grade of each row (non-negative).
    qid : array-like of shape (n_samples,), default=None
        Query id of each row, any order; None: one query.
    eval_at : sequence of int
        The cut-offs ``k``; values are returned in this order.
    gain : {"exp2", "linear"}, default="exp2"
    sample_weight : array-like of shape (n_samples,), default=None
        A query's weight is the mean of its rows' weights.

    Attributes
    ----------
    names : list of str
        ``"ndcg@k"`` for every cut-off (LightGBM's ``evals_result_`` keys).

    Examples
    --------
    >>> from skltr.metrics import NDCGEvaluator, ndcg_score
    >>> y, qid = [3, 2, 0, 1, 0], [1, 1, 1, 2, 2]
    >>> ev = NDCGEvaluator(y, qid=qid, eval_at=[1, 3])
    >>> ev.names
    ['ndcg@1', 'ndcg@3']
    >>> [round(v, 4) for v in ev([0.9, 0.2, 0.5, 0.4, 0.1])]
    [1.0, 0.9779]
    """

    @validate_params(
        {"y_true": ["array-like"], "qid": ["array-like", None], "eval_at": ["array-like"],
         "gain": [StrOptions({"exp2", "linear"})], "sample_weight": ["array-like", None]},
        prefer_skip_nested_validation=True)
    def __init__(self, y_true, *, qid=None, eval_at=(10,), gain="exp2", sample_weight=None):
        self._grouped = _Grouped(y_true, np.zeros(len(y_true)), qid, sample_weight)
        self._gains = _gains(self._grouped, gain)
        self.eval_at = [int(k) for k in eval_at]
        if not self.eval_at or min(self.eval_at) < 1:
            raise ValueError(f"eval_at must hold cut-offs >= 1; got {list(eval_at)!r}.")
        self.names = [f"ndcg@{k}" for k in self.eval_at]

    @property
    def query_weight(self):
        """Weight of each query (sorted-qid order; the mean of its rows'), or None."""
        return self._grouped.query_weight

    def per_query(self, y_score) -> list[np.ndarray]:
        """NDCG@k of every query (sorted-qid order) for every k: what a call averages."""
        scores = np.asarray(y_score, dtype=np.float64)
        g = self._grouped
        if scores.shape != g.y_true.shape:
            raise ValueError(f"y_score has shape {scores.shape}; the evaluator's queries have "
                             f"{g.y_true.shape[0]} rows, one score each.")
        g.y_score = np.ascontiguousarray(scores if g.order is None else scores[g.order])
        return [_run(_kernels.NDCG, g, values=self._gains, k=k, ties="average",
                     zero_relevance="one", single_document="include")
                for k in self.eval_at]

    def __call__(self, y_score) -> list[float]:
        """NDCG@k of ``y_score`` (one score per row, the rows of ``y_true``) for every k."""
        return [mean_over_queries(v, self.query_weight, "ndcg")
                for v in self.per_query(y_score)]
