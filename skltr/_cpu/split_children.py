"""numba kernels of the split search of a split's two children in one parallel region.

:func:`find_child_splits` reduces the smaller child's histogram, subtracts it from the
parent's for the larger child and finds both children's best splits, numeric
(:mod:`skltr._cpu.split`) and categorical (:mod:`skltr._cpu.split_categorical`), feature by
feature in one ``prange``. :func:`build_child_splits` builds the smaller child's histogram in
the same region, a block of features a task (nodes whose histogram takes one row chunk).
"""

import numpy as np
from numba import njit, prange

from .histogram import (COLUMN_BLOCK_FEATURES, _accumulate, accumulate_columns,
                        reduce_feature, subtract_rows)
from .histogram_wide import build_wide_feature
from .split import _node_constants, _pick_best, _scan_feature
from .split_categorical import best_task, categorical_task


@njit(parallel=True, cache=True)
def find_child_splits(small_hist, large_hist, n_bins, feature_mask, monotone, small_sums,
                      large_sums, c, small_work, large_work, do_small, do_large, scratch,
                      n_row_chunks, cat, k):
    """The two children of a split in one parallel region: the smaller child's histogram
    reduced, the larger child's by subtraction, and the best split of each child that may
    split.

    ``large_hist`` holds the *parent's* histogram and becomes the larger child's
    (``parent - small``, feature by feature, only when ``do_large``); each child's per-feature
    scan is :func:`find_best_splits`'s, so the results are the same bit for bit. One region
    instead of four (the histogram's reduction, the serial subtraction, a split search per
    child): a region costs ~10 us to start and more on a busy machine, and the subtraction
    streamed ~0.8 MB on one thread while the others waited. One task a feature: reduce,
    scan the smaller child, subtract, scan the larger -- and with categorical features
    (``cat``) their searches too, a wide feature a task per child
    (:func:`~skltr._cpu.split_categorical.categorical_task`), spread over the slots
    (:func:`_slot`), so that they run beside the numeric scans rather than after them on
    one thread.

    Parameters
    ----------
    small_hist, large_hist : ndarray, shape (n_rows, n_bins_total, n_channels)
        The node histograms: a row per feature, then the wide categorical features' rows.
    n_bins, feature_mask, monotone, c
        As for :func:`~skltr._cpu.split.find_best_splits` (``feature_mask``: the features
        the numeric scan may split on).
    small_sums, large_sums : tuple (sum_g, sum_h, count, lo, hi)
        Each child's sums (histogram units), count and output bounds.
    small_work, large_work : skltr._records.SplitWork
    do_small, do_large : bool
        Which children may split (a child that may not is neither scanned nor, for the
        larger one, subtracted).
    scratch, n_row_chunks
        The row chunks 1.. of the smaller child's histogram, left unreduced by
        ``build_histogram(..., reduce=False)``; ``n_row_chunks`` 1 when it was reduced.
    cat : skltr._records.CategoricalTasks or None
        The categorical features' tasks (None: none; numba compiles that case without
        them).
    k : skltr._records.CategoricalConstants or None
        Their split controls (an argument of its own: a parallel loop takes a record of
        scalars only as one).

    Returns
    -------
    tuple
        ``(small, large, small_entry, large_entry)``: the :class:`skltr._records.SplitInfo`
        fields of each child's best numeric split (as :func:`~skltr._cpu.split.
        find_best_splits`; meaningless for a child not asked for), and the entry of
        ``cat`` holding a better categorical split, or -1
        (:func:`~skltr._cpu.split_categorical.best_task`).
    """
    n_features = n_bins.shape[0]
    n_tasks = n_features
    if cat is not None:  # (numba prunes these branches for cat=None)
        n_tasks += 2 * cat.wide.shape[0]  # a wide feature: a task per child
        # unpacked: a parallel loop takes arrays, not records of them
        features, wide, mask, ints, gains, sums, bits = cat
    sg, sh, sn, s_lo, s_hi = small_sums
    lg, lh, ln, l_lo, l_hi = large_sums
    s_min_n, s_parent, s_factor = _node_constants(sg, sh, sn, c, s_lo, s_hi)
    l_min_n, l_parent, l_factor = _node_constants(lg, lh, ln, c, l_lo, l_hi)
    s_gain, s_bin, s_left, s_gl, s_hl, s_cl = small_work  # unpacked: see find_best_splits
    l_gain, l_bin, l_left, l_gl, l_hl, l_cl = large_work
    for p in prange(n_tasks):
        wide_task, i = _slot(p, n_tasks, n_tasks - n_features)
        f = n_features + i if wide_task else i
        if f < n_features:
            reduce_feature(small_hist, scratch, n_row_chunks, f)
            if do_small:
                (s_gain[f], s_bin[f], s_left[f], s_gl[f], s_hl[f], s_cl[f]) = _scan_feature(
                    small_hist, f, n_bins[f], feature_mask[f], sg, sh, sn, c, s_min_n,
                    s_parent, s_factor, s_lo, s_hi, monotone[f])
            if do_large:
                subtract_rows(large_hist, small_hist, f, 1)
                (l_gain[f], l_bin[f], l_left[f], l_gl[f], l_hl[f], l_cl[f]) = _scan_feature(
                    large_hist, f, n_bins[f], feature_mask[f], lg, lh, ln, c, l_min_n,
                    l_parent, l_factor, l_lo, l_hi, monotone[f])
        if cat is not None and (wide_task or features[f, 0] >= 0):  # a task of its own
            categorical_task(f, n_features, small_hist, large_hist, do_small, do_large,
                             small_sums, large_sums, c, k, features, wide, mask, ints, gains,
                             sums, bits)
    return _children_best(small_work, large_work, small_sums, large_sums, do_small, do_large,
                          cat)


