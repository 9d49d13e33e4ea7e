"""numba kernels of symmetric (oblivious) growth: one split for every node of a tree level.

CatBoost's default trees (``grow_policy="SymmetricTree"``) split every node of a level on the
same feature and border. The level's split is the candidate (feature, bin, missing direction)
of the highest *level score*, the sum over the level's nodes of each node's gain at that
candidate (CatBoost's rule: its score of a candidate sums over the leaves it makes)::

    total(f, b, d) = sum over active nodes k of gain_k(f, b, d)     (``skltr._cpu.split``'s
                                                                     gain, bounds and limits)

A node whose child would break ``min_samples_leaf`` / ``min_child_weight`` at a candidate adds
0: it is not split by that candidate (the grower then freezes it -- its subtree takes its
value, :mod:`skltr._gbdt.growth`). *Active* nodes are those not frozen above. A candidate
qualifies when its total is above ``min_split_gain``; ties go to the lowest feature, then the
lowest bin, then missing left before missing right (the order of ``skltr._cpu.split``; the
threshold is not moved up over empty bins: the lowest of equivalent thresholds is kept).
The missing direction is the level's: a node without missing rows of the feature scores the
same in both directions.

``random_strength`` (CatBoost's, ``greedy_tensor_search.cpp``): each candidate's score gets
normal noise of standard deviation ::

    sigma = random_strength * sqrt(mean(grad**2)) * m / (1 + m),  m = n * exp(-round * lr)

(``n`` training rows, ``round`` the 0-based round, ``lr`` the learning rate: the noise fades
once ``round * lr`` passes ``log(n)``; the growers sum ``grad**2`` exactly,
:func:`skltr._gbdt.symmetric.noise_sigma`, so that ``sigma`` is the same on any
partition). CatBoost adds it to its default ``Cosine`` score, ``sum(S*a) /
sqrt(sum(W*a**2))`` with ``a = S / (W + lambda)`` per leaf, which is the square root of the
L2 score ``sum(S**2 / (W + lambda))`` at ``lambda = 0``; so with noise the
candidates here compare ``sqrt(P + total) + sigma * z`` (``P`` the active nodes' own
objectives: ``P + total`` is the level's L2 score), which keeps the noise's size relative to
the scores CatBoost's (added to the total itself it would be ~``sqrt(n)`` times weaker).
Without noise the comparison is of ``total`` itself. ``z`` is a standard normal drawn from a
counter-based hash of (seed, round, level, feature, bin, direction) (Box-Muller of two
SplitMix64 uniforms), so the draws do not depend on threads or the order of the search.
CatBoost draws per bin, keeps each feature's best noisy bin and draws again to compare the
features; here each candidate gets one draw and the best noisy candidate wins.
"""

import math

import numpy as np
from numba import njit, prange

from .split import _bin, _bin_count, _gain, _node_constants, leaf_objective, missing_and_rows
from .yetirank import _mix64

__all__ = ["noise_key", "standard_normal", "noise_scale", "level_constants",
           "find_level_split", "find_level_split_serial", "level_children"]

_TWO_PI = 2.0 * math.pi
#: Above every |draw| of :func:`standard_normal`: its uniforms are at least 2**-54, so
#: ``sqrt(-2 log u) <= sqrt(108 log 2) = 8.652...``, times ``|cos| <= 1``. A candidate whose
#: noiseless part plus ``sigma * _Z_BOUND`` is below the best so far, or below the highest
#: noiseless part minus ``sigma * _Z_BOUND`` (what the winner scores at least), cannot win
#: (rounding is monotone), so its draw is skipped: the model is the one of every draw made.
_Z_BOUND = 8.66
#: log2(e) / 2, lowered by 1e-9 (a margin over the roundings; see _radius_falls_short)
_HALF_LOG2E_LOW = 0.5 * 1.4426950408889634 * (1.0 - 1e-9)


@njit(cache=True)
def noise_key(seed, round_, depth):
    """Key of the noise of one tree level (chained SplitMix64 of the counters)."""
    k = _mix64(np.uint64(seed))
    k = _mix64(k ^ np.uint64(round_))
    return _mix64(k ^ np.uint64(depth))


@njit(cache=True, inline="always")
def _uniform(k):
    # the top 53 bits, centred in their cell: neither 0 nor 1
    return (np.float64(k >> np.uint64(11)) + 0.5) * 1.1102230246251565e-16  # 2**-53


