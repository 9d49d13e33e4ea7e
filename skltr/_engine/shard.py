"""One worker's part of a distributed fit: what a boosting loop needs besides its rows.

A distributed fit (:mod:`skltr.dask`) runs the one boosting loop on every worker over that
worker's whole queries. What a one-process fit computes from *all* rows is computed once by
the driver, or summed exactly through the communicator, so that every worker -- and a
one-process fit of the same rows -- makes the same decisions:

* the bin cuts: the driver draws the cut sample from the global row layout and fits the
  :class:`~skltr._engine.binning.BinMapper` (:attr:`Shard.mapper`);
* the initial score, from the global labels (:attr:`Shard.init_score`);
* per-query randomness (query subsample, ``rank_xendcg``'s gammas), drawn over global query
  indices (:attr:`Shard.query_index`);
* evaluation: every worker scores its eval queries; :class:`ShardEvaluator` places the
  per-query values at their global index and all-reduces them (each slot has one non-zero
  term, so the float sum is exact), and the mean is the one-process evaluator's.

Histograms are int64 sums (``hist_mode="quantised"``), exact in any order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..metrics import NDCGEvaluator
from ..metrics._ranking import mean_over_queries
from .rounds import evaluators

__all__ = ["LoopStart", "Shard", "ShardEvaluator", "loop_start"]


@dataclass(frozen=True)
class Shard:
    """What a worker's boosting loop takes from the whole training set.

    Attributes
    ----------
    mapper : BinMapper
        Fitted on the driver from the global cut sample.
    init_score : float
        The objective's initial score of the global labels.
    query_index : ndarray of int64, shape (n_local_queries,)
        Global index of each of the worker's training queries (in its ``group_ptr`` order,
        increasing).
    n_queries : int
        Training queries in all.
    eval_query_index : tuple of ndarray
        Per eval set: global index of each of the worker's queries of that set.
    eval_n_queries : tuple of int
        Per eval set: its queries in all.
    """

    mapper: object
    init_score: float
    query_index: np.ndarray
    n_queries: int
    eval_query_index: tuple = ()
    eval_n_queries: tuple = ()


class ShardEvaluator:
    """NDCG@k of an eval set spread over workers, equal to the one-process evaluator's.

    Parameters
    ----------
    data : EvalData
        This worker's queries of the set (rows grouped by query; may be empty).
    query_index : ndarray of int64
        Global index of each of them.
    n_queries : int
        Queries of the set in all.
    eval_at, gain
        As :class:`~skltr.metrics.NDCGEvaluator`.
    communicator : object with ``allreduce_sum``
    """

    def __init__(self, data, query_index, n_queries, eval_at, gain, communicator):
        self.names = [f"ndcg@{int(k)}" for k in eval_at]
        self.query_index = np.asarray(query_index, dtype=np.int64)
        self.n_queries = int(n_queries)
        self.communicator = communicator
        self.weighted = data.sample_weight is not None
        self.local = None
        if data.y.shape[0]:
            self.local = NDCGEvaluator(
                data.y, qid=np.repeat(np.arange(data.group_ptr.size - 1),
                                      np.diff(data.group_ptr)),
                eval_at=eval_at, gain=gain, sample_weight=data.sample_weight)

    def __call__(self, scores) -> list[float]:
        k = len(self.names)
        # rows 0..k-1: NDCG@k per query; k..2k-1: 1 where it is NaN; 2k: query weights
        buf = np.zeros((2 * k + 1, self.n_queries), dtype=np.float64)
        if self.local is not None:
            for i, values in enumerate(self.local.per_query(scores)):
                nan = np.isnan(values)
                buf[i, self.query_index] = np.where(nan, 0.0, values)
                buf[k + i, self.query_index] = nan
            if self.weighted:
                buf[2 * k, self.query_index] = self.local.query_weight
        buf = self.communicator.allreduce_sum(buf)
        weight = buf[2 * k] if self.weighted else None
        return [mean_over_queries(np.where(buf[k + i] > 0, np.nan, buf[i]), weight, "ndcg")
                for i in range(k)]


@dataclass(frozen=True)
class LoopStart:
    """What a boosting loop (CPU or GPU) starts from, alone or as one worker of many.

    ``query_index`` and ``n_queries`` are None in a one-process fit.
    """

    init_score: float
    evaluators: list
    query_index: np.ndarray | None
    n_queries: int | None


def loop_start(objective, y, group_ptr, sample_weight, eval_sets, params, communicator,
               shard=None) -> LoopStart:
    """The initial score, the eval set evaluators and the query indices of a boosting loop.

    One process: the objective validates the labels and gives the start score. A worker of
    a distributed fit (``shard`` set): the driver's start score, and evaluators that sum
    per-query values over the workers.
    """
    p = params
    if shard is None:
        # Validates the labels for this objective, then gives the constant start score.
        init = float(objective.init_score(y, group_ptr, sample_weight))
        return LoopStart(init, evaluators(eval_sets, p.eval_at, p.gain), None, None)
    evals = [ShardEvaluator(e, qi, nq, p.eval_at, p.gain, communicator)
             for e, qi, nq in zip(eval_sets, shard.eval_query_index, shard.eval_n_queries)]
    return LoopStart(shard.init_score, evals, shard.query_index, shard.n_queries)
