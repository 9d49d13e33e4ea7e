"""numba kernel of YetiRank (CatBoost's ``loss_function="YetiRank"``): the pair gradients of
noisy orders of each query, with random draws from a counter-based hash that a CUDA kernel can
reproduce (:func:`yetirank_gradients`). The host objective is
:class:`skltr._gbdt.objectives.YetiRank`; the helpers shared with the other ranking kernels
are :mod:`skltr._cpu.objectives`'.
"""

import numpy as np
from numba import njit, prange

from .libm import exp
from ..utils._sorting import insertion_order
from .objectives import _all_labels_equal, _chunk_bounds, _max_query_size, _query_weight


#: CatBoost's factor of every YetiRank pair weight (``yetirank_helpers.cpp``, "like in GPU").
YETIRANK_PAIR_SCALE = 0.15
#: CatBoost's guard in the noise ``u / (1.000001 - u)``: finite at ``u`` -> 1.
YETIRANK_NOISE_GUARD = 1.000001
_MIX1 = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)
_MIX3 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def _mix64(x):
    """SplitMix64's finaliser of ``x + 0x9E3779B97F4A7C15`` (uint64 arithmetic: a CUDA
    kernel computes the same integers)."""
    z = x + _MIX1
    z = (z ^ (z >> np.uint64(30))) * _MIX2
    z = (z ^ (z >> np.uint64(27))) * _MIX3
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def yetirank_stream(seed, iteration, query, permutation):
    """Key of the random stream of one permutation of one query at one round.

    A counter-based hash (chained SplitMix64 of the four counters), not a sequential
    generator: any thread (or CUDA block) computes the draws of any (round, query,
    permutation) directly, so they do not depend on the thread count, the chunking or the
    order in which queries are visited.
    """
    k = _mix64(np.uint64(seed))
    k = _mix64(k ^ np.uint64(iteration))
    k = _mix64(k ^ np.uint64(query))
    return _mix64(k ^ np.uint64(permutation))


@njit(cache=True)
def yetirank_uniform(stream, doc):
    """Uniform draw in (0, 1) of document ``doc`` (0-based, in the query) on ``stream``:
    the top 53 bits of the hash, centred in their cell, so neither 0 nor 1 occurs."""
    k = _mix64(np.uint64(stream) ^ np.uint64(doc))  # (a Python caller's int: as uint64)
    return (np.float64(k >> np.uint64(11)) + 0.5) * 1.1102230246251565e-16  # 2**-53


@njit(cache=True)
def _yetirank_noisy(ex, cnt, stream, keys):
    """The noisy scores of one permutation, CatBoost's ``exp(s) * u / (1.000001 - u)``
    (``u`` uniform; ``ex``: ``exp(s - max s)``, so nothing overflows): a division and a
    product a document, no logarithm. Documents whose exponential underflowed to 0 (scores
    more than ~745 below the query's best) tie at 0 and keep row order, as in CatBoost."""
    for i in range(cnt):
        u = yetirank_uniform(stream, i)
        keys[i] = ex[i] * (u / (YETIRANK_NOISE_GUARD - u))


#: Below this a per-document exponential may be subnormal (or 0): such pairs take the
#: exact sigmoid instead of the ratio of exponentials.
_YETI_TINY = 1e-300


@njit(cache=True, inline="always")
def _order_pair(skey, idx, a, b):
    # compare-exchange of positions a < b: the larger key first, equal keys by index (the
    # order of a stable sort); selects, not branches
    ka, kb, ia, ib = skey[a], skey[b], idx[a], idx[b]
    swap = (kb > ka) | ((kb == ka) & (ib < ia))
    skey[a] = kb if swap else ka
    skey[b] = ka if swap else kb
    idx[a] = ib if swap else ia
    idx[b] = ia if swap else ib


