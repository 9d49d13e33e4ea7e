"""GPU gradient histograms: shared-memory integer atomics, several features per block.

Quantised gradients only (``hist_mode="quantised"`` of the CPU engine, the same scaling rule
:func:`skltr._gbdt.grower.quantisation_exponent`): each row brings an int32 gradient ``q_g``
and an int64 ``(1 << K) + q_h`` (hessian with the row count packed above bit ``K``), and
histograms add int64. Integer sums are exact in any order, so the atomics' arbitrary order
does not change a single bit: training is deterministic and equals the CPU quantised engine
given the same gradients.

One block = one row chunk of one node x one group of ``FPB`` features. Its histogram lives in
shared memory; after the chunk it is added (global int64 atomics, zero entries skipped) to the
node's histogram in global memory::

    shared memory of one block (FPB features, NB = missing_bin + 1 bins each)
    +--------------------- feature 0 ---------------------+---- feature 1 ----+ ... FPB-1
    | bin 0      | bin 1      | ... | bin NB-1 (missing)  | bin 0 | ...       |
    | g64 | hc64 | g64 | hc64 |     | g64 | hc64          |       |           |
    +-----------------------------------------------------+-------------------+
      16 bytes per bin: 256 bins -> 4 KiB per feature -> 12 features in 48 KiB

    rows of the node (partition buffer)  p = start + chunk * R ... : threads stride over them
    per row: FPB/4 uint32 loads of packed bins, FPB x 2 shared atomicAdd (int64)

    global: hist[slot, feature, bin, channel]  (channel 0: sum q_g, 1: sum (1<<K) + q_h)

The subtraction trick (:func:`subtract_histograms`): for a split node, only the smaller child
is built; the larger one is ``parent - smaller`` (exact in integers).
"""

from __future__ import annotations

import cupy
import numpy as np

from . import _config
from ._compile import blocks, module

_SOURCE = r"""
extern "C" __global__ void build_histograms(
        const u32* __restrict__ X, int words_per_row, int n_features, int n_bins_total,
        const u32* __restrict__ rows, const int* __restrict__ qg, const i64* __restrict__ qhc,
        const i64* __restrict__ task_start, const i64* __restrict__ task_end,
        const int* __restrict__ task_slot, i64* hist) {
    extern __shared__ i64 sh[];                    // [FPB][n_bins_total][2]
    const int fg = blockIdx.y;
    const int n_sh = FPB * n_bins_total * 2;
    for (int k = threadIdx.x; k < n_sh; k += blockDim.x) sh[k] = 0;
    __syncthreads();
    const i64 start = task_start[blockIdx.x], end = task_end[blockIdx.x];
    const int w0 = fg * (FPB / 4);
    const int n_words = min(FPB / 4, words_per_row - w0);
    for (i64 p = start + threadIdx.x; p < end; p += blockDim.x) {
        const i64 row = rows[p];
        const u64 g = (u64)(i64)qg[row];           // sign-extended: two's complement adds
        const u64 h = (u64)qhc[row];
        const u32* xr = X + row * words_per_row + w0;
        for (int w = 0; w < n_words; ++w) {
            const u32 word = xr[w];
            #pragma unroll
            for (int b = 0; b < 4; ++b) {
                const int fl = w * 4 + b;
                const int bin = (word >> (8 * b)) & 255u;
                u64* cell = (u64*)&sh[(fl * n_bins_total + bin) * 2];
                atomicAdd(cell, g);
                atomicAdd(cell + 1, h);
            }
        }
    }
    __syncthreads();
    i64* out = hist + (i64)task_slot[blockIdx.x] * n_features * n_bins_total * 2;
    const int f0 = fg * FPB;
    const int n_f = min(FPB, n_features - f0);     // pad features are not written back
    for (int k = threadIdx.x; k < n_f * n_bins_total * 2; k += blockDim.x) {
        const i64 v = sh[k];
        if (v != 0) atomicAdd((u64*)&out[(i64)f0 * n_bins_total * 2 + k], (u64)v);
    }
}

extern "C" __global__ void subtract_histograms(const i64* parent, i64* child, const int* p_slot,
                                               const int* small_slot, const int* large_slot,
                                               i64 stride) {
    const i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= stride) return;
    const int t = blockIdx.y;
    child[large_slot[t] * stride + k] = parent[p_slot[t] * stride + k]
                                        - child[small_slot[t] * stride + k];
}
"""


