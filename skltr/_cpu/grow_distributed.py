"""numba kernel of a whole leaf-wise tree on one worker of a distributed fit (LightGBM's
data-parallel learner): the one-process tree, node for node, in one call a tree.

Every worker holds some of the rows and owns a range of the features (``lo`` .. ``hi``). A
split of a node:

1. partitions the worker's rows of the node, builds the histogram of the child with fewer
   rows *here* and gets the other child's by subtraction from the node's own histogram
   (the worker's rows only: each node keeps it for its children);
2. sums the left child's histogram over the workers, only the owned features' rows on each
   worker (:meth:`~skltr.dask._collective_shm.SharedMemoryCommunicator.reduce_rows_sum`, one
   barrier); the worker's left count rides in every row's first pad bin, which no split
   search reads, so every worker learns both children's counts from its own rows of the sum;
3. gets the right child's global rows as the node's global rows minus the left child's and
   searches both children's splits on the owned features only (a quarter of the scans on
   four workers);
4. sums every feature's best candidate over the workers (each worker's entries are zero but
   its own features', so the int64 sum of the candidates' bits is exact) and picks the
   node's split from them with :func:`~skltr._cpu.split._pick_best`, the one-process rule.

So two reductions a split (the driver's path: one a batch of several, each summing whole
histograms on every worker, then every worker searching every feature). A node keeps two
histograms while it may split: its rows' and its owned features' global rows; the slots
hold ``2 * max_leaves`` of them. The children of a split whose depth or leaf limits forbid
splitting them are not reduced: their counts are summed at the end of the tree, in one
call. The sums go out through :mod:`skltr._cpu.collective` (``numba.objmode``).

Numeric features and integer sums only (``skltr._gbdt.grower_cpu.TreeGrower._compiled``
sends other trees through the growth driver).
"""

import numpy as np
from numba import njit, objmode, prange

from .collective import allreduce_sum_into, reduce_rows_into
from .grow_leafwise import (_acquire, _best_leaf, _build, _can_split, _fill_children, _partition,
                            _release, _store_numeric)
from .histogram import subtract_histograms, subtract_rows
from .split import _node_constants, _pick_best, _scan_feature, find_best_splits

__all__ = ["CANDIDATE_FIELDS", "grow_leafwise_distributed"]

#: the words of a feature's candidate in the summed buffer: gain (its float64 bits), bin,
#: default_left, left_g, left_h, left_count
CANDIDATE_FIELDS = 6


