"""The CUDA objectives: one fit's per-query constants on the GPU, gradients by
:mod:`skltr._gpu.objectives`' kernels.

:func:`make_cuda_gradients` binds a host :class:`~skltr._gbdt.objectives.Objective` to a
training set on the GPU, as ``Objective.bind`` does on the CPU: the result's
``gradients(scores, grad, hess, iteration)`` fills float32 device ``grad`` / ``hess`` at
float64 device ``scores``. The class of each objective is named by its host class
(``Objective.cuda_gradients``): one registry, ``skltr._gbdt.objectives.OBJECTIVES``.

The kernels compute the CPU kernels' formulas statement for statement, in the same order,
with the same ``exp`` and ``log2`` (:mod:`skltr._cpu.libm`) and no fused multiply-adds, so the
float32 gradients are the CPU's bit for bit (``tests/test_gbdt_gpu.py``; whole fits give the
same model, ``benchmarks/results/same_model-*.json``).
"""

from __future__ import annotations

import cupy
import numpy as np

from .._cpu.objectives import discounts
from .._cpu.yetirank import yetirank_decay_powers
from .._gpu import _config
from .._gpu import objectives as kernels
from .._gpu import yetirank as yetirank_kernels

__all__ = ["make_cuda_gradients", "PairGradients", "XENDCGGradients", "RegressionGradients",
           "YetiRankGradients"]


class _CUDAGradients:
    """Device gradients of one fit's training set: ``gradients(scores, grad, hess, it)``."""

    def __init__(self, objective, y, group_ptr, sample_weight, query_index=None):
        self.name = objective.name
        y = np.ascontiguousarray(y, np.float64)
        self.n = y.shape[0]
        self.y = cupy.asarray(y)
        self.w = None if sample_weight is None else cupy.asarray(
            np.ascontiguousarray(sample_weight, np.float64))

    def gradients(self, scores, grad, hess, iteration=0):
        """Fill float32 ``grad`` / ``hess`` (device) at float64 device ``scores``.

        ``iteration`` (0-based round) only matters to the random draws of ``rank_xendcg``
        and ``yetirank``.
        """
        raise NotImplementedError


class RegressionGradients(_CUDAGradients):
    def gradients(self, scores, grad, hess, iteration=0):
        kernels.regression(scores, self.y, self.w, grad, hess)


class XENDCGGradients(_CUDAGradients):
    def __init__(self, objective, y, group_ptr, sample_weight, query_index=None):
        super().__init__(objective, y, group_ptr, sample_weight)
        group_ptr = np.ascontiguousarray(group_ptr, np.int64)
        self.seed = int(objective.seed)
        self.n_queries = int(group_ptr.size - 1)
        self.group_ptr = cupy.asarray(group_ptr)
        # each query's mean row weight, summed in the CPU's order (k = 0: no DCG)
        self.qweight = cupy.empty(self.n_queries, cupy.float64)
        unused = cupy.empty(self.n_queries, cupy.float64)
        kernels.query_stats(self.y, self.y, self.w, self.group_ptr, 0, self.y, unused,
                            self.qweight)
        self.scratch = cupy.empty((3, self.n), cupy.float64)
        # the gammas are seeded by the query's index in the whole training set
        self.query_index = cupy.asarray(np.ascontiguousarray(
            np.arange(self.n_queries) if query_index is None else query_index, np.int64))

    def gradients(self, scores, grad, hess, iteration=0):
        kernels.xendcg(scores, self.y, self.group_ptr, self.qweight, self.query_index,
                       self.seed, iteration, self.scratch, grad, hess)


class YetiRankGradients(_CUDAGradients):
    """YetiRank: :mod:`skltr._gpu.yetirank`'s kernels, the CPU's draws and sums."""

    def __init__(self, objective, y, group_ptr, sample_weight, query_index=None):
        super().__init__(objective, y, group_ptr, sample_weight)
        group_ptr = np.ascontiguousarray(group_ptr, np.int64)
        sizes = np.diff(group_ptr)
        n_queries = int(sizes.size)
        self.seed = int(objective.seed)
        self.permutations = int(objective.permutations)
        self.group_ptr = cupy.asarray(group_ptr)
        # the kernels that work row by row find the row's query here
        self.row_query = cupy.asarray(np.repeat(np.arange(n_queries, dtype=np.int32), sizes))
        self.decay_powers = cupy.asarray(
            yetirank_decay_powers(objective.decay, int(sizes.max(initial=1))))
        # the draws are counted by the query's index in the whole training set
        self.query_index = cupy.asarray(np.ascontiguousarray(
            np.arange(n_queries) if query_index is None else query_index, np.int64))
        self.scratch = yetirank_kernels.yetirank_scratch(self.n, n_queries, self.permutations)

    def gradients(self, scores, grad, hess, iteration=0):
        yetirank_kernels.yetirank_gradients(
            scores, self.y, self.group_ptr, self.row_query, self.w, self.query_index,
            self.seed, iteration, self.permutations, self.decay_powers, self.scratch, grad,
            hess)


