"""Depth-wise trees planned on the device: a level's decisions without a host round trip.

A depth-wise GPU tree grown through the growth driver (:mod:`skltr._gbdt.growth`) reads its
split records to the host once a level and plans the next level there (children, histogram
slots, row-chunk tasks, split-search records): on an H100 a 1M x 136 depth-8 round was 7.5
ms of GPU work and 4.7 ms of host time between the levels, the GPU idle while the host
planned (``docs/gbdt_gpu.rst``). Here one single-block kernel, :func:`plan_level`, takes
those decisions on the device, by the driver's rule, and the level's launches read their
counts from the device (their grids hold the most there may be; blocks beyond the count
return at once): the host queues every level of a tree without waiting, and reads the
tree once, at the end.

The driver's depth-wise rule, where it holds here (``max_leaves >= 2**max_depth``: no level
is cut to the leaves still allowed, every child of a split below ``max_depth`` may split by
the leaf count): a level's nodes with a split are split in decreasing gain, ties to the
lowest id, so the ``r``-th of them gets children ``next + 2r`` (left) and ``next + 2r + 1``
(right), the one-at-a-time ids of the driver; a child may split when it is above
``max_depth`` and has ``2 * min_samples_leaf`` rows. Histogram slots as the CUDA back-end's:
the smaller child of a split that has a child to search takes a new slot (built), the larger
one its parent's (``parent - smaller``, in place); slots of nodes that will not be searched
go back to a free stack on the device (after the level's pops, so none is reused before the
next level).

The node table (``NODE_WORDS`` int64 a node, ids in creation order)::

    start end sum_g sum_h count slot depth | feature gain bin default_left left_g left_h
    left_count | left_child -1 (none)

The state (int64): ``[level_first, level_end, n_find, n_tasks, n_pairs, free_top, error]``
(``error`` 1: the free stack ran out, which the slots' count rules out).
"""

from __future__ import annotations

import cupy
import numpy as np

from . import _config
from ._compile import module

#: int64 words of a node of the table (the module docstring's fields, one pad word)
NODE_WORDS = 16
#: the table's columns (the kernel's T_* words)
COLUMNS = {"start": 0, "end": 1, "sum_g": 2, "sum_h": 3, "count": 4, "slot": 5, "depth": 6,
           "feature": 7, "gain": 8, "bin": 9, "default_left": 10, "left_g": 11, "left_h": 12,
           "left_count": 13, "left": 14}
#: the most nodes a level may hold (one thread a node in :func:`plan_level`'s block)
MAX_LEVEL_NODES = 512
#: the deepest tree planned on the device (its last planned level holds 2**(depth-1) nodes)
MAX_DEPTH = 10