@njit(cache=True)
def _merge_order(keys, cnt, idx, tmp, skey, stmp):
    """:func:`_yetirank_order` by comparisons: runs of 4 sorted by a 5-comparator network
    (the tail by insertion), then bottom-up merges between ``idx`` and ``tmp`` (the one
    returned), the keys moving along in ``skey`` / ``stmp`` (no indirect loads). The noisy
    keys' order is random, so a sort's cost is its mispredicted branches: the network and
    the merges take selects instead, 0.7x the time of insertion runs of 32 and merges with
    branches (2.1 against 2.9 us on 100 keys)."""
    for i in range(cnt):
        skey[i] = keys[i]
        idx[i] = i
    full = cnt - cnt % 4
    for s in range(0, full, 4):
        _order_pair(skey, idx, s, s + 1)
        _order_pair(skey, idx, s + 2, s + 3)
        _order_pair(skey, idx, s, s + 2)
        _order_pair(skey, idx, s + 1, s + 3)
        _order_pair(skey, idx, s + 1, s + 2)
    for i in range(full + 1, cnt):  # the last 1-3 keys
        key = skey[i]
        j = i
        while j > full and skey[j - 1] < key:  # strictly: ties keep index order
            skey[j] = skey[j - 1]
            idx[j] = idx[j - 1]
            j -= 1
        skey[j] = key
        idx[j] = i
    src, dst, ksrc, kdst = idx, tmp, skey, stmp
    width = 4
    while width < cnt:
        for left in range(0, cnt, 2 * width):
            mid = min(left + width, cnt)
            right = min(left + 2 * width, cnt)
            i, j, k = left, mid, left
            while i < mid and j < right:
                a, b = ksrc[i], ksrc[j]
                take = a >= b  # the left run wins ties: stable
                kdst[k] = a if take else b
                dst[k] = src[i] if take else src[j]
                i += take
                j += 1 - take
                k += 1
            while i < mid:
                kdst[k] = ksrc[i]
                dst[k] = src[i]
                i += 1
                k += 1
            while j < right:
                kdst[k] = ksrc[j]
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst, ksrc, kdst = dst, src, kdst, ksrc
        width *= 2
    return src


#: :func:`_yetirank_order` sorts by buckets from this many keys (below: by insertion,
#: faster on so few: 0.18 against 0.33 us on 16 keys for the network and merges).
_BUCKET_MIN_KEYS = 24
#: ... and while no bucket holds more keys than this (else by comparisons: bounded work).
_BUCKET_MAX_KEYS = 32
#: A positive double's bits shifted right by this: its exponent and 12 bits of mantissa,
#: a non-decreasing function of the value (a logarithm at 1/4096 resolution).
_BUCKET_SHIFT = 40
_INF_BITS = 0x7FF0000000000000


@njit(cache=True)
def _yetirank_order(keys, cnt, idx, tmp, skey, stmp, counts):
    """Indices 0..cnt-1 by descending ``keys`` (``>= 0``), ties in index order: the order of
    a stable sort, in ``idx`` or ``tmp`` (the one returned). ``counts``: int64 scratch of
    ``cnt + 2``. No allocation (threads would contend for it): ``np.argsort``'s was a third
    of the kernel's time.

    Fewer than ``_BUCKET_MIN_KEYS`` keys: by insertion. Else by buckets: a key's bucket is
    a non-decreasing function of it (its bits' top part -- a logarithm -- scaled to ``cnt``
    buckets over the keys' range; zeros, underflowed exponentials, a bucket of their own
    at the end); a stable counting sort into the buckets, highest first, then one
    insertion pass, in which a key only moves within its bucket (the keys of an earlier
    bucket are all larger). The noisy keys spread evenly enough over their logarithm that
    this takes 0.42x the time of :func:`_merge_order` on 100 keys (0.98 against 2.3 us)
    and 0.31x on 1,000; a bucket of more than ``_BUCKET_MAX_KEYS`` (keys bunched: the
    insertions' work would grow) falls back to :func:`_merge_order`. The CUDA kernel sorts
    by insertion runs and merges: the same
    order.
    """
    if cnt < _BUCKET_MIN_KEYS:
        return insertion_order(keys, cnt, idx, skey, False)
    bits = keys[:cnt].view(np.int64)
    lo = np.int64(_INF_BITS) >> _BUCKET_SHIFT
    hi = np.int64(0)
    for i in range(cnt):
        v = bits[i] >> _BUCKET_SHIFT
        if bits[i] != 0:
            lo = min(lo, v)
        hi = max(hi, v)
    if hi >= np.int64(_INF_BITS) >> _BUCKET_SHIFT or hi <= lo:  # not finite, or one bucket
        return _merge_order(keys, cnt, idx, tmp, skey, stmp)
    n_b = cnt  # buckets of the positive keys; bucket n_b: the zeros
    scale = (n_b - 1) / np.float64(hi - lo)  # (hi - lo) * scale < n_b: rounding stays below
    for b in range(n_b + 2):
        counts[b] = 0
    for i in range(cnt):
        if bits[i] == 0:
            b = n_b
        else:
            b = n_b - 1 - np.int64(np.float64((bits[i] >> _BUCKET_SHIFT) - lo) * scale)
        tmp[i] = b
        counts[b + 1] += 1
    largest = 0
    for b in range(n_b + 1):
        largest = max(largest, counts[b + 1])
        counts[b + 1] += counts[b]
    if largest > _BUCKET_MAX_KEYS:
        return _merge_order(keys, cnt, idx, tmp, skey, stmp)
    for i in range(cnt):  # in index order: stable
        b = tmp[i]
        p = counts[b]
        counts[b] = p + 1
        idx[p] = i
        skey[p] = keys[i]
    return insertion_order(skey, cnt, idx, skey, True)


