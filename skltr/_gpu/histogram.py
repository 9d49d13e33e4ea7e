"""GPU gradient histograms: shared-memory 32-bit integer atomics, several features per block.

Quantised gradients only (the quantisation rule of :mod:`skltr._gbdt.quantisation`, the same
scales as the CPU's): each row brings an int32 gradient ``q_g`` and a uint32 hessian ``q_h``
(:mod:`skltr._gpu.quantise`). Integer sums are exact in any order, so the atomics' arbitrary
order does not change a single bit: training is deterministic and equals the CPU engine
given the same gradients. The bins are always two words (sum of ``q_g``; row count above bit
``K`` of the hessian sum): the 32-bit shared limbs below count rows anyway, and the rule's
one-word scales keep hessian sums below ``2**32 <= 2**K`` (at most ``GH64_MAX_ROWS`` rows).

Why 32-bit limbs: on Hopper a 64-bit ``atomicAdd`` to shared memory compiles to a
compare-and-swap spin loop (``ATOMS.CAST.SPIN.64``, seen with ``cuobjdump``), which
collapses when many rows of a block hit the same bin; 32-bit adds are native (``ATOMS.ADD``).
So each value is split into 16-bit limbs, ``q = hi * 2**16 + lo`` (``lo`` in ``[0, 2**16)``,
``hi = q >> 16``: signed for gradients, unsigned for hessians), and a block sums at most
``2**16`` rows: every limb sum then fits 32 bits exactly (``lo`` and the hessian's ``hi``:
< 2**32 unsigned, the gradient's ``hi``: ``|.| <= 2**31``), and the flush recombines them in
int64.

One block = one row chunk (<= 65,536 rows) of one node x one group of ``FPB`` features::

    shared memory of one block (FPB features, NB = missing_bin + 1 bins each)
    +------------------------- feature 0 --------------------------+- feature 1 -+ ...
    | bin 0                           | bin 1   | ... | bin NB-1   | bin 0 | ... |
    | g_lo | g_hi | h_lo | h_hi | cnt | (5 x 32 bits, odd stride: few bank conflicts)
    +--------------------------------------------------------------+-------------+
      20 bytes per bin: 256 bins -> 5 KiB per feature -> 8 features in 48 KiB

    rows of the node (partition buffer) p = start .. end of the chunk: threads stride over
    them; per row FPB/4 uint32 loads of packed bins (4 features a word), 5 x FPB shared adds

    flush (zero-count bins skipped), global int64 atomics:
      hist[slot, f, b, 0] += g_hi * 2**16 + g_lo
      hist[slot, f, b, 1] += (cnt << K) + h_hi * 2**16 + h_lo     (CPU's packed layout)

The subtraction trick (:func:`subtract_histograms`): for a split node, only the smaller child
is built; the larger one is ``parent - smaller`` (exact in integers).
"""

from __future__ import annotations

import cupy
import numpy as np

from . import _config
from ._compile import NULL, blocks, module