@njit(parallel=True, cache=True)
def build_child_splits(X_binned, X_binned_T, grad, hess, rows, start, end, n_blocks,
                       small_hist, large_hist, n_bins, feature_mask, monotone, small_sums,
                       large_sums, c, small_work, large_work, do_small, do_large, cat, k,
                       wide_codes, paired, wide_weight):
    """:func:`find_child_splits` with the smaller child's histogram built in the same region:
    task ``p`` builds feature block ``p`` (:func:`block_start`) of ``rows[start:end]`` (one
    row chunk: the same sums in the same order; a narrow block from the columns
    ``X_binned_T``, :func:`~skltr._cpu.histogram.accumulate_columns`) and searches it at
    once, while it is in its cache. One region a split instead of two (a region's start and
    its wait for the slowest thread grow with the threads). A wide categorical feature is
    one task of the same region: it builds its rows of the smaller child (given
    ``wide_codes``), then searches both children (``categorical_task``'s two tasks, in
    turn).

    ``paired``: the region has a task a block, and the last blocks' tasks each run a wide
    feature's task after their features, holding ``wide_weight`` features fewer than the
    others for it (:func:`block_start`); else every wide feature is a task of its own beside
    the blocks (spread by :func:`_slot`). numba's schedule gives ``threads + 1`` tasks to
    the threads one each and two to the first thread, which then ran two whole blocks while
    the others waited: with a block a thread and a wide feature, the tasks pair
    (``skltr._cpu.grow_leafwise``).

    Parameters are :func:`find_child_splits`' and :func:`~skltr._cpu.histogram.
    build_histogram`'s; ``small_hist``'s features' rows are overwritten, its wide rows too
    given ``wide_codes``: ``(X_wide, offsets, n_codes, small_codes, large_codes,
    update_bytes)``, the wide features' codes (:class:`skltr._cpu.grow_leafwise.GrowWide`'s),
    the codes each child's wide rows hold, the smaller one's written here, and
    ``WIDE_UPDATE_BYTES`` (``skltr._cpu.histogram_wide.build_wide_feature``: only those
    records are built, subtracted and scanned); None without wide features (``cat``'s
    wide tasks are then none).
    """
    n_features = n_bins.shape[0]
    flat = small_hist.reshape(-1)
    stride = small_hist.shape[1] * small_hist.shape[2]
    Xf = X_binned.reshape(-1)
    n_wide_tasks = 0
    if cat is not None:  # (numba prunes these branches for cat=None)
        n_wide_tasks = cat.wide.shape[0]  # one a wide feature: its rows, then both children
        # unpacked: a parallel loop takes arrays, not records of them
        features, wide, mask, ints, gains, sums, bits = cat
        if wide_codes is not None:
            X_wide, offsets, n_codes, small_codes, large_codes, update_bytes = wide_codes
        elif n_wide_tasks > 0:
            raise ValueError("build_child_splits: wide categorical tasks need wide_codes")
    sg, sh, sn, s_lo, s_hi = small_sums
    lg, lh, ln, l_lo, l_hi = large_sums
    s_min_n, s_parent, s_factor = _node_constants(sg, sh, sn, c, s_lo, s_hi)
    l_min_n, l_parent, l_factor = _node_constants(lg, lh, ln, c, l_lo, l_hi)
    s_gain, s_bin, s_left, s_gl, s_hl, s_cl = small_work  # unpacked: see find_best_splits
    l_gain, l_bin, l_left, l_gl, l_hl, l_cl = large_work
    n_tasks = n_blocks if paired else n_blocks + n_wide_tasks
    n_light = n_wide_tasks if paired else 0
    for p in prange(n_tasks):
        i, w = _block_and_wide(p, n_tasks, n_blocks, n_wide_tasks, paired)
        if i >= 0:
            f_lo = block_start(i, n_features, n_blocks, n_light, wide_weight)
            f_hi = block_start(i + 1, n_features, n_blocks, n_light, wide_weight)
            for j in range(f_lo * stride, f_hi * stride):  # a loop: a slice fill is a
                flat[j] = 0                                 # parfor
            if f_hi - f_lo <= COLUMN_BLOCK_FEATURES:
                accumulate_columns(X_binned_T, grad, hess, rows, start, end, f_lo, f_hi, flat,
                                   stride, small_hist.shape[2])
            else:
                _accumulate(Xf, n_features, grad, hess, rows, start, end, True, f_lo, f_hi,
                            flat, stride, small_hist.shape[2])
            for f in range(f_lo, f_hi):
                if do_small:
                    (s_gain[f], s_bin[f], s_left[f], s_gl[f], s_hl[f],
                     s_cl[f]) = _scan_feature(small_hist, f, n_bins[f], feature_mask[f], sg,
                                              sh, sn, c, s_min_n, s_parent, s_factor, s_lo,
                                              s_hi, monotone[f])
                if do_large:
                    subtract_rows(large_hist, small_hist, f, 1)
                    (l_gain[f], l_bin[f], l_left[f], l_gl[f], l_hl[f],
                     l_cl[f]) = _scan_feature(large_hist, f, n_bins[f], feature_mask[f], lg,
                                              lh, ln, c, l_min_n, l_parent, l_factor, l_lo,
                                              l_hi, monotone[f])
                # a byte categorical feature's task (not a call for every feature: each
                # passes seventeen arguments)
                if cat is not None and features[f, 0] >= 0:
                    categorical_task(f, n_features, small_hist, large_hist, do_small,
                                     do_large, small_sums, large_sums, c, k, features, wide,
                                     mask, ints, gains, sums, bits)
        # (conditions of their own: numba prunes them for cat or wide_codes None)
        if cat is not None and wide_codes is not None:
            if w >= 0:
                build_wide_feature(X_wide, grad, hess, rows, start, end, small_hist,
                                   n_features, offsets, w, n_codes[w], small_codes[w],
                                   update_bytes)
                for child in range(2):  # the smaller child, then the larger
                    categorical_task(n_features + 2 * w + child, n_features, small_hist,
                                     large_hist, do_small, do_large, small_sums, large_sums,
                                     c, k, features, wide, mask, ints, gains, sums, bits,
                                     small_codes, large_codes)
    return _children_best(small_work, large_work, small_sums, large_sums, do_small, do_large,
                          cat)


