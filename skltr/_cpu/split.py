"""numba kernel of split finding: the best (feature, bin, missing direction) of one node.

For each feature the node's histogram is scanned left to right, accumulating the left
child's sums ``(G_L, H_L, n_L)`` bin by bin; the right child gets the rest. The missing bin
(the last of the histogram) is tried on the left and then on the right child, or -- when the
node holds no missing value of that feature -- sent to the child with more samples (ties go
right), scikit-learn's rule for features without missing values::

    bins   0   1   2  ...  nb-1 | miss
           [--- left ---]  [ right ... ]       candidate "bin <= b goes left"
           missing left : b = 0 .. nb-2   (all rows left at b = nb-1: not a split)
           missing right: b = 0 .. nb-1   (b = nb-1 splits missing from non-missing)

    gain = S(G_L, H_L) + S(G_R, H_R) - S(G, H),   S(G, H) = T(G)**2 / (H + lambda)
    T(G) = sign(G) * max(|G| - alpha, 0)          (L1 soft-thresholding; T(G) = G at alpha 0)

A candidate needs ``n >= max(min_samples_leaf, 1)`` and ``H >= min_child_weight`` in both
children and ``gain > min_split_gain``. ``n`` is the row count, or with ``count_factor > 0``
LightGBM's estimate of it (its ``min_data_in_leaf`` rule, ``feature_histogram.hpp``): each
bin counts ``int(h_bin * count_factor + 0.5)`` rows, ``count_factor = node rows / node
hessian``, the right child the sum over its bins and the left child the node's rows minus
that. With unequal hessians (lambdarank) the estimate differs from the row count by a few
rows either way.

Ties keep the first candidate in the order (feature, bin, missing left before missing right):
strictly greater gains replace. A threshold followed by bins that hold no row of the node
splits the node's rows exactly as the last of those bins does; the last one is kept
(LightGBM's choice), so that values unseen in the node between the two children's ranges go
left, as in LightGBM's models.

With hessian counts a bin whose gradient and hessian sums are both zero counts as *empty*
(LightGBM's histograms hold no row counts, so it cannot tell such a bin from one without
rows; lambdarank gives every row of a query with equal labels zero gradient and hessian):
empty bins are skipped, thresholds move up over them (their rows go left with them), the
missing bin counts as holding missing rows only when it is not empty, and without missing
rows the "child with more samples" compares estimated counts. With row counts, "empty" means
"no row of the node".

Sums stay in the histogram's units (float64, or int64 in quantised mode, where right = total
- left is exact) and are converted to float by ``inv_scale_g``/``inv_scale_h`` only to score.
Histograms come in three layouts (``_bin`` reads each): 3 channels (float mode), 2 channels
with the row count packed above the hessian, 1 channel with gradient and hessian in one word
(no counts; ``hessian_counts`` only, and the returned ``left_count`` is then meaningless --
the grower takes the partition's).
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def soft_threshold(G, reg_alpha):
    """L1 soft-thresholding ``T(G) = sign(G) * max(|G| - alpha, 0)`` (``G`` at alpha 0)."""
    if reg_alpha > 0.0:
        if G > reg_alpha:
            return G - reg_alpha
        if G < -reg_alpha:
            return G + reg_alpha
        return 0.0
    return G


@njit(cache=True, inline="always")
def leaf_objective(G, H, reg_lambda, reg_alpha):
    """``T(G)**2 / (H + lambda)``; 0 where the denominator is not positive."""
    G = soft_threshold(G, reg_alpha)
    d = H + reg_lambda
    if d <= 0.0:
        return 0.0
    return G * G / d


@njit(cache=True)
def leaf_value(G, H, reg_lambda, reg_alpha, learning_rate):
    """Newton step ``-T(G) / (H + lambda) * learning_rate``; 0 where ``H + lambda <= 0``.

    The one definition of a leaf's value: the CPU grower calls it per leaf, the GPU grower
    through :func:`leaf_values` (the CUDA split kernel's ``leaf_objective`` is pinned to
    :func:`leaf_objective` by ``tests/test_gbdt_gpu.py``).
    """
    G = soft_threshold(G, reg_alpha)
    d = H + reg_lambda
    if d <= 0.0:
        return 0.0
    return -G / d * learning_rate


@njit(cache=True)
def leaf_values(sum_g, hess_sum, is_leaf, inv_scale_g, reg_lambda, reg_alpha, learning_rate):
    """:func:`leaf_value` of every leaf (``sum_g`` in histogram units); 0 elsewhere."""
    out = np.zeros(sum_g.shape[0], dtype=np.float64)
    for i in range(sum_g.shape[0]):
        if is_leaf[i]:
            out[i] = leaf_value(sum_g[i] * inv_scale_g, hess_sum[i], reg_lambda, reg_alpha,
                                learning_rate)
    return out


@njit(cache=True, inline="always")
def _bin(hist, f, b, count_shift, hessian_counts):
    """``(g, h, c, nonempty)`` of bin b of feature f, in histogram units.

    Layouts (``skltr._cpu.histogram``): 3 channels (g, h, count); 2 channels with the count
    packed above bit ``count_shift`` of the hessian channel; 1 channel with ``g`` in the high
    32 bits and ``h`` in the low 32 bits of one int64 (no count: ``c`` is then ``nonempty``).
    A bin is *nonempty* when it holds rows, or -- with ``hessian_counts``, which sees rows
    only through their hessians, as LightGBM -- when its gradient or hessian sum is not zero.
    """
    n_channels = hist.shape[2]
    if n_channels == 1:
        v = np.int64(hist[f, b, 0])
        g = v >> 32
        h = v & np.int64(0xFFFFFFFF)
        nonempty = v != 0
        return g, h, np.int64(nonempty), nonempty
    g = hist[f, b, 0]
    if n_channels == 2:
        v = np.int64(hist[f, b, 1])
        h = v & ((np.int64(1) << count_shift) - 1)
        c = v >> count_shift
    else:
        h = hist[f, b, 1]
        c = np.int64(hist[f, b, 2])
    if hessian_counts:
        return g, h, c, (g != 0) | (h != 0)
    return g, h, c, c > 0


@njit(cache=True, inline="always")
def bounded_output(G, H, reg_lambda, reg_alpha, lo, hi):
    """A leaf's output before shrinkage, ``-T(G) / (H + lambda)`` (0 where ``H + lambda <=
    0``), clamped to the node's monotone bounds ``[lo, hi]``."""
    d = H + reg_lambda
    w = 0.0
    if d > 0.0:
        w = -soft_threshold(G, reg_alpha) / d
    # explicit comparisons, as the CUDA kernel and the host's: the sign of a zero is kept
    if w < lo:
        return lo
    if w > hi:
        return hi
    return w