@njit(cache=True, inline="always")
def _radius_key(key, f, b, d):
    # the hash of the draw's first uniform, which sets its radius sqrt(-2 log u1)
    return _mix64(_mix64(np.uint64(key) ^ np.uint64(f)) ^ np.uint64(2 * b + d))


@njit(cache=True, inline="always")
def _normal_of(k1):
    return math.sqrt(-2.0 * math.log(_uniform(k1))) * math.cos(_TWO_PI * _uniform(_mix64(k1)))


@njit(cache=True)
def standard_normal(key, f, b, d):
    """The standard normal draw of candidate (feature ``f``, bin ``b``, direction ``d``) of
    the level ``key`` (Box-Muller)."""
    return _normal_of(_radius_key(key, f, b, d))


@njit(cache=True, inline="always")
def _radius_falls_short(k1, need):
    # True when the draw of radius key k1 is surely below ``need`` (> 0): its uniform u1 is
    # at least 2**-m <= exp(-need**2 / 2) (m from need lowered by 1e-9), so its radius
    # sqrt(-2 log u1) <= need and so the draw, |cos| <= 1. A test of u1 against a power of
    # two instead of the log and cos of the draw.
    m = math.floor(need * need * _HALF_LOG2E_LOW)
    return m >= 1.0 and _uniform(k1) >= math.ldexp(1.0, -int(min(m, 1100.0)))


def noise_scale(random_strength, sum_sq, n, round_, learning_rate) -> float:
    """CatBoost's standard deviation of the score noise of round ``round_`` (0-based):
    ``random_strength * sqrt(mean(grad**2)) * m / (1 + m)``, ``m = n * exp(-round * lr)``
    (``CalcScoreStDev``); ``sum_sq``: the sum of the ``n`` training rows' squared gradients
    (the grower's is exact: the same on any partition of the rows)."""
    if random_strength == 0.0 or n == 0:
        return 0.0
    stdev = math.sqrt(sum_sq / n)
    m = math.exp(math.log(n) - round_ * learning_rate)
    return random_strength * stdev * (m / (1.0 + m))


@njit(cache=True)
def level_constants(sum_g, sum_h, count, active, c):
    """``(min_n, parent objectives, count factors, P)`` of a level's nodes
    (``skltr._cpu.split._node_constants`` per node; ``P``: the active nodes' objectives)."""
    n = sum_g.shape[0]
    parent = np.zeros(n, np.float64)
    factor = np.zeros(n, np.float64)
    min_n = max(c.min_samples_leaf, 1)
    total = 0.0
    for k in range(n):
        min_n, parent[k], factor[k] = _node_constants(sum_g[k], sum_h[k], count[k], c,
                                                      -np.inf, np.inf)
        if active[k]:
            total += parent[k]
    return min_n, parent, factor, total


@njit(cache=True, inline="always")
def _gain_or_zero(gl, hl, cl, cr, sum_g, sum_h, c, min_n, parent):
    # skltr._cpu.split._gain without constraints (the symmetric search has none), 0.0
    # where it is -inf: the same value, computed without branches (selects), so that a
    # loop of them vectorises
    hl_f = hl * c.inv_scale_h
    hr_f = (sum_h - hl) * c.inv_scale_h
    ok = ((cl >= min_n) & (cr >= min_n) & (hl_f >= c.min_child_weight)
          & (hr_f >= c.min_child_weight))
    gain = (leaf_objective(gl * c.inv_scale_g, hl_f, c.reg_lambda, c.reg_alpha)
            + leaf_objective((sum_g - gl) * c.inv_scale_g, hr_f, c.reg_lambda, c.reg_alpha)
            - parent)
    return gain if ok else 0.0


