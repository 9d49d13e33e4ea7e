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
def _run_end(vals, q, n):
    # first index after q whose value differs from vals[q] (equal values are contiguous in
    # sorted vals): a binary search
    lo = q + 1
    hi = n
    v = vals[q]
    while lo < hi:
        mid = (lo + hi) >> 1
        if vals[mid] == v:
            lo = mid + 1
        else:
            hi = mid
    return lo


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
    # n) closes a bin of its own; a bin of light values closes at the first run end where it
    # holds light_left / bins_left samples (both as they stood when the bin opened), or half
    # that when a heavy value comes next, else takes the heavy value in. Integer tests only,
    # so every implementation agrees; the sweep jumps from bin to bin with binary searches
    # (O(max_bins log n), the GPU's sequential part) instead of walking the runs.
    # Heavy runs: count >= tmin, i.e. vals[i + tmin - 1] == vals[i] at a run start i.
    tmin = (n + max_bins - 1) // max_bins
    heavy_start = np.empty(max_bins, np.int64)
    heavy_end = np.empty(max_bins, np.int64)
    n_heavy = 0
    light_left = n
    for i in range(n - tmin + 1):
        if (i == 0 or vals[i - 1] != vals[i]) and vals[i + tmin - 1] == vals[i]:
            heavy_start[n_heavy] = i
            heavy_end[n_heavy] = _run_end(vals, i + tmin - 1, n)
            light_left -= heavy_end[n_heavy] - i
            n_heavy += 1
    bins_left = max_bins - n_heavy  # >= 1: n_distinct > max_bins leaves a light value
    bin_bins, bin_light = bins_left, light_left
    k = 0
    p = 0  # the open bin starts at p
    h = 0  # the next heavy run
    while True:
        hs = heavy_start[h] if h < n_heavy else n
        he = heavy_end[h] if h < n_heavy else n
        light = True
        if p == hs:  # a heavy run opens the bin: it closes alone
            e = he
            light = False
            h += 1
        else:
            # fewest rows that fill the bin (never, with no bins left and light rows left)
            if bin_bins > 0:
                need = max((bin_light + bin_bins - 1) // bin_bins, 1)
            else:
                need = 1 if bin_light <= 0 else n + 1
            if p + need - 1 < hs:
                e = _run_end(vals, p + need - 1, n)  # the run end that fills it
            elif hs < n and 2 * (hs - p) * bin_bins >= bin_light:
                e = hs  # half full before a heavy run
            elif hs < n:
                e = he  # the heavy run joins the bin
                light = False
                light_left -= hs - p
                h += 1
            else:
                break  # the rest is the last bin
            if light:
                light_left -= e - p
        if e >= n:
            break
        # vals[e - 1], the last of its run, differs from the first (np.unique's) at most in
        # the sign of a zero, which never reaches the midpoint's result
        out[k] = _midpoint(np.float64(vals[e - 1]), np.float64(vals[e]))
        k += 1
        if k == max_bins - 1:
            break
        if light:
            bins_left -= 1
            bin_bins, bin_light = bins_left, light_left
        p = e
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


# --------------------------------------------------------------------------------------------
# sparse input: the same bins as the dense matrix with every absent entry 0.0
# --------------------------------------------------------------------------------------------


@njit(parallel=True, cache=True)
def map_to_bins_csr(indptr, indices, data, cut_ptr, cut_values, missing_bin, out):
    """``map_to_bins`` of a CSR matrix whose absent entries are 0.0, without densifying it.

    Every row starts as the bin of 0.0 of each feature, then its stored entries are binned
    one by one (a stored NaN goes to ``missing_bin``, a stored 0.0 to the bin of 0.0): the
    codes are those of ``map_to_bins(X.toarray())``. The entries of a row must be distinct
    columns (no duplicates).

    Parameters
    ----------
    indptr : ndarray of int32 or int64, shape (n_samples + 1,)
    indices : ndarray of int32 or int64, shape (nnz,)
    data : ndarray of float32 or float64, shape (nnz,)
    cut_ptr, cut_values, missing_bin
        As for :func:`map_to_bins`.
    out : ndarray of uint8, shape (n_samples, n_features)
    """
    n, n_features = out.shape
    zero_bin = np.empty(n_features, dtype=out.dtype)
    for f in range(n_features):
        zero_bin[f] = _search(cut_values, cut_ptr[f], cut_ptr[f + 1], 0.0)
    for i in prange(n):
        out[i, :] = zero_bin
        for k in range(indptr[i], indptr[i + 1]):
            x = data[k]
            f = indices[k]
            if np.isnan(x):
                out[i, f] = missing_bin
            else:
                out[i, f] = _search(cut_values, cut_ptr[f], cut_ptr[f + 1], x)


@njit(parallel=True, cache=True)
def find_cuts_csc(indptr, data, n_rows, max_bins, out, n_cuts):
    """``find_cuts`` of the sample held as a CSC matrix whose absent entries are 0.0.

    Feature ``f`` stores ``data[indptr[f]:indptr[f+1]]`` of its ``n_rows`` sampled values;
    the other values are 0.0. Its sorted column -- the stored values sorted (NaN last), with
    the absent zeros put in after the negative ones -- is built in a buffer of ``n_rows``
    values and cut by the dense rule, so the cuts equal those of the dense sample
    (``np.sort`` orders -0.0 and 0.0 either way, and the rule does not depend on it).
    Memory: one column per thread at a time, never the dense sample.

    Parameters
    ----------
    indptr : ndarray of int32 or int64, shape (n_features + 1,)
    data : ndarray of float32 or float64, shape (nnz,)
    n_rows : int
        Rows of the sample.
    max_bins : int
    out : ndarray of float64, shape (n_features, max_bins - 1)
    n_cuts : ndarray of int64, shape (n_features,)
    """
    for f in prange(indptr.size - 1):
        stored = np.sort(data[indptr[f]:indptr[f + 1]])
        k = stored.size
        col = np.empty(n_rows, dtype=data.dtype)
        neg = 0
        while neg < k and stored[neg] < 0:
            neg += 1
        zeros = n_rows - k
        col[:neg] = stored[:neg]
        col[neg:neg + zeros] = 0
        col[neg + zeros:] = stored[neg:]
        n_cuts[f] = _column_cuts(col, max_bins, out[f])


@njit(parallel=True, cache=True)
def transpose(a, out):
    """``out[:] = a.T`` for C-contiguous ``a`` (n, m) and ``out`` (m, n), in parallel.

    ``np.ascontiguousarray(a.T)`` runs on one thread (0.46 s for 200k x 136 float32 on the
    2-vCPU machine: a strided pass) while the other cores wait; tiles of 64 rows keep each
    task's reads in cache and its writes in runs of 64.
    """
    n, m = a.shape
    n_tiles = (n + 63) // 64
    for t in prange(n_tiles):
        lo = t * 64
        hi = min(lo + 64, n)
        for f in range(m):
            for i in range(lo, hi):
                out[f, i] = a[i, f]


@njit(parallel=True, cache=True)
def nan_columns(X, out):
    """``out[f] = np.isnan(X[:, f]).any()`` in parallel, without an n x m mask.

    64 row chunks (a fixed count: the result does not depend on the thread count) each mark
    their columns; the marks are or-ed at the end.
    """
    n, m = X.shape
    n_chunks = 64
    per = (n + n_chunks - 1) // n_chunks
    found = np.zeros((n_chunks, m), dtype=np.bool_)
    for c in prange(n_chunks):
        for i in range(c * per, min(n, (c + 1) * per)):
            for f in range(m):
                found[c, f] |= np.isnan(X[i, f])
    for f in range(m):
        any_nan = False
        for c in range(n_chunks):
            any_nan |= found[c, f]
        out[f] = any_nan
