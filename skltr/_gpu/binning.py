"""GPU binning: raw float values -> uint8 bin codes, with the host ``BinMapper``'s cuts.

Same rule as :func:`skltr._cpu.binning.map_to_bins`: ``x`` goes to the first bin ``b`` with
``x <= cut_values[cut_ptr[f] + b]`` (binary search; the last bin is unbounded) and NaN to
``missing_bin``. The output rows are padded to a multiple of 4 features (pad bytes are 0) so
that a row is a whole number of 32-bit words: the histogram kernel reads 4 bins per load
(Zhang, Si & Hsieh, "GPU-acceleration for Large-scale Tree Boosting", 2017)::

    row i   | f0 f1 f2 f3 | f4 f5 f6 f7 | ... | f132 f133 f134 f135 |   uint8, C order
            |  word 0     |  word 1     |     |  word 33            |   read as uint32

The cuts come from the CPU ``BinMapper``'s own row sample and cut rule, with the sample
gathered and sorted on the GPU (:func:`fit_bin_mapper`)::

    host   rows = BinMapper.sample_rows(n)           same draw as the CPU (seeded)
    host   X[rows] (numba, parallel) -> GPU          only the sample crosses the bus here
    GPU    keys[f, j] = orderable bits of X[rows[j], f]   (transpose, one launch; NaN -> the
                                                     largest key, so it sorts last)
           sort keys[f] for every f (radix sort of unsigned ints) -> sorted values, X's dtype
           column_cuts: find_cuts' rule, one block per feature (same double operations)
    host   BinMapper.set_cuts(cuts, n_cuts)          a few hundred KB come back

Then X streams through one staging buffer of ``_config.BIN_CHUNK_ROWS`` rows into the binning
kernel. X is read in its own dtype (float32 or float64): a float32 value widened to double
compares with a float64 cut exactly as on the CPU. X is never copied to the GPU whole: on a
process's first large fit every new byte of GPU memory costs ~1 ms/MB (first use; measured
on an H100, 2026-11-22), so a resident 544 MB copy of 1M x 136 float32 cost ~0.5 s there.

A host scipy CSR / CSC matrix (absent entries 0.0) takes the same route: its rows are
densified on the host a chunk at a time into the staging buffer (CSC converted to CSR once),
and its cut sample is densified on the host before the upload, so the bins are those of
``X.toarray()``.
"""

from __future__ import annotations

import cupy
import numpy as np

from .._cpu.binning import take_rows
from .._engine.binning import BinMapper
from ..trees._sparse_input import as_csr, check_sparse, densify_rows, is_sparse
from ..utils._threads import numba_threads
from . import _config
from ._compile import EXACT_FLOAT32, blocks, module