@njit(cache=True, inline="always")
def objective_at(G, H, reg_lambda, reg_alpha, w, lo, hi):
    """The leaf objective at output ``w``: :func:`leaf_objective` (the same bits) where ``w``
    is inside the bounds, ``-(2 T(G) w + (H + lambda) w**2)`` (LightGBM's
    ``GetLeafGainGivenOutput``) where a bound clamped it."""
    if lo < w < hi:
        return leaf_objective(G, H, reg_lambda, reg_alpha)
    return -(2.0 * soft_threshold(G, reg_alpha) * w + (H + reg_lambda) * w * w)


# Not inlined: _gain is inlined at the scan's three call sites, and this branch inlined in
# each tripled the scan's compile time on a first run (9.6 s of CPU against ~3 s); called,
# it is compiled once, and costs a call only under monotone constraints.
@njit(cache=True)
def _monotone_gain(gl, hl_f, sum_g, hr_f, inv_scale_g, reg_lambda, reg_alpha, mono_f, lo,
                   hi, parent):
    # the children's outputs clamped to the node's bounds; -inf when they break the
    # feature's direction (LightGBM's basic method)
    gl_f = gl * inv_scale_g
    gr_f = (sum_g - gl) * inv_scale_g
    wl = bounded_output(gl_f, hl_f, reg_lambda, reg_alpha, lo, hi)
    wr = bounded_output(gr_f, hr_f, reg_lambda, reg_alpha, lo, hi)
    if (mono_f > 0 and wl > wr) or (mono_f < 0 and wl < wr):
        return -np.inf
    return (objective_at(gl_f, hl_f, reg_lambda, reg_alpha, wl, lo, hi)
            + objective_at(gr_f, hr_f, reg_lambda, reg_alpha, wr, lo, hi) - parent)