_SOURCE = r"""
#define NW 16
#define T_START 0
#define T_END 1
#define T_G 2
#define T_H 3
#define T_N 4
#define T_SLOT 5
#define T_DEPTH 6
#define T_FEAT 7
#define T_GAIN 8
#define T_BIN 9
#define T_DL 10
#define T_LG 11
#define T_LH 12
#define T_LC 13
#define T_LEFT 14
#define POS_INF (__longlong_as_double(0x7ff0000000000000LL))

// exclusive prefix sum of v over the block (blockDim.x <= 1024, a power of two); *total
// gets the sum. sh: blockDim.x i64 of shared memory.
__device__ i64 block_scan(i64 v, i64* sh, i64* total) {
    const int t = threadIdx.x;
    __syncthreads();
    sh[t] = v;
    __syncthreads();
    for (int o = 1; o < blockDim.x; o <<= 1) {
        const i64 u = t >= o ? sh[t - o] : 0;
        __syncthreads();
        sh[t] += u;
        __syncthreads();
    }
    const i64 incl = sh[t];
    *total = sh[blockDim.x - 1];
    __syncthreads();
    return incl - v;
}

// One block of MAX_LEVEL_NODES threads, thread k for the level's k-th node.
extern "C" __global__ void plan_level(
        i64* T, i64* state, const i64* out, i64* find_ids, i64* free_slots, i64* info,
        int cap_nodes, i64* tasks, i64* zero_slots, i64* triples, int cap_pairs,
        i64* find_rec, int max_depth, i64 min_rows, int per_group, i64 rows_per_block,
        i64 min_rows_per_block) {
    __shared__ i64 sh[MAX_LEVEL_NODES];
    __shared__ double gains[MAX_LEVEL_NODES];
    __shared__ int valid[MAX_LEVEL_NODES];
    const int k = threadIdx.x;
    const i64 first = state[0], end = state[1], n_found = state[2];
    i64 top = state[5];
    // 1. the last search's records into the table
    for (i64 j = k; j < n_found; j += blockDim.x) {
        i64* node = T + find_ids[j] * NW;
        for (int w = 0; w < 7; ++w) node[T_FEAT + w] = out[8 * j + w];
    }
    __syncthreads();
    // 2. the split nodes of the level, by decreasing gain (ties: lowest id)
    const int m = (int)(end - first);
    const i64 id = first + k;
    i64* node = T + id * NW;
    const bool in_level = k < m;
    const bool split = in_level && node[T_FEAT] >= 0;
    valid[k] = split;
    gains[k] = split ? __longlong_as_double(node[T_GAIN]) : NEG_INF;
    __syncthreads();
    int rank = 0;
    if (split)
        for (int j = 0; j < m; ++j)
            rank += valid[j] && (gains[j] > gains[k] || (gains[j] == gains[k] && j < k));
    i64 n_split;
    block_scan(split, sh, &n_split);
    // 3. the children, their slots and what the level's launches do
    i64 left = -1, n_left = 0, n_right = 0, l_start = 0, mid = 0, r_end = 0, slot = -1;
    bool may_l = false, may_r = false;
    if (split) {
        left = end + 2 * rank;
        const i64 start = node[T_START], stop = node[T_END], count = node[T_N];
        n_left = node[T_LC];
        n_right = count - n_left;
        l_start = start; mid = start + n_left; r_end = stop;
        const i64 depth = node[T_DEPTH] + 1;
        may_l = depth < max_depth && n_left >= min_rows;
        may_r = depth < max_depth && n_right >= min_rows;
        i64* l = T + left * NW;
        i64* r = l + NW;
        l[T_START] = start; l[T_END] = mid; l[T_G] = node[T_LG]; l[T_H] = node[T_LH];
        l[T_N] = n_left;
        r[T_START] = mid; r[T_END] = stop; r[T_G] = node[T_G] - node[T_LG];
        r[T_H] = node[T_H] - node[T_LH]; r[T_N] = n_right;
        for (i64* c = l; c <= r; c += NW) {
            c[T_SLOT] = -1; c[T_DEPTH] = depth; c[T_FEAT] = -1; c[T_LEFT] = -1;
        }
        node[T_LEFT] = left;
        info[id] = rank;
        i64* rec = info + cap_nodes + 8 * (i64)rank;
        rec[0] = node[T_FEAT]; rec[1] = node[T_BIN]; rec[2] = node[T_DL]; rec[3] = start;
        rec[4] = stop; rec[5] = left; rec[6] = left + 1; rec[7] = 0;
    }
    if (in_level) slot = node[T_SLOT];
    const bool pair = may_l || may_r;            // a child to search: the smaller is built
    const bool small_left = n_left <= n_right;
    i64 n_pairs;
    const i64 p = block_scan(pair, sh, &n_pairs);
    if (top < n_pairs) {                         // no free slot left: the host raises
        if (k == 0) { state[0] = end; state[1] = end; state[2] = state[3] = state[4] = 0;
                      state[6] = 1; }
        return;
    }
    // the slot a node gives back: a parent's without a child to search (or without a split,
    // searched), else the slot of a child that may not split
    i64 give = -1, new_slot = -1;
    if (pair) {
        new_slot = free_slots[top - 1 - p];
        const bool may_small = small_left ? may_l : may_r;
        const bool may_large = small_left ? may_r : may_l;
        i64* small = T + (left + (small_left ? 0 : 1)) * NW;
        i64* large = T + (left + (small_left ? 1 : 0)) * NW;
        small[T_SLOT] = may_small ? new_slot : -1;
        large[T_SLOT] = may_large ? slot : -1;
        if (!may_small) give = new_slot;
        if (!may_large) give = slot;
        zero_slots[p] = new_slot;
        triples[p] = slot; triples[cap_pairs + p] = new_slot; triples[2 * cap_pairs + p] = slot;
    } else if (slot >= 0) {
        give = slot;
    }
    if (in_level) node[T_SLOT] = -1;
    top -= n_pairs;
    i64 n_give;
    const i64 g = block_scan(give >= 0, sh, &n_give);
    if (give >= 0) free_slots[top + g] = give;
    // the smaller children's row chunks (as row_chunk_tasks: one chunk size for the level)
    const i64 small_rows = pair ? (small_left ? n_left : n_right) : 0;
    i64 total_rows;
    block_scan(small_rows, sh, &total_rows);
    const i64 chunk = min(rows_per_block, max(min_rows_per_block,
                                              (total_rows + per_group - 1) / per_group));
    const i64 n_chunks = pair ? max((i64)1, (small_rows + chunk - 1) / chunk) : 0;
    i64 n_tasks;
    const i64 t0 = block_scan(n_chunks, sh, &n_tasks);
    if (pair) {
        const i64 s0 = small_left ? l_start : mid, s1 = small_left ? mid : r_end;
        for (i64 c = 0; c < n_chunks; ++c) {
            i64* task = tasks + 3 * (t0 + c);
            task[0] = s0 + c * chunk;
            task[1] = min(s0 + (c + 1) * chunk, s1);
            task[2] = new_slot;
        }
    }
    // the children to search: their split-search records (left first)
    i64 n_find;
    const i64 f = block_scan((i64)may_l + (i64)may_r, sh, &n_find);
    if (pair) {
        i64 j = f;
        for (int side = 0; side < 2; ++side) {
            if (!(side == 0 ? may_l : may_r)) continue;
            const i64 c = left + side;
            const i64* ch = T + c * NW;
            i64* rec = find_rec + 8 * j;
            rec[0] = ch[T_SLOT]; rec[1] = ch[T_G]; rec[2] = ch[T_H]; rec[3] = ch[T_N];
            rec[4] = __double_as_longlong(NEG_INF); rec[5] = __double_as_longlong(POS_INF);
            rec[6] = 0; rec[7] = 0;
            find_ids[j] = c;
            ++j;
        }
    }
    __syncthreads();
    if (k == 0) {
        state[0] = end; state[1] = end + 2 * n_split; state[2] = n_find; state[3] = n_tasks;
        state[4] = n_pairs; state[5] = top + n_give;
    }
}
"""