@njit(cache=True)
def _yetirank_permutation(scores, y, lo, order, cnt, decay, ex, lam, hes):
    """Add one permutation's pair gradients (unscaled) to ``lam`` / ``hes`` (float64).

    Neighbours in the noisy order form the pairs: the one at noisy position ``k - 1`` and
    the one at ``k`` (k >= 1) weigh ``0.15 * decay**(k - 1) * |label difference|``, and a
    pair of equal labels weighs nothing. Each pair adds the derivatives of the logistic
    loss ``w * log(1 + exp(s_low - s_high))`` at the *unperturbed* scores (CatBoost's
    PairLogit derivatives of YetiRank's generated pairs). ``ex``: the documents'
    ``exp(s - max s)``, so that a pair costs a division rather than an ``exp``.
    """
    decay_k = 1.0  # decay**(k - 1), by repeated products (as CatBoost)
    for k in range(1, cnt):
        a = order[k - 1]
        b = order[k]
        diff = y[lo + a] - y[lo + b]
        if diff != 0.0:
            high, low = (a, b) if diff > 0.0 else (b, a)
            w = YETIRANK_PAIR_SCALE * decay_k * abs(diff)
            # probability that the pair is ordered wrongly: 1 / (1 + exp(s_high - s_low))
            if ex[high] >= _YETI_TINY and ex[low] >= _YETI_TINY:
                p = ex[low] / (ex[high] + ex[low])
            else:  # an exponential underflowed: the exact form
                p = 1.0 / (1.0 + exp(scores[lo + high] - scores[lo + low]))
            lam[high] -= w * p
            lam[low] += w * p
            h = w * p * (1.0 - p)
            hes[high] += h
            hes[low] += h
        decay_k *= decay


@njit(cache=True)
def _yetirank_query(scores, y, lo, hi, weights, seed, iteration, q, permutations, decay, grad,
                    hess, keys, ex, idx, tmp, skey, stmp, counts, lam, hes):
    """YetiRank gradients of one query (CatBoost's ``GenerateYetiRankPairsForQuery`` pairs,
    PairLogit derivatives), averaged over ``permutations`` noisy orders."""
    cnt = hi - lo
    if cnt <= 1 or _all_labels_equal(y, lo, hi):  # no pair has a weight: skip the draws
        for r in range(lo, hi):
            grad[r] = 0.0
            hess[r] = 0.0
        return
    top = scores[lo]
    for r in range(lo + 1, hi):
        top = max(top, scores[r])
    for i in range(cnt):
        lam[i] = 0.0
        hes[i] = 0.0
        ex[i] = exp(scores[lo + i] - top)
    for perm in range(permutations):
        _yetirank_noisy(ex, cnt, yetirank_stream(seed, iteration, q, perm), keys)
        order = _yetirank_order(keys, cnt, idx, tmp, skey, stmp, counts)
        _yetirank_permutation(scores, y, lo, order, cnt, decay, ex, lam, hes)
    scale = _query_weight(weights, lo, hi) / permutations
    for i in range(cnt):
        grad[lo + i] = lam[i] * scale
        hess[lo + i] = hes[i] * scale


