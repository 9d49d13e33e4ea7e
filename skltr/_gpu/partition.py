"""GPU row partitioning: split the row ranges of every split node of a level at once.

Rows live in one buffer (uint32 row ids) with a parallel array ``pos_node`` holding the node
id of every position; each node owns a contiguous range, as in the CPU grower. A level's
split is a stable partition of every split node's range (left rows first, order kept):

1. ``partition_flags``: per position, 1 when the row goes left at its node's split, and per
   block of positions its count of such rows;
2. the inclusive scan of the flags in two launches, ``scan_block_counts`` (one block: each
   block's offset) and ``scan_apply`` (offset + the rank in the block); ``cupy.cumsum`` did
   the same with about 70 us of host time a level (measured on the H100 host, 2026-11-28);
3. ``partition_scatter``: a left row of a node starting at ``s`` goes to
   ``s + (#left rows of the node before it)``, a right row to
   ``s + n_left + (#right rows before it)``; ``pos_node`` gets the child id. Positions of
   nodes that are not split are copied unchanged.

``n_left`` is read off the scan, not taken from the split record: in a distributed fit the
record's left count is the global one and a worker holds a part of the node's rows.

::

    buffer     | 7 2 9 4 1 | 3 8 |        node 1 (split) | node 2 (leaf)
    flags        1 0 0 1 1   0 0
    after      | 7 4 1 2 9 | 3 8 |        node 3 = [7 4 1], node 4 = [2 9]
"""

from __future__ import annotations

import cupy
import numpy as np

from . import _config
from ._compile import NULL, blocks, module

_SOURCE = r"""
// info: [split_of_node (n_nodes) | per split: feature, bin, default_left, start, end,
//        left_id, right_id, bits (8 x int64) | left bins of categorical splits (4 words
//        each, more for a wide feature)], one host->device copy per level; a categorical
//        split has bin -1, ``bits`` the position of its words in info and, on a wide
//        categorical feature, ``default_left`` its column of Xw plus one
extern "C" __global__ void partition_flags(const u32* buf, const int* pos_node, i64 n_used,
                                           const i64* info, int n_nodes, const u8* X,
                                           int stride, const unsigned short* Xw, int n_wide,
                                           int missing_bin, int* flags, int* block_counts) {
    const i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    int go_left = 0;
    if (p < n_used) {
        const i64 s = info[pos_node[p]];
        if (s >= 0) {
            const i64* r = info + n_nodes + s * 8;
            const i64 row = buf[p];
            const int b = (r[1] < 0 && r[2] > 0) ? (int)Xw[row * n_wide + r[2] - 1]
                                                  : (int)X[row * stride + r[0]];
            if (r[1] < 0)
                go_left = (int)(((unsigned long long)info[r[7] + (b >> 6)] >> (b & 63)) & 1);
            else go_left = (b == missing_bin) ? (int)r[2] : (b <= r[1]);
        }
        flags[p] = go_left;
    }
    const int in_block = __syncthreads_count(go_left);
    if (threadIdx.x == 0) block_counts[blockIdx.x] = in_block;
}

// One block: block_counts -> exclusive offsets, in place. Thread k sums a run of counts,
// the block scans the runs' sums, thread k writes its run's offsets.
extern "C" __global__ void scan_block_counts(int* counts, int n) {
    __shared__ int warp_sums[32];
    const int per = (n + blockDim.x - 1) / blockDim.x;
    const int lo = min(n, (int)threadIdx.x * per), hi = min(n, lo + per);
    int sum = 0;
    for (int k = lo; k < hi; ++k) sum += counts[k];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int incl = sum;
    #pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int u = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += u;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        const int n_warps = blockDim.x >> 5;
        int w = lane < n_warps ? warp_sums[lane] : 0;
        #pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int u = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += u;
        }
        if (lane < n_warps) warp_sums[lane] = w;     // inclusive over warps
    }
    __syncthreads();
    int run = incl - sum + (warp > 0 ? warp_sums[warp - 1] : 0);   // exclusive
    for (int k = lo; k < hi; ++k) { const int c = counts[k]; counts[k] = run; run += c; }
}

// scan[p] = flags[0] + ... + flags[p]: the block's offset plus the rank in the block
extern "C" __global__ void scan_apply(const int* flags, i64 n_used, const int* offsets,
                                      int* scan) {
    __shared__ int warp_sums[32];
    const i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const int f = p < n_used ? flags[p] : 0;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned ballot = __ballot_sync(0xffffffffu, f);
    const int in_warp = __popc(ballot & (0xffffffffu >> (31 - lane)));   // inclusive
    if (lane == 31) warp_sums[warp] = __popc(ballot);
    __syncthreads();
    int before = offsets[blockIdx.x];
    for (int w = 0; w < warp; ++w) before += warp_sums[w];
    if (p < n_used) scan[p] = before + in_warp;
}

extern "C" __global__ void partition_scatter(const u32* buf, const int* pos_node, i64 n_used,
                                             const i64* info, int n_nodes, const int* flags,
                                             const int* scan, u32* new_buf, int* new_pos) {
    const i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_used) return;
    const i64 s = info[pos_node[p]];
    if (s < 0) { new_buf[p] = buf[p]; new_pos[p] = pos_node[p]; return; }
    const i64* r = info + n_nodes + s * 8;
    const i64 start = r[3];
    const i64 before = start > 0 ? scan[start - 1] : 0;
    const i64 n_left = (i64)scan[r[4] - 1] - before;           // p < end: the range is not empty
    const i64 left_rank = (i64)scan[p] - flags[p] - before;   // left rows before p
    i64 dst;
    if (flags[p]) { dst = start + left_rank; new_pos[dst] = (int)r[5]; }
    else { dst = start + n_left + (p - start - left_rank); new_pos[dst] = (int)r[6]; }
    new_buf[dst] = buf[p];
}
"""


