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

import numpy as np
from numba import njit


def binomials(n_max, k_max):
    """``C[n, j]`` for ``0 <= n <= n_max``, ``0 <= j <= k_max`` as int64 (Pascal's rule).

    Raises ``OverflowError`` when a coefficient would not fit in an int64.
    """
    table = np.zeros((n_max + 1, k_max + 1), dtype=np.int64)
    table[:, 0] = 1
    for n in range(1, n_max + 1):
        for j in range(1, min(n, k_max) + 1):
            v = int(table[n - 1, j - 1]) + int(table[n - 1, j])
            if v >= 2**62:
                raise OverflowError(f"C({n}, {j}) = {v} does not fit the combinadic's int64.")
            table[n, j] = v
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
