"""numba kernel of categorical split finding: the best "these categories left" split of a node.

A categorical feature's bins are its categories (``skltr._engine.binning``: the most
frequent ones, at most ``max_bins``); its missing bin holds NaN, the rare categories left out
of the bins and every category unseen at fit, and always goes right. Per node and categorical
feature, LightGBM's rule (``FindBestThresholdCategoricalInner``, ``feature_histogram.cpp``):

* at most ``max_cat_to_onehot - 1`` categories (LightGBM counts its "other" bin in
  ``num_bin``): one category against the rest, each tried, the usual gain;
* otherwise *many-vs-many*: the categories whose (estimated) count reaches ``cat_smooth`` are
  sorted by ``G / (H + cat_smooth)`` (stable), and prefixes of that order are tried from both
  ends, up to ``min(max_cat_threshold, (used + 1) // 2)`` categories, scored with
  ``reg_lambda + cat_l2``; a prefix is a candidate only when the categories added since the
  last candidate hold ``min_data_per_group`` rows, and a direction stops once the right side
  holds fewer than ``min_data_per_group`` (or ``min_samples_leaf``) rows, or too little
  hessian. The children of such a split get their outputs with ``reg_lambda + cat_l2`` too
  (the growth driver adds ``cat_l2`` where they stay leaves).

Counts are the numeric scan's (``skltr._cpu.split``): rows, or LightGBM's hessian estimates.
The parent's objective is LightGBM's too: with the plain ``reg_lambda``. A candidate must beat
``min_split_gain`` strictly and ties keep the first (lowest feature, then one-vs-rest bins
in order; many-vs-many: direction up before down, shorter prefix first). Under monotone
constraints the children's outputs are bounded as any split's; a categorical feature is never
constrained itself.

The chosen left set is returned as a bitset of bins (4 uint64 for the byte features, more
for the wide ones: ``skltr._engine.wide_categorical``), which the partition
(``skltr._cpu.partition.partition_rows_set``) and the binned-tree scoring read, and which the
tree's assembly turns into the category bitset of ``TreeEnsemble``'s categorical nodes.
"""

import numpy as np
from numba import njit, prange

from ._intrinsics import ctz64
from .histogram import subtract_rows
from .histogram_wide import subtract_codes
from .split import _bin, _bin_count, _monotone_gain, _node_constants, leaf_objective


@njit(cache=True, inline="always")
def _cat_gain(gl, hl, sum_g, sum_h, c, parent, lam, lo, hi):
    # the split's gain with L2 ``lam`` (checks of counts and hessians done by the caller)
    hl_f = hl * c.inv_scale_h
    hr_f = (sum_h - hl) * c.inv_scale_h
    if c.has_monotone:
        return _monotone_gain(gl, hl_f, sum_g, hr_f, c.inv_scale_g, lam, c.reg_alpha, 0, lo,
                              hi, parent)
    return (leaf_objective(gl * c.inv_scale_g, hl_f, lam, c.reg_alpha)
            + leaf_objective((sum_g - gl) * c.inv_scale_g, hr_f, lam, c.reg_alpha) - parent)


#: Categories above which only the ends of the order are kept (a selection pass, no sort):
#: a scan of 1,000 codes, 149 of them used, took 7.4 us with the sort from 256 on and 5.5 us
#: with this (one thread, in numba, by hand; the same ends: tested)
_PARTIAL_SORT_MIN = 32


