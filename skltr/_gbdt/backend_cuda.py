"""The CUDA back-end of the boosting loop: everything of a round stays on the GPU.

The methods of :class:`skltr._gbdt.backend_cpu.CPUBackend`, on one GPU::

    host: the BinMapper's row sample (parallel gather) -> GPU: sorted per feature, cut by
          the BinMapper's rule                  -> cut points (the CPU's)
    GPU:  map_to_bins(X), eval sets too         -> uint8 rows, padded to 32-bit words (once)
    round (GPU): objective gradients -> grad, hess (float32)
                 GPUTreeGrower.grow  -> GrownTree (host node arrays, a few KB)
                 train scores += leaf values (partition buffer: no traversal), or
                 add_tree_binned for every row when the tree saw a query subsample
                 eval scores  += add_tree_binned(eval rows), copied to the host for NDCG

``hist_mode="float"`` raises ``NotImplementedError``: the GPU sums quantised gradients.
A worker of a distributed fit bins with the driver's cuts (``shard``); its NaN flags are the
workers' all-reduced (``skltr.dask``).
"""

from __future__ import annotations

import cupy
import numpy as np

from .._dtypes import G_H_DTYPE
from .._engine.rounds import binning_seed, inf_error
from .._gpu._profile import stage
from .._gpu.arrays import device_context
from .._gpu.binned import DeviceBinned
from .._gpu.binning import fit_bin_mapper
from .._gpu.predict_binned import DeviceTree, add_tree_binned
from .grower_cuda import GPUTreeGrower
from .objectives_cuda import make_cuda_gradients

__all__ = ["CUDABackend"]


class CUDABackend:
    """CuPy arrays and CUDA kernels on GPU ``device.index``.

    Parameters
    ----------
    params : BoostParams
        ``params.tree.hist_mode`` must be ``"quantised"``; ``params.n_jobs`` is the bin
        mapper's host threads.
    communicator : object
    device : Device
    """

    label = "boosting (cuda)"

    def __init__(self, params, communicator, device):
        if params.tree.hist_mode != "quantised":
            raise NotImplementedError(
                f"hist_mode={params.tree.hist_mode!r} is not implemented on the GPU: it always "
                f"sums quantised gradients; use hist_mode='quantised' with device='cuda', or "
                f"device='cpu'.")
        self.params, self.communicator = params, communicator
        self.index = int(device.index)
        self._dev_tree = None

    def activate(self):
        """Every launch and allocation of the fit on the chosen GPU."""
        return device_context(self.index)

    def bin(self, X, eval_sets, shard):
        """Bin on the GPU (the sample rows cross the bus, then X in chunks, in its own
        dtype); +-inf is found by the binning kernels, without a host pass over X."""
        p = self.params
        if shard is None:  # the CPU loop's seed and threads: the same cuts
            cat = p.tree.categorical
            mapper = fit_bin_mapper(X, p.max_bins, binning_seed(p.seed), p.n_jobs,
                                    None if cat is None else cat.features)
        else:  # the driver's cuts; its NaN flags are the workers' all-reduced
            mapper = shard.mapper
        self.data = DeviceBinned.from_mapper(X, mapper)
        if shard is None:
            mapper.set_has_missing(self.data.has_missing)
        binned = [DeviceBinned.from_mapper(e.X, mapper) for e in eval_sets]
        has_inf = np.array([self.data.has_inf or any(b.has_inf for b in binned)], np.uint8)
        if p.reject_inf and self.communicator.allreduce_max(has_inf)[0]:
            raise inf_error()
        self.evals = binned
        self.grower = GPUTreeGrower(self.data, tree_params=p.tree,
                                    communicator=self.communicator)
        return mapper

    def gradients(self, objective, y, group_ptr, sample_weight, query_index):
        y = cupy.asnumpy(y) if isinstance(y, cupy.ndarray) else np.asarray(y)
        bound = make_cuda_gradients(objective, y, group_ptr, sample_weight, query_index)

        def gradients(scores, grad, hess, iteration):
            with stage("gradients"):
                bound.gradients(scores, grad, hess, iteration)
        return gradients

    def full(self, n, value):
        return cupy.full(n, value, dtype=cupy.float64)

    def from_host(self, scores):
        return cupy.asarray(scores, dtype=cupy.float64)

    def empty_gh(self, n):
        return cupy.empty(n, dtype=G_H_DTYPE)

    def grow(self, grad, hess, rows, feature_mask, round_=0):
        self._dev_tree = None
        return self.grower.grow(grad, hess, rows, feature_mask, seed=self.params.seed,
                                round_=round_)

    def _device_tree(self, tree):
        if self._dev_tree is None:
            self._dev_tree = DeviceTree(tree)
        return self._dev_tree

    def add_to_training_scores(self, tree, rows, scores):
        with stage("scores"):
            if rows is None:  # the partition buffer knows every row's leaf
                self.grower.add_to_training_scores(scores)
            else:
                add_tree_binned(self.data, self._device_tree(tree), scores)

    def add_to_eval_scores(self, k, tree, scores):
        with stage("eval"):
            add_tree_binned(self.evals[k], self._device_tree(tree), scores)
        return scores.get()

    def synchronize(self):
        cupy.cuda.get_current_stream().synchronize()
