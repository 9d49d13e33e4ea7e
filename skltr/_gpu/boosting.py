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
          early stopping and assembly are the CPU loop's own (``skltr._gbdt.boosting._Rounds``).

Every objective and both growth policies run here (``hist_mode="float"`` raises
``NotImplementedError``: the GPU sums quantised gradients).
"""

from __future__ import annotations

import time

import cupy
import numpy as np

from .._dtypes import G_H_DTYPE
from .._gbdt.boosting import (_STREAM_BINNING, BoostingResult, NDCGEvaluator, _Rounds,
                              _feature_subsample, _query_subsample_rows, _rng, inf_error)
from .binning import fit_bin_mapper
from .grower import DeviceBinned, GPUTreeGrower
from ._profile import stage
from .objectives import make_gpu_objective
from .predict_binned import DeviceTree, add_tree_binned


def boost(X, y, group_ptr, sample_weight=None, *, objective, objective_name, n_estimators,
          max_bins, tree_params, subsample=1.0, colsample_bytree=1.0, eval_sets=(),
          eval_at=(10,), gain="exp2", n_iter_no_change=None, seed=0, verbose=0,
          feature_names=None, communicator=None, n_jobs=None,
          device_index=0, reject_inf=False) -> BoostingResult:
    """:func:`skltr._gbdt.boosting.boost` on GPU ``device_index`` (same parameters).

    ``tree_params`` are those of ``TreeGrower`` (``min_samples_leaf_counts`` included);
    ``hist_mode`` must be ``"quantised"`` or absent (the GPU always accumulates quantised
    gradients: ``"float"`` raises NotImplementedError). ``X`` may be a
    NumPy or CuPy array; ``communicator`` must be None (single GPU); ``n_jobs`` is the
    bin mapper's host threads. ``reject_inf`` is checked by the binning kernels.
    """
    hist_mode = dict(tree_params).get("hist_mode")
    if hist_mode not in (None, "quantised"):
        raise NotImplementedError(
            f"hist_mode={hist_mode!r} is not implemented on the GPU: it always sums quantised "
            f"gradients; use hist_mode='quantised' with device='cuda', or device='cpu'.")
    if communicator is not None:
        raise NotImplementedError("distributed GPU training is not implemented; the GPU "
                                  "path runs on one device.")
    with cupy.cuda.Device(int(device_index)):
        return _boost(X, y, group_ptr, sample_weight, objective=objective,
                      objective_name=objective_name, n_estimators=n_estimators,
                      max_bins=max_bins, tree_params=tree_params, subsample=subsample,
                      colsample_bytree=colsample_bytree, eval_sets=eval_sets,
                      eval_at=eval_at, gain=gain, n_iter_no_change=n_iter_no_change,
                      seed=seed, verbose=verbose, feature_names=feature_names,
                      n_jobs=n_jobs, reject_inf=reject_inf)


def _fit_bin_mapper(X, max_bins, seed, n_jobs=None):
    # the CPU loop's seed rule and threads (skltr._gbdt.boosting._fit_bin_mapper): same cuts
    seed = int(_rng(seed, _STREAM_BINNING).integers(2**31 - 1))
    return fit_bin_mapper(X, max_bins, seed, n_jobs)


def _boost(X, y, group_ptr, sample_weight, *, objective, objective_name, n_estimators,
           max_bins, tree_params, subsample, colsample_bytree, eval_sets, eval_at, gain,
           n_iter_no_change, seed, verbose, feature_names, n_jobs, reject_inf):
    params = dict(tree_params)
    params.pop("hist_mode", None)
    params.pop("n_threads", None)
    y = cupy.asnumpy(y) if isinstance(y, cupy.ndarray) else np.asarray(y)
    n_samples, n_features = X.shape
    t0 = time.perf_counter()
    # the sample rows cross the bus, then X in chunks, in its own dtype
    mapper = _fit_bin_mapper(X, max_bins, seed, n_jobs)
    data = DeviceBinned.from_mapper(X, mapper)
    mapper.has_missing = data.has_missing
    binned_evals = [DeviceBinned.from_mapper(e.X, mapper) for e in eval_sets]
    if reject_inf and (data.has_inf or any(b.has_inf for b in binned_evals)):
        raise inf_error()  # found by the binning kernels: no host pass over X
    evals = [(e, b.X_bytes) for e, b in zip(eval_sets, binned_evals)]
    cupy.cuda.get_current_stream().synchronize()
    binning_s = time.perf_counter() - t0

    init = float(objective.init_score(y, group_ptr, sample_weight))
    gpu_objective = make_gpu_objective(objective, y, group_ptr, sample_weight)
    grower = GPUTreeGrower(data, **params)
    scores = cupy.full(n_samples, init, dtype=cupy.float64)
    grad = cupy.empty(n_samples, dtype=G_H_DTYPE)
    hess = cupy.empty(n_samples, dtype=G_H_DTYPE)
    eval_scores = [cupy.full(e.y.shape[0], init, dtype=cupy.float64) for e, _ in evals]
    evaluators = [NDCGEvaluator(e.y, e.group_ptr, eval_at, gain=gain,
                                sample_weight=e.sample_weight) for e, _ in evals]
    rounds = range(n_estimators)
    bar = None
    if verbose > 0:
        from tqdm.auto import tqdm  # noqa: PLC0415

        rounds = bar = tqdm(rounds, desc="boosting (cuda)", leave=False)
    log = _Rounds(n_features, [e.name for e, _ in evals], evaluators, n_iter_no_change, bar)
    try:
        for it in rounds:
            with stage("gradients"):
                gpu_objective.gradients(scores, grad, hess, it)
            rows = _query_subsample_rows(group_ptr, subsample, seed, it)
            features = _feature_subsample(n_features, colsample_bytree, seed, it)
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
            for (_, Xb), ev, s in zip(evals, evaluators, eval_scores):
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
    return log.result(mapper, init, feature_names=feature_names, objective_name=objective_name,
                      timings={"binning_s": binning_s, "boosting_s": boosting_s})