@njit(cache=True)
def _order_ends(keys, order, n, up, down):
    """The ends of ``order`` stably sorted by ``keys`` (``np.argsort(kind="mergesort")``, as
    LightGBM's ``std::stable_sort``): ``up[:n]`` its first ``n`` entries, ``down[:n]`` its
    last ``n`` from the end. Many categories (a wide feature: thousands) keep only those:
    one pass holding the ``n`` best of either end so far, sorted, by ``(key, position)`` --
    the stable order, ties included (the scan never reads past ``n``); after the first
    ``n`` entries a key mostly costs two comparisons. Two partitions and sorts of their
    candidates took about three times as long at 9,000 categories and ``n`` 32 (by hand),
    in the longest task of a split on 16 threads."""
    used = keys.size
    if used <= _PARTIAL_SORT_MIN:
        rank = np.argsort(keys, kind="mergesort")
        for i in range(n):
            up[i] = order[rank[i]]
            down[i] = order[rank[used - 1 - i]]
        return
    low_key = np.empty(n, np.float64)  # the n smallest so far, increasing by (key, j)
    low_at = np.empty(n, np.int64)
    high_key = np.empty(n, np.float64)  # the n largest so far, decreasing by (key, j)
    high_at = np.empty(n, np.int64)
    m = 0
    for j in range(used):
        kj = keys[j]
        # j is later than every entry held: among equal keys it sorts after them, so it
        # enters the low end only below the worst key and the high end from it up
        if m < n or kj < low_key[n - 1]:
            p = min(m, n - 1)
            while p > 0 and kj < low_key[p - 1]:
                low_key[p] = low_key[p - 1]
                low_at[p] = low_at[p - 1]
                p -= 1
            low_key[p] = kj
            low_at[p] = j
        if m < n or kj >= high_key[n - 1]:
            p = min(m, n - 1)
            while p > 0 and kj >= high_key[p - 1]:
                high_key[p] = high_key[p - 1]
                high_at[p] = high_at[p - 1]
                p -= 1
            high_key[p] = kj
            high_at[p] = j
        if m < n:
            m += 1
    for i in range(n):
        up[i] = order[low_at[i]]
        down[i] = order[high_at[i]]


@njit(cache=True)
def best_categorical_split(hist, features, n_bins, feature_mask, sum_g, sum_h, count, lo, hi,
                           c, k, left_bits):
    """The best categorical split of one node over the categorical ``features``.

    Parameters
    ----------
    hist, n_bins, feature_mask, sum_g, sum_h, count, lo, hi, c
        As :func:`skltr._cpu.split.find_best_splits`.
    features : ndarray of int64
        The categorical features, increasing.
    k : skltr._records.CategoricalConstants
    left_bits : ndarray of uint64, shape (>= (hist.shape[1] + 63) // 64,)
        Receives the best split's left bins (bit ``b % 64`` of word ``b // 64``).

    Returns
    -------
    tuple
        ``(feature, gain, left_g, left_h, left_count, many)``: ``feature`` -1 when no
        candidate qualifies; ``left_count`` exact rows of the left bins (meaningless for
        one-word histograms, as the numeric scan's); ``many`` whether it is a many-vs-many
        split (its children's outputs take ``cat_l2``).
    """
    min_n, parent, count_factor = _node_constants(sum_g, sum_h, count, c, lo, hi)
    best_f = -1
    best = (-np.inf, sum_g - sum_g, sum_h - sum_h, np.int64(0), False)
    left_bits[:] = 0
    bits = np.empty_like(left_bits)
    for j in range(features.size):
        f = features[j]
        if not feature_mask[f]:
            continue
        found = _feature_split(hist, f, n_bins[f], sum_g, sum_h, count, lo, hi, c, k, min_n,
                               parent, count_factor, bits)
        if found[0] > best[0]:  # ties keep the lower feature
            best_f, best = f, found
            left_bits[:] = bits
    return best_f, best[0], best[1], best[2], best[3], best[4]