@njit(cache=True, inline="always")
def block_start(i, n_features, n_blocks, n_light, weight):
    """The first feature of block ``i`` of ``n_blocks`` (``i = n_blocks``: ``n_features``),
    in order: the blocks before the last ``n_light`` share what those leave evenly (one
    more for the first ones), and the last ``n_light`` (each also runs a wide feature's
    task, the cost of ``weight`` features) hold ``weight`` features fewer than an even
    share of the work, or none. Blocks of ``ceil(n_features / n_blocks)`` put a wide task
    after most of a block: on 2 threads and 31 features its thread had 15 features and the
    task, the other 16."""
    n_heavy = n_blocks - n_light
    light = 0
    if n_light > 0 and n_heavy > 0:
        light = max((n_features + n_light * weight) // n_blocks - weight, 0)
    rest = n_features - light * n_light  # the heavy blocks' features
    if n_heavy == 0:
        n_heavy, rest, light = n_blocks, n_features, 0  # blocks all alike: even
    if i >= n_heavy:
        return rest + (i - n_heavy) * light
    per, extra = divmod(rest, n_heavy)
    return i * per + min(i, extra)


@njit(cache=True, inline="always")
def _block_and_wide(p, n_tasks, n_blocks, n_wide_tasks, paired):
    """``(block, wide)``: the feature block and the wide feature task ``p`` of
    :func:`build_child_splits`' region runs, each -1 for none (``paired``: the block ``p``,
    and a wide feature after the last blocks; else one or the other, :func:`_slot`)."""
    q = np.int64(p)  # prange's index is unsigned in the parfor: one signature, not two
    if paired:
        return q, q - (n_blocks - n_wide_tasks)
    wide_task, i = _slot(q, n_tasks, n_wide_tasks)
    if wide_task:
        return np.int64(-1), i
    return i, np.int64(-1)


@njit(cache=True, inline="always")
def _slot(p, n_tasks, n_wide_tasks):
    """``(wide, i)``: slot ``p`` of a region's ``n_tasks`` runs wide task ``i`` or the
    region's other task ``i``. The wide tasks (a wide feature's search: the longest) are
    spread evenly over the slots, so that each thread's contiguous share of slots holds at
    most about one: at their end, two of them fell to one thread, whose region waited
    for both."""
    q = np.int64(p)  # prange's index is unsigned in the parfor: one signature, not two
    w = q * n_wide_tasks // n_tasks  # wide tasks before slot q
    if (q + 1) * n_wide_tasks // n_tasks > w:
        return True, w
    return False, q - w


@njit(cache=True, inline="always")
def _children_best(small_work, large_work, small_sums, large_sums, do_small, do_large, cat):
    # both kernels' result: each child's best numeric split, and the entry of a better
    # categorical one (-1: none)
    small = _pick_best(small_work, small_sums[0], small_sums[1])
    large = _pick_best(large_work, large_sums[0], large_sums[1])
    small_task = large_task = -1
    if cat is not None:
        n_cat = cat.gain.size // 2
        if do_small:
            small_task = best_task(cat.ints, cat.gain, 0, n_cat, small[0], small[1])
        if do_large:
            large_task = best_task(cat.ints, cat.gain, n_cat, n_cat, large[0], large[1])
    return small, large, small_task, large_task
