"""numba kernels of RankBoost: pair potentials without pairs, and the best threshold stump.

Crucial pairs of a query are ``(a, b)`` with ``y_b > y_a`` (``b`` should rank above ``a``).
After rounds with scores ``H``, RankBoost's pair weight is ``D(a, b) = c_q * exp(H(a) - H(b))
/ Z`` (``c_q``: the query's initial weight per pair, ``Z``: the normaliser), so the potential
of a document, ``pi(d) = sum_a D(a, d) - sum_b D(d, b)``, needs only per-query sums over the
documents of lower and of higher label::

    pi(d) = c_q / Z * (exp(-H(d)) * A(d) - exp(H(d)) * B(d))
    A(d)  = sum over a with y_a < y_d of exp(H(a))        (prefix over label groups)
    B(d)  = sum over b with y_b > y_d of exp(-H(b))       (suffix over label groups)
    Z     = sum_q c_q * sum_d exp(-H(d)) * A(d)

Everything is computed in log space (running log-sum-exp), so no exponential overflows
whatever the spread of ``H``: O(n) per round, after a one-off sort of each query by label.

The weak ranker is ``h(d) = [x_f(d) > theta]`` on binned features (``bin > b``), missing
values taking ``q_def`` (0 or 1). Its ``r = sum_d h(d) pi(d)`` for every ``(f, b)`` is a
suffix sum of the histogram of ``pi`` over bins (the integral histogram); ``q_def`` adds the
missing bin's sum when that gives the larger ``|r|``.

The potentials are summed in fixed point: ``round(pi * 2**PI_SHIFT)`` as int64. Since
``sum |pi| <= 2`` (every pair's weight is counted twice and the weights sum to 1), no sum can
overflow, and integer sums are exact in any order: the histogram, hence the chosen stump,
does not depend on the number of threads (nor, later, on the device's atomics), and ``|r|``
ties are exact.
"""

import numpy as np
from numba import njit, prange

#: Fixed-point scale of the potentials (2**-60 ~ 8.7e-19 absolute): sum |q| <= 2**61 + n / 2.
PI_SHIFT = 60
_PI_SCALE = 2.0 ** PI_SHIFT


@njit(cache=True, inline="always")
def _lse_add(mx, s, v):
    # running log-sum-exp: the sum is s * exp(mx); add exp(v)
    if v > mx:
        return v, s * np.exp(mx - v) + 1.0
    return mx, s + np.exp(v - mx)


@njit(cache=True, inline="always")
def _lse(mx, s):
    return mx + np.log(s) if s > 0.0 else -np.inf


@njit(cache=True)
def _query_log_sums(H, y, order, lo, hi, log_a, log_b):
    # rows order[lo:hi] of one query, ascending label; returns log sum_d exp(-H(d)) A(d)
    mx, s = -np.inf, 0.0
    i = lo
    while i < hi:  # ascending label groups: A over strictly lower labels
        j = i
        while j < hi and y[order[j]] == y[order[i]]:
            j += 1
        la = _lse(mx, s)
        for k in range(i, j):
            log_a[order[k]] = la
        for k in range(i, j):
            mx, s = _lse_add(mx, s, H[order[k]])
        i = j
    mx, s = -np.inf, 0.0
    i = hi
    while i > lo:  # descending label groups: B over strictly higher labels
        j = i
        while j > lo and y[order[j - 1]] == y[order[i - 1]]:
            j -= 1
        lb = _lse(mx, s)
        for k in range(j, i):
            log_b[order[k]] = lb
        for k in range(j, i):
            mx, s = _lse_add(mx, s, -H[order[k]])
        i = j
    mx, s = -np.inf, 0.0
    for k in range(lo, hi):
        r = order[k]
        if log_a[r] > -np.inf:
            mx, s = _lse_add(mx, s, log_a[r] - H[r])
    return _lse(mx, s)


@njit(parallel=True, cache=True)
def pair_log_sums(H, y, order, group_ptr, log_a, log_b, log_pairs):
    """Per row ``log A(d)``, ``log B(d)``; per query ``log sum_d exp(-H(d)) A(d)``.

    ``order`` holds each query's rows sorted by label (ascending, any order within a label),
    queries as in ``group_ptr``. -inf where a sum is empty.
    """
    n_queries = group_ptr.shape[0] - 1
    for q in prange(n_queries):
        log_pairs[q] = _query_log_sums(H, y, order, group_ptr[q], group_ptr[q + 1], log_a,
                                       log_b)


@njit(parallel=True, cache=True)
def potentials(H, log_a, log_b, row_log_c, log_z, pi):
    """``pi(d) = exp(log c - log Z - H + log A) - exp(log c - log Z + H + log B)``, in fixed
    point: ``pi`` (int64) receives ``round(pi(d) * 2**PI_SHIFT)``."""
    for i in prange(H.shape[0]):
        base = row_log_c[i] - log_z
        v = np.exp(base - H[i] + log_a[i]) - np.exp(base + H[i] + log_b[i])
        pi[i] = np.int64(np.rint(v * _PI_SCALE))


@njit(cache=True)
def _feature_best(hist, f, nb, missing_bin):
    # best (|r|, r, b, q_def) of feature f; r of "bin > b", plus the missing bin if q_def
    # fixed-point sums (int64): every comparison is exact
    miss = np.int64(hist[f, missing_bin, 0])
    best_abs, best_r, best_b, best_q = np.int64(-1), np.int64(0), -1, 0
    right = np.int64(0)
    for b in range(nb - 1, -1, -1):  # r(b) = sum of the bins above b
        r0 = right
        r1 = right + miss
        if abs(r0) >= abs(r1):
            r, q = r0, 0
        else:
            r, q = r1, 1
        # ties: the lower bin wins (scanning downwards, >= replaces)
        if abs(r) >= best_abs:
            best_abs, best_r, best_b, best_q = abs(r), r, b, q
        right += np.int64(hist[f, b, 0])
    return best_abs, best_r, best_b, best_q


@njit(parallel=True, cache=True)
def best_stump(hist, n_bins, feature_mask, missing_bin, f_abs, f_r, f_b, f_q):
    """The ``(feature, bin, q_def, r)`` of largest ``|r|`` over every feature's thresholds.

    ``hist[f, b, 0]``: fixed-point sum of ``pi`` over the rows in bin ``b`` of feature ``f``
    (WEIGHT layout of ``skltr._engine.histogram``); ``f_*``: per-feature work arrays (int64
    ``f_abs``, ``f_r``, ``f_b``, ``f_q``). Ties: lowest feature, then lowest bin, then
    ``q_def = 0``. ``feature`` is -1 when no feature may split; ``r`` is returned as a float.
    """
    n_features = hist.shape[0]
    for p in prange(n_features):
        f = np.int64(p)
        if feature_mask[f] and n_bins[f] >= 1:
            f_abs[f], f_r[f], f_b[f], f_q[f] = _feature_best(hist, f, n_bins[f], missing_bin)
        else:
            f_abs[f], f_r[f], f_b[f], f_q[f] = -1, 0, -1, 0
    bf, ba = -1, np.int64(-1)
    for f in range(n_features):
        if f_b[f] >= 0 and f_abs[f] > ba:
            bf, ba = f, f_abs[f]
    if bf < 0:
        return -1, -1, 0, 0.0
    return bf, f_b[bf], f_q[bf], f_r[bf] / _PI_SCALE