_SOURCE = r"""
// float -> double exactly (widen: skltr._gpu._compile.EXACT_FLOAT32, prepended): the CPU
// widens subnormal floats exactly, CuPy's -ftz=true would flush them.

// ---- bin codes --------------------------------------------------------------------------
#define MAP_TO_BINS(NAME, T)                                                                  \
extern "C" __global__ void NAME(const T* X, long long n, int n_features,                     \
                                const long long* cut_ptr, const double* cuts,                \
                                int missing_bin, u8* out, int out_stride,                    \
                                int* has_missing, int* has_inf) {                            \
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;                          \
    if (k >= n * out_stride) return;                                                         \
    long long i = k / out_stride;                                                            \
    int f = (int)(k - i * out_stride);                                                       \
    if (f >= n_features) { out[k] = 0; return; }   /* padding byte of the last word */       \
    double x = widen(X[i * n_features + f]);                                                 \
    if (x != x) { out[k] = (u8)missing_bin; has_missing[f] = 1; return; }  /* benign race */ \
    if (fabs(x) == __longlong_as_double(0x7ff0000000000000LL)) *has_inf = 1;  /* benign */   \
    long long lo = cut_ptr[f], hi = cut_ptr[f + 1], start = lo;                              \
    while (lo < hi) {                  /* first cut with x <= cut */                         \
        long long mid = (lo + hi) >> 1;                                                      \
        if (x <= cuts[mid]) hi = mid; else lo = mid + 1;                                     \
    }                                                                                        \
    out[k] = (u8)(lo - start);                                                               \
}
MAP_TO_BINS(map_to_bins_f64, double)
MAP_TO_BINS(map_to_bins_f32, float)

// ---- the cut sample ---------------------------------------------------------------------
// Order-preserving unsigned keys of floats: flip every bit of a negative value, only the
// sign bit of a positive one (-0.0 sorts just below +0.0); every NaN takes the largest key,
// so NaN sorts last as in np.sort.
__device__ __forceinline__ u32 bits_of(float x) { return __float_as_uint(x); }
__device__ __forceinline__ u64 bits_of(double x) { return (u64)__double_as_longlong(x); }
__device__ __forceinline__ void from_bits(u32 u, float* x) { *x = __uint_as_float(u); }
__device__ __forceinline__ void from_bits(u64 u, double* x) {
    *x = __longlong_as_double((long long)u);
}

// keys[f * m + j] = key of X[rows[j], f] (rows[j] = j when use_rows == 0): gather and
// transpose in one pass; a thread per element, consecutive threads read one row.
#define SAMPLE_KEYS(NAME, T, U)                                                               \
extern "C" __global__ void NAME(const T* X, int n_features, const long long* rows,           \
                                int use_rows, long long m, U* keys) {                        \
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;                          \
    if (k >= m * n_features) return;                                                         \
    long long j = k / n_features;                                                            \
    int f = (int)(k - j * n_features);                                                       \
    long long i = use_rows ? rows[j] : j;                                                    \
    T x = X[i * n_features + f];                                                             \
    const U sign = (U)1 << (8 * sizeof(U) - 1);                                              \
    U u = bits_of(x);                                                                        \
    keys[(long long)f * m + j] = (x != x) ? ~(U)0 : ((u & sign) ? ~u : (u | sign));          \
}
SAMPLE_KEYS(sample_keys_f64, double, u64)
SAMPLE_KEYS(sample_keys_f32, float, u32)

// values[k] = the float whose key is keys[k] (the inverse of the map above; the NaN key
// gives a NaN).
#define KEYS_TO_VALUES(NAME, T, U)                                                            \
extern "C" __global__ void NAME(const U* keys, long long n, T* values) {                     \
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;                          \
    if (k >= n) return;                                                                      \
    const U sign = (U)1 << (8 * sizeof(U) - 1);                                              \
    U u = keys[k];                                                                           \
    from_bits((u & sign) ? (U)(u ^ sign) : (U)~u, values + k);                               \
}
KEYS_TO_VALUES(keys_to_values_f64, double, u64)
KEYS_TO_VALUES(keys_to_values_f32, float, u32)

// ---- the cut rule -----------------------------------------------------------------------
// skltr._cpu.binning._column_cuts, step for step and in the same double operations (no fused
// multiply-adds: --fmad=false; floats widened exactly and compared as doubles), one block per
// feature over its sorted sampled values.
__device__ __forceinline__ bool finite_d(double x) {     // false for +-inf and NaN
    return fabs(x) < __longlong_as_double(0x7ff0000000000000LL);
}
__device__ __forceinline__ double midpoint(double lo, double hi) {
    double mid = 0.5 * lo + 0.5 * hi;
    if (mid >= lo && mid < hi) return mid;
    return lo;
}

// first index after q whose value differs from vals[q], in sorted vals[0:n): equal values are
// contiguous, so a binary search (find_cuts' _run_end)
template <typename T>
__device__ long long run_end(const T* vals, long long q, long long n) {
    const double v = widen(vals[q]);
    long long lo = q + 1, hi = n;
    while (lo < hi) {
        const long long mid = (lo + hi) >> 1;
        if (widen(vals[mid]) == v) lo = mid + 1; else hi = mid;
    }
    return lo;
}

#define CUT_THREADS 256
#define COLUMN_CUTS(NAME, T)                                                                  \
extern "C" __global__ void __launch_bounds__(CUT_THREADS)                                    \
NAME(const T* sorted, long long m, int max_bins, double* cuts, long long* n_cuts) {          \
    __shared__ long long s_start, s_end, s_n_distinct;                                       \
    __shared__ long long s_count[CUT_THREADS];                                               \
    __shared__ long long s_pos[256];          /* first index of each distinct value */       \
    __shared__ unsigned s_n_heavy;                                                           \
    __shared__ long long s_heavy_start[256], s_heavy_end[256];   /* heavy runs */            \
    const int f = blockIdx.x, t = threadIdx.x, width = max_bins - 1;                         \
    const T* col = sorted + (long long)f * m;                                                \
    double* out = cuts + (long long)f * width;                                               \
    if (t == 0) {                                                                            \
        /* leading -inf are skipped; trailing +inf and NaN (sorted last) are dropped */      \
        long long lo = 0, hi = m;                                                            \
        while (lo < hi) {                                                                    \
            long long mid = (lo + hi) >> 1;                                                  \
            if (widen(col[mid]) == NEG_INF) lo = mid + 1; else hi = mid;                       \
        }                                                                                    \
        s_start = lo; hi = m;                                                                \
        while (lo < hi) {                                                                    \
            long long mid = (lo + hi) >> 1;                                                  \
            if (finite_d(widen(col[mid]))) lo = mid + 1; else hi = mid;                      \
        }                                                                                    \
        s_end = lo;                                                                          \
    }                                                                                        \
    __syncthreads();                                                                         \
    const long long start = s_start, end = s_end, n = end - start;                           \
    if (n == 0) { if (t == 0) n_cuts[f] = 0; return; }                                       \
    /* distinct values: 1 + the places where a value differs from the one before,     */     \
    /* counted over a contiguous chunk per thread; an exclusive scan of the counts    */     \
    /* numbers each chunk's run starts (used when every distinct value gets a bin)    */     \
    const long long chunk = (n - 1 + CUT_THREADS - 1) / CUT_THREADS;                         \
    const long long a = start + 1 + t * chunk;                                               \
    const long long b = min(end, a + chunk);                                                 \
    long long mine = 0;                                                                      \
    for (long long i = a; i < b; ++i) mine += widen(col[i]) != widen(col[i - 1]);            \
    s_count[t] = mine;                                                                       \
    __syncthreads();                                                                         \
    if (t == 0) {                                                                            \
        long long run = 1;                    /* run 0 starts at `start` */                  \
        for (int k = 0; k < CUT_THREADS; ++k) {                                              \
            long long here = s_count[k]; s_count[k] = run; run += here;                      \
        }                                                                                    \
        s_n_distinct = run;                                                                  \
        s_pos[0] = start;                                                                    \
    }                                                                                        \
    __syncthreads();                                                                         \
    const long long n_distinct = s_n_distinct;                                               \
    if (n_distinct <= max_bins) {                                                            \
        /* one bin per distinct value, cut at the midpoints of consecutive ones              \
           (the first of each run of equal values, as np.unique keeps) */                    \
        long long r = s_count[t];                                                            \
        for (long long i = a; i < b; ++i)                                                    \
            if (widen(col[i]) != widen(col[i - 1])) s_pos[r++] = i;                          \
        __syncthreads();                                                                     \
        for (long long k = t; k < n_distinct - 1; k += CUT_THREADS)                          \
            out[k] = midpoint(widen(col[s_pos[k]]), widen(col[s_pos[k + 1]]));               \
        if (t == 0) n_cuts[f] = n_distinct - 1;                                              \
        return;                                                                              \
    }                                                                                        \
    /* count-balanced bins over the runs of equal values: find_cuts' sweep, integer tests  */ \
    /* and all. A run is heavy when count * max_bins >= n, i.e. count >= tmin: at a run    */ \
    /* start i that is col[i + tmin - 1] == col[i], so the threads find the heavy runs     */ \
    /* (at most max_bins) in parallel; thread 0 sorts them and jumps from bin to bin.      */ \
    const long long tmin = (n + max_bins - 1) / max_bins;                                   \
    if (t == 0) s_n_heavy = 0;                                                               \
    __syncthreads();                                                                         \
    for (long long i = start + t; i + tmin - 1 < end; i += CUT_THREADS) {                    \
        const double v = widen(col[i]);                                                      \
        if ((i > start && widen(col[i - 1]) == v) || widen(col[i + tmin - 1]) != v) continue; \
        const unsigned slot = atomicAdd(&s_n_heavy, 1u);                                     \
        s_heavy_start[slot] = i - start;                                                     \
        s_heavy_end[slot] = run_end(col + start, i - start + tmin - 1, n);                   \
    }                                                                                        \
    __syncthreads();                                                                         \
    if (t != 0) return;                                                                      \
    const int n_heavy = s_n_heavy;                                                           \
    long long light_left = n;                                                                \
    for (int a = 0; a < n_heavy; ++a) {      /* order by start (insertion sort) */           \
        const long long hs = s_heavy_start[a], he = s_heavy_end[a];                         \
        light_left -= he - hs;                                                               \
        int b = a - 1;                                                                       \
        while (b >= 0 && s_heavy_start[b] > hs) {                                            \
            s_heavy_start[b + 1] = s_heavy_start[b]; s_heavy_end[b + 1] = s_heavy_end[b]; --b; \
        }                                                                                    \
        s_heavy_start[b + 1] = hs; s_heavy_end[b + 1] = he;                                  \
    }                                                                                        \
    const T* vals = col + start;                                                             \
    long long bins_left = max_bins - n_heavy;                                                \
    long long bin_bins = bins_left, bin_light = light_left, k = 0, p = 0;                    \
    int h = 0;                                                                               \
    while (true) {                                                                           \
        const long long hs = h < n_heavy ? s_heavy_start[h] : n;                            \
        const long long he = h < n_heavy ? s_heavy_end[h] : n;                              \
        long long e;                                                                         \
        bool light = true;                                                                   \
        if (p == hs) { e = he; light = false; ++h; }                                         \
        else {                                                                               \
            long long need;                                                                  \
            if (bin_bins > 0) need = max((bin_light + bin_bins - 1) / bin_bins, 1LL);        \
            else need = bin_light <= 0 ? 1 : n + 1;                                          \
            if (p + need - 1 < hs) e = run_end(vals, p + need - 1, n);                       \
            else if (hs < n && 2 * (hs - p) * bin_bins >= bin_light) e = hs;                 \
            else if (hs < n) { e = he; light = false; light_left -= hs - p; ++h; }           \
            else break;                                                                      \
            if (light) light_left -= e - p;                                                  \
        }                                                                                    \
        if (e >= n) break;                                                                   \
        out[k++] = midpoint(widen(vals[e - 1]), widen(vals[e]));                             \
        if (k == max_bins - 1) break;                                                        \
        if (light) { --bins_left; bin_bins = bins_left; bin_light = light_left; }            \
        p = e;                                                                               \
    }                                                                                        \
    n_cuts[f] = k;                                                                           \
}
COLUMN_CUTS(column_cuts_f64, double)
COLUMN_CUTS(column_cuts_f32, float)
"""

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_KEY_DTYPE = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