@cupy.memoize(for_each_device=True)
def _kernels():
    mod = module(_SOURCE)
    return {name: mod.get_function(name) for name in ("partition_flags", "scan_block_counts",
                                                      "scan_apply", "partition_scatter")}


#: Threads of the one-block scan of the block counts (a run of counts each)
_SCAN_THREADS = 1024


def partition_info(n_nodes, splits, cat_bits=None, wide_column=None):
    """The launch's record (host int64): ``split_of_node``, 8 words per split, then the left
    bins of the categorical splits.

    ``splits``: ``(node_id, feature, bin, default_left, start, end, left_id, right_id)``
    per split node; ``n_nodes``: node ids so far (children included); ``cat_bits``: per
    split its left bins (uint64 words: 4, more on a wide categorical feature) or None (a
    threshold split); None for none. ``wide_column``: per split the column of the wide
    codes its feature reads, or -1 (the byte matrix); None: all -1.
    """
    m = len(splits)
    cat = [] if cat_bits is None else [k for k, bits in enumerate(cat_bits) if bits is not None]
    n_words = [len(cat_bits[k]) for k in cat]
    info = np.empty(n_nodes + 8 * m + sum(n_words), np.int64)
    info[:n_nodes] = -1
    info[np.asarray([sp[0] for sp in splits], np.int64)] = np.arange(m)
    rec = info[n_nodes:n_nodes + 8 * m].reshape(m, 8)
    rec[:, :7] = np.asarray([sp[1:] for sp in splits], np.int64).reshape(m, 7)
    rec[:, 7] = 0
    at = n_nodes + 8 * m
    for k, nw in zip(cat, n_words):
        info[at:at + nw] = np.asarray(cat_bits[k], np.uint64).view(np.int64)
        rec[k, 1], rec[k, 7] = -1, at
        if wide_column is not None and wide_column[k] >= 0:
            rec[k, 2] = wide_column[k] + 1
        at += nw
    return info


def partition_level(buf, pos_node, X_bytes, missing_bin, n_nodes, info, left_counts=False,
                    n_splits=None, X_wide=None):
    """Partition the ranges of the split nodes of one level; returns ``(buf, pos_node)``.

    Parameters
    ----------
    buf : cupy.ndarray of uint32, shape (n_used,)
    pos_node : cupy.ndarray of int32, shape (n_used,)
    X_bytes : cupy.ndarray of uint8, shape (n_samples, stride)
    missing_bin : int
    n_nodes : int
        Number of node ids so far (children included).
    info : ndarray or cupy.ndarray of int64
        :func:`partition_info` (on the device already, or copied there).
    left_counts : bool
        Also return each split's count of left rows in this buffer (ndarray of int64, one
        device->host read): a distributed grower's child ranges.
    n_splits : int or None
        The splits in ``info`` (None: no categorical words follow the records).
    X_wide : cupy.ndarray of uint16, shape (n_samples, n_wide), or None
        The wide categorical features' codes, read by the splits ``info`` gives a column.

    Returns
    -------
    (cupy.ndarray, cupy.ndarray) or (cupy.ndarray, cupy.ndarray, ndarray)
        The new buffer and node-of-position arrays (and the left counts).
    """
    n_used = buf.size
    dev = cupy.asarray(info)
    m = (dev.size - n_nodes) // 8 if n_splits is None else int(n_splits)
    k = _kernels()
    t = _config.ELEMENTWISE_THREADS
    n_blocks = blocks(n_used, t)
    flags = cupy.empty(n_used, cupy.int32)
    scan = cupy.empty(n_used, cupy.int32)
    offsets = cupy.empty(n_blocks, cupy.int32)
    k["partition_flags"](
        (n_blocks,), (t,),
        (buf, pos_node, np.int64(n_used), dev, np.int32(n_nodes), X_bytes,
         np.int32(X_bytes.shape[1]), NULL if X_wide is None else X_wide,
         np.int32(0 if X_wide is None else X_wide.shape[1]), np.int32(missing_bin), flags,
         offsets))
    k["scan_block_counts"]((1,), (_SCAN_THREADS,), (offsets, np.int32(n_blocks)))
    k["scan_apply"]((n_blocks,), (t,), (flags, np.int64(n_used), offsets, scan))
    new_buf = cupy.empty_like(buf)
    new_pos = cupy.empty_like(pos_node)
    k["partition_scatter"](
        (blocks(n_used, t),), (t,),
        (buf, pos_node, np.int64(n_used), dev, np.int32(n_nodes), flags, scan, new_buf,
         new_pos))
    if not left_counts:
        return new_buf, new_pos
    # left rows of [start, end): scan[end - 1] - scan[start - 1], with scan[-1] read as 0
    padded = cupy.concatenate([cupy.zeros(1, cupy.int64), scan.astype(cupy.int64)])
    bounds = dev[n_nodes:n_nodes + 8 * m].reshape(m, 8)[:, 3:5]
    n_left = (padded[bounds[:, 1]] - padded[bounds[:, 0]]).get()
    return new_buf, new_pos, n_left
