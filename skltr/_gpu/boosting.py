"""The boosting loop on the GPU: everything of a round stays on the device.

Same rounds as :func:`skltr._gbdt.boosting.boost` (same random draws for the query and
feature subsamples, same ``BinMapper`` seed, same early stopping, same ``BoostingResult``),
with the per-round state on the GPU::

    host: the BinMapper's row sample (parallel gather) -> GPU: sorted per feature, cut by
          the BinMapper's rule (column_cuts)         -> cut points (same as the CPU's)
    GPU:  map_to_bins(X), eval sets too    -> uint8 rows, padded to 32-bit words (once)
    round t (GPU):  objective gradients -> grad, hess (float32)
                    GPUTreeGrower.grow  -> GrownTree (host node arrays, a few KB)
                    train scores += leaf values (partition buffer: no traversal), or
                    add_tree_binned for every row when the tree saw a query subsample
                    eval scores  += add_tree_binned(eval rows)
    host: eval NDCG from a copy of the eval scores (n_eval float64 per round); trees ->
          one TreeEnsemble (host NumPy: pickles and predicts without a GPU). The history,
          early stopping and assembly are the CPU loop's own (``skltr._engine.rounds.Rounds``).

Every objective and both growth policies run here (``hist_mode="float"`` raises
``NotImplementedError``: the GPU sums quantised gradients).

A worker of a distributed fit (``shard`` and ``communicator``, :mod:`skltr.dask`) runs the
same rounds on its queries with the driver's cuts and start score, as the CPU loop does
(:mod:`skltr._engine.shard`); the grower all-reduces its sums through the communicator.
"""

from __future__ import annotations

import time

import cupy
import numpy as np

from .._dtypes import G_H_DTYPE
from .._engine.communicator import LocalCommunicator
from .._engine.rounds import (BoostingResult, Rounds, binning_seed, feature_subsample,
                              inf_error, progress, query_subsample_rows)
from .._engine.shard import loop_start
from .._gbdt.params import BoostParams
from .binning import fit_bin_mapper
from .._gbdt.grower_cuda import GPUTreeGrower
from .binned import DeviceBinned
from ._profile import stage
from .objectives import make_gpu_objective
from .predict_binned import DeviceTree, add_tree_binned


def boost(X, y, group_ptr, sample_weight, objective, params: BoostParams, eval_sets=(),
          device_index=0, communicator=None, shard=None) -> BoostingResult:
    """:func:`skltr._gbdt.boosting.boost` on GPU ``device_index`` (same parameters).

    ``params.tree_params`` are those of ``TreeGrower`` (``min_samples_leaf_counts``
    included); ``hist_mode`` must be ``"quantised"`` or absent (the GPU always accumulates
    quantised gradients: ``"float"`` raises NotImplementedError). ``X`` may be a NumPy or
    CuPy array; ``params.n_jobs`` is the bin mapper's host threads. ``reject_inf`` is checked
    by the binning kernels.
    """
    hist_mode = params.tree.hist_mode
    if hist_mode != "quantised":
        raise NotImplementedError(
            f"hist_mode={hist_mode!r} is not implemented on the GPU: it always sums quantised "
            f"gradients; use hist_mode='quantised' with device='cuda', or device='cpu'.")
    if communicator is None:
        communicator = LocalCommunicator()
    with cupy.cuda.Device(int(device_index)):
        return _boost(X, y, group_ptr, sample_weight, objective, params, eval_sets,
                      communicator, shard)


def _boost(X, y, group_ptr, sample_weight, objective, p, eval_sets, communicator, shard):
    y = cupy.asnumpy(y) if isinstance(y, cupy.ndarray) else np.asarray(y)
    n_samples, n_features = X.shape
    t0 = time.perf_counter()
    # the sample rows cross the bus, then X in chunks, in its own dtype
    # the CPU loop's seed and threads: the same cuts
    if shard is None:
        mapper = fit_bin_mapper(X, p.max_bins, binning_seed(p.seed), p.n_jobs)
    else:  # the driver's cuts; its NaN flags are the workers' all-reduced
        mapper = shard.mapper
    data = DeviceBinned.from_mapper(X, mapper)
    if shard is None:
        mapper.has_missing = data.has_missing
    binned_evals = [DeviceBinned.from_mapper(e.X, mapper) for e in eval_sets]
    has_inf = np.array([data.has_inf or any(b.has_inf for b in binned_evals)], np.uint8)
    if p.reject_inf and communicator.allreduce_max(has_inf)[0]:
        raise inf_error()  # found by the binning kernels: no host pass over X
    evals = [(e, b.X_bytes) for e, b in zip(eval_sets, binned_evals)]
    cupy.cuda.get_current_stream().synchronize()
    binning_s = time.perf_counter() - t0

    start = loop_start(objective, y, group_ptr, sample_weight, eval_sets, p, communicator,
                       shard)
    init, evals_ = start.init_score, start.evaluators
    gpu_objective = make_gpu_objective(objective, y, group_ptr, sample_weight,
                                       start.query_index)
    grower = GPUTreeGrower(data, tree_params=p.tree, communicator=communicator)
    scores = cupy.full(n_samples, init, dtype=cupy.float64)
    grad = cupy.empty(n_samples, dtype=G_H_DTYPE)
    hess = cupy.empty(n_samples, dtype=G_H_DTYPE)
    eval_scores = [cupy.full(e.y.shape[0], init, dtype=cupy.float64) for e, _ in evals]
    rounds, bar = progress(range(p.n_estimators), p.verbose, "boosting (cuda)")
    log = Rounds(n_features, [e.name for e in eval_sets], evals_, p.n_iter_no_change, bar)
    try:
        for it in rounds:
            with stage("gradients"):
                gpu_objective.gradients(scores, grad, hess, it)
            rows = query_subsample_rows(group_ptr, p.subsample, p.seed, it,
                                        start.query_index, start.n_queries)
            features = feature_subsample(n_features, p.colsample_bytree, p.seed, it)
            tree = grower.grow(grad, hess, rows, features)
            dev_tree = None
            with stage("scores"):
                if rows is None:
                    grower.add_to_training_scores(scores)
                else:
                    dev_tree = DeviceTree(tree)
                    add_tree_binned(data.X_bytes, dev_tree, scores)
            log.add_tree(tree)
            if not evals:
                continue
            dev_tree = dev_tree or DeviceTree(tree)
            values = []
            for (_, Xb), ev, s in zip(evals, evals_, eval_scores):
                with stage("eval"):
                    add_tree_binned(Xb, dev_tree, s)
                values.append(ev(s.get()))
            if log.record(it, values):
                break
    finally:
        if bar is not None:
            bar.close()
    cupy.cuda.get_current_stream().synchronize()
    boosting_s = time.perf_counter() - t0 - binning_s
    return log.result(mapper, init, source=p.source, feature_names=p.feature_names,
                      timings={"binning_s": binning_s, "boosting_s": boosting_s})