@cupy.memoize(for_each_device=True)
def _module():
    return module(EXACT_FLOAT32 + _SOURCE)


def _kernel(name, dtype):
    return _module().get_function(f"{name}_{_SUFFIX[np.dtype(dtype)]}")


def padded_features(n_features: int) -> int:
    """Row length of the binned matrix on the GPU: ``n_features`` rounded up to 4."""
    return max(4, -(-int(n_features) // 4) * 4)


def _float_host(X):
    # host X as the BinMapper reads it: float32 and float64 kept, anything else float64; a
    # CSR / CSC matrix becomes CSR with such values
    if is_sparse(X):
        X = as_csr(check_sparse(X))
        return X if X.dtype in _SUFFIX else X.astype(np.float64)
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}.")
    return X if X.dtype in _SUFFIX else X.astype(np.float64)


def _float_device(X):
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}.")
    if X.dtype not in _SUFFIX:
        X = X.astype(cupy.float64)
    return cupy.ascontiguousarray(X)


def map_to_bins(X, cut_ptr, cut_values, missing_bin, has_missing=None, has_inf=None):
    """Bin codes of ``X`` on the current GPU, rows padded to :func:`padded_features`.

    Parameters
    ----------
    X : ndarray, scipy CSR / CSC or cupy.ndarray of float, shape (n_samples, n_features)
        float32 and float64 are read as they are (others are converted to float64). Host
        arrays are sent to the GPU in chunks of ``_config.BIN_CHUNK_ROWS`` rows (a sparse
        chunk densified on the host first, absent entries 0.0); a CuPy array is binned in
        one launch.
    cut_ptr : ndarray of int64, shape (n_features + 1,)
    cut_values : ndarray of float64
    missing_bin : int
    has_missing : cupy.ndarray of int32, shape (n_features,), optional
        Set to 1 for every feature with a NaN (left as is otherwise).
    has_inf : cupy.ndarray of int32, shape (1,), optional
        Set to 1 when some value is +inf or -inf (left as is otherwise).

    Returns
    -------
    cupy.ndarray of uint8, shape (n_samples, padded_features(n_features)), C order
    """
    X = _float_device(X) if isinstance(X, cupy.ndarray) else _float_host(X)
    n, n_features = X.shape
    stride = padded_features(n_features)
    out = cupy.empty((n, stride), dtype=cupy.uint8)
    ptr = cupy.asarray(np.ascontiguousarray(cut_ptr, dtype=np.int64))
    cuts = cupy.asarray(np.ascontiguousarray(cut_values, dtype=np.float64))
    if cuts.size == 0:
        cuts = cupy.zeros(1, cupy.float64)  # a valid pointer; never read
    if has_missing is None:
        has_missing = cupy.zeros(max(n_features, 1), cupy.int32)
    if has_inf is None:
        has_inf = cupy.zeros(1, cupy.int32)
    kern = _kernel("map_to_bins", X.dtype)
    threads = _config.ELEMENTWISE_THREADS
    on_device = isinstance(X, cupy.ndarray)
    step = max(n, 1) if on_device else max(1, min(n, int(_config.BIN_CHUNK_ROWS)))
    # one staging buffer for every host chunk: its copies and the kernels that read it are
    # ordered on the current stream, so the next copy waits for the previous chunk's launch
    staging = None if on_device else cupy.empty((step, n_features), dtype=X.dtype)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        if on_device:
            chunk = X[lo:hi]
        else:
            chunk = staging[:hi - lo]
            chunk.set(densify_rows(X, lo, hi) if is_sparse(X) else np.ascontiguousarray(X[lo:hi]))
        m = (hi - lo) * stride
        kern((blocks(m, threads),), (threads,),
             (chunk, np.int64(hi - lo), np.int32(n_features), ptr, cuts,
              np.int32(missing_bin), out[lo:hi], np.int32(stride), has_missing, has_inf))
    return out


