"""numba kernels for per-query ranking metrics.

Plain functions over arrays: no scikit-learn import, no validation (``_ranking.py`` does it).
Every array arrives already grouped by query, and a parallel driver (one per metric family)
loops ``prange`` over queries, writing one value per query::

    labels     2 0 1 | 0 0 | 3        rows in query-grouped order
    scores     .9 .1 .5 | .2 .2 | .7
    group_ptr  0       3     5   6    query q = rows group_ptr[q]:group_ptr[q + 1]
    out        v0      v1    v2       one float per query (NaN = skipped)

Inside a query the ranking is a stable ``argsort`` of ``-score``; the pessimistic and
optimistic tie rules first sort stably by label (ascending / descending) and then stably by
``-score``, which is a lexicographic sort on ``(-score, +/-label, row)``.

Per-call settings (metric code, tie rule, cutoff, the value for queries without relevant
documents...) are arguments, so one compiled kernel per metric family (cached on disk) serves
every call; the only globals read by kernels are the fixed integer codes below.
"""

import numpy as np
from numba import njit, prange

from .. import _numba_cache  # noqa: F401 - kernel caches outside the package

# Metric codes understood by ``per_query_metric``.
DCG = 0
NDCG = 1
AVERAGE_PRECISION = 2
RECIPROCAL_RANK = 3
ERR = 4
PRECISION = 5

# Tie rules.
TIES_STABLE = 0
TIES_AVERAGE = 1
TIES_PESSIMISTIC = 2
TIES_OPTIMISTIC = 3


@njit(cache=True)
def _stable_ranking(scores):
    """Row order by descending score, tied rows in their original order."""
    n = scores.shape[0]
    neg = np.empty(n, dtype=np.float64)
    for i in range(n):
        neg[i] = -scores[i]
    return np.argsort(neg, kind="mergesort")


@njit(cache=True)
def _ranking(scores, labels, ties):
    """Row order by descending score, ties broken by label (pessimistic / optimistic)."""
    n = scores.shape[0]
    if ties == TIES_PESSIMISTIC or ties == TIES_OPTIMISTIC:
        neg = np.empty(n, dtype=np.float64)
        key = np.empty(n, dtype=np.float64)
        for i in range(n):
            key[i] = labels[i] if ties == TIES_PESSIMISTIC else -labels[i]
        pre = np.argsort(key, kind="mergesort")
        for i in range(n):
            neg[i] = -scores[pre[i]]
        post = np.argsort(neg, kind="mergesort")
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            out[i] = pre[post[i]]
        return out
    return _stable_ranking(scores)


@njit(cache=True)
def _dcg(gains, scores, discount, kk, average_ties):
    """DCG@kk of one query; with ``average_ties`` the expectation over tied orderings.

    A tie group occupying sorted positions ``[a, b)`` contributes its mean gain times the sum
    of the discounts of the positions it covers below the cutoff (McSherry & Najork 2008,
    as scikit-learn's ``_tie_averaged_dcg``).
    """
    n = gains.shape[0]
    order = _stable_ranking(scores)
    total = 0.0
    if not average_ties:
        for r in range(kk):
            total += gains[order[r]] * discount[r]
        return total
    a = 0
    while a < kk:
        b = a + 1  # [a, b): the run of scores equal to the one at sorted position a
        while b < n and scores[order[b]] == scores[order[a]]:
            b += 1
        gsum = 0.0
        for r in range(a, b):
            gsum += gains[order[r]]
        dsum = 0.0
        for r in range(a, min(b, kk)):
            dsum += discount[r]
        total += gsum / (b - a) * dsum
        a = b
    return total


@njit(cache=True)
def _ideal_dcg(gains, discount, kk):
    order = _stable_ranking(gains)  # gains in decreasing order
    total = 0.0
    for r in range(kk):
        total += gains[order[r]] * discount[r]
    return total


@njit(cache=True)
def _count_relevant(labels, threshold):
    n_rel = 0
    for i in range(labels.shape[0]):
        if labels[i] >= threshold:
            n_rel += 1
    return n_rel


@njit(cache=True)
def _average_precision(labels, scores, threshold, kk, ties, n_rel):
    order = _ranking(scores, labels, ties)
    hits = 0
    total = 0.0
    for r in range(kk):
        if labels[order[r]] >= threshold:
            hits += 1
            total += hits / (r + 1.0)
    return total / min(kk, n_rel)


@njit(cache=True)
def _reciprocal_rank(labels, scores, threshold, kk, ties):
    order = _ranking(scores, labels, ties)
    for r in range(kk):
        if labels[order[r]] >= threshold:
            return 1.0 / (r + 1.0)
    return 0.0


@njit(cache=True)
def _err(labels, stop_prob, scores, kk, ties):
    order = _ranking(scores, labels, ties)
    p_reach = 1.0
    total = 0.0
    for r in range(kk):
        p_stop = stop_prob[order[r]]
        total += p_reach * p_stop / (r + 1.0)
        p_reach *= 1.0 - p_stop
    return total


