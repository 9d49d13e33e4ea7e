"""numba kernel of feature binning: raw values -> uint8 bin codes.

Feature ``f`` owns the cut values ``cut_values[cut_ptr[f]:cut_ptr[f+1]]`` (its upper bin edges,
increasing; the last bin is unbounded). A value ``x`` goes to the first bin ``b`` with
``x <= cut[b]`` (binary search), so ``-inf`` lands in bin 0 and ``+inf`` in the last bin; NaN
goes to ``missing_bin``.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _search(cuts, lo, hi, x):
    # first index i in [lo, hi) with x <= cuts[i], or hi when there is none
    start = lo
    while lo < hi:
        mid = (lo + hi) >> 1
        if x <= cuts[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo - start


@njit(parallel=True, cache=True)
def map_to_bins(X, cut_ptr, cut_values, missing_bin, out):
    """Write the bin code of every ``X[i, f]`` into ``out[i, f]`` (uint8, C order).

    Parameters
    ----------
    X : ndarray of float32 or float64, shape (n_samples, n_features)
    cut_ptr : ndarray of int64, shape (n_features + 1,)
    cut_values : ndarray of float64
    missing_bin : int
        Code of NaN values.
    out : ndarray of uint8, shape (n_samples, n_features)
    """
    n, n_features = X.shape
    for i in prange(n):
        for f in range(n_features):
            x = X[i, f]
            if np.isnan(x):
                out[i, f] = missing_bin
            else:
                out[i, f] = _search(cut_values, cut_ptr[f], cut_ptr[f + 1], x)
