"""numba kernel of a whole leaf-wise tree on one process: the growth driver's decisions and the
CPU grower's kernel calls in one compiled loop.

:class:`skltr._gbdt.grower_cpu.TreeGrower` grows a tree through the growth driver
(:mod:`skltr._gbdt.growth`), a Python call per split that starts the numba kernels of the
partition, the smaller child's histogram and both children's split search. On small nodes
that Python is as long as the kernels: 29 us a split of a 31-leaf categorical fit on 2 cores
against 56 us of kernels (``benchmarks/split_overhead.py``). :func:`grow_leafwise` takes the
same decisions in the same order -- the leaf of highest gain first (ties to the lowest node
id), ``can_split``'s limits, the smaller child built and the larger one subtracted, the same
serial or parallel kernel for each node size (the limits in :class:`GrowCase`) -- and calls
the same kernels, so the tree is the driver's bit for bit; the tests grow both.

The grower hands it the root (quantised gradients, sums, count) and gets back a node table
(:class:`GrowTable`, one array a field, node ids in the driver's creation order: root 0, a
split appends its left then its right child), from which the driver's ``assemble_table``
makes the tree. Histograms live in slots of one array (``slots``, kept across trees by the
histogram pool) with room for every leaf; free slots are taken lowest first, so that only as
many slots are ever touched -- and so take memory -- as the tree holds at once (the pool's
``slots``).
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from .histogram import (build_histogram, build_histogram_serial, integer_task_split,
                        subtract_histograms)
from .histogram_wide import (all_codes, build_wide_histogram, build_wide_histogram_serial,
                             whole_codes, wide_chunks)
from .partition import partition_rows, partition_rows_serial
from .split import find_best_splits, find_best_splits_serial
from .split_categorical import best_categorical_splits, categorical_wins
from .split_children import build_child_splits, find_child_splits

__all__ = ["GrowCase", "GrowData", "GrowWide", "GrowCategorical", "GrowTable", "empty_table",
           "grow_leafwise"]


class GrowCase(NamedTuple):
    """The scalars of one tree's growth: the driver's limits and the grower's kernel choices
    (``skltr._gbdt.grower_cpu``'s constants and layout, read when the tree starts)."""

    max_leaves: int
    max_depth: int           # -1: none
    min_samples_leaf: int
    n_threads: int
    one_word: bool           # one-word bins: a left count is the partition's
    float_layout: bool       # float sums: every node's histogram in the tree's tasks
    tree_chunks: int         # the tree's tasks (float sums)
    tree_blocks: int
    use_rows: bool           # the root reads its rows through the row buffer (a subsample)
    hist_min_rows: int       # HIST_PARALLEL_MIN_ROWS
    partition_min_rows: int  # PARTITION_PARALLEL_MIN_ROWS
    split_min_rows: int      # SPLIT_PARALLEL_MIN_ROWS
    min_chunk_rows: int      # skltr._engine.histogram's MIN_CHUNK_ROWS
    wide_update_bytes: int   # WIDE_UPDATE_BYTES
    wide_region_bytes: int   # WIDE_REGION_BYTES
    wide_tasks: int          # WIDE_TASKS: 0 fit the threads, 1 apart, 2 a task each
    wide_task_features: int  # WIDE_TASK_FEATURES


class GrowData(NamedTuple):
    """The arrays of one tree (the grower's)."""

    X: np.ndarray            # uint8 (n, n_features), C
    X_T: np.ndarray          # uint8 (n_features, n), C
    g: np.ndarray            # the quantised (or float) gradients and hessians
    h: np.ndarray
    buf: np.ndarray          # uint32 row buffer: the root's rows in [0, n_root)
    tmp: np.ndarray          # uint32 scratch of the partition
    n_bins: np.ndarray       # int32 per feature
    mask: np.ndarray         # bool per feature: the tree may split on it
    numeric: np.ndarray      # bool per feature: ... and the numeric scan reads it
    monotone: np.ndarray     # int8 per feature (zeros: this kernel has no constraints)
    scratch: np.ndarray      # row chunks 1.. of a parallel histogram (the pool's)
    work: object             # SplitWork of the smaller child (and of a single node)
    large_work: object       # SplitWork of the larger child


class GrowWide(NamedTuple):
    """The wide categorical features (``skltr._engine.wide_categorical``)."""

    X: np.ndarray            # uint16 (n, n_wide), C
    X_T: np.ndarray          # uint16 (n_wide, n), C
    offsets: np.ndarray      # int64 per wide feature
    index: np.ndarray        # int64 per feature: its wide number, or -1
    scratch: np.ndarray      # row chunks 1.. of a parallel wide histogram
    n_codes: np.ndarray      # int64 per wide feature: its codes, the missing one included
    codes: np.ndarray        # uint64 (n_slots, n_wide, n_words): the codes a slot's wide
                             # rows hold (build_wide_feature); records of others undefined


class GrowCategorical(NamedTuple):
    """The categorical split search (``skltr._gbdt.categorical.CategoricalSearch``)."""

    tasks: object            # CategoricalTasks: the fused child search's
    rows: object             # CategoricalRows: a single node's search
    k: object                # CategoricalConstants
    found: object            # CategoricalFound of one entry
    words: np.ndarray        # int64 per feature: uint64 words of its left sets (0: numeric)
    sums: np.ndarray         # (1, 3) of the histogram dtype: a single node's sums
    bounds: np.ndarray       # (1, 2) float64: its output bounds
    mask_row: np.ndarray     # int64 (1,): zeros


class GrowTable(NamedTuple):
    """The grown nodes, one entry a node (``max_nodes = 2 * max_leaves - 1`` entries, as
    many used as :func:`grow_leafwise` returns); the split fields hold where ``has_split``,
    ``left`` (the left child, the right one next; -1: a leaf) where the node was split. The
    fields up to ``left`` are :class:`skltr._gbdt.growth.LevelTable`'s."""

    start: np.ndarray
    end: np.ndarray
    sum_g: np.ndarray        # histogram dtype
    sum_h: np.ndarray
    count: np.ndarray
    depth: np.ndarray
    feature: np.ndarray
    gain: np.ndarray         # float64
    bin: np.ndarray          # int32
    default_left: np.ndarray  # bool
    left_g: np.ndarray       # histogram dtype
    left_h: np.ndarray
    left_count: np.ndarray
    left: np.ndarray
    cat_words: np.ndarray    # int64: words of the categorical left set (0: numeric split)
    cat_bits: np.ndarray     # uint64 (max_nodes, n_words)
    cat_many: np.ndarray     # bool: a many-vs-many split (its children take cat_l2)
    has_split: np.ndarray    # bool
    slot: np.ndarray         # int64: the node's histogram slot, -1 none
    candidate: np.ndarray    # bool: a leaf waiting to be split


def empty_table(max_nodes, hist_dtype, n_words) -> GrowTable:
    """A :class:`GrowTable` of ``max_nodes`` nodes, zeros (``n_words``: the widest
    categorical left set's uint64 words, 0 without categorical features)."""
    dtypes = dict(sum_g=hist_dtype, sum_h=hist_dtype, left_g=hist_dtype, left_h=hist_dtype,
                  gain=np.float64, bin=np.int32, default_left=bool, cat_many=bool,
                  has_split=bool, candidate=bool)  # the others int64
    arrays = {name: np.zeros(max_nodes, dtypes.get(name, np.int64))
              for name in GrowTable._fields}
    arrays["cat_bits"] = np.zeros((max_nodes, n_words), np.uint64)
    return GrowTable(**arrays)


@njit(cache=True)
def grow_leafwise(d, case, c, wide, cat, slots, t):
    """Grow the tree from the root in ``t``'s entry 0.

    Parameters
    ----------
    d : GrowData
    case : GrowCase
    c : skltr._records.SplitConstants
    wide : GrowWide or None
    cat : GrowCategorical or None
    slots : ndarray, shape (n_slots, n_hist_rows, n_bins_total, n_channels)
        Histogram slots, at least ``max_leaves`` (a tree never holds more at once).
    t : GrowTable
        Entry 0 holds the root (``start`` .. ``depth``); the rest is written.

    Returns
    -------
    int
        The tree's nodes.
    """
    # the free slots, a stack: the lowest on top
    free = np.arange(slots.shape[0] - 1, -1, -1)
    state = np.array([slots.shape[0]])  # free slots
    # np.int64(0), bool(True): numba compiles a kernel once more for literal arguments
    root, n_nodes, n_leaves = np.int64(0), np.int64(1), np.int64(1)
    t.has_split[0] = t.candidate[0] = False
    t.left[0] = t.slot[0] = -1
    if _can_split(t, root, n_leaves, case):
        t.slot[0] = _acquire(free, state)
        _build(d, case, wide, slots, t, root, case.use_rows, bool(True))
        _find_split(d, case, c, cat, slots, free, state, t, root)
        t.candidate[0] = t.has_split[0]
    while n_leaves < case.max_leaves:
        best = _best_leaf(t, n_nodes)
        if best < 0:
            break
        t.candidate[best] = False
        left = n_nodes
        n_nodes += 2
        _split(d, case, c, wide, cat, slots, free, state, t, best, left, n_leaves + 1)
        n_leaves += 1
        for child in (left, left + 1):
            t.candidate[child] = t.has_split[child] and _can_split(t, child, n_leaves, case)
    return n_nodes


@njit(cache=True, inline="always")
def _best_leaf(t, n_nodes):
    """The leaf to split next: the highest gain, ties to the lowest id (the driver's heap);
    -1: none."""
    best = np.int64(-1)
    for i in range(n_nodes):
        if t.candidate[i] and (best < 0 or t.gain[i] > t.gain[best]):
            best = i
    return best


@njit(cache=True, inline="always")
def _fill_children(t, i, left, n_left):
    """The children ``left``, ``left + 1`` of node ``i`` after its partition put ``n_left``
    of its rows first: their rows, sums (from its split), depth; no split, no slot."""
    right = left + 1
    mid = t.start[i] + n_left
    t.start[left], t.end[left], t.start[right], t.end[right] = t.start[i], mid, mid, t.end[i]
    t.sum_g[left], t.sum_h[left] = t.left_g[i], t.left_h[i]
    t.sum_g[right], t.sum_h[right] = t.sum_g[i] - t.left_g[i], t.sum_h[i] - t.left_h[i]
    t.depth[left] = t.depth[right] = t.depth[i] + 1
    t.left[i] = left
    for child in (left, right):
        t.has_split[child] = t.candidate[child] = False
        t.left[child] = t.slot[child] = -1


@njit(cache=True, inline="always")
def _can_split(t, i, n_leaves, case):
    # skltr._gbdt.growth.can_split
    return (n_leaves < case.max_leaves and (case.max_depth < 0 or t.depth[i] < case.max_depth)
            and t.count[i] >= 2 * case.min_samples_leaf)


@njit(cache=True, inline="always")
def _acquire(free, state):
    if state[0] == 0:  # a tree holds at most max_leaves histograms: never
        raise AssertionError("grow_leafwise: out of histogram slots")
    state[0] -= 1
    return free[state[0]]


@njit(cache=True, inline="always")
def _release(t, i, free, state):
    if t.slot[i] >= 0:
        free[state[0]] = t.slot[i]
        state[0] += 1
        t.slot[i] = -1


@njit(cache=True)
def _build(d, case, wide, slots, t, i, use_rows, reduce):
    """Node ``i``'s histogram in its slot (TreeGrower._build_local); returns the row chunks
    of a parallel build left in ``d.scratch`` + 1 (``reduce`` False), else 1."""
    start, end = t.start[i], t.end[i]
    n_rows = end - start
    hist = slots[t.slot[i]]
    n_features = d.X.shape[1]
    parallel = case.n_threads > 1 and n_rows >= case.hist_min_rows
    if wide is not None:
        _build_wide(d, case, wide, hist[n_features:], start, end, use_rows, parallel)
        for w in range(wide.n_codes.size):
            all_codes(wide.codes[t.slot[i], w], wide.n_codes[w])
    hf = hist[:n_features]
    if parallel:
        chunks, blocks = _tasks(d, case, n_rows)
        build_histogram(d.X, d.g, d.h, d.buf, start, end, use_rows, hf, d.scratch, chunks,
                        blocks, reduce)
        return 1 if reduce else chunks
    build_histogram_serial(d.X, d.g, d.h, d.buf, start, end, use_rows, hf)
    return 1


@njit(cache=True, inline="always")
def _tasks(d, case, n_rows):
    """``(row chunks, feature blocks)`` of a node's histogram on several threads: the
    tree's (float sums) or the node's own (integer ones); a node too small for a parallel
    histogram (built on one thread by ``_build``) one chunk, a block a thread (the same
    sums: one chunk sums every bin in row order)."""
    n_features = d.X.shape[1]
    if n_rows < case.hist_min_rows:
        return 1, min(n_features, case.n_threads)
    if case.float_layout:
        return case.tree_chunks, case.tree_blocks
    return integer_task_split(case.n_threads, n_features, n_rows, case.min_chunk_rows)


@njit(cache=True, inline="always")
def _build_wide(d, case, wide, out, start, end, use_rows, parallel):
    # TreeGrower._build_wide
    n_chunks = wide_chunks(case.n_threads, end - start, wide.X.shape[1],
                           out.size * out.itemsize, case.wide_update_bytes,
                           case.wide_region_bytes)
    if parallel and n_chunks > 1 and not case.float_layout:
        build_wide_histogram(wide.X, d.g, d.h, d.buf, start, end, use_rows, out, wide.offsets,
                             wide.scratch, n_chunks)
    else:
        build_wide_histogram_serial(wide.X, d.g, d.h, d.buf, start, end, use_rows, out,
                                    wide.offsets)


@njit(cache=True)
def _find_split(d, case, c, cat, slots, free, state, t, i):
    """Node ``i``'s best split from its histogram (TreeGrower._find_split); a node without
    one gives its slot back."""
    hist = slots[t.slot[i]]
    hf = hist[:d.X.shape[1]]
    lo, hi = -np.inf, np.inf
    if case.n_threads > 1 and t.count[i] >= case.split_min_rows:
        res = find_best_splits(hf, d.n_bins, d.numeric, d.monotone, t.sum_g[i], t.sum_h[i],
                               t.count[i], lo, hi, c, d.work)
    else:
        res = find_best_splits_serial(hf, d.n_bins, d.numeric, d.monotone, t.sum_g[i],
                                      t.sum_h[i], t.count[i], lo, hi, c, d.work)
    _store_numeric(t, i, res)
    if cat is not None:  # CategoricalSearch.best of one node
        cat.sums[0, 0], cat.sums[0, 1], cat.sums[0, 2] = t.sum_g[i], t.sum_h[i], t.count[i]
        cat.bounds[0, 0], cat.bounds[0, 1] = lo, hi
        s = t.slot[i]
        best_categorical_splits(slots[s:s + 1], cat.rows, d.mask.reshape((1, -1)),
                                cat.mask_row, cat.sums, cat.bounds, c, cat.k, cat.found)
        found = cat.found
        if categorical_wins(res[0], res[1], found.ints[0, 0], found.gain[0]):
            _store_categorical(t, i, cat, found.ints, found.gain, found.sums, found.bits,
                               np.int64(0))
    if not t.has_split[i]:
        _release(t, i, free, state)


@njit(cache=True, inline="always")
def _split(d, case, c, wide, cat, slots, free, state, t, i, left, n_leaves):
    """Split node ``i`` into ``left`` and ``left + 1`` (TreeGrower._split): partition, the
    children's ranges, sums and counts, then their histograms and splits where
    ``can_split`` allows with ``n_leaves`` leaves."""
    right = left + 1
    n_left = _partition(d, case, c, wide, cat, t, i)
    _fill_children(t, i, left, n_left)
    cl = n_left if case.one_word else t.left_count[i]
    t.count[left], t.count[right] = cl, t.count[i] - cl
    ok_left = _can_split(t, left, n_leaves, case)
    ok_right = _can_split(t, right, n_leaves, case)
    parent_slot = t.slot[i]
    t.slot[i] = -1
    if not (ok_left or ok_right):
        t.slot[i] = parent_slot
        _release(t, i, free, state)
        return
    if t.count[left] <= t.count[right]:
        small, large, do_small, do_large = left, right, ok_left, ok_right
    else:
        small, large, do_small, do_large = right, left, ok_right, ok_left
    t.slot[small] = _acquire(free, state)
    t.slot[large] = parent_slot
    # one call site a helper (each is compiled inline): several threads build a histogram
    # of one row chunk in the split search's region (blocks > 0), of several here with its
    # reduction left to that region; one thread builds it here, whole
    threaded = case.n_threads > 1
    blocks, n_chunks, paired = np.int64(0), np.int64(1), False
    if threaded:
        chunks, blocks = _tasks(d, case, t.end[small] - t.start[small])
        in_region, paired = _wide_tasks(blocks, 0 if wide is None else wide.X.shape[1],
                                        case)
        if chunks > 1 or not in_region:
            blocks, paired = np.int64(0), False
    if blocks == 0:
        n_chunks = _build(d, case, wide, slots, t, small, bool(True), not threaded)
        if wide is not None and cat is not None:  # the parent's wide rows all read
            whole_codes(slots[parent_slot], d.X.shape[1], wide.offsets, wide.n_codes,
                        wide.codes[parent_slot])
    if threaded:
        _child_splits(d, case, c, wide, cat, slots, free, state, t, small, large, do_small,
                      do_large, n_chunks, blocks, paired)
        return
    parent = slots[parent_slot]
    subtract_histograms(parent, slots[t.slot[small]], parent)
    for child, ok in ((left, ok_left), (right, ok_right)):
        if ok:
            _find_split(d, case, c, cat, slots, free, state, t, child)
        else:
            _release(t, child, free, state)


@njit(cache=True, inline="always")
def _wide_tasks(blocks, n_wide, case):
    """``(in_region, paired)``: whether a node built in ``blocks`` feature blocks builds
    its ``n_wide`` wide features' rows in its split search's region too, and whether each
    such task then runs after a block's (``build_child_splits``' ``paired``). In the region
    when the tasks fit the threads, one each, or once paired (at most ``blocks`` wide
    tasks), else apart: numba's schedule gives a region's ``threads + 1`` tasks to the
    first thread two, which ran a feature block besides a wide task, or two blocks, while
    the others waited."""
    if n_wide == 0 or case.wide_tasks == 2:
        return True, False
    if case.wide_tasks == 1:
        return False, False
    if blocks + n_wide <= case.n_threads:
        return True, False
    return blocks >= n_wide, blocks >= n_wide


@njit(cache=True, inline="always")
def _child_splits(d, case, c, wide, cat, slots, free, state, t, small, large, do_small,
                  do_large, n_chunks, blocks, paired):
    """Both children's splits in one region (TreeGrower._find_child_splits): from the
    smaller child's histogram built in ``n_chunks`` row chunks (the first reduced), or with
    ``blocks`` > 0, building it there in that many feature blocks (its wide rows first;
    ``paired``: see :func:`_wide_tasks`)."""
    lo, hi = -np.inf, np.inf
    small_sums = (t.sum_g[small], t.sum_h[small], t.count[small], lo, hi)
    large_sums = (t.sum_g[large], t.sum_h[large], t.count[large], lo, hi)
    small_hist, large_hist = slots[t.slot[small]], slots[t.slot[large]]
    start, end = t.start[small], t.end[small]
    if cat is None:  # (numba compiles one branch)
        if blocks > 0:
            res = build_child_splits(d.X, d.X_T, d.g, d.h, d.buf, start, end, blocks,
                                     small_hist, large_hist, d.n_bins, d.numeric, d.monotone,
                                     small_sums, large_sums, c, d.work, d.large_work, do_small,
                                     do_large, None, None, None, paired, 0)
        else:
            res = find_child_splits(small_hist, large_hist, d.n_bins, d.numeric, d.monotone,
                                    small_sums, large_sums, c, d.work, d.large_work, do_small,
                                    do_large, d.scratch, n_chunks, None, None)
    else:
        if blocks > 0:  # the wide features' rows built in the region too
            res = build_child_splits(d.X, d.X_T, d.g, d.h, d.buf, start, end, blocks,
                                     small_hist, large_hist, d.n_bins, d.numeric, d.monotone,
                                     small_sums, large_sums, c, d.work, d.large_work, do_small,
                                     do_large, cat.tasks, cat.k,
                                     None if wide is None else
                                     (wide.X, wide.offsets, wide.n_codes,
                                      wide.codes[t.slot[small]], wide.codes[t.slot[large]],
                                      case.wide_update_bytes), paired,
                                     case.wide_task_features)
        else:
            res = find_child_splits(small_hist, large_hist, d.n_bins, d.numeric, d.monotone,
                                    small_sums, large_sums, c, d.work, d.large_work, do_small,
                                    do_large, d.scratch, n_chunks, cat.tasks, cat.k)
    small_res, large_res, small_entry, large_entry = res
    _store_numeric(t, small, small_res)
    _store_numeric(t, large, large_res)
    if cat is not None:
        for child, entry in ((small, small_entry), (large, large_entry)):
            if entry >= 0:
                tasks = cat.tasks
                _store_categorical(t, child, cat, tasks.ints, tasks.gain, tasks.sums,
                                   tasks.bits, entry)
    for child, ok in ((small, do_small), (large, do_large)):
        t.has_split[child] = ok and t.has_split[child]
        if not t.has_split[child]:
            _release(t, child, free, state)


@njit(cache=True, inline="always")
def _store_numeric(t, i, res):
    f, gain, b, default_left, gl, hl, cl = res
    t.has_split[i] = f >= 0
    t.feature[i], t.gain[i], t.bin[i], t.default_left[i] = f, gain, b, default_left
    t.left_g[i], t.left_h[i], t.left_count[i] = gl, hl, cl
    t.cat_words[i] = 0


@njit(cache=True)
def _store_categorical(t, i, cat, ints, gains, sums, bits, entry):
    # CategoricalSearch.split_of
    f = ints[entry, 0]
    t.has_split[i] = True
    t.feature[i], t.gain[i], t.bin[i], t.default_left[i] = f, gains[entry], -1, False
    t.left_g[i], t.left_h[i], t.left_count[i] = sums[entry, 0], sums[entry, 1], ints[entry, 1]
    t.cat_many[i] = ints[entry, 2] != 0
    n_words = cat.words[f]
    t.cat_words[i] = n_words
    t.cat_bits[i, :] = 0
    t.cat_bits[i, :n_words] = bits[entry, :n_words]


@njit(cache=True, inline="always")
def _partition(d, case, c, wide, cat, t, i):
    """Partition node ``i``'s rows at its split (TreeGrower._partition); the left count."""
    start, end = t.start[i], t.end[i]
    f = t.feature[i]
    parallel = (case.n_threads > 1
                and (end - start) * case.n_threads >= 2 * case.partition_min_rows)
    if cat is None:  # (numba compiles no categorical partition then)
        return _partition_col(d.X_T[f], d, start, end, t.bin[i], t.default_left[i], None,
                              c.missing_bin, case.n_threads, parallel)
    n_words = t.cat_words[i]
    if n_words == 0:
        return _partition_col(d.X_T[f], d, start, end, t.bin[i], t.default_left[i], None,
                              c.missing_bin, case.n_threads, parallel)
    bits = t.cat_bits[i, :n_words]
    # the driver's types: bin -1 and default_left False as int64 and bool, not literals
    b, default_left = np.int64(-1), bool(False)
    if wide is not None and wide.index[f] >= 0:
        return _partition_col(wide.X_T[wide.index[f]], d, start, end, b, default_left, bits,
                              c.missing_bin, case.n_threads, parallel)
    return _partition_col(d.X_T[f], d, start, end, b, default_left, bits, c.missing_bin,
                          case.n_threads, parallel)


@njit(cache=True, inline="always")
def _partition_col(col, d, start, end, b, default_left, bits, missing_bin, n_threads,
                   parallel):
    if parallel:
        return partition_rows(col, d.buf, start, end, b, default_left, missing_bin, bits,
                              d.tmp, n_threads)
    return partition_rows_serial(col, d.buf, start, end, b, default_left, missing_bin, bits,
                                 d.tmp)