@njit(cache=True)
def _precision(labels, scores, threshold, kk, average_ties):
    n = labels.shape[0]
    order = _stable_ranking(scores)
    hits = 0.0
    if not average_ties:
        for r in range(kk):
            if labels[order[r]] >= threshold:
                hits += 1.0
        return hits / kk
    a = 0
    while a < kk:
        b = a + 1  # [a, b): the run of scores equal to the one at sorted position a
        while b < n and scores[order[b]] == scores[order[a]]:
            b += 1
        n_rel = 0
        for r in range(a, b):
            if labels[order[r]] >= threshold:
                n_rel += 1
        # each tied document lands in any of the group's positions with equal probability
        hits += n_rel * (min(b, kk) - a) / (b - a)
        a = b
    return hits / kk


# One value function and one parallel driver per metric family, and a host function that
# picks the driver: a call compiles only the family it computes (NDCG, the eval metric of
# every boosting round and of ``skltr demo``, never compiles ERR or average precision).
@njit(cache=True)
def _gain_value(metric, lab, values, sc, discount, k, ties, threshold, zero_value,
                skip_single):
    """DCG or NDCG of one query (its rows' labels, gains and scores)."""
    n = lab.shape[0]
    kk = min(k, n)
    if skip_single and n == 1:
        return np.nan
    # the ideal DCG is 0 exactly when every gain is 0 (all labels 0)
    if values.max() == 0.0:
        return zero_value
    dcg = _dcg(values, sc, discount, kk, ties == TIES_AVERAGE)
    if metric == NDCG:
        dcg /= _ideal_dcg(values, discount, kk)
    return dcg


@njit(cache=True)
def _err_value(metric, lab, values, sc, discount, k, ties, threshold, zero_value, skip_single):
    """ERR of one query (``values``: stopping probabilities)."""
    n = lab.shape[0]
    if skip_single and n == 1:
        return np.nan
    if lab.max() == 0.0:
        return zero_value
    return _err(lab, values, sc, min(k, n), ties)


@njit(cache=True)
def _binary_value(metric, lab, values, sc, discount, k, ties, threshold, zero_value,
                  skip_single):
    """Average precision, reciprocal rank or precision of one query (binary relevance)."""
    n = lab.shape[0]
    kk = min(k, n)
    if skip_single and n == 1:
        return np.nan
    n_rel = _count_relevant(lab, threshold)
    if n_rel == 0:
        return zero_value
    if metric == AVERAGE_PRECISION:
        return _average_precision(lab, sc, threshold, kk, ties, n_rel)
    if metric == RECIPROCAL_RANK:
        return _reciprocal_rank(lab, sc, threshold, kk, ties)
    return _precision(lab, sc, threshold, kk, ties == TIES_AVERAGE)


# The drivers: ``prange`` over queries, the body one call (a small parfor body compiles
# fast); ``np.int64`` because the parfor's own index is unsigned.
@njit(parallel=True, cache=True)
def _per_query_gain(metric, labels, values, scores, group_ptr, discount, k, ties, threshold,
                    zero_value, skip_single, out):
    for p in prange(group_ptr.shape[0] - 1):
        q = np.int64(p)
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        out[q] = _gain_value(metric, labels[lo:hi], values[lo:hi], scores[lo:hi], discount, k,
                             ties, threshold, zero_value, skip_single)


@njit(parallel=True, cache=True)
def _per_query_err(metric, labels, values, scores, group_ptr, discount, k, ties, threshold,
                   zero_value, skip_single, out):
    for p in prange(group_ptr.shape[0] - 1):
        q = np.int64(p)
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        out[q] = _err_value(metric, labels[lo:hi], values[lo:hi], scores[lo:hi], discount, k,
                            ties, threshold, zero_value, skip_single)


@njit(parallel=True, cache=True)
def _per_query_binary(metric, labels, values, scores, group_ptr, discount, k, ties, threshold,
                      zero_value, skip_single, out):
    for p in prange(group_ptr.shape[0] - 1):
        q = np.int64(p)
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        out[q] = _binary_value(metric, labels[lo:hi], values[lo:hi], scores[lo:hi], discount,
                               k, ties, threshold, zero_value, skip_single)


def per_query_metric(
    metric, labels, values, scores, group_ptr, discount, k, ties, threshold, zero_value,
    skip_single, out,
):
    """Compute one metric for every query into ``out`` (in parallel over queries).

    Parameters
    ----------
    metric : int
        One of the module's metric codes.
    labels, scores : float64 arrays, query-grouped
        Relevance labels (>= 0) and predicted scores.
    values : float64 array, query-grouped
        Gains for DCG/NDCG, stopping probabilities ``R(g)`` for ERR; unused otherwise.
    group_ptr : int64 array of shape (n_queries + 1,)
    discount : float64 array
        ``1 / log2(rank + 1)`` for ranks 1..max query size.
    k : int
        Cutoff; values above a query's size mean "all documents".
    ties : int
        One of the module's tie codes.
    threshold : float
        Binary relevance threshold (AP, RR, precision).
    zero_value : float
        Value for queries without relevant documents (NaN means "skip").
    skip_single : bool
        Give single-document queries NaN.
    out : float64 array of shape (n_queries,)
    """
    if metric == DCG or metric == NDCG:
        driver = _per_query_gain
    elif metric == ERR:
        driver = _per_query_err
    else:
        driver = _per_query_binary
    driver(metric, labels, values, scores, group_ptr, discount, k, ties, threshold,
           zero_value, skip_single, out)
    return out
