"""numba kernel of node partitioning: split a node's row range into left and right, stably.

The grower keeps every node's rows as one contiguous range of a row buffer; splitting a node
rewrites its range so that the left child's rows come first, each side in the original order
(stable, so nothing downstream depends on the thread count)::

    rows[start:end]     | 7 2 9 4 | 1 8 3 6 |        chunk 0 | chunk 1 (one per thread)
    go left?              y n y n   n y y n
    per-chunk counts      left 2    left 2           prefix sums -> write offsets
    tmp                 | 7 9 8 3 | 2 4 1 6 |        lefts of chunk 0, of chunk 1, then rights
    rows[start:end]  <- tmp                          left = [start, start + 4)

(scikit-learn's ``splitting.pyx`` does the same with per-thread counts and a scatter.)
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _goes_left(b, bin_threshold, missing_bin, default_left):
    if b == missing_bin:
        return default_left
    return b <= bin_threshold


@njit(parallel=True, cache=True)
def partition_rows(X_binned, rows, start, end, feature, bin_threshold, default_left,
                   missing_bin, tmp, n_chunks):
    """Reorder ``rows[start:end]`` to left rows then right rows (stable); return the left count.

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_samples, n_features)
    rows : ndarray of uint32
        Row buffer; the node owns ``rows[start:end]``.
    start, end, feature, bin_threshold : int
    default_left : bool
        Where rows in the missing bin go.
    missing_bin : int
    tmp : ndarray of uint32, same size as rows
        Scratch.
    n_chunks : int
        Threads; small nodes use fewer. The result does not depend on it.
    """
    n = end - start
    if n_chunks > n // 4096 + 1:
        n_chunks = n // 4096 + 1
    per = (n + n_chunks - 1) // n_chunks
    n_left_of = np.zeros(n_chunks + 1, dtype=np.int64)
    for c in prange(n_chunks):
        lo = start + c * per
        hi = min(lo + per, end)
        k = 0
        for i in range(lo, hi):
            if _goes_left(X_binned[rows[i], feature], bin_threshold, missing_bin, default_left):
                k += 1
        n_left_of[c + 1] = k
    for c in range(n_chunks):
        n_left_of[c + 1] += n_left_of[c]
    n_left = n_left_of[n_chunks]
    for c in prange(n_chunks):
        lo = start + c * per
        hi = min(lo + per, end)
        li = start + n_left_of[c]
        ri = start + n_left + (lo - start) - n_left_of[c]
        for i in range(lo, hi):
            r = rows[i]
            if _goes_left(X_binned[r, feature], bin_threshold, missing_bin, default_left):
                tmp[li] = r
                li += 1
            else:
                tmp[ri] = r
                ri += 1
    for c in prange(n_chunks):
        lo = start + c * per
        hi = min(lo + per, end)
        for i in range(lo, hi):
            rows[i] = tmp[i]
    return n_left