_SOURCE = r"""
#define CELL 5
extern "C" __global__ void build_histograms(
        const u32* __restrict__ X, int words_per_row, int n_features, int n_bins_total,
        const u32* __restrict__ rows, const int* __restrict__ qg, const u32* __restrict__ qh,
        const i64* __restrict__ tasks, int count_shift, i64 slot_stride, i64* hist,
        const i64* __restrict__ n_tasks) {
    // tasks: per block (start, end, slot), 3 x int64; end - start <= 65536. n_tasks (when
    // not null): the tasks' count, on the device (a launch planned there, skltr._gpu.levels,
    // has a grid for the most tasks it may hold)
    if (n_tasks != nullptr && (i64)blockIdx.x >= n_tasks[0]) return;
    extern __shared__ u32 sh[];                    // [FPB][n_bins_total][CELL]
    const int fg = blockIdx.y;
    const int n_sh = FPB * n_bins_total * CELL;
    for (int k = threadIdx.x; k < n_sh; k += blockDim.x) sh[k] = 0;
    __syncthreads();
    const i64 start = tasks[3 * blockIdx.x], end = tasks[3 * blockIdx.x + 1];
    const int w0 = fg * (FPB / 4);
    const int n_words = min(FPB / 4, words_per_row - w0);
    for (i64 p = start + threadIdx.x; p < end; p += blockDim.x) {
        const i64 row = rows[p];
        const int g = qg[row];
        const u32 h = qh[row];
        const u32 g_lo = (u32)g & 0xffffu, g_hi = (u32)(g >> 16);   // arithmetic shift
        const u32 h_lo = h & 0xffffu, h_hi = h >> 16;                 // hessians >= 0
        const u32* xr = X + row * words_per_row + w0;
        for (int w = 0; w < n_words; ++w) {
            const u32 word = xr[w];
            #pragma unroll
            for (int b = 0; b < 4; ++b) {
                const int bin = (word >> (8 * b)) & 255u;
                u32* cell = &sh[((w * 4 + b) * n_bins_total + bin) * CELL];
                atomicAdd(cell, g_lo);
                atomicAdd(cell + 1, g_hi);                 // two's complement: signed sum
                atomicAdd(cell + 2, h_lo);
                atomicAdd(cell + 3, h_hi);
                atomicAdd(cell + 4, 1u);
            }
        }
    }
    __syncthreads();
    i64* out = hist + tasks[3 * blockIdx.x + 2] * slot_stride;
    const int f0 = fg * FPB;
    const int n_f = min(FPB, n_features - f0);     // pad features are not written back
    for (int k = threadIdx.x; k < n_f * n_bins_total; k += blockDim.x) {
        const u32* cell = &sh[k * CELL];
        const u32 cnt = cell[4];
        if (cnt == 0) continue;
        const i64 g = (i64)(int)cell[1] * 65536 + (i64)cell[0];
        const i64 h = (i64)cell[3] * 65536 + (i64)cell[2];
        i64* o = out + ((i64)f0 * n_bins_total + k) * 2;
        atomicAdd((u64*)o, (u64)g);
        atomicAdd((u64*)(o + 1), (u64)((((i64)cnt) << count_shift) + h));
    }
}

extern "C" __global__ void build_wide_histograms(
        const unsigned short* __restrict__ Xw, int n_wide, const u32* __restrict__ rows,
        const int* __restrict__ qg, const u32* __restrict__ qh,
        const i64* __restrict__ tasks, const i64* __restrict__ offsets, i64 wide_base,
        int count_shift, i64 slot_stride, i64* hist) {
    // The wide categorical features' rows of the slots (after the features' rows, from
    // wide_base): per row and wide feature one record, (q_g, (1 << K) + q_h), added
    // straight to global memory (a feature's codes outgrow shared memory); int64 sums are
    // exact in any order. Blocks take the histogram launch's tasks (start, end, slot).
    const i64 start = tasks[3 * blockIdx.x], end = tasks[3 * blockIdx.x + 1];
    i64* out = hist + tasks[3 * blockIdx.x + 2] * slot_stride + wide_base;
    for (i64 p = start + threadIdx.x; p < end; p += blockDim.x) {
        const i64 row = rows[p];
        const i64 g = (i64)qg[row];
        const i64 h = (((i64)1) << count_shift) + (i64)qh[row];
        for (int w = 0; w < n_wide; ++w) {
            i64* o = out + (offsets[w] + (i64)Xw[row * n_wide + w]) * 2;
            atomicAdd((u64*)o, (u64)g);
            atomicAdd((u64*)(o + 1), (u64)h);
        }
    }
}

extern "C" __global__ void subtract_histograms(const i64* parent, i64* child, const i64* slots,
                                               int m, i64 stride, const i64* n_active) {
    // slots: [parent (m) | small (m) | large (m)]; large may be the parent's slot (in place);
    // n_active (when not null): the triples to do, on the device (grid: m)
    const i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const int t = blockIdx.y;
    if (k >= stride || (n_active != nullptr && t >= n_active[0])) return;
    child[slots[2 * m + t] * stride + k] = parent[slots[t] * stride + k]
                                           - child[slots[m + t] * stride + k];
}

extern "C" __global__ void zero_histograms(i64* hist, const i64* slots, i64 stride,
                                           const i64* n_active) {
    const i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (n_active != nullptr && blockIdx.y >= n_active[0]) return;
    if (k < stride) hist[slots[blockIdx.y] * stride + k] = 0;
}
"""


