"""The GBDT boosting loop, one for every device: rounds of gradients -> tree -> score update.

Host orchestration only; no scikit-learn here (the fit recipe, :mod:`skltr._gbdt.fit`,
validates and builds the parameters; this module trusts its inputs). One call of
:func:`boost` does, in order, through a device back-end (:class:`~.backend_cpu.CPUBackend`
or :class:`~.backend_cuda.CUDABackend`, the same methods)::

    X (grouped by query)  --backend.bin-->  binned rows (once), eval sets too
    scores = init_score
    round t:  gradients(scores) -> grad, hess                           (all training rows)
              [subsample: the rows of a random subset of queries]
              [colsample_bytree: a random subset of features]
              backend.grow(grad, hess, rows, features, t) -> GrownTree  (growth driver,
                                                                   skltr._gbdt.growth)
              train scores += leaf values;  eval scores += tree(eval rows)
              Rounds.record: NDCG@k of every eval set, early stopping
    Rounds.result: trees[:best] -> one TreeEnsemble

Random streams, subsamples, the round log and early stopping, the ensemble builder are the
same on every device (:mod:`skltr._engine.rounds`), and so are the growth driver and the
quantisation rule: a CPU fit and a GPU fit of the same parameters give the same model
(``benchmarks/results/same_model-*.json``).
"""

from __future__ import annotations

import time
from dataclasses import replace

from .._device import Device
from .._engine.communicator import LocalCommunicator
from .._engine.rounds import (BoostingResult, Rounds, feature_subsample, progress,
                              query_subsample_rows)
from .._engine.shard import loop_start
from .continuation import append_trees
from .params import BoostParams

__all__ = ["boost", "make_backend"]


def make_backend(params, communicator, device: Device):
    """The back-end of ``device`` (CuPy is imported only for a GPU)."""
    if device.is_gpu:
        from .backend_cuda import CUDABackend  # noqa: PLC0415

        return CUDABackend(params, communicator, device)
    from .backend_cpu import CPUBackend  # noqa: PLC0415

    return CPUBackend(params, communicator)


def boost(X, y, group_ptr, sample_weight, objective, params: BoostParams, eval_sets=(), *,
          device: Device | None = None, communicator=None, shard=None,
          continuation=None) -> BoostingResult:
    """Run the boosting rounds on ``device``; see the module docstring.

    Parameters
    ----------
    X : ndarray of float64 or float32, or scipy CSR / CSC, shape (n_samples, n_features)
        Training rows grouped by query (NaN allowed: it gets the missing bin); on the GPU a
        CuPy array too.
    y, sample_weight : ndarray of shape (n_samples,) (sample_weight may be None)
    group_ptr : ndarray of int64, shape (n_queries + 1,)
    objective : Objective
        From :func:`skltr._gbdt.objectives.make_objective`.
    params : BoostParams
    eval_sets : sequence of EvalData
        Scored after every round; the first one drives early stopping.
    device : Device, optional
        Default: the CPU.
    communicator : object with ``allreduce_sum`` / ``allreduce_max``, optional
        The global sums of a distributed fit; default ``LocalCommunicator()``.
    shard : Shard, optional
        Set when ``X`` holds one worker's queries of a distributed fit (:mod:`skltr.dask`):
        the driver's bin mapper and initial score, and the global indices of the queries
        (:mod:`skltr._engine.shard`). ``eval_sets`` then hold the worker's eval queries.
    continuation : Continuation, optional
        Continue that model (:mod:`skltr._gbdt.continuation`): its scores are the start,
        its trees come first in the result, and the rounds are numbered on from its own.

    Returns
    -------
    BoostingResult
    """
    if communicator is None:
        communicator = LocalCommunicator()
    backend = make_backend(params, communicator, device or Device("cpu"))
    with backend.activate():
        result = _boost(backend, X, y, group_ptr, sample_weight, objective, params,
                        eval_sets, communicator, shard, continuation)
    return result if continuation is None else _continued(result, continuation)


def _continued(result, c):
    """``result`` of the rounds after ``c``'s: its trees first, rounds counted from 0."""
    return replace(
        result, ensemble=append_trees(c.ensemble, result.ensemble),
        best_iteration=(None if result.best_iteration is None
                        else c.n_rounds + result.best_iteration),
        n_rounds_run=c.n_rounds + result.n_rounds_run,
        split_gain=c.split_gain + result.split_gain,
        split_count=c.split_count + result.split_count)


def _boost(backend, X, y, group_ptr, sample_weight, objective, p, eval_sets, communicator,
           shard, continuation):
    n_samples, n_features = X.shape
    t0 = time.perf_counter()
    mapper = backend.bin(X, eval_sets, shard)
    backend.synchronize()
    binning_s = time.perf_counter() - t0

    start = loop_start(objective, y, group_ptr, sample_weight, eval_sets, p, communicator,
                       shard)
    init, evaluators = start.init_score, start.evaluators
    gradients = backend.gradients(objective, y, group_ptr, sample_weight, start.query_index)
    grad, hess = backend.empty_gh(n_samples), backend.empty_gh(n_samples)
    first = 0
    if continuation is None:
        scores = backend.full(n_samples, init)
        eval_scores = [backend.full(e.y.shape[0], init) for e in eval_sets]
    else:  # the starting model's scores; its rounds were 0 .. first - 1
        init, first = continuation.base_score, continuation.n_rounds
        scores = backend.from_host(continuation.scores(X, p.n_jobs))
        eval_scores = [backend.from_host(continuation.scores(e.X, p.n_jobs))
                       for e in eval_sets]
    rounds, bar = progress(range(p.n_estimators), p.verbose, backend.label)
    log = Rounds(n_features, [e.name for e in eval_sets], evaluators, p.n_iter_no_change, bar)
    try:
        for local in rounds:
            it = first + local  # the round's number in the whole model: its random draws
            gradients(scores, grad, hess, it)
            rows = query_subsample_rows(group_ptr, p.subsample, p.seed, it, start.query_index,
                                        start.n_queries)
            features = feature_subsample(n_features, p.colsample_bytree, p.seed, it)
            tree = backend.grow(grad, hess, rows, features, it)
            backend.add_to_training_scores(tree, rows, scores)
            log.add_tree(tree)
            if not eval_sets:
                continue
            values = [ev(backend.add_to_eval_scores(k, tree, s))
                      for k, (ev, s) in enumerate(zip(evaluators, eval_scores))]
            if log.record(local, values):
                break
    finally:
        if bar is not None:
            bar.close()
    backend.synchronize()
    boosting_s = time.perf_counter() - t0 - binning_s
    return log.result(mapper, init, source=p.source, feature_names=p.feature_names,
                      timings={"binning_s": binning_s, "boosting_s": boosting_s})