@njit(cache=True, inline="always")
def _gain(gl, hl, cl, cr, sum_g, sum_h, c, min_n, parent, mono_f, lo, hi):
    # gain of the split with left sums (gl, hl) and child counts (cl, cr) (rows or estimates);
    # -inf when a child breaks a constraint; under monotone constraints (c.has_monotone)
    # the children's outputs are bounded and must follow the feature's direction
    if cl < min_n or cr < min_n:
        return -np.inf
    hl_f = hl * c.inv_scale_h
    hr_f = (sum_h - hl) * c.inv_scale_h
    if hl_f < c.min_child_weight or hr_f < c.min_child_weight:
        return -np.inf
    if c.has_monotone:
        return _monotone_gain(gl, hl_f, sum_g, hr_f, c.inv_scale_g, c.reg_lambda,
                              c.reg_alpha, mono_f, lo, hi, parent)
    return (leaf_objective(gl * c.inv_scale_g, hl_f, c.reg_lambda, c.reg_alpha)
            + leaf_objective((sum_g - gl) * c.inv_scale_g, hr_f, c.reg_lambda, c.reg_alpha)
            - parent)


@njit(cache=True, inline="always")
def _bin_count(hb, cb, inv_scale_h, count_factor):
    # rows of a bin: exact, or LightGBM's RoundInt(hessian * count_factor)
    if count_factor > 0.0:
        return np.int64(hb * inv_scale_h * count_factor + 0.5)
    return np.int64(cb)


@njit(cache=True, inline="always")
def missing_and_rows(hist, f, nb, count, c, count_factor):
    """``(mg, mh, mc, with_missing, me, n_all)`` of feature ``f`` (``nb`` bins) of a node of
    ``count`` rows: its missing bin (:func:`_bin`), the rows the leaf limits see in it
    (``me``) and in the node (``n_all``: ``count``, or with hessian counts -- ``count_factor
    > 0`` -- the estimates summed per bin, so that a child's count is ``n_all`` minus its
    complement's). Shared by the node scan and the symmetric level search."""
    hessian_counts = count_factor > 0.0
    mg, mh, mc, with_missing = _bin(hist, f, c.missing_bin, c.count_shift, hessian_counts)
    me = _bin_count(mh, mc, c.inv_scale_h, count_factor)
    n_all = np.int64(count)
    if hessian_counts:
        n_all = me
        for b in range(nb):
            _, hb, cb, _ = _bin(hist, f, b, c.count_shift, True)
            n_all += _bin_count(hb, cb, c.inv_scale_h, count_factor)
    return mg, mh, mc, with_missing, me, n_all


