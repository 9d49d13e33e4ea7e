"""GPU binning: raw float values -> uint8 bin codes, with the host ``BinMapper``'s cuts.

Same rule as :func:`skltr._cpu.binning.map_to_bins`: ``x`` goes to the first bin ``b`` with
``x <= cut_values[cut_ptr[f] + b]`` (binary search; the last bin is unbounded) and NaN to
``missing_bin``. The output rows are padded to a multiple of 4 features (pad bytes are 0) so
that a row is a whole number of 32-bit words: the histogram kernel reads 4 bins per load
(Zhang, Si & Hsieh, "GPU-acceleration for Large-scale Tree Boosting", 2017)::

    row i   | f0 f1 f2 f3 | f4 f5 f6 f7 | ... | f132 f133 f134 f135 |   uint8, C order
            |  word 0     |  word 1     |     |  word 33            |   read as uint32
"""

from __future__ import annotations

import cupy
import numpy as np

from . import _config
from ._compile import blocks, module

_SOURCE = r"""
extern "C" __global__ void map_to_bins(const double* X, long long n, int n_features,
                                        const long long* cut_ptr, const double* cuts,
                                        int missing_bin, u8* out, int out_stride,
                                        int* has_missing) {
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n * out_stride) return;
    long long i = k / out_stride;
    int f = (int)(k - i * out_stride);
    if (f >= n_features) { out[k] = 0; return; }   // padding byte of the last word
    double x = X[i * n_features + f];
    if (x != x) { out[k] = (u8)missing_bin; has_missing[f] = 1; return; }  // benign race
    long long lo = cut_ptr[f], hi = cut_ptr[f + 1], start = lo;
    while (lo < hi) {                  // first cut with x <= cut
        long long mid = (lo + hi) >> 1;
        if (x <= cuts[mid]) hi = mid; else lo = mid + 1;
    }
    out[k] = (u8)(lo - start);
}
"""


@cupy.memoize(for_each_device=True)
def _kernel():
    return module(_SOURCE).get_function("map_to_bins")


def padded_features(n_features: int) -> int:
    """Row length of the binned matrix on the GPU: ``n_features`` rounded up to 4."""
    return max(4, -(-int(n_features) // 4) * 4)


def map_to_bins(X, cut_ptr, cut_values, missing_bin, has_missing=None):
    """Bin codes of ``X`` on the current GPU, rows padded to :func:`padded_features`.

    Parameters
    ----------
    X : ndarray or cupy.ndarray of float, shape (n_samples, n_features)
        Host arrays are sent to the GPU in chunks of ``_config.BIN_CHUNK_ROWS`` rows.
    cut_ptr : ndarray of int64, shape (n_features + 1,)
    cut_values : ndarray of float64
    missing_bin : int
    has_missing : cupy.ndarray of int32, shape (n_features,), optional
        Set to 1 for every feature with a NaN (left as is otherwise).

    Returns
    -------
    cupy.ndarray of uint8, shape (n_samples, padded_features(n_features)), C order
    """
    n, n_features = X.shape
    stride = padded_features(n_features)
    out = cupy.empty((n, stride), dtype=cupy.uint8)
    ptr = cupy.asarray(np.ascontiguousarray(cut_ptr, dtype=np.int64))
    cuts = cupy.asarray(np.ascontiguousarray(cut_values, dtype=np.float64))
    if cuts.size == 0:
        cuts = cupy.zeros(1, cupy.float64)  # a valid pointer; never read
    if has_missing is None:
        has_missing = cupy.zeros(max(n_features, 1), cupy.int32)
    kern = _kernel()
    step = max(1, int(_config.BIN_CHUNK_ROWS))
    threads = _config.ELEMENTWISE_THREADS
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        chunk = cupy.ascontiguousarray(cupy.asarray(X[lo:hi]), dtype=cupy.float64)
        m = (hi - lo) * stride
        kern((blocks(m, threads),), (threads,),
             (chunk, np.int64(hi - lo), np.int32(n_features), ptr, cuts,
              np.int32(missing_bin), out[lo:hi], np.int32(stride), has_missing))
    return out


def fit_bin_mapper(X, max_bins, random_state, n_threads=None):
    """``BinMapper(max_bins, random_state=...).fit(X)`` without the host ``has_missing`` pass.

    The host ``BinMapper``'s own cut search (same row sample, same numba kernel parallel over
    features, ``n_threads`` of them; so the cuts are identical, ``tests/test_gbdt_gpu.py``
    checks it); ``has_missing`` is left for :func:`map_to_bins` to find on the GPU
    (``mapper.has_missing`` is set by the caller).
    """
    from .._gbdt.binning import BinMapper

    mapper = BinMapper(max_bins=max_bins, random_state=random_state, n_threads=n_threads)
    mapper._fit_cuts(X)
    return mapper