def sorted_sample_columns(X, rows=None, n_threads=None):
    """The cut sample sorted per feature on the GPU: ``np.sort(X[rows].T, axis=1)``.

    Parameters
    ----------
    X : ndarray, scipy CSR / CSC or cupy.ndarray of float32 or float64
        A host array has its sample rows gathered on the host (numba, ``n_threads``
        threads; a sparse matrix's sample rows densified, absent entries 0.0) and only the
        sample crosses the bus; a CuPy array is gathered on the device.
    rows : ndarray of int64 or None
        Sample rows; None takes every row.

    Returns
    -------
    cupy.ndarray, shape (n_features, n_rows), X's dtype
        Each row one feature's values in ascending order, NaN last (as ``np.sort``; -0.0
        before +0.0, which ``np.sort`` may order either way: they compare equal, so cuts and
        bins do not depend on it).
    """
    if isinstance(X, cupy.ndarray):
        Xd = _float_device(X)
    else:
        X = _float_host(X)
        if is_sparse(X):  # the sample rows, dense
            X = as_csr(X if rows is None else X[np.ascontiguousarray(rows, dtype=np.int64)])
            X, rows = densify_rows(X, 0, X.shape[0]), None
        if rows is not None:
            sample = np.empty((len(rows), X.shape[1]), dtype=X.dtype)
            with numba_threads(n_threads):
                take_rows(X, np.ascontiguousarray(rows, dtype=np.int64), sample)
            X, rows = sample, None
        Xd = cupy.asarray(np.ascontiguousarray(X))
    dtype = Xd.dtype
    m = Xd.shape[0] if rows is None else len(rows)
    n_features = Xd.shape[1]
    keys = cupy.empty((n_features, m), dtype=_KEY_DTYPE[dtype])
    rows_d = (cupy.zeros(1, cupy.int64) if rows is None
              else cupy.asarray(np.ascontiguousarray(rows, dtype=np.int64)))
    threads = _config.ELEMENTWISE_THREADS
    total = m * n_features
    if total:
        _kernel("sample_keys", dtype)(
            (blocks(total, threads),), (threads,),
            (Xd, np.int32(n_features), rows_d, np.int32(rows is not None), np.int64(m), keys))
    del Xd  # an uploaded sample is not needed any more
    for f in range(n_features):
        keys[f].sort()  # radix sort of one feature's unsigned keys
    if total:  # decoded in place: a key and its float have the same width
        _kernel("keys_to_values", dtype)((blocks(total, threads),), (threads,),
                                         (keys, np.int64(total), keys))
    return keys.view(dtype)