# Not inlined: one compiled copy serves the parallel and the serial kernel, and a parfor
# whose body is a single call compiles several times faster than one with the scan inlined
# (see docs/devguide.rst, numba); its own helpers stay inlined, so the scan's code is as before.
@njit(cache=True)
def _scan_feature(hist, f, nb, use, sum_g, sum_h, count, c, min_n, parent, count_factor, lo,
                  hi, mono_f):
    # Best candidate of feature f: (gain, bin or -1, default_left, left_g, left_h, left_count);
    # c: SplitConstants; [lo, hi]: the node's output bounds and mono_f the feature's
    # direction (monotone constraints)
    count_shift = c.count_shift
    inv_scale_h = c.inv_scale_h
    min_split_gain = c.min_split_gain
    best = min_split_gain  # a candidate must beat it strictly
    best_b = -1
    best_left = False
    best_gl = sum_g - sum_g
    best_hl = sum_h - sum_h
    best_cl = 0
    if not use or nb <= 1:
        return -np.inf, best_b, best_left, best_gl, best_hl, best_cl
    hessian_counts = count_factor > 0.0
    # Counts checked against min_n: ``n_all`` for the node and ``an`` for the left part so
    # far (rows, or estimates summed per bin); a child's count is n_all - (its complement's).
    mg, mh, mc, with_missing, me, n_all = missing_and_rows(hist, f, nb, count, c,
                                                           count_factor)
    ag = sum_g - sum_g
    ah = sum_h - sum_h
    ac = 0
    an = np.int64(0)
    # An empty bin b > 0 repeats the candidates of bin b - 1 exactly (same sums, same gains)
    # and the lower bin wins ties: it is skipped. (Bin 0 is not: with missing rows, "missing
    # alone on the left" mirrors the last bin's "missing alone on the right".) Once the
    # right child is below min_n rows, it only shrinks: stop.
    # The two loops below differ only in the missing-left candidate and the missing
    # direction; one loop with ``with_missing`` tests inside measured 8-12% slower per node
    # (interleaved, min of 7 on captured 494k x 136 nodes), so they stay apart.
    if with_missing:
        for b in range(nb):
            gb, hb, cb, nonempty = _bin(hist, f, b, count_shift, hessian_counts)
            if not nonempty and b > 0:
                continue
            ag += gb
            ah += hb
            ac += cb
            an += _bin_count(hb, cb, inv_scale_h, count_factor)
            if n_all - an < min_n:
                break
            if b < nb - 1:  # missing left (at b = nb - 1 every row would go left)
                cr = n_all - an - me
                gain = _gain(ag + mg, ah + mh, count - cr, cr, sum_g, sum_h, c, min_n,
                             parent, mono_f, lo, hi)
                if gain > best:
                    best, best_b, best_left = gain, b, True
                    best_gl, best_hl, best_cl = ag + mg, ah + mh, ac + mc
            cr = n_all - an
            gain = _gain(ag, ah, count - cr, cr, sum_g, sum_h, c, min_n, parent, mono_f,
                         lo, hi)
            if gain > best:  # missing right
                best, best_b, best_left = gain, b, False
                best_gl, best_hl, best_cl = ag, ah, ac
    else:
        # no missing row in the node: missing values follow the child with more rows (ties
        # right), counted as min_n is (rows, or estimates)
        for b in range(nb - 1):
            gb, hb, cb, nonempty = _bin(hist, f, b, count_shift, hessian_counts)
            if not nonempty and b > 0:
                continue
            ag += gb
            ah += hb
            ac += cb
            an += _bin_count(hb, cb, inv_scale_h, count_factor)
            if n_all - an < min_n:
                break
            cr = n_all - an
            gain = _gain(ag, ah, count - cr, cr, sum_g, sum_h, c, min_n, parent, mono_f,
                         lo, hi)
            if gain > best:
                best, best_b, best_left = gain, b, count - cr > cr
                # under hessian counts the missing bin may hold rows with zero gradients
                # and hessians (invisible, so with_missing is False): they follow the
                # default direction, so a left default counts them in the left child
                best_gl, best_hl, best_cl = ag, ah, ac + (mc if best_left else 0)
    if best_b < 0:
        best = -np.inf
    else:
        # LightGBM's threshold among the equivalent ones: move up over empty bins (the right
        # child always holds a nonempty bin or the missing one, so this stops before turning
        # the split into "every row left"). Their rows, if any (zero gradients and hessians
        # under hessian counts), go left with them.
        while best_b + 1 < nb:
            _, _, c_next, nonempty = _bin(hist, f, best_b + 1, count_shift, hessian_counts)
            if nonempty:
                break
            best_b += 1
            best_cl += c_next
    return best, best_b, best_left, best_gl, best_hl, best_cl


@njit(cache=True, inline="always")
def _node_constants(sum_g, sum_h, count, c, lo, hi):
    # What every feature's scan of one node shares: the minimum child size, the parent's
    # objective (at its own clamped output under monotone constraints), and LightGBM's
    # count estimate (rows per unit of hessian; 0: exact counts).
    H = sum_h * c.inv_scale_h
    G = sum_g * c.inv_scale_g
    parent = leaf_objective(G, H, c.reg_lambda, c.reg_alpha)
    if c.has_monotone:
        w = bounded_output(G, H, c.reg_lambda, c.reg_alpha, lo, hi)
        parent = objective_at(G, H, c.reg_lambda, c.reg_alpha, w, lo, hi)
    count_factor = count / H if c.hessian_counts and H > 0.0 else 0.0
    return max(c.min_samples_leaf, 1), parent, count_factor