@njit(cache=True)
def _scan_level_feature(hist, f, nb, active, sum_g, sum_h, count, c, min_n, parent, factor,
                        total):
    # total[b, d] (d = 0: missing left, 1: right) = sum over active nodes of their gains
    # (0 where a limit is broken); returns nothing. Per node three loops: the prefix sums
    # of the bins (which also give the node's row estimate, n_all); every bin's gains (an
    # empty bin's sums, so its gains, are the bin's before); their sums. The gains go
    # without branches, vectorised (the loop that skipped empty bins and stopped at the
    # min_n limit mispredicted: 0.85x its time on letor_small's levels). Adding 0.0 where
    # a limit is broken leaves a total's bits (a gain, and so a total, is never -0.0), so
    # the totals are the plain sums over the nodes in node order. Without missing rows
    # both directions have the same sums: one gain serves both. The scratch is allocated
    # here: arrays passed in may alias for LLVM, which then does not vectorise (0.88x).
    for b in range(nb):
        total[b, 0] = 0.0
        total[b, 1] = 0.0
    count_shift, inv_h = c.count_shift, c.inv_scale_h
    pg = np.empty(nb, sum_g.dtype)
    ph = np.empty(nb, sum_h.dtype)
    pn = np.empty(nb, np.int64)
    gain_r = np.empty(nb, np.float64)
    gain_l = np.empty(nb, np.float64)
    for k in range(hist.shape[0]):
        if not active[k]:
            continue
        cf = factor[k]
        hessian_counts = cf > 0.0
        g_k, h_k, n_k, par = sum_g[k], sum_h[k], count[k], parent[k]
        hk = hist[k]
        mg, mh, mc, with_missing = _bin(hk, f, c.missing_bin, count_shift, hessian_counts)
        me = _bin_count(mh, mc, inv_h, cf)
        ag = g_k - g_k
        ah = h_k - h_k
        an = np.int64(0)
        for b in range(nb):
            gb, hb, cb, _ = _bin(hk, f, b, count_shift, hessian_counts)
            ag += gb
            ah += hb
            an += _bin_count(hb, cb, inv_h, cf)
            pg[b] = ag
            ph[b] = ah
            pn[b] = an
        # the rows the leaf limits see (missing_and_rows' n_all)
        n_all = me + an if hessian_counts else np.int64(n_k)
        for b in range(nb):  # missing right
            cr = n_all - pn[b]
            gain_r[b] = _gain_or_zero(pg[b], ph[b], n_k - cr, cr, g_k, h_k, c, min_n, par)
        if with_missing:
            for b in range(nb):  # missing left
                cr = n_all - pn[b] - me
                gain_l[b] = _gain_or_zero(pg[b] + mg, ph[b] + mh, n_k - cr, cr, g_k, h_k, c,
                                          min_n, par)
            for b in range(nb):
                total[b, 0] += gain_l[b]
                total[b, 1] += gain_r[b]
        else:
            for b in range(nb):
                total[b, 0] += gain_r[b]
                total[b, 1] += gain_r[b]


@njit(cache=True, inline="always")
def _no_draw_below(bar, spread):
    # A noiseless total ``t`` with ``base + t`` below this value has ``sqrt(base + t) +
    # spread < bar`` in floating point (margins of 1e-9 over the roundings of the sqrt and
    # the sums), so its candidate is skipped without its sqrt; -inf: no such total.
    thr = bar - spread - 1e-9 * (abs(bar) + spread)
    if not thr > 0.0:
        return -np.inf
    return thr * thr * (1.0 - 1e-9)


@njit(cache=True, inline="always")
def _best_of_feature(total, nb, f, min_split_gain, sigma, key, base, floor):
    # (score, total, bin, direction) of the best candidate of feature f; bin -1: none.
    # With noise, ``floor``: what the level's winner scores at least (see _Z_BOUND); a
    # candidate whose largest draw stays below it, or below this feature's best so far,
    # cannot win the level, so it is not drawn.
    best, best_total, best_b, best_d = -np.inf, -np.inf, -1, 0
    spread = sigma * _Z_BOUND
    bar = floor
    cut = _no_draw_below(bar, spread)
    for b in range(nb):
        for d in range(2):
            t = total[b, d]
            if not t > min_split_gain:
                continue
            s = t
            if sigma > 0.0:
                x = max(base + t, 0.0)
                if x < cut:
                    continue
                root = math.sqrt(x)
                reach = root + spread
                if reach < bar:
                    continue  # even its largest draw would lose: no draw, the same result
                k1 = _radius_key(key, f, b, d)
                # the draw it needs to reach the bar, less a margin (1e-9 of the sizes)
                # over every rounding of the sums: below it, the computed score is too
                need = ((bar - root) - 1e-9 * (abs(bar) + root + spread)) / sigma
                if need > 0.0 and _radius_falls_short(k1, need):
                    continue
                s = root + sigma * _normal_of(k1)
            if s > best:
                best, best_total, best_b, best_d = s, t, b, d
                if sigma > 0.0 and s > bar:
                    bar = s
                    cut = _no_draw_below(bar, spread)
    return best, best_total, best_b, best_d