#: Threads of a column_cuts block (CUT_THREADS in the source).
_CUT_THREADS = 256


def column_cuts(sorted_columns, max_bins):
    """``skltr._cpu.binning.find_cuts`` on the GPU: one block per feature.

    Parameters
    ----------
    sorted_columns : cupy.ndarray of float32 or float64, shape (n_features, m)
        Each row one feature's sampled values, ascending, NaN last
        (:func:`sorted_sample_columns`).
    max_bins : int

    Returns
    -------
    cuts : ndarray of float64, shape (n_features, max_bins - 1)
        Feature ``f``'s cuts are ``cuts[f, :n_cuts[f]]`` (host arrays, a few hundred KB).
    n_cuts : ndarray of int64, shape (n_features,)
    """
    n_features, m = sorted_columns.shape
    cuts = cupy.zeros((n_features, int(max_bins) - 1), dtype=cupy.float64)
    n_cuts = cupy.zeros(n_features, dtype=cupy.int64)
    if n_features and m:
        _kernel("column_cuts", sorted_columns.dtype)(
            (n_features,), (_CUT_THREADS,),
            (cupy.ascontiguousarray(sorted_columns), np.int64(m), np.int32(max_bins), cuts,
             n_cuts))
    return cuts.get(), n_cuts.get()


