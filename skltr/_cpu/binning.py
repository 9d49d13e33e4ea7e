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


@njit(cache=True, inline="always")
def _midpoint(lo, hi):
    # cut between consecutive distinct values: halves first (lo + hi could overflow); for
    # adjacent doubles the midpoint rounds onto one of them, and a cut equal to hi would
    # put hi in lo's bin, so fall back to lo itself
    mid = 0.5 * lo + 0.5 * hi
    if mid >= lo and mid < hi:
        return mid
    return lo


@njit(cache=True, inline="always")
def _run_end(vals, i, n):
    # end of the run of values equal to vals[i] (exclusive)
    j = i + 1
    while j < n and vals[j] == vals[i]:
        j += 1
    return j


@njit(cache=True)
def _column_cuts(col, max_bins, out):
    # Cuts of one *sorted* sampled column (NaN last, as np.sort leaves it) into ``out``;
    # returns their count. Same results as the reference
    # ``tests/naive_gbdt.naive_feature_cuts`` (np.unique and a loop over its counts).
    start = 0
    end = col.size
    while start < end and np.float64(col[start]) == -np.inf:
        start += 1
    while end > start and not np.isfinite(np.float64(col[end - 1])):
        end -= 1
    n = end - start
    if n == 0:
        return 0
    vals = col[start:end]
    n_distinct = 1
    for i in range(1, n):
        if vals[i] != vals[i - 1]:
            n_distinct += 1
    if n_distinct <= max_bins:
        # one bin per distinct value, cut at midpoints
        k = 0
        lo = np.float64(vals[0])  # first of its run of equal values, as np.unique keeps
        for i in range(1, n):
            if vals[i] != vals[i - 1]:
                hi = np.float64(vals[i])
                out[k] = _midpoint(lo, hi)
                lo = hi
                k += 1
        return k
    # Count-balanced bins over the runs of equal values. A heavy value (count * max_bins >=
    # n) gets a bin of its own; the light values fill the bins left, closing a bin once it
    # holds light_left / bins_left samples (both taken when the bin opened) -- or half that
    # when a heavy value comes next. Integer tests only, so every implementation agrees.
    n_heavy = 0
    heavy_total = 0
    i = 0
    while i < n:
        j = _run_end(vals, i, n)
        if (j - i) * max_bins >= n:
            n_heavy += 1
            heavy_total += j - i
        i = j
    bins_left = max_bins - n_heavy  # >= 1: n_distinct > max_bins leaves a light value
    light_left = n - heavy_total
    bin_bins, bin_light = bins_left, light_left
    filled = 0
    k = 0
    i = 0
    j = _run_end(vals, 0, n)
    while j < n:  # run [i, j) and a next run [j, nxt)
        nxt = _run_end(vals, j, n)
        heavy = (j - i) * max_bins >= n
        filled += j - i
        if not heavy:
            light_left -= j - i
        if (heavy or filled * bin_bins >= bin_light
                or ((nxt - j) * max_bins >= n and 2 * filled * bin_bins >= bin_light)):
            out[k] = _midpoint(np.float64(vals[i]), np.float64(vals[j]))
            k += 1
            if k == max_bins - 1:
                break
            filled = 0
            if not heavy:
                bins_left -= 1
                bin_bins, bin_light = bins_left, light_left
        i = j
        j = nxt
    return k


@njit(parallel=True, cache=True)
def find_cuts(sorted_columns, max_bins, out, n_cuts):
    """Cut values of every feature from its sorted sampled values, parallel over features.

    Sorting is left to ``np.sort`` (SIMD, several times faster than a compiled quicksort);
    the rest -- distinct values, then midpoints or count-balanced bins -- is linear per
    feature.

    Parameters
    ----------
    sorted_columns : ndarray of float32 or float64, shape (n_features, n_samples)
        Each row one feature's sampled values, sorted ascending (NaN last).
    max_bins : int
    out : ndarray of float64, shape (n_features, max_bins - 1)
        Feature ``f``'s cuts are written to ``out[f, :n_cuts[f]]``.
    n_cuts : ndarray of int64, shape (n_features,)
    """
    for f in prange(sorted_columns.shape[0]):
        n_cuts[f] = _column_cuts(sorted_columns[f], max_bins, out[f])


@njit(parallel=True, cache=True)
def take_rows(X, rows, out):
    """``out[j] = X[rows[j]]`` for every j, parallel over rows (``np.take(X, rows, axis=0)``
    on one thread took 35-50 ms for the 200k-row cut sample of a 1M x 136 float32 matrix).

    Parameters
    ----------
    X : ndarray of float32 or float64, shape (n_samples, n_features)
    rows : ndarray of int64, shape (m,)
    out : ndarray of X's dtype, shape (m, n_features)
    """
    for j in prange(rows.size):
        out[j, :] = X[rows[j], :]