@njit(cache=True)
def grow_leafwise_distributed(d, case, c, slots, t, gslot, lo, hi, slo, shi, gather,
                              share):
    """Grow this worker's copy of the tree from the root in ``t``'s entry 0.

    Parameters
    ----------
    d, case, c, t
        As for :func:`~skltr._cpu.grow_leafwise.grow_leafwise`; ``t``'s ranges are this
        worker's rows, its sums and counts global (entry 0: the root's, summed already).
    slots : ndarray, shape (n_slots, n_features, n_bins_total, n_channels)
        At least ``2 * max_leaves`` histogram slots.
    gslot : ndarray of int64, shape (max_nodes,)
        Written: each node's slot of global rows (-1 none); ``t.slot`` is its local one.
    lo, hi : int
        The features this worker searches.
    slo, shi : int
        The rows it sums: ``lo, hi``, or ``0, 1`` when it owns none (it still reads the
        counts from row 0).
    gather : ndarray of int64, shape (2, CANDIDATE_FIELDS, n_features)
        The candidates' buffer (a split's two children).
    share : bool
        False: every worker searches every feature (``lo, hi, slo, shi`` span them all) of
        the whole sum, and the candidates are not summed: one reduction a split instead of
        two, each worker summing and searching everything.

    Returns
    -------
    int
        The tree's nodes; their counts are global.
    """
    free = np.arange(slots.shape[0] - 1, -1, -1)
    state = np.array([slots.shape[0]])
    own = d.numeric.copy()
    own[:lo] = False
    own[hi:] = False
    pending = np.zeros(t.count.size, np.bool_)  # counts still this worker's own
    root, n_nodes, n_leaves = np.int64(0), np.int64(1), np.int64(1)
    t.has_split[0] = t.candidate[0] = False
    t.left[0] = t.slot[0] = gslot[0] = -1
    if _can_split(t, root, n_leaves, case):
        t.slot[0] = _acquire(free, state)
        _build(d, case, None, slots, t, root, case.use_rows, bool(True))
        gslot[0] = _acquire(free, state)
        local, out = slots[t.slot[0]], slots[gslot[0]]
        with objmode():
            reduce_rows_into(local, out, slo, shi)
        find_best_splits(out, d.n_bins, own, d.monotone, t.sum_g[0], t.sum_h[0], t.count[0],
                         -np.inf, np.inf, c, d.work)
        if share:
            _gather(gather, d.work, d.large_work, lo, hi, bool(True), bool(False))
        _store_numeric(t, root, _pick_best(d.work, t.sum_g[0], t.sum_h[0]))
        if not t.has_split[0]:
            _release_both(t, gslot, root, free, state)
        t.candidate[0] = t.has_split[0]
    while n_leaves < case.max_leaves:
        best = _best_leaf(t, n_nodes)
        if best < 0:
            break
        t.candidate[best] = False
        left = n_nodes
        n_nodes += 2
        _split(d, case, c, slots, free, state, t, gslot, best, left, n_leaves + 1, own, lo,
               hi, slo, shi, gather, share, pending)
        n_leaves += 1
        for child in (left, left + 1):
            t.candidate[child] = t.has_split[child] and _can_split(t, child, n_leaves, case)
    _sum_pending_counts(t, pending, n_nodes)
    return n_nodes


@njit(cache=True)
def _split(d, case, c, slots, free, state, t, gslot, i, left, n_leaves, own, lo, hi, slo,
           shi, gather, share, pending):
    """Split node ``i`` into ``left`` and ``left + 1`` (the module's steps 1-4)."""
    right = left + 1
    n_left = _partition(d, case, c, None, None, t, i)
    _fill_children(t, i, left, n_left)
    gslot[left] = gslot[right] = -1
    # the limits every worker knows before the counts (can_split's without its count)
    if not (n_leaves < case.max_leaves
            and (case.max_depth < 0 or t.depth[left] < case.max_depth)):
        _release_both(t, gslot, i, free, state)
        t.count[left], t.count[right] = n_left, t.end[i] - t.start[i] - n_left
        pending[left] = pending[right] = True
        return
    local_parent, global_parent = t.slot[i], gslot[i]
    t.slot[i] = gslot[i] = -1
    # 1. this worker's children: the one with fewer rows here built, the other subtracted
    if n_left <= t.end[i] - t.start[i] - n_left:
        small, large = left, right
    else:
        small, large = right, left
    t.slot[small] = _acquire(free, state)
    t.slot[large] = local_parent
    _build(d, case, None, slots, t, small, bool(True), bool(True))
    parent = slots[local_parent]
    subtract_histograms(parent, slots[t.slot[small]], parent)
    # 2. the left child's owned rows summed, its count in every row's first pad bin
    mine = slots[t.slot[left]]
    pad = c.missing_bin + 1
    for f in range(mine.shape[0]):
        mine[f, pad, 0] = n_left
    gslot[left] = _acquire(free, state)
    gslot[right] = global_parent
    summed = slots[gslot[left]]
    with objmode():
        reduce_rows_into(mine, summed, slo, shi)
    cl = summed[slo, pad, 0]
    t.count[left], t.count[right] = cl, t.count[i] - cl
    ok_left = _can_split(t, left, n_leaves, case)
    ok_right = _can_split(t, right, n_leaves, case)
    # 3. and 4. both children's owned features searched, the candidates summed, picked
    if ok_left or ok_right:
        _scan_children(summed, slots[global_parent], lo, hi, d.n_bins, own, d.monotone,
                       (t.sum_g[left], t.sum_h[left], t.count[left]),
                       (t.sum_g[right], t.sum_h[right], t.count[right]), c, d.work,
                       d.large_work, ok_left, ok_right)
        if share:
            _gather(gather, d.work, d.large_work, lo, hi, ok_left, ok_right)
    for child, ok, work in ((left, ok_left, d.work), (right, ok_right, d.large_work)):
        if ok:
            _store_numeric(t, child, _pick_best(work, t.sum_g[child], t.sum_h[child]))
        if not (ok and t.has_split[child]):
            t.has_split[child] = False
            _release_both(t, gslot, child, free, state)