def fit_bin_mapper(X, max_bins, random_state, n_threads=None, categorical=None):
    """``BinMapper(max_bins, random_state=...).fit(X)`` on the GPU, with the CPU's cuts.

    The host ``BinMapper``'s row sample (same seeded draw, :meth:`BinMapper.sample_rows
    <skltr._engine.binning.BinMapper.sample_rows>`), gathered and sorted on the GPU
    (:func:`sorted_sample_columns`), and its cut rule run there (:func:`column_cuts`, the
    numba ``find_cuts`` step for step), so the cuts are identical to the CPU's
    (``tests/test_gbdt_gpu.py`` checks it); only the cuts (a few hundred KB) come back to the
    host (``BinMapper.set_cuts``). ``has_missing`` is left for :func:`map_to_bins` to find
    (``mapper.has_missing`` is set by the caller). ``n_threads`` are the host
    threads of the sample gather (and the mapper's own).

    Parameters
    ----------
    X : ndarray or cupy.ndarray, shape (n_samples, n_features)
        A host array has its sample rows gathered on the host; a CuPy array on the device.
    categorical : sequence of int or None
        Categorical features: their categories come from the same sample rows, on the host
        (``BinMapper.fit_category_columns``).
    """
    mapper = BinMapper(max_bins=max_bins, random_state=random_state, n_threads=n_threads,
                       categorical=categorical)
    X = _float_device(X) if isinstance(X, cupy.ndarray) else _float_host(X)
    rows = mapper.sample_rows(X.shape[0])
    mapper.set_cuts(*column_cuts(sorted_sample_columns(X, rows, n_threads), mapper.max_bins))
    sel = slice(None) if rows is None else rows
    return mapper.fit_category_columns([_host(X[sel, f]) for f in mapper.categorical_indices()])


def _host(a):
    return cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else np.asarray(a)


def wide_columns_to_device(X, mapper):
    """The wide categorical features' uint16 codes (``BinMapper.transform_wide``'s, found on
    the host a column at a time) as a device array of shape (n_samples, n_wide)."""
    position = {int(f): j for j, f in enumerate(mapper.categorical_indices())}
    out = cupy.empty((X.shape[0], mapper.wide.size), cupy.uint16)
    for w, f in enumerate(mapper.wide):
        out[:, w] = cupy.asarray(mapper.category_bins(
            _host(X[:, int(f)]), position[int(f)], int(f), missing=int(mapper.wide_n_bins[w])))
    return out


def category_columns_to_device(X, mapper, X_bytes):
    """Write the categorical features' bins (found on the host: ``BinMapper.category_bins``)
    into the device matrix ``X_bytes``, one column at a time."""
    for j, f in enumerate(mapper.categorical_indices()):
        X_bytes[:, f] = cupy.asarray(mapper.category_bins(_host(X[:, f]), j, f))