@njit(parallel=True, cache=True)
def find_best_splits(hist, n_bins, feature_mask, monotone, sum_g, sum_h, count, lo, hi, c,
                     work):
    """Best split of every feature of one node (parallel over features), then of the node.

    Parameters
    ----------
    hist : ndarray of float64 or int64, shape (n_features, n_bins_total, n_channels)
        The node's histogram in one of the layouts of ``skltr._engine.histogram``.
    n_bins : ndarray of int32, shape (n_features,)
        Non-missing bins of each feature.
    feature_mask : ndarray of bool, shape (n_features,)
        Features that may be split on (colsample, interaction constraints).
    monotone : ndarray of int8, shape (n_features,)
        Each feature's monotone direction (-1, 0, 1), read when ``c.has_monotone``.
    sum_g, sum_h : scalar of hist's dtype
        The node's sums (histogram units).
    count : int
    lo, hi : float
        Bounds of the node's output under monotone constraints (-inf, inf: none).
    c : skltr._records.SplitConstants
    work : skltr._records.SplitWork
        Each feature's best candidate (overwritten).

    Returns
    -------
    tuple
        The fields of :class:`skltr._records.SplitInfo`; ``feature`` is -1 when no
        candidate qualifies (the other fields are then meaningless).
    """
    n_features = hist.shape[0]
    min_n, parent, count_factor = _node_constants(sum_g, sum_h, count, c, lo, hi)
    # the arrays unpacked before the parfor: written through the record's attributes inside
    # a prange, numba 0.68 stored some of them wrongly (wrong default_left / garbage)
    f_gain, f_bin, f_left, f_gl, f_hl, f_cl = work
    for p in prange(n_features):
        f = np.int64(p)  # prange's index is unsigned in the parfor: one signature, not two
        (f_gain[f], f_bin[f], f_left[f], f_gl[f], f_hl[f], f_cl[f]) = _scan_feature(
            hist, f, n_bins[f], feature_mask[f], sum_g, sum_h, count, c, min_n, parent,
            count_factor, lo, hi, monotone[f])
    return _pick_best(work, sum_g, sum_h)


@njit(cache=True)
def find_best_splits_serial(hist, n_bins, feature_mask, monotone, sum_g, sum_h, count, lo, hi,
                            c, work):
    """One thread: :func:`find_best_splits` for small nodes (same arguments)."""
    n_features = hist.shape[0]
    min_n, parent, count_factor = _node_constants(sum_g, sum_h, count, c, lo, hi)
    f_gain, f_bin, f_left, f_gl, f_hl, f_cl = work
    for f in range(n_features):
        (f_gain[f], f_bin[f], f_left[f], f_gl[f], f_hl[f], f_cl[f]) = _scan_feature(
            hist, f, n_bins[f], feature_mask[f], sum_g, sum_h, count, c, min_n, parent,
            count_factor, lo, hi, monotone[f])
    return _pick_best(work, sum_g, sum_h)


@njit(cache=True)
def _pick_best(work, sum_g, sum_h):
    # lowest feature among equal gains: strictly greater replaces
    f_gain, f_bin, f_left, f_gl, f_hl, f_cl = (work.gain, work.bin, work.left, work.left_g,
                                               work.left_h, work.left_count)
    n_features = f_gain.size
    bf = -1
    bg = -np.inf
    for f in range(n_features):
        if f_bin[f] >= 0 and f_gain[f] > bg:
            bg = f_gain[f]
            bf = f
    if bf < 0:
        return -1, bg, -1, False, sum_g - sum_g, sum_h - sum_h, 0
    return bf, bg, f_bin[bf], f_left[bf], f_gl[bf], f_hl[bf], f_cl[bf]