def yetirank_decay_powers(decay, n):
    """``decay**k`` for ``k = 0 .. n - 1`` as :func:`_yetirank_permutation` forms them, by
    repeated float64 products from 1.0 (not ``decay**k``, which rounds differently): the
    CUDA kernel (:mod:`skltr._gpu.yetirank`) reads pair ``k``'s weight from this table.

    Parameters
    ----------
    decay : float
        The objective's decay.
    n : int
        Length of the table (the largest query's size suffices); at least 1 is returned.

    Returns
    -------
    ndarray of float64, shape (max(n, 1),)
    """
    out = np.empty(max(int(n), 1), dtype=np.float64)
    decay_k = 1.0
    for k in range(out.shape[0]):
        out[k] = decay_k
        decay_k *= float(decay)  # IEEE float64 products, as numba's
    return out


@njit(parallel=True, cache=True)
def yetirank_gradients(scores, y, group_ptr, weights, seed, iteration, query_index,
                       permutations, decay, grad, hess):
    """YetiRank gradients and hessians, as CatBoost's ``loss_function="YetiRank"``.

    Gulin, Kuralenok and Pavlov, "Winning the Transfer Learning Track of Yahoo!'s Learning
    To Rank Challenge with YetiRank" (2011). Per query and round, ``permutations`` times:
    every document's ``exp(s)`` is multiplied by ``u / (1.000001 - u)`` (``u`` uniform:
    logistic noise on ``s``), the documents are sorted by the products, and each pair of
    neighbours in that order with different labels gets the weight
    ``0.15 * decay**k * |label difference|`` (``k`` the 0-based rank of the pair's upper
    position). The gradients are those of the pairwise
    logistic loss of every pair at the unperturbed scores, times its weight, averaged over
    the permutations and times the query's mean row weight::

        p = 1 / (1 + exp(s_high - s_low))
        grad[high] -= w p     grad[low] += w p     hess[both] += w p (1 - p)

    The uniform draw of document ``i`` (0-based in its query) of permutation ``m`` of
    query ``q`` at round ``t`` is :func:`yetirank_uniform` of
    ``yetirank_stream(seed, t, q, m)``: a function of those counters only, so the
    gradients do not depend on threads, and a CUDA kernel can draw the same numbers.
    ``q`` is ``query_index[j]`` for the ``j``-th query of ``group_ptr`` (global indices
    for a shard of the queries). Ties of noisy scores keep row order.

    Parameters
    ----------
    scores, y, group_ptr, weights, grad, hess
        As in :func:`lambdarank_gradients` (labels: any finite reals; only differences
        matter).
    seed : int
        The objective's seed (0 .. 2**32 - 1).
    iteration : int
        0-based boosting round.
    query_index : ndarray of int64, shape (n_queries,)
        Index of each query in the whole training set.
    permutations : int >= 1
        Noisy orders per query and round (CatBoost's ``permutations``).
    decay : float in [0, 1]
        Weight ratio of a pair to the pair above it (CatBoost's ``decay``).
    """
    max_cnt = _max_query_size(group_ptr)
    bounds = _chunk_bounds(group_ptr)
    for c in prange(bounds.shape[0] - 1):
        keys = np.empty(max_cnt, dtype=np.float64)
        ex = np.empty(max_cnt, dtype=np.float64)
        idx = np.empty(max_cnt, dtype=np.int64)
        tmp = np.empty(max_cnt, dtype=np.int64)
        skey = np.empty(max_cnt, dtype=np.float64)
        stmp = np.empty(max_cnt, dtype=np.float64)
        counts = np.empty(max_cnt + 2, dtype=np.int64)
        lam = np.empty(max_cnt, dtype=np.float64)
        hes = np.empty(max_cnt, dtype=np.float64)
        for q in range(bounds[c], bounds[c + 1]):
            _yetirank_query(scores, y, group_ptr[q], group_ptr[q + 1], weights, seed,
                            iteration, query_index[q], permutations, decay, grad, hess, keys,
                            ex, idx, tmp, skey, stmp, counts, lam, hes)
