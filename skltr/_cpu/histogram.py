r"""numba kernels of gradient histograms: build one node's histogram, subtract two.

Layout
======

One node's histogram is a C-contiguous array ``hist[n_features, n_bins_total, 3]`` with
``n_bins_total = max_bins + 1`` (the last bin is the missing bin), flattened as below. Each bin
is one 24-byte record ``(sum_grad, sum_hess, count)`` so that one row touches one record
(mostly one cache line) per feature::

    feature 0                              feature 1
    | bin 0     | bin 1     | ... | miss  | bin 0     | ...
    | g  h  c   | g  h  c   | ... | g h c | g  h  c   | ...
      ^ hist.ravel()[(f * n_bins_total + b) * 3 + k]

    float mode:     g, h float64; c float64 (an integer, exact up to 2**53 rows)
    quantised mode: g, h, c int64 (sums of int32 quantised gradients: exact in any order)

Building is row-wise: the node's row indices ``rows[start:end]`` are cut into ``n_chunks``
contiguous chunks, one per thread; a thread walks its rows and, for each row, all features of
that row (``X_binned`` is C order, so a row's bins are one contiguous run of bytes)::

    rows[start:end]   | chunk 0       | chunk 1       |     (prange over chunks)
                          |                 |
                          v                 v
                       out (chunk 0)     scratch[0]         per-thread histograms
                          \________ + _____/
                                   v
                                  out                       reduction, parallel over bins

Chunk 0 accumulates straight into ``out``; the other chunks use ``scratch``, which the caller
owns (a pool: allocating and zeroing ~0.8 MB per node would cost more than small nodes do).
The gradients of a node are read through ``rows`` as the rows are walked: row-wise building
reads each gradient once per row, so LightGBM's "ordered gradients" gather (which pays off
when every feature re-reads the node's gradients column by column) would add a pass without
saving one.

Why row-wise: a row's 136 bytes of bins are one or two cache lines, read once; column-wise
building (a thread per feature) reads each row's gradient once per feature and, for a node's
scattered rows, one cache line of the binned matrix per (row, feature).

Measurements (Intel Xeon, 2 threads, 500k x 136, 255 bins; ``benchmarks/grow_cpu.py``) are
recorded at the end of this docstring.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _accumulate(Xf, n_features, grad, hess, rows, lo, hi, use_rows, f_lo, f_hi, h, row_stride3):
    # Rows lo:hi (through ``rows`` when use_rows), features f_lo:f_hi, into the flat histogram
    # h. Indices are unsigned: numba then emits no negative-index wraparound fix-up.
    F = np.uint64(n_features)
    stride = np.uint64(row_stride3)
    for i in range(lo, hi):
        r = np.uint64(rows[i]) if use_rows else np.uint64(i)
        g = grad[r]
        hs = hess[r]
        base = r * F
        off = np.uint64(f_lo) * stride
        for f in range(f_lo, f_hi):
            idx = off + np.uint64(Xf[base + np.uint64(f)]) * np.uint64(3)
            h[idx] += g
            h[idx + np.uint64(1)] += hs
            h[idx + np.uint64(2)] += 1
            off += stride


@njit(cache=True)
def build_histogram_serial(X_binned, grad, hess, rows, start, end, use_rows, out):
    """One thread: the histogram of ``rows[start:end]`` (or rows ``start:end``) into ``out``.

    For small nodes, where a parallel region would cost more than it saves. Same arguments as
    :func:`build_histogram`.
    """
    flat = out.reshape(-1)
    flat[:] = 0
    n_features = X_binned.shape[1]
    _accumulate(X_binned.reshape(-1), n_features, grad, hess, rows, start, end, use_rows, 0,
                n_features, flat, out.shape[1] * 3)


@njit(parallel=True, cache=True)
def build_histogram(X_binned, grad, hess, rows, start, end, use_rows, out, scratch,
                    n_row_chunks, n_feature_blocks):
    """Histogram of the rows ``rows[start:end]`` (or of rows ``start:end`` without ``rows``).

    Work is split into ``n_row_chunks x n_feature_blocks`` tasks, one per thread (see the
    module docstring); with one row chunk there is no reduction and the float result does
    not depend on the number of feature blocks.

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_samples, n_features), C order
    grad, hess : ndarray of float32 (float mode) or int32 (quantised mode), shape (n_samples,)
    rows : ndarray of uint32
        Row indices; the node owns ``rows[start:end]``. Ignored when ``use_rows`` is False.
    start, end : int
    use_rows : bool
        False: the node is rows ``start:end`` of ``X_binned`` themselves (the root).
    out : ndarray of float64 or int64, shape (n_features, n_bins_total, 3)
        Overwritten with the node's histogram.
    scratch : ndarray of out's dtype, shape (>= n_row_chunks - 1, out.size)
        Histograms of row chunks 1.. (chunk 0 writes into ``out``).
    n_row_chunks, n_feature_blocks : int
        The float result depends on ``n_row_chunks`` (summation order), the quantised one
        does not.
    """
    n_features = X_binned.shape[1]
    row_stride3 = out.shape[1] * 3
    flat = out.reshape(-1)
    Xf = X_binned.reshape(-1)
    n = end - start
    per = (n + n_row_chunks - 1) // n_row_chunks
    per_f = (n_features + n_feature_blocks - 1) // n_feature_blocks
    for t in prange(n_row_chunks * n_feature_blocks):
        c = t // n_feature_blocks
        f_lo = (t % n_feature_blocks) * per_f
        f_hi = min(f_lo + per_f, n_features)
        h = flat if c == 0 else scratch[c - 1]
        h[f_lo * row_stride3:f_hi * row_stride3] = 0
        lo = start + c * per
        hi = min(lo + per, end)
        _accumulate(Xf, n_features, grad, hess, rows, lo, hi, use_rows, f_lo, f_hi, h,
                    row_stride3)
    if n_row_chunks > 1:
        # Reduction in chunk order (deterministic for a given n_row_chunks), parallel over bins.
        size = flat.size
        n_red = 16
        per_red = (size + n_red - 1) // n_red
        for c in prange(n_red):
            lo = c * per_red
            hi = min(lo + per_red, size)
            for k in range(1, n_row_chunks):
                s = scratch[k - 1]
                for j in range(lo, hi):
                    flat[j] += s[j]


@njit(cache=True)
def subtract_histograms(parent, child, out):
    """``out = parent - child``: the sibling's histogram (the subtraction trick).

    ``out`` may be ``parent`` itself (the grower reuses the parent's buffer for the larger
    child). One thread: ~0.8 MB streams in well under a millisecond, less than a parallel
    region's start-up on a busy machine.
    """
    p = parent.reshape(-1)
    c = child.reshape(-1)
    o = out.reshape(-1)
    for j in range(p.size):
        o[j] = p[j] - c[j]