#: Bytes of one bin of the shared histogram (5 x 32-bit limbs and count).
_CELL_BYTES = 20
#: Most rows one block may add before its 32-bit limb sums could overflow.
MAX_ROWS_PER_BLOCK = 65536


@cupy.memoize(for_each_device=True)
def _module(fpb):
    return module(_SOURCE, {"FPB": fpb})


def features_per_block(n_bins_total: int, n_features: int) -> int:
    """Features of one histogram block: as many as ``HIST_SHARED_BYTES`` holds, a multiple of 4."""
    fit = _config.HIST_SHARED_BYTES // (_CELL_BYTES * int(n_bins_total))
    fpb = min(fit, _config.HIST_MAX_FEATURES_PER_BLOCK, -(-int(n_features) // 4) * 4)
    return max(4, fpb // 4 * 4)


def build_histograms(X_words, rows, qg, qh, tasks, hist, n_features, n_bins_total,
                     count_shift, n_tasks=None):
    """Add the rows of every task to its histogram slot (``hist`` must start at zero there).

    Parameters
    ----------
    X_words : cupy.ndarray of uint32, shape (n_samples, words_per_row)
        The binned matrix viewed as words (:func:`skltr._gpu.binning.map_to_bins`).
    rows : cupy.ndarray of uint32
        Partition buffer: every node owns a contiguous range of it.
    qg : cupy.ndarray of int32, shape (n_samples,)
    qh : cupy.ndarray of uint32, shape (n_samples,)
        Quantised hessians.
    tasks : cupy.ndarray of int64, shape (n_tasks, 3)
        ``(start, end, slot)``: one row chunk of one node each (:func:`row_chunk_tasks`).
    hist : cupy.ndarray of int64, shape (n_slots, n_rows, n_bins_total, 2)
        Channel 0: sum of ``q_g``; channel 1: ``(count << count_shift) + sum of q_h``. The
        features' rows come first (``n_rows > n_features``: the wide categorical features'
        rows follow, :func:`build_wide_histograms`).
    count_shift : int
        ``K`` of the packed hessian channel (as the CPU engine's).
    n_tasks : cupy.ndarray of int64, shape (1,), optional
        The tasks to do, on the device: the first ``n_tasks[0]`` rows of ``tasks``, whose
        rows are the most there may be (a level planned on the device, :mod:`skltr._gpu.
        levels`). None: every row.
    """
    if tasks.size == 0:
        return
    tasks = cupy.asarray(tasks)
    fpb = features_per_block(n_bins_total, n_features)
    n_groups = -(-int(n_features) // fpb)
    kern = _module(fpb).get_function("build_histograms")
    smem = fpb * int(n_bins_total) * _CELL_BYTES
    if smem > 48 * 1024:  # above the default: opt in (Hopper allows up to 227 KiB)
        kern.max_dynamic_shared_size_bytes = smem
    kern((int(tasks.shape[0]), n_groups), (_config.HIST_THREADS,),
         (X_words, np.int32(X_words.shape[1]), np.int32(n_features), np.int32(n_bins_total),
          rows, qg, qh, tasks, np.int32(count_shift),
          np.int64(hist.shape[1] * hist.shape[2] * 2), hist,
          NULL if n_tasks is None else n_tasks),
         shared_mem=smem)


def build_wide_histograms(X_wide, rows, qg, qh, tasks, hist, n_features, offsets,
                          count_shift):
    """Add the rows of every task to its slot's wide categorical rows (``hist`` zeroed there).

    ``X_wide``: uint16 codes, shape (n_samples, n_wide) (:mod:`skltr._engine.wide_categorical`);
    ``offsets``: cupy int64, each wide feature's code-0 record after the features' rows;
    the rest as :func:`build_histograms` (the same ``tasks``: one block each).
    """
    if tasks.size == 0 or X_wide.shape[1] == 0:
        return
    tasks = cupy.asarray(tasks)
    n_bins_total = hist.shape[2]
    fpb = features_per_block(n_bins_total, n_features)  # build_histograms' module
    _module(fpb).get_function("build_wide_histograms")(
        (int(tasks.shape[0]),), (_config.HIST_THREADS,),
        (X_wide, np.int32(X_wide.shape[1]), rows, qg, qh, tasks, offsets,
         np.int64(n_features * n_bins_total * 2), np.int32(count_shift),
         np.int64(hist.shape[1] * n_bins_total * 2), hist))


def row_chunk_tasks(starts, ends, slots, n_feature_groups):
    """Host-side task lists of a histogram launch: each node's range cut into row chunks.

    The chunk is ``HIST_ROWS_PER_BLOCK`` rows, lowered (to ``HIST_MIN_ROWS_PER_BLOCK`` at
    least) when the level holds too few rows to give ``HIST_TARGET_BLOCKS`` blocks.

    Returns
    -------
    ndarray of int64, shape (n_tasks, 3)
        ``(start, end, slot)`` per block.
    """
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    total = int(np.sum(ends - starts))
    per_group = max(1, _config.HIST_TARGET_BLOCKS // max(1, n_feature_groups))
    chunk = min(_config.HIST_ROWS_PER_BLOCK, MAX_ROWS_PER_BLOCK,
                max(_config.HIST_MIN_ROWS_PER_BLOCK, -(-total // per_group)))
    n_chunks = np.maximum(1, -(-(ends - starts) // chunk))
    owner = np.repeat(np.arange(starts.size), n_chunks)
    first = np.repeat(np.cumsum(n_chunks) - n_chunks, n_chunks)
    t_start = starts[owner] + (np.arange(owner.size) - first) * chunk
    t_end = np.minimum(t_start + chunk, ends[owner])
    t_slot = np.asarray(slots, np.int64)[owner]
    return np.stack([t_start, t_end, t_slot], axis=1)


def subtract_histograms(parent_hist, child_hist, slots, n_active=None):
    """``child[large] = parent[p] - child[small]`` for every (p, small, large) column of
    ``slots`` (int64, shape (3, m), host or device); ``large`` may be ``p`` when the two
    arrays are one (in place). ``n_active`` (device int64, shape (1,)): only the first
    ``n_active[0]`` columns (a level planned on the device)."""
    m = int(slots.shape[1])
    if m == 0:
        return
    stride = int(np.prod(child_hist.shape[1:]))
    t = _config.ELEMENTWISE_THREADS
    _module(4).get_function("subtract_histograms")(
        (blocks(stride, t), m), (t,),
        (parent_hist, child_hist, cupy.asarray(slots), np.int32(m), np.int64(stride),
         NULL if n_active is None else n_active))


def zero_histograms(hist, slots, n_active=None):
    """``hist[s] = 0`` for every slot ``s`` of ``slots`` (int64, host or device); with
    ``n_active`` (device int64, shape (1,)) for the first ``n_active[0]`` only."""
    m = int(slots.size)
    if m == 0:
        return
    stride = int(np.prod(hist.shape[1:]))
    t = _config.ELEMENTWISE_THREADS
    _module(4).get_function("zero_histograms")(
        (blocks(stride, t), m), (t,), (hist, cupy.asarray(slots), np.int64(stride),
                                       NULL if n_active is None else n_active))