@njit(cache=True)
def _feature_split(hist, f, nb, sum_g, sum_h, count, lo, hi, c, k, min_n, parent,
                   count_factor, left_bits, present=None):
    """The best categorical split of one node on feature ``f`` (``nb`` bins):
    ``(gain, left_g, left_h, left_count, many)``, ``gain`` -inf when no candidate beats
    ``min_split_gain``; ``left_bits`` receives its left bins (cleared first).

    ``present`` (a wide feature's, ``skltr._cpu.histogram_wide.build_wide_feature``): the
    only bins to read (uint64 words, bit ``b % 64`` of word ``b // 64``: bin ``b``), which
    the scan narrows to those whose record is not all zeros; None: every bin."""
    hessian_counts = count_factor > 0.0
    inv_h = c.inv_scale_h
    min_w = c.min_child_weight
    best = c.min_split_gain
    found = False
    best_gl = sum_g - sum_g
    best_hl = sum_h - sum_h
    best_cl = 0
    best_dir = 0
    best_len = 0
    best_bin = -1
    left_bits[:] = 0
    if nb <= 1:
        return -np.inf, best_gl, best_hl, np.int64(0), False
    if nb + 1 <= k.max_cat_to_onehot:
        for b in range(nb):
            gb, hb, cb, nonempty = _bin(hist, f, b, c.count_shift, hessian_counts)
            if not nonempty:
                continue
            cl = _bin_count(hb, cb, inv_h, count_factor)
            cr = count - cl
            if cl < min_n or cr < min_n:
                continue
            if hb * inv_h < min_w or (sum_h - hb) * inv_h < min_w:
                continue
            gain = _cat_gain(gb, hb, sum_g, sum_h, c, parent, c.reg_lambda, lo, hi)
            if gain > best:
                best, best_gl, best_hl, best_cl, best_bin = gain, gb, hb, cb, b
                found = True
        if not found:
            return -np.inf, best_gl, best_hl, np.int64(0), False
        left_bits[best_bin >> 6] |= np.uint64(1) << np.uint64(best_bin & 63)
        return best, best_gl, best_hl, np.int64(best_cl), False
    n_max = hist.shape[1]  # bins a row: a wide feature's codes are one long row
    order = np.empty(n_max, np.int64)
    keys = np.empty(n_max, np.float64)
    if present is None:
        used = _used_bins(hist, f, nb, c, k, count_factor, order)
    else:
        used = _present_bins(hist, f, nb, c, k, count_factor, present, order)
    if used == 0:
        return -np.inf, best_gl, best_hl, np.int64(0), False
    for i in range(used):  # the keys of the bins used only (few of a wide feature's)
        gb, hb, _, _ = _bin(hist, f, order[i], c.count_shift, hessian_counts)
        num = gb * c.inv_scale_g
        den = hb * inv_h + k.cat_smooth
        # IEEE's quotient, as LightGBM's: +-inf for a bin of gradients and no hessian under
        # cat_smooth=0 (numba's division would raise there); a bin of rows with neither
        # (counted by rows) sorts as 0, not as NaN, which no stable order places
        keys[i] = num / den if den != 0.0 else (num * np.inf if num != 0.0 else 0.0)
    max_num_cat = min(k.max_cat_threshold, (used + 1) // 2)
    n_seq = min(used, max_num_cat)
    up = np.empty(n_seq, np.int64)  # the ends of the feature's sorted order
    down = np.empty(n_seq, np.int64)
    _order_ends(keys[:used], order[:used], n_seq, up, down)
    lam = c.reg_lambda + k.cat_l2
    for direction in (1, -1):
        gl = sum_g - sum_g
        hl = sum_h - sum_h
        cl_rows = 0
        cl = np.int64(0)
        group = np.int64(0)
        for i in range(n_seq):
            b = up[i] if direction == 1 else down[i]
            gb, hb, cb, _ = _bin(hist, f, b, c.count_shift, hessian_counts)
            gl += gb
            hl += hb
            cl_rows += cb
            n_b = _bin_count(hb, cb, inv_h, count_factor)
            cl += n_b
            group += n_b
            if cl < min_n or hl * inv_h < min_w:
                continue
            cr = count - cl
            if cr < min_n or cr < k.min_data_per_group:
                break
            if (sum_h - hl) * inv_h < min_w:
                break
            if group < k.min_data_per_group:
                continue
            group = 0
            gain = _cat_gain(gl, hl, sum_g, sum_h, c, parent, lam, lo, hi)
            if gain > best:
                best, best_gl, best_hl, best_cl = gain, gl, hl, cl_rows
                best_dir, best_len = direction, i + 1
                found = True
    if not found:
        return -np.inf, best_gl, best_hl, np.int64(0), False
    for i in range(best_len):
        b = up[i] if best_dir == 1 else down[i]
        left_bits[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    return best, best_gl, best_hl, np.int64(best_cl), True


@njit(cache=True, inline="always")
def _usable(hist, f, b, c, k, count_factor, hessian_counts):
    # whether the scan sorts bin b: nonempty, with a count of cat_smooth or more (no
    # branch: which bins pass is data)
    gb, hb, cb, nonempty = _bin(hist, f, b, c.count_shift, hessian_counts)
    return nonempty & (_bin_count(hb, cb, c.inv_scale_h, count_factor) >= k.cat_smooth)


@njit(cache=True, inline="always")
def _used_bins(hist, f, nb, c, k, count_factor, order):
    # _feature_split's used bins: those whose count reaches cat_smooth, in order[:used]
    # (increasing; returns used). The used bins of 64 as the bits of a word, then its set
    # bits in order: a node uses few of a wide feature's bins, and which is data (a branch
    # on each mispredicted); a word of none costs one test
    hessian_counts = count_factor > 0.0
    used = 0
    for w0 in range(0, nb, 64):
        word = np.uint64(0)
        for b in range(w0, min(w0 + 64, nb)):
            ok = _usable(hist, f, b, c, k, count_factor, hessian_counts)
            word |= np.uint64(ok) << np.uint64(b - w0)
        while word != 0:
            order[used] = w0 + np.int64(ctz64(word))
            used += 1
            word &= word - np.uint64(1)
    return used


@njit(cache=True, inline="always")
def _present_bins(hist, f, nb, c, k, count_factor, present, order):
    # _feature_split's used bins (order[:used], increasing; returns used) among the bins of
    # ``present``, which keeps those whose record is not all zeros (and the missing bin's
    # and above: not read). Not "nonempty": a record of counts and no gradients, or of
    # float leftovers, is empty to the scan but not zero, and a full subtraction
    # (``skltr._cpu.histogram_wide.whole_codes``) reads it
    hessian_counts = count_factor > 0.0
    used = 0
    for i in range(present.size):
        cand = present[i]
        kept = np.uint64(0)
        while cand != 0:
            low = cand & (~cand + np.uint64(1))
            cand ^= low
            b = i * 64 + np.int64(ctz64(low))
            if b >= nb:
                kept |= low
                continue
            nonzero = False
            for ch in range(hist.shape[2]):
                nonzero |= hist[f, b, ch] != 0
            kept |= low * np.uint64(nonzero)
            if _usable(hist, f, b, c, k, count_factor, hessian_counts):
                order[used] = b
                used += 1
        present[i] = kept
    return used


@njit(cache=True)
def best_categorical_splits(hists, rows, masks, mask_row, sums, bounds, c, k, out):
    """:func:`best_categorical_split` of a batch of nodes over every categorical feature:
    the byte ones (histogram rows ``rows.narrow_rows``) and the wide ones (each its rows
    ``rows.wide_row0[w]`` on, searched as one long row); per node the best by gain, ties to
    the lower feature number. One call a batch: the GPU grower's host decision.

    Parameters
    ----------
    hists : ndarray, shape (m, n_rows, n_bins_total, n_channels)
        The nodes' histogram rows the layout ``rows`` names.
    rows : skltr._records.CategoricalRows
    masks : ndarray of bool, shape (n_masks, n_features)
        Features a node may split on: row ``mask_row[i]`` for node ``i``.
    sums : ndarray of the histogram dtype, shape (m, 3)
        The nodes' gradient and hessian sums and row counts.
    bounds : ndarray of float64, shape (m, 2)
        The nodes' output bounds (lower, upper).
    c, k
        As :func:`best_categorical_split`.
    out : skltr._records.CategoricalFound
        Receives per node the best split (feature -1: none) and its left bins.
    """
    narrow_rows, row_feature, row_n_bins, wide_row0, wide_n_rows, wide_n_bins, wide_ids = rows
    ints, gains, found_sums, bits = out
    for i in range(hists.shape[0]):
        _node_best(i, hists, narrow_rows, row_feature, row_n_bins, wide_row0, wide_n_rows,
                   wide_n_bins, wide_ids, masks, mask_row, sums, bounds, c, k, ints, gains,
                   found_sums, bits)


@njit(parallel=True, cache=True)
def best_categorical_splits_parallel(hists, rows, masks, mask_row, sums, bounds, c, k, out):
    """:func:`best_categorical_splits` with a node a task (the nodes are independent: the
    same splits on any number of threads). The GPU grower's batches: ~16 nodes a call
    whose wide features' scans took most of a categorical GPU fit on one thread."""
    # unpacked: a parallel loop takes arrays, not records of them
    narrow_rows, row_feature, row_n_bins, wide_row0, wide_n_rows, wide_n_bins, wide_ids = rows
    ints, gains, found_sums, bits = out
    for p in prange(hists.shape[0]):
        _node_best(np.int64(p), hists, narrow_rows, row_feature, row_n_bins, wide_row0,
                   wide_n_rows, wide_n_bins, wide_ids, masks, mask_row, sums, bounds, c, k,
                   ints, gains, found_sums, bits)


@njit(cache=True)
def _node_best(i, hists, narrow_rows, row_feature, row_n_bins, wide_row0, wide_n_rows,
               wide_n_bins, wide_ids, masks, mask_row, sums, bounds, c, k, out_ints, out_gain,
               out_sums, out_bits):
    # node i of best_categorical_splits (a CategoricalRows and a CategoricalFound unpacked):
    # its byte features, then each wide one
    row_mask = np.zeros(hists.shape[1], np.bool_)
    tmp = np.empty(out_bits.shape[1], np.uint64)
    mrow = masks[mask_row[i]]
    for j in range(narrow_rows.size):
        r = narrow_rows[j]
        row_mask[r] = mrow[row_feature[r]]
    bits = out_bits[i]
    sum_g, sum_h, count = sums[i, 0], sums[i, 1], np.int64(sums[i, 2])
    lo, hi = bounds[i, 0], bounds[i, 1]
    f, gain, gl, hl, cl, many = best_categorical_split(
        hists[i], narrow_rows, row_n_bins, row_mask, sum_g, sum_h, count, lo, hi, c, k, bits)
    best_f = -1 if f < 0 else row_feature[f]
    min_n, parent, count_factor = _node_constants(sum_g, sum_h, count, c, lo, hi)
    for w in range(wide_ids.size):
        fid = wide_ids[w]
        if not mrow[fid]:
            continue
        r0 = wide_row0[w]
        nr = wide_n_rows[w]
        view = hists[i, r0:r0 + nr].reshape(1, nr * hists.shape[2], hists.shape[3])
        gw, glw, hlw, clw, manyw = _feature_split(view, 0, wide_n_bins[w], sum_g, sum_h,
                                                  count, lo, hi, c, k, min_n, parent,
                                                  count_factor, tmp)
        if gw > -np.inf and (best_f < 0 or gw > gain or (gw == gain and fid < best_f)):
            best_f, gain, gl, hl, cl, many = fid, gw, glw, hlw, clw, manyw
            bits[:] = tmp
    _store(out_ints, out_gain, out_sums, i, best_f, gain, gl, hl, cl, many)


@njit(cache=True, inline="always")
def _store(ints, gains, sums, i, f, gain, gl, hl, cl, many):
    # entry i of a CategoricalFound's arrays
    ints[i, 0] = f
    ints[i, 1] = cl
    ints[i, 2] = many
    gains[i] = gain
    sums[i, 0] = gl
    sums[i, 1] = hl


@njit(cache=True)
def categorical_task(t, n_features, small_hist, large_hist, do_small, do_large, small_sums,
                     large_sums, c, k, features, wide, mask, ints, gains, sums, bits,
                     small_codes=None, large_codes=None):
    """Task ``t`` of a fused search of two children (``skltr._cpu.split_children.
    find_child_splits``; ``features .. bits``: a :class:`skltr._records.CategoricalTasks`
    unpacked, as numba's parallel loops take arrays, not records of them; ``k`` the
    controls): for ``t < n_features`` the byte
    categorical feature ``t`` for both children (its rows reduced and subtracted by the
    caller), else wide feature ``(t - n_features) // 2`` for the smaller child (even) or the
    larger one (odd; the task first subtracts the feature's rows, ``large_hist`` holding the
    parent's); a child asked for gets its best split on the feature at the task's entry.

    ``small_codes``, ``large_codes`` (uint64, shape (n_wide, n_words); None: every record):
    the codes whose records the children's wide rows hold (``skltr._cpu.histogram_wide.
    build_wide_feature``); the larger child's are its parent's and the smaller one's
    (``subtract_codes``), narrowed by its scan."""
    n_tasks = gains.size // 2
    if t < n_features:
        j = features[t, 0]
        if j < 0:
            return
        f = t
        nb = features[f, 1]
        if do_small:
            _task_split(small_hist, f, nb, small_sums, c, k, mask, ints, gains, sums, bits,
                        j, f)
        if do_large:
            _task_split(large_hist, f, nb, large_sums, c, k, mask, ints, gains, sums, bits,
                        n_tasks + j, f)
        return
    # two tasks a wide feature, one a child: its scan of ~codes bins is the longest task
    w, larger = divmod(t - n_features, 2)
    j = n_tasks - wide.shape[0] + w
    r0, nr, nb, f = wide[w, 0], wide[w, 1], wide[w, 2], wide[w, 3]
    shape = (1, nr * small_hist.shape[1], small_hist.shape[2])  # the codes as one long row
    small_view = small_hist[r0:r0 + nr].reshape(shape)
    if larger == 0:
        if do_small:
            _task_split(small_view, 0, nb, small_sums, c, k, mask, ints, gains, sums, bits,
                        j, f, None if small_codes is None else small_codes[w])
        return
    if do_large:
        large_view = large_hist[r0:r0 + nr].reshape(shape)
        if small_codes is None:
            subtract_rows(large_hist, small_hist, r0, nr)
            _task_split(large_view, 0, nb, large_sums, c, k, mask, ints, gains, sums, bits,
                        n_tasks + j, f)
        else:
            subtract_codes(large_view, small_view, small_codes[w], large_codes[w])
            _task_split(large_view, 0, nb, large_sums, c, k, mask, ints, gains, sums, bits,
                        n_tasks + j, f, large_codes[w])


@njit(cache=True)
def _task_split(hist, row, nb, node_sums, c, k, mask, ints, gains, sums, bits, j, f,
                present=None):
    # one child's best split on categorical feature f (histogram row ``row``; ``present``:
    # _feature_split's) into entry j
    ints[j, 0] = -1
    if not mask[f]:
        return
    sum_g, sum_h, count, lo, hi = node_sums
    min_n, parent, count_factor = _node_constants(sum_g, sum_h, count, c, lo, hi)
    gain, gl, hl, cl, many = _feature_split(hist, row, nb, sum_g, sum_h, count, lo, hi, c, k,
                                            min_n, parent, count_factor, bits[j], present)
    if gain > -np.inf:
        _store(ints, gains, sums, j, f, gain, gl, hl, cl, many)


@njit(cache=True)
def best_task(ints, gains, first, n, num_feature, num_gain):
    """The entry ``first .. first + n - 1`` of ``ints`` / ``gains`` (a ``CategoricalFound``'s
    arrays: one child's best split per task) whose split beats the numeric split
    ``(num_feature, num_gain)`` (feature -1: none), or -1: the highest gain, ties to the
    lower feature -- the numeric search's rule."""
    best = -1
    for j in range(first, first + n):
        f = ints[j, 0]
        if f >= 0 and (best < 0 or gains[j] > gains[best]
                       or (gains[j] == gains[best] and f < ints[best, 0])):
            best = j
    if best < 0 or not categorical_wins(num_feature, num_gain, ints[best, 0], gains[best]):
        return -1
    return best


@njit(cache=True)
def categorical_wins(num_feature, num_gain, cat_feature, cat_gain):
    """Whether the categorical split ``(cat_feature, cat_gain)`` beats the numeric one
    (feature -1: none): the higher gain, ties to the lower feature."""
    return cat_feature >= 0 and (num_feature < 0 or cat_gain > num_gain
                                 or (cat_gain == num_gain and cat_feature < num_feature))