@njit(cache=True)
def _feature_results(n_features):
    # each feature's (score, total, bin, direction) of its best candidate; bin -1: none
    return (np.full(n_features, -np.inf), np.zeros(n_features),
            np.full(n_features, -1, np.int64), np.zeros(n_features, np.int64))


# Not inlined: the parallel and the serial search share one compiled copy, and a parfor
# whose body is one call compiles faster (as skltr._cpu.split._scan_feature).
@njit(cache=True)
def _level_feature(hist, f, nb, use, active, sum_g, sum_h, count, c, min_n, parent, factor,
                   base, sigma, key, work_f):
    # Feature f's level totals into work_f; with noise, returns the highest total above
    # min_split_gain (-inf: none), the draws coming later (_noisy_feature); without, its
    # best candidate (top, score, total, bin, direction; top not needed then)
    if not use or nb <= 1:
        return -np.inf, -np.inf, 0.0, -1, 0
    _scan_level_feature(hist, f, nb, active, sum_g, sum_h, count, c, min_n, parent, factor,
                        work_f)
    if sigma == 0.0:
        score, total, bb, bd = _best_of_feature(work_f, nb, f, c.min_split_gain, 0.0, key,
                                                base, -np.inf)
        return -np.inf, score, total, bb, bd
    top = -np.inf
    for b in range(nb):
        for d in range(2):
            t = work_f[b, d]
            if t > c.min_split_gain and t > top:
                top = t
    return top, -np.inf, 0.0, -1, 0


@njit(cache=True)
def _noisy_feature(f, nb, top, c, base, sigma, key, floor, work_f):
    # Feature f's best noisy candidate (its totals in work_f; ``top`` their highest)
    if top == -np.inf or math.sqrt(max(base + top, 0.0)) + sigma * _Z_BOUND < floor:
        return -np.inf, 0.0, -1, 0
    return _best_of_feature(work_f, nb, f, c.min_split_gain, sigma, key, base, floor)


@njit(cache=True, inline="always")
def _level_floor(f_top, base, sigma):
    # What the level's winner scores at least: the highest noiseless part minus the
    # largest draw (-inf: no candidate)
    top = -np.inf
    for f in range(f_top.size):
        top = max(top, f_top[f])
    if top == -np.inf:
        return -np.inf
    return math.sqrt(max(base + top, 0.0)) - sigma * _Z_BOUND


@njit(parallel=True, cache=True)
def find_level_split(hist, n_bins, feature_mask, active, sum_g, sum_h, count, c, sigma, key,
                     work):
    """The level's split (parallel over features; see the module docstring).

    Parameters
    ----------
    hist : ndarray, shape (n_nodes, n_features, n_bins_total, n_channels)
        The level's node histograms (``skltr._cpu.split``'s layouts).
    n_bins : ndarray of int32, shape (n_features,)
    feature_mask : ndarray of bool, shape (n_features,)
    active : ndarray of bool, shape (n_nodes,)
        Nodes that count in the score (not frozen above).
    sum_g, sum_h : ndarray of hist's dtype, shape (n_nodes,)
    count : ndarray of int64, shape (n_nodes,)
    c : skltr._records.SplitConstants
    sigma : float
        Standard deviation of the score noise (0: none).
    key : uint64
        :func:`noise_key` of the level.
    work : ndarray of float64, shape (n_features, n_bins_total, 2)
        Scratch.

    Returns
    -------
    (feature, bin, default_left, total)
        ``feature`` -1 when no candidate's total is above ``min_split_gain``.

    Notes
    -----
    With noise, the draws come after every feature's totals: a candidate is drawn only if
    its largest draw could reach what the level's winner scores at least (the highest
    noiseless part minus the largest draw), which skips most draws and gives the model
    of every draw made.
    """
    n_features = hist.shape[1]
    min_n, parent, factor, base = level_constants(sum_g, sum_h, count, active, c)
    f_score, f_total, f_bin, f_dir = _feature_results(n_features)
    f_top = np.empty(n_features)
    for p in prange(n_features):
        f = np.int64(p)
        f_top[f], f_score[f], f_total[f], f_bin[f], f_dir[f] = _level_feature(
            hist, f, n_bins[f], feature_mask[f], active, sum_g, sum_h, count, c, min_n,
            parent, factor, base, sigma, key, work[f])
    if sigma > 0.0:
        floor = _level_floor(f_top, base, sigma)
        for p in prange(n_features):
            f = np.int64(p)
            f_score[f], f_total[f], f_bin[f], f_dir[f] = _noisy_feature(
                f, n_bins[f], f_top[f], c, base, sigma, key, floor, work[f])
    return _pick_feature(f_score, f_total, f_bin, f_dir)


