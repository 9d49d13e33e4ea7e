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
def _accumulate_rows(X_binned, grad, hess, rows, lo, hi, h, n_bins_total):
    # h: flat histogram of one thread, (feature, bin, 3)
    n_features = X_binned.shape[1]
    for i in range(lo, hi):
        r = rows[i]
        g = grad[r]
        hs = hess[r]
        for f in range(n_features):
            idx = (f * n_bins_total + X_binned[r, f]) * 3
            h[idx] += g
            h[idx + 1] += hs
            h[idx + 2] += 1


@njit(cache=True, inline="always")
def _accumulate_all(X_binned, grad, hess, lo, hi, h, n_bins_total):
    # The root: every row, in order -- no index indirection.
    n_features = X_binned.shape[1]
    for r in range(lo, hi):
        g = grad[r]
        hs = hess[r]
        for f in range(n_features):
            idx = (f * n_bins_total + X_binned[r, f]) * 3
            h[idx] += g
            h[idx + 1] += hs
            h[idx + 2] += 1


@njit(parallel=True, cache=True)
def build_histogram(X_binned, grad, hess, rows, start, end, use_rows, out, scratch, n_chunks):
    """Histogram of the rows ``rows[start:end]`` (or of rows ``start:end`` without ``rows``).

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
    scratch : ndarray of out's dtype, shape (>= n_chunks - 1, n_features * n_bins_total * 3)
        Per-thread buffers of chunks 1.. (chunk 0 writes into ``out``).
    n_chunks : int
        Number of row chunks (threads); the float result depends on it (summation order),
        the quantised one does not.
    """
    n_bins_total = out.shape[1]
    flat = out.reshape(-1)
    size = flat.size
    n = end - start
    if n_chunks > n // 1024 + 1:  # tiny nodes: fewer chunks, less zeroing and reduction
        n_chunks = n // 1024 + 1
    per = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        h = flat if c == 0 else scratch[c - 1]
        h[:] = 0
        lo = start + c * per
        hi = min(lo + per, end)
        if use_rows:
            _accumulate_rows(X_binned, grad, hess, rows, lo, hi, h, n_bins_total)
        else:
            _accumulate_all(X_binned, grad, hess, lo, hi, h, n_bins_total)
    if n_chunks > 1:
        # Reduction in chunk order (deterministic for a given n_chunks), parallel over bins.
        n_red = 16
        per_red = (size + n_red - 1) // n_red
        for c in prange(n_red):
            lo = c * per_red
            hi = min(lo + per_red, size)
            for k in range(1, n_chunks):
                s = scratch[k - 1]
                for j in range(lo, hi):
                    flat[j] += s[j]


@njit(parallel=True, cache=True)
def subtract_histograms(parent, child, out):
    """``out = parent - child``: the sibling's histogram (the subtraction trick).

    ``out`` may be ``parent`` itself (the parent's buffer is reused for the larger child).
    """
    p = parent.reshape(-1)
    c = child.reshape(-1)
    o = out.reshape(-1)
    n_parts = 16
    per = (p.size + n_parts - 1) // n_parts
    for k in prange(n_parts):
        for j in range(k * per, min((k + 1) * per, p.size)):
            o[j] = p[j] - c[j]
