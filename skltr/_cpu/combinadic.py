"""The combinadic: a rank maps straight to a combination, so work splits without enumeration.

Combinations of ``k`` out of ``0 .. m-1`` are ranked in **lexicographic** order, the order of
``itertools.combinations(range(m), k)``, so that consecutive ranks share their longest
prefix (what a depth-first walk over itemsets wants)::

    m = 4, k = 2:   rank  0      1      2      3      4      5
                    comb (0,1)  (0,2)  (0,3)  (1,2)  (1,3)  (2,3)

The number of combinations whose first element is ``x`` (given the elements before it) is
``C(m - x - 1, k - i - 1)`` at position ``i``; ``unrank`` walks over these block sizes and
``rank`` sums them. Both take a table of binomial coefficients, ``binomials(n_max, k_max)``,
so that the CUDA kernels can read the same table.
"""

import functools

import numpy as np
from numba import njit


def binomials(n_max, k_max):
    """``C[n, j]`` for ``0 <= n <= n_max``, ``0 <= j <= k_max`` as int64 (Pascal's rule).

    Raises ``OverflowError`` when a coefficient would not fit in an int64.
    """
    return _binomials(int(n_max), int(k_max)).copy()


@functools.lru_cache(maxsize=32)
def _binomials(n_max, k_max):
    """:func:`binomials`, kept: every predict call of the rule ranker asks for a table (a
    copy goes out, so that no caller can change the kept one and numba sees a writable
    array, as it always did)."""
    table = np.zeros((n_max + 1, k_max + 1), dtype=np.int64)
    table[:, 0] = 1
    for n in range(1, n_max + 1):
        # row n from row n - 1, whose entries are below 2**62: the sums cannot wrap
        row = table[n - 1, :-1] + table[n - 1, 1:]
        big = np.flatnonzero(row >= 2**62)
        if big.size:
            raise OverflowError(f"C({n}, {int(big[0]) + 1}) = {int(row[big[0]])} does not fit "
                                f"the combinadic's int64.")
        table[n, 1:] = row
    return table


@njit(cache=True)
def unrank(r, m, k, binom, out):
    """Write the ``r``-th (lexicographic) ``k``-combination of ``0 .. m-1`` into ``out[:k]``.

    ``0 <= r < C(m, k)``; ``binom`` from :func:`binomials` with ``n_max >= m``.
    """
    x = 0
    for i in range(k):
        while True:
            block = binom[m - x - 1, k - i - 1]  # combinations with out[i] = x
            if r < block:
                out[i] = x
                x += 1
                break
            r -= block
            x += 1


@njit(cache=True)
def rank(comb, m, k, binom):
    """Lexicographic rank of the increasing ``k``-combination ``comb[:k]`` of ``0 .. m-1``."""
    r = 0
    x = 0
    for i in range(k):
        while x < comb[i]:
            r += binom[m - x - 1, k - i - 1]
            x += 1
        x += 1
    return r


# -- splitting a document's itemsets by weight ------------------------------------------------
#
# The CPU rule kernel's task is a range of pair ranks of one document with every superset of
# those pairs (``skltr._cpu.rules``). With ``m`` items and itemsets of up to ``K``, the pair
# ``(a, b)`` heads ``w(b) = sum_{j=0}^{K-2} C(m - b - 1, j)`` itemsets (itself and its
# supersets by later items), and the pairs of first item ``a`` head, by the hockey-stick
# identity, ``sum_{j=1}^{K-1} C(m - a - 1, j)``. Both sums have closed forms over rank ranges,
# so a document splits into ranges of (near) equal itemset counts with two binary searches a
# boundary, without walking its pairs.


def binomials_float(n_max, k_max):
    """``C[n, j]`` as float64 for ``0 <= n <= n_max``, ``0 <= j <= k_max`` (no overflow:
    weights for splitting work, exact below 2**53)."""
    table = np.zeros((n_max + 1, k_max + 1), dtype=np.float64)
    table[:, 0] = 1.0
    for j in range(1, k_max + 1):
        table[1:, j] = np.cumsum(table[:-1, j - 1])  # C(n, j) = sum_{i<n} C(i, j - 1)
    return table


@njit(cache=True)
def _head_weight(a, m, k_max, binom_f):
    # itemsets of 2..k_max items whose first item is before position a (pairs of rank < the
    # rank of (a, a + 1)): sum_{j=1}^{K-1} C(m, j + 1) - C(m - a, j + 1)
    s = 0.0
    for j in range(1, k_max):
        s += binom_f[m, j + 1] - binom_f[m - a, j + 1]
    return s


@njit(cache=True)
def _block_weight(a, b_end, m, k_max, binom_f):
    # itemsets headed by the pairs (a, a + 1) .. (a, b_end)
    s = 0.0
    for j in range(1, k_max):
        s += binom_f[m - a - 1, j] - binom_f[m - b_end - 1, j]
    return s


@njit(cache=True)
def pair_rank_bound(m, k_max, j, n_parts, binom_f):
    """The first pair rank of part ``j`` of ``n_parts`` (``0 <= j <= n_parts``) when the pairs
    of ``m`` items are split into ranges heading near equal numbers of itemsets of 2 ..
    ``k_max`` items. Bounds only grow with ``j``; ``j = 0`` gives 0 and ``j = n_parts`` all
    ``C(m, 2)`` pairs. A part is empty where one pair heads more than a part's share."""
    n_pairs = m * (m - 1) // 2
    if j <= 0 or m < 2:
        return 0
    if j >= n_parts:
        return n_pairs
    total = _head_weight(m - 1, m, k_max, binom_f)
    t = total * j / n_parts
    # a: the last first item whose pairs start below the target
    lo, hi = 0, m - 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _head_weight(mid, m, k_max, binom_f) < t:
            lo = mid
        else:
            hi = mid - 1
    a = lo
    base = _head_weight(a, m, k_max, binom_f)
    # i: the fewest pairs (a, a + 1) .. (a, a + i) reaching it
    lo, hi = 1, m - a - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if base + _block_weight(a, a + mid, m, k_max, binom_f) >= t:
            hi = mid
        else:
            lo = mid + 1
    return a * m - a * (a + 1) // 2 + lo


@njit(cache=True)
def pair_rank_bounds(m, k_max, j, n_parts, binom_f, out):
    """:func:`pair_rank_bound` of every ``(m[i], j[i], n_parts[i])`` into ``out[i]``."""
    for i in range(m.shape[0]):
        out[i] = pair_rank_bound(m[i], k_max, j[i], n_parts[i], binom_f)
