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

    host   rows = BinMapper._sample_rows(n)          same draw as the CPU (seeded)
    GPU    keys[f, j] = orderable bits of X[rows[j], f]   (gather + transpose, one launch;
                                                     NaN -> the largest key, so it sorts last)
           sort keys[f] for every f (radix sort of unsigned ints) -> sorted values, X's dtype
    host   BinMapper._set_cuts(sorted columns)       the CPU's numba find_cuts: same cuts

X is read in its own dtype (float32 or float64) on the device: a float32 value widened to
double compares with a float64 cut exactly as on the CPU.
"""

from __future__ import annotations

import cupy
import numpy as np

from . import _config
from ._compile import blocks, module

_SOURCE = r"""
// ---- bin codes --------------------------------------------------------------------------
#define MAP_TO_BINS(NAME, T)                                                                  \
extern "C" __global__ void NAME(const T* X, long long n, int n_features,                     \
                                const long long* cut_ptr, const double* cuts,                \
                                int missing_bin, u8* out, int out_stride,                    \
                                int* has_missing) {                                          \
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;                          \
    if (k >= n * out_stride) return;                                                         \
    long long i = k / out_stride;                                                            \
    int f = (int)(k - i * out_stride);                                                       \
    if (f >= n_features) { out[k] = 0; return; }   /* padding byte of the last word */       \
    double x = (double)X[i * n_features + f];                                                \
    if (x != x) { out[k] = (u8)missing_bin; has_missing[f] = 1; return; }  /* benign race */ \
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
"""

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_KEY_DTYPE = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


@cupy.memoize(for_each_device=True)
def _module():
    return module(_SOURCE)


def _kernel(name, dtype):
    return _module().get_function(f"{name}_{_SUFFIX[np.dtype(dtype)]}")


def padded_features(n_features: int) -> int:
    """Row length of the binned matrix on the GPU: ``n_features`` rounded up to 4."""
    return max(4, -(-int(n_features) // 4) * 4)


def _float_host(X):
    # host X as the BinMapper reads it: float32 and float64 kept, anything else float64
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


def to_device(X):
    """``X`` whole on the current GPU in its own float dtype, or None when it is too large.

    A host ``X`` is copied when its bytes are at most ``_config.BIN_RESIDENT_FRACTION`` of
    the GPU's free memory: the cut sample is then gathered on the device and ``X`` crosses
    the bus once. None tells the caller to let :func:`fit_bin_mapper` and
    :func:`map_to_bins` read the host array (host gather of the sample, rows streamed in
    chunks of ``_config.BIN_CHUNK_ROWS``). CuPy arrays are returned as they are (float
    dtype, C order).
    """
    if isinstance(X, cupy.ndarray):
        return _float_device(X)
    X = _float_host(X)
    free, _ = cupy.cuda.runtime.memGetInfo()
    if X.nbytes > _config.BIN_RESIDENT_FRACTION * free:
        return None
    return cupy.asarray(X)


def map_to_bins(X, cut_ptr, cut_values, missing_bin, has_missing=None):
    """Bin codes of ``X`` on the current GPU, rows padded to :func:`padded_features`.

    Parameters
    ----------
    X : ndarray or cupy.ndarray of float, shape (n_samples, n_features)
        float32 and float64 are read as they are (others are converted to float64). Host
        arrays are sent to the GPU in chunks of ``_config.BIN_CHUNK_ROWS`` rows; a CuPy array
        is binned in one launch.
    cut_ptr : ndarray of int64, shape (n_features + 1,)
    cut_values : ndarray of float64
    missing_bin : int
    has_missing : cupy.ndarray of int32, shape (n_features,), optional
        Set to 1 for every feature with a NaN (left as is otherwise).

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
    kern = _kernel("map_to_bins", X.dtype)
    threads = _config.ELEMENTWISE_THREADS
    step = n if isinstance(X, cupy.ndarray) else max(1, int(_config.BIN_CHUNK_ROWS))
    for lo in range(0, n, max(step, 1)):
        hi = min(n, lo + step)
        chunk = X[lo:hi] if isinstance(X, cupy.ndarray) else cupy.asarray(X[lo:hi])
        m = (hi - lo) * stride
        kern((blocks(m, threads),), (threads,),
             (chunk, np.int64(hi - lo), np.int32(n_features), ptr, cuts,
              np.int32(missing_bin), out[lo:hi], np.int32(stride), has_missing))
    return out


def sorted_sample_columns(X, rows=None):
    """The cut sample sorted per feature on the GPU: ``np.sort(X[rows].T, axis=1)``.

    Parameters
    ----------
    X : ndarray or cupy.ndarray of float32 or float64, shape (n_samples, n_features)
        A host array has its sample rows gathered on the host first (one upload of the
        sample); a CuPy array is gathered on the device.
    rows : ndarray of int64 or None
        Sample rows; None takes every row.

    Returns
    -------
    cupy.ndarray, shape (n_features, n_rows), X's dtype
        Each row one feature's values in ascending order, NaN last (as ``np.sort``; -0.0
        before +0.0, which ``np.sort`` may order either way: they compare equal, so cuts and
        bins do not depend on it).
    """
    on_device = isinstance(X, cupy.ndarray)
    if not on_device and rows is not None:
        X, rows = X[rows], None  # host gather: only the sample crosses the bus
    Xd = _float_device(cupy.asarray(X))
    m = Xd.shape[0] if rows is None else len(rows)
    n_features = Xd.shape[1]
    keys = cupy.empty((n_features, m), dtype=_KEY_DTYPE[Xd.dtype])
    rows_d = (cupy.zeros(1, cupy.int64) if rows is None
              else cupy.asarray(np.ascontiguousarray(rows, dtype=np.int64)))
    threads = _config.ELEMENTWISE_THREADS
    total = m * n_features
    if total:
        _kernel("sample_keys", Xd.dtype)(
            (blocks(total, threads),), (threads,),
            (Xd, np.int32(n_features), rows_d, np.int32(rows is not None), np.int64(m), keys))
    for f in range(n_features):
        keys[f].sort()  # radix sort of one feature's unsigned keys
    values = cupy.empty((n_features, m), dtype=Xd.dtype)
    if total:
        _kernel("keys_to_values", Xd.dtype)((blocks(total, threads),), (threads,),
                                            (keys, np.int64(total), values))
    return values


def fit_bin_mapper(X, max_bins, random_state, n_threads=None):
    """``BinMapper(max_bins, random_state=...).fit(X)``, its sample sorted on the GPU.

    The host ``BinMapper``'s row sample (same seeded draw) and cut rule (its numba
    ``find_cuts``, ``n_threads`` threads, on the sorted sample copied back), so the cuts are
    identical to the CPU's (``tests/test_gbdt_gpu.py`` checks it); the gather, transpose and
    sort of the sample run on the GPU (:func:`sorted_sample_columns`). ``has_missing`` is
    left for :func:`map_to_bins` to find (``mapper.has_missing`` is set by the caller).

    Parameters
    ----------
    X : ndarray or cupy.ndarray, shape (n_samples, n_features)
        A CuPy array (e.g. from :func:`to_device`) has its sample gathered on the device.
    """
    from .._gbdt.binning import BinMapper

    mapper = BinMapper(max_bins=max_bins, random_state=random_state, n_threads=n_threads)
    mapper._check_max_bins()
    X = _float_device(X) if isinstance(X, cupy.ndarray) else _float_host(X)
    rows = mapper._sample_rows(mapper._check_n_rows(X.shape[0]))
    mapper._set_cuts(sorted_sample_columns(X, rows).get())
    return mapper