@njit(cache=True)
def find_level_split_serial(hist, n_bins, feature_mask, active, sum_g, sum_h, count, c, sigma,
                            key, work):
    """One thread: :func:`find_level_split` (same arguments and result)."""
    n_features = hist.shape[1]
    min_n, parent, factor, base = level_constants(sum_g, sum_h, count, active, c)
    f_score, f_total, f_bin, f_dir = _feature_results(n_features)
    f_top = np.empty(n_features)
    for f in range(n_features):
        f_top[f], f_score[f], f_total[f], f_bin[f], f_dir[f] = _level_feature(
            hist, f, n_bins[f], feature_mask[f], active, sum_g, sum_h, count, c, min_n,
            parent, factor, base, sigma, key, work[f])
    if sigma > 0.0:
        # the winner so far raises the bar of the features after it (it scores at least
        # that): fewer draws, the same winner
        floor = _level_floor(f_top, base, sigma)
        for f in range(n_features):
            f_score[f], f_total[f], f_bin[f], f_dir[f] = _noisy_feature(
                f, n_bins[f], f_top[f], c, base, sigma, key, floor, work[f])
            if f_score[f] > floor:
                floor = f_score[f]
    return _pick_feature(f_score, f_total, f_bin, f_dir)


@njit(cache=True)
def _pick_feature(f_score, f_total, f_bin, f_dir):
    # the lowest feature among equal scores: strictly greater replaces
    bf = -1
    best = -np.inf
    for f in range(f_score.size):
        if f_bin[f] >= 0 and f_score[f] > best:
            best = f_score[f]
            bf = f
    if bf < 0:
        return -1, -1, False, -np.inf
    return bf, f_bin[bf], f_dir[bf] == 0, f_total[bf]


@njit(cache=True)
def level_children(hist, f, nb, b, default_left, sum_g, sum_h, count, c):
    """Every node's side of the level's split ``(f, b, default_left)`` (``nb``: the
    feature's bins): ``(gain, left_g,
    left_h, left_count)`` arrays, the bins summed as the search sums them; gain -inf where
    the node's child would break ``min_samples_leaf`` / ``min_child_weight``."""
    n = hist.shape[0]
    gain = np.empty(n, np.float64)
    left_g = np.empty(n, sum_g.dtype)
    left_h = np.empty(n, sum_h.dtype)
    left_count = np.empty(n, np.int64)
    active = np.ones(n, np.bool_)
    min_n, parent, factor, _ = level_constants(sum_g, sum_h, count, active, c)
    count_shift, inv_h = c.count_shift, c.inv_scale_h
    for k in range(n):
        cf = factor[k]
        hessian_counts = cf > 0.0
        g_k, h_k, n_k = sum_g[k], sum_h[k], count[k]
        hk = hist[k]
        mg, mh, mc, _, me, n_all = missing_and_rows(hk, f, nb, n_k, c, cf)
        ag = g_k - g_k
        ah = h_k - h_k
        ac = np.int64(0)
        an = np.int64(0)
        for j in range(b + 1):
            gb, hb, cb, _ = _bin(hk, f, j, count_shift, hessian_counts)
            ag += gb
            ah += hb
            ac += cb
            an += _bin_count(hb, cb, inv_h, cf)
        if default_left:
            cr = n_all - an - me
            gain[k] = _gain(ag + mg, ah + mh, n_k - cr, cr, g_k, h_k, c, min_n, parent[k], 0,
                            -np.inf, np.inf)
            left_g[k], left_h[k], left_count[k] = ag + mg, ah + mh, ac + mc
        else:
            cr = n_all - an
            gain[k] = _gain(ag, ah, n_k - cr, cr, g_k, h_k, c, min_n, parent[k], 0, -np.inf,
                            np.inf)
            left_g[k], left_h[k], left_count[k] = ag, ah, ac
    return gain, left_g, left_h, left_count
