"""The GBDT boosting loop on the CPU: rounds of gradients -> tree -> score update.

Host orchestration only; no scikit-learn here (the estimator validates, this module trusts its
inputs). One call of :func:`boost` does, in order::

    X (grouped by query)  --BinMapper.fit/transform-->  X_binned (uint8, once)
    eval sets             --same BinMapper-->           eval X_binned
    scores = init_score
    round t:  objective.gradients(scores, ...) -> grad, hess           (all training rows)
              [subsample: the rows of a random subset of queries]
              [colsample_bytree: a random subset of features]
              TreeGrower(X_binned, grad, hess, ...).grow() -> GrownTree
              train scores += leaf values (grower's row -> leaf map, or predict_binned)
              eval scores  += predict_binned(tree, eval X_binned)
              Rounds.record: NDCG@k of every eval set, early stopping
    Rounds.result: trees[:best] -> one TreeEnsemble

The GPU loop (:func:`skltr._gpu.boosting.boost`) takes the same arguments and returns the
same result; the estimator picks one. What both share -- random streams, subsamples, the round
log and early stopping, the ensemble builder -- lives in :mod:`skltr._engine`.
"""

from __future__ import annotations

import time
import numpy as np

from .._dtypes import G_H_DTYPE, Y_DTYPE
from .._engine.binning import BinMapper
from .._engine.communicator import LocalCommunicator
from .._engine.rounds import (BoostingResult, Rounds, binning_seed, feature_subsample,
                              inf_error, progress, query_subsample_rows)
from .._engine.shard import loop_start
from .grower_cpu import TreeGrower
from .params import BoostParams

__all__ = ["boost"]


class _Grower:
    """Grows the trees of one fit with the mapper's bin layout, reusing histogram buffers."""

    def __init__(self, X_binned, mapper, tree_params, communicator, n_jobs):
        self.X_binned, self.mapper = X_binned, mapper
        self.tree, self.communicator, self.n_jobs = tree_params, communicator, n_jobs
        # Made once per fit: the grower's partition kernel reads the transpose,
        # and the pool keeps histogram pages warm across trees (gbdt_internals.rst).
        self.X_binned_T = np.ascontiguousarray(X_binned.T)
        self.pool = None

    def __call__(self, grad, hess, rows, feature_mask):
        m = self.mapper
        grower = TreeGrower(self.X_binned, grad, hess, n_bins=m.n_bins,
                            missing_bin=m.missing_bin, has_missing=m.has_missing, rows=rows,
                            feature_mask=feature_mask, communicator=self.communicator,
                            pool=self.pool, X_binned_T=self.X_binned_T,
                            n_threads=self.n_jobs, tree_params=self.tree)
        tree = grower.grow()
        self.pool = grower.pool
        return tree


def boost(X, y, group_ptr, sample_weight, objective, params: BoostParams, eval_sets=(),
          communicator=None, shard=None) -> BoostingResult:
    """Run the boosting rounds on the CPU; see the module docstring.

    Parameters
    ----------
    X : ndarray of float64 or float32, or scipy CSR / CSC, shape (n_samples, n_features)
        Training rows grouped by query (NaN allowed: it gets the missing bin).
    y, sample_weight : ndarray of shape (n_samples,) (sample_weight may be None)
    group_ptr : ndarray of int64, shape (n_queries + 1,)
    objective : Objective
        From :func:`skltr._gbdt.objectives.make_objective`.
    params : BoostParams
    eval_sets : sequence of EvalData
        Scored after every round; the first one drives early stopping.
    communicator : object with ``allreduce_sum`` / ``allreduce_max``, optional
        The global sums of a distributed fit; default ``LocalCommunicator()``.
    shard : Shard, optional
        Set when ``X`` holds one worker's queries of a distributed fit (:mod:`skltr.dask`):
        the driver's bin mapper and initial score, and the global indices of the queries
        (:mod:`skltr._engine.shard`). ``eval_sets`` then hold the worker's eval queries.

    Returns
    -------
    BoostingResult
    """
    p = params
    n_jobs, seed = p.n_jobs, p.seed
    if p.reject_inf and any(np.isinf(a).any() for a in [X] + [e.X for e in eval_sets]):
        raise inf_error()
    if communicator is None:
        communicator = LocalCommunicator()
    n_samples, n_features = X.shape
    t0 = time.perf_counter()
    if shard is None:
        mapper = BinMapper(max_bins=p.max_bins, random_state=binning_seed(seed),
                           n_threads=n_jobs)
        X_binned = mapper.fit_transform(X)
    else:
        mapper = shard.mapper
        X_binned = mapper.transform(X)
    evals = [(e, mapper.transform(e.X)) for e in eval_sets]
    binning_s = time.perf_counter() - t0

    start = loop_start(objective, y, group_ptr, sample_weight, eval_sets, p, communicator,
                       shard)
    init, evals_ = start.init_score, start.evaluators
    query_index, n_queries = start.query_index, start.n_queries
    scores = np.full(n_samples, init, dtype=Y_DTYPE)
    grad = np.empty(n_samples, dtype=G_H_DTYPE)
    hess = np.empty(n_samples, dtype=G_H_DTYPE)
    eval_scores = [np.full(e.y.shape[0], init, dtype=Y_DTYPE) for e, _ in evals]

    grow = _Grower(X_binned, mapper, p.tree, communicator, n_jobs)
    rounds, bar = progress(range(p.n_estimators), p.verbose, "boosting")
    log = Rounds(n_features, [e.name for e in eval_sets], evals_, p.n_iter_no_change, bar)
    try:
        for it in rounds:
            objective.gradients(scores, y, group_ptr, sample_weight, grad, hess, it,
                                query_index=query_index)
            rows = query_subsample_rows(group_ptr, p.subsample, seed, it, query_index,
                                        n_queries)
            features = feature_subsample(n_features, p.colsample_bytree, seed, it)
            tree = grow(grad, hess, rows, features)
            if rows is None:  # the grower's row -> leaf map: no traversal
                tree.add_to_training_scores(scores)
            else:  # the tree saw only the sampled queries; every row's score moves
                tree.add_to_scores(X_binned, scores, n_jobs)
            # The row -> leaf map is a full column of int32 per tree: drop it once used, or
            # 200 trees on 500k rows would hold 400 MB until the end of the fit.
            tree.leaf_of_row = tree.rows = None
            log.add_tree(tree)
            if not evals:
                continue
            values = []
            for (_, Xb), ev, s in zip(evals, evals_, eval_scores):
                tree.add_to_scores(Xb, s, n_jobs)
                values.append(ev(s))
            if log.record(it, values):
                break
    finally:
        if bar is not None:
            bar.close()
    boosting_s = time.perf_counter() - t0 - binning_s
    return log.result(mapper, init, source=p.source, feature_names=p.feature_names,
                      timings={"binning_s": binning_s, "boosting_s": boosting_s})