@cupy.memoize(for_each_device=True)
def _module(fpb):
    return module(_SOURCE, {"FPB": fpb})


def features_per_block(n_bins_total: int, n_features: int) -> int:
    """Features of one histogram block: as many as ``HIST_SHARED_BYTES`` holds, a multiple of 4."""
    fit = _config.HIST_SHARED_BYTES // (16 * int(n_bins_total))
    fpb = min(fit, _config.HIST_MAX_FEATURES_PER_BLOCK, -(-int(n_features) // 4) * 4)
    return max(4, fpb // 4 * 4)


def build_histograms(X_words, rows, qg, qhc, tasks, hist, n_features, n_bins_total):
    """Add the rows of every task to its histogram slot (``hist`` must start at zero there).

    Parameters
    ----------
    X_words : cupy.ndarray of uint32, shape (n_samples, words_per_row)
        The binned matrix viewed as words (:func:`skltr._gpu.binning.map_to_bins`).
    rows : cupy.ndarray of uint32
        Partition buffer: every node owns a contiguous range of it.
    qg : cupy.ndarray of int32, shape (n_samples,)
    qhc : cupy.ndarray of int64, shape (n_samples,)
        ``(1 << K) + q_h``: the hessian with the row count packed above bit ``K``.
    tasks : tuple of 3 cupy.ndarray (int64 start, int64 end, int32 slot)
        One row chunk of one node each (see :func:`row_chunk_tasks`).
    hist : cupy.ndarray of int64, shape (n_slots, n_features, n_bins_total, 2)
    """
    start, end, slot = tasks
    if start.size == 0:
        return
    fpb = features_per_block(n_bins_total, n_features)
    n_groups = -(-int(n_features) // fpb)
    kern = _module(fpb).get_function("build_histograms")
    kern((int(start.size), n_groups), (_config.HIST_THREADS,),
         (X_words, np.int32(X_words.shape[1]), np.int32(n_features), np.int32(n_bins_total),
          rows, qg, qhc, start, end, slot, hist),
         shared_mem=fpb * int(n_bins_total) * 16)


def row_chunk_tasks(starts, ends, slots, n_feature_groups):
    """Host-side task lists of a histogram launch: each node's range cut into row chunks.

    The chunk is ``HIST_ROWS_PER_BLOCK`` rows, lowered (to ``HIST_MIN_ROWS_PER_BLOCK`` at
    least) when the level holds too few rows to give ``HIST_TARGET_BLOCKS`` blocks.

    Returns
    -------
    (start, end, slot) : cupy arrays (int64, int64, int32)
    """
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    total = int(np.sum(ends - starts))
    per_group = max(1, _config.HIST_TARGET_BLOCKS // max(1, n_feature_groups))
    chunk = min(_config.HIST_ROWS_PER_BLOCK,
                max(_config.HIST_MIN_ROWS_PER_BLOCK, -(-total // per_group)))
    n_chunks = np.maximum(1, -(-(ends - starts) // chunk))
    owner = np.repeat(np.arange(starts.size), n_chunks)
    first = np.repeat(np.cumsum(n_chunks) - n_chunks, n_chunks)
    t_start = starts[owner] + (np.arange(owner.size) - first) * chunk
    t_end = np.minimum(t_start + chunk, ends[owner])
    t_slot = np.asarray(slots, np.int32)[owner]
    return (cupy.asarray(t_start), cupy.asarray(t_end), cupy.asarray(t_slot))


def subtract_histograms(parent_hist, child_hist, parent_slots, small_slots, large_slots):
    """``child[large] = parent[p] - child[small]`` for every (p, small, large) triple."""
    if len(parent_slots) == 0:
        return
    stride = int(np.prod(child_hist.shape[1:]))
    kern = _module(4).get_function("subtract_histograms")
    t = _config.ELEMENTWISE_THREADS
    kern((blocks(stride, t), len(parent_slots)), (t,),
         (parent_hist, child_hist, cupy.asarray(np.asarray(parent_slots, np.int32)),
          cupy.asarray(np.asarray(small_slots, np.int32)),
          cupy.asarray(np.asarray(large_slots, np.int32)), np.int64(stride)))