class PairGradients(_CUDAGradients):
    """lambdarank and rank_pairwise: one kernel, pairs weighted by |delta NDCG| or 1."""

    def __init__(self, objective, y, group_ptr, sample_weight, query_index=None):
        super().__init__(objective, y, group_ptr, sample_weight)
        name = objective.name
        y = np.ascontiguousarray(y, np.float64)
        group_ptr = np.ascontiguousarray(group_ptr, np.int64)
        self.ranknet = name == "rank_pairwise"
        self.sigmoid = float(objective.sigmoid)
        self.normalize = bool(objective.normalize)
        if self.ranknet:
            level = objective.truncation_level
            self.truncation = np.iinfo(np.int32).max if level is None else int(level)
            key = y
        else:
            self.truncation = int(objective.truncation_level)
            key = np.power(2.0, y) - 1.0 if objective.gain == "exp2" else y
        self.truncation = int(min(self.truncation, np.iinfo(np.int32).max))
        self.key = cupy.asarray(np.ascontiguousarray(key, np.float64))
        sizes = np.diff(group_ptr)
        n_queries = sizes.size
        self.group_ptr = cupy.asarray(group_ptr)
        max_cnt = int(sizes.max(initial=1))
        self.discount = cupy.asarray(discounts(max(max_cnt, 1)))
        qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
        self.qid = cupy.asarray(qid.astype(np.float64))
        self.rowf = cupy.arange(self.n, dtype=cupy.float64)
        # ideal DCG: gains sorted descending within each query (one-time global sort)
        if self.ranknet:
            sorted_gain = cupy.zeros(self.n, cupy.float64)
        else:
            order = cupy.lexsort(cupy.stack([-self.key, self.qid]))
            sorted_gain = self.key[order]
        self.inv_max_dcg = cupy.empty(n_queries, cupy.float64)
        self.qweight = cupy.empty(n_queries, cupy.float64)
        kernels.query_stats(sorted_gain, self.y, self.w, self.group_ptr,
                            min(self.truncation, max_cnt + 1), self.discount,
                            self.inv_max_dcg, self.qweight)
        big = sizes > _config.QUERY_SHARED_MAX_DOCS
        self.small = cupy.asarray(np.flatnonzero(~big).astype(np.int32))
        self.big = cupy.asarray(np.flatnonzero(big).astype(np.int32))
        self.small_max = int(sizes[~big].max(initial=0))
        self.scratch = cupy.empty(7 * self.n, cupy.float64) if big.any() else None
        # learning from clicks: the displayed positions on the device, the estimate's host
        # step (skltr._gbdt.position_bias) shared with the CPU
        spec = getattr(objective, "position_bias", None)
        self.host = None if spec is None else objective.host_round()
        self.unbiased = spec is not None and spec.unbiased
        self.xgboost_cost = spec is not None and spec.xgboost_cost
        if spec is not None:
            self.position = cupy.asarray(np.ascontiguousarray(objective.position, np.int64))
        if self.unbiased:
            self.li_row = cupy.empty(self.n, cupy.float64)
            self.lj_row = cupy.empty(self.n, cupy.float64)

    def gradients(self, scores, grad, hess, iteration=0):
        if self.host is None:
            self._pair_gradients(scores, grad, hess)
            return
        estimate = self.host.estimate
        if self.unbiased:
            # t+ / t- up (k doubles), the row costs down (16 bytes a row): the update's
            # sequential sums run on the host, so both devices estimate the same bits
            tplus, tminus = cupy.asarray(estimate.tplus), cupy.asarray(estimate.tminus)
            self._pair_gradients(scores, grad, hess, unbiased=(
                self.position, tplus, tminus, self.xgboost_cost, self.li_row, self.lj_row))
            self.host.update(cupy.asnumpy(self.li_row), cupy.asnumpy(self.lj_row))
        else:
            # LightGBM's additive form: scores + bias[position] (the CPU's shift_by_position),
            # the gradients there, and the bias's Newton step on the host (8 bytes a row)
            bias = cupy.asarray(estimate.bias)
            k = bias.size
            shown = cupy.minimum(self.position, k - 1)
            shifted = cupy.where(self.position < k, scores + bias[shown], scores)
            self._pair_gradients(shifted, grad, hess)
            self.host.update(cupy.asnumpy(grad), cupy.asnumpy(hess))

    def _pair_gradients(self, scores, grad, hess, unbiased=None):
        args = (self.inv_max_dcg if not self.ranknet else self.qweight, self.discount,
                np.int32(self.truncation), np.float64(self.sigmoid),
                np.int32(self.normalize), np.int32(self.ranknet), grad, hess)
        if self.small.size:
            kernels.pair_gradients(self.small, scores, self.key, self.group_ptr, self.qweight,
                                   args, (self.group_ptr, self.y, np.int64(self.n)),
                                   max_docs=self.small_max, unbiased=unbiased)
        if self.big.size:
            # global segmented sort: by query, then descending score, then row (stable)
            neg = -scores + 0.0  # + 0.0: -0.0 and 0.0 are one key, as for numpy's sort
            perm = cupy.lexsort(cupy.stack([self.rowf, neg, self.qid])).astype(cupy.int64)
            kernels.pair_gradients(self.big, scores, self.key, self.group_ptr, self.qweight,
                                   args, (perm, self.scratch, np.int64(self.n)),
                                   global_scratch=True, unbiased=unbiased)


def make_cuda_gradients(objective, y, group_ptr, sample_weight=None, query_index=None):
    """The device gradients of a host :class:`skltr._gbdt.objectives.Objective`.

    ``query_index``: the global index of each query when ``group_ptr`` holds a worker's
    share of them (``rank_xendcg`` seeds its gammas by it, ``yetirank`` its noise); None:
    ``0 .. n_queries - 1``.
    """
    return globals()[objective.cuda_gradients](objective, y, group_ptr, sample_weight,
                                               query_index)