@njit(parallel=True, cache=True)
def _scan_children(left_hist, right_hist, lo, hi, n_bins, mask, monotone, left_sums,
                   right_sums, c, left_work, right_work, do_left, do_right):
    """Features ``lo`` .. ``hi``: the right child's global rows (``right_hist`` holds the
    parent's) as parent - left, and each child's best candidate of the feature
    (:func:`~skltr._cpu.split.find_best_splits`'s scan: the same bits)."""
    lg, lh, ln = left_sums
    rg, rh, rn = right_sums
    inf = np.inf
    l_min_n, l_parent, l_factor = _node_constants(lg, lh, ln, c, -inf, inf)
    r_min_n, r_parent, r_factor = _node_constants(rg, rh, rn, c, -inf, inf)
    l_gain, l_bin, l_left, l_gl, l_hl, l_cl = left_work  # unpacked: see find_best_splits
    r_gain, r_bin, r_left, r_gl, r_hl, r_cl = right_work
    for p in prange(hi - lo):
        f = lo + np.int64(p)
        if do_left:
            (l_gain[f], l_bin[f], l_left[f], l_gl[f], l_hl[f], l_cl[f]) = _scan_feature(
                left_hist, f, n_bins[f], mask[f], lg, lh, ln, c, l_min_n, l_parent,
                l_factor, -inf, inf, monotone[f])
        if do_right:
            subtract_rows(right_hist, left_hist, f, 1)
            (r_gain[f], r_bin[f], r_left[f], r_gl[f], r_hl[f], r_cl[f]) = _scan_feature(
                right_hist, f, n_bins[f], mask[f], rg, rh, rn, c, r_min_n, r_parent,
                r_factor, -inf, inf, monotone[f])


@njit(cache=True)
def _gather(gather, work0, work1, lo, hi, do0, do1):
    """Every feature's candidates of both works, summed over the workers: each worker
    sends its features' (the rest zero), so the int64 sum is the owner's bits."""
    gather[...] = 0
    for k, work, do in ((0, work0, do0), (1, work1, do1)):
        if do:
            gain = work.gain.view(np.int64)
            for f in range(lo, hi):
                gather[k, 0, f] = gain[f]
                gather[k, 1, f] = work.bin[f]
                gather[k, 2, f] = work.left[f]
                gather[k, 3, f] = work.left_g[f]
                gather[k, 4, f] = work.left_h[f]
                gather[k, 5, f] = work.left_count[f]
    with objmode():
        allreduce_sum_into(gather)
    for k, work, do in ((0, work0, do0), (1, work1, do1)):
        if do:
            gain = work.gain.view(np.int64)
            for f in range(gather.shape[2]):
                gain[f] = gather[k, 0, f]
                work.bin[f] = gather[k, 1, f]
                work.left[f] = gather[k, 2, f] != 0
                work.left_g[f] = gather[k, 3, f]
                work.left_h[f] = gather[k, 4, f]
                work.left_count[f] = gather[k, 5, f]


@njit(cache=True, inline="always")
def _release_both(t, gslot, i, free, state):
    _release(t, i, free, state)
    if gslot[i] >= 0:
        free[state[0]] = gslot[i]
        state[0] += 1
        gslot[i] = -1


@njit(cache=True)
def _sum_pending_counts(t, pending, n_nodes):
    """The counts of the children no worker reduced (limits), summed in one call."""
    ids = np.flatnonzero(pending[:n_nodes])
    if ids.size:
        counts = t.count[ids].astype(np.int64)
        with objmode():
            allreduce_sum_into(counts)
        for k in range(ids.size):
            t.count[ids[k]] = counts[k]