@cupy.memoize(for_each_device=True)
def _plan_kernel():
    return module(_SOURCE, {"MAX_LEVEL_NODES": MAX_LEVEL_NODES}).get_function("plan_level")


def plan_level(table, state, found, find_ids, free_slots, info, tasks, zero_slots, triples,
               find_rec, *, max_depth, min_samples_leaf, per_group, rows_per_block):
    """Plan the children of the current level (one launch; the module docstring).

    ``found``: the last split search's records (:func:`skltr._gpu.split.search_splits`) of the
    nodes ``find_ids`` (``state[2]`` of them); ``info``: the partition's record
    (:func:`skltr._gpu.partition.partition_info`'s layout for ``len(info) - 8 * cap`` node ids,
    its first part -1 at the tree's start); ``tasks``, ``zero_slots``, ``triples`` (shape
    (3, cap)) and ``find_rec``: the level's histogram, zeroing, subtraction and split-search
    arguments, of which the state's counts hold.
    """
    cap_nodes = int(table.shape[0])
    _plan_kernel()((1,), (MAX_LEVEL_NODES,),
                   (table, state, found, find_ids, free_slots, info, np.int32(cap_nodes),
                    tasks, zero_slots, triples, np.int32(triples.shape[1]), find_rec,
                    np.int32(max_depth), np.int64(2 * max(int(min_samples_leaf), 0)),
                    np.int32(per_group), np.int64(rows_per_block),
                    np.int64(_config.HIST_MIN_ROWS_PER_BLOCK)))
