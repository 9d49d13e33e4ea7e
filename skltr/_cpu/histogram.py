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

The quantised mode packs the hessian and the count into one int64 and has 16-byte records
(2 channels; integer sums are exact in any order)::

    | g: sum of int32 q_g  | p: sum of (1 << K) + q_h | ...   count = p >> K
                                                             hess  = p & ((1 << K) - 1)

with ``K = 63 - bits(n_rows)`` and ``q_h <= 2**(K-1) / n_rows``, so neither field can carry
into the other (hessians must be >= 0). One fewer read-modify-write per (row, feature):
measured 1.51 ns instead of 2.07 per update on the root of 494k x 136 (one thread).

With hessian-estimated counts (the estimator's default) the count is not needed, and the
quantised mode packs the gradient and the hessian into one int64 -- 8-byte records, one
read-modify-write per (row, feature)::

    | w: sum of q_g * 2**32 + q_h | ...       g = w >> 32 (arithmetic), h = w & (2**32 - 1)

with ``|q_g| <= 2**31 / (n_rows + 1)`` and ``0 <= q_h <= 2**32 / (n_rows + 1)``, so that no
sum carries between the fields (``skltr._gbdt.quantisation`` picks the scales). The kernels take
the packed words as ``grad`` and ignore ``hess``. The three layouts are named in
``skltr._engine.histogram`` (``FLOAT``, ``TWO_WORD``, ``ONE_WORD``).

Building is row-wise: a task walks the node's rows ``rows[start:end]`` (increasing row ids)
and, for each row, the bytes of its features (``X_binned`` is C order, so they are one
contiguous run). Threads split the work into ``n_row_chunks x n_feature_blocks`` tasks
(``skltr._engine.histogram.histogram_tasks`` picks them)::

    X_binned rows of the node        feature block 0     feature block 1
                                     (features 0..67)    (features 68..135)
    rows[start:end]  chunk 0   -->   task 0 -> out       task 1 -> out          one region,
                     chunk 1   -->   task 2 -> scr[0]    task 3 -> scr[0]       prange(tasks)
                                            \____ out += scr[k] ____/           reduction (only
                                                                                with > 1 chunk)

Feature blocks come first: on 2 threads each thread owns half of the features for all rows,
so its histogram (~0.4 MB) stays in L2, nothing needs reducing, and the float sums do not
depend on the number of threads. Row chunks (per-thread copies in ``scratch``, summed in chunk
order) are used only when there are more threads than blocks of >= 16 features; the grower
defers their reduction (``reduce=False``) to its split search's region (``reduce_feature``).
The caller owns ``scratch`` and the node histograms (a pool): allocating and first-touching
~0.8 MB per node costs more than a small node's histogram. Small nodes use
``build_histogram_serial``: a parallel region costs ~10 us on an idle machine and
milliseconds on a busy one.

A narrow feature block (at most ``COLUMN_BLOCK_FEATURES``: a small node's block in the split
search's region on 8 or more threads) reads the binned columns ``X_binned_T`` instead, two
features a pass (:func:`accumulate_columns`): a block of two features read the cache line of
every row of the node for two of its bytes, and each of 16 threads did so.

Gradients are read through ``rows`` as the rows are walked: row-wise building reads each
gradient once per row, so LightGBM's "ordered gradients" gather (which pays off when every
feature re-reads the node's gradients) would add a pass without saving one.

Why row-wise, why these record sizes and the padding: the measurements are in
``docs/gbdt_internals.rst`` ("Histogram kernel measurements").
"""

import numpy as np
from numba import njit, prange

from ._intrinsics import prefetch


@njit(cache=True, inline="always")
def _accumulate(Xf, n_features, grad, hess, rows, lo, hi, use_rows, f_lo, f_hi, h,
                feature_stride, n_channels):
    # Rows lo:hi (through ``rows`` when use_rows), features f_lo:f_hi, into the flat histogram
    # h. Indices are unsigned: numba then emits no negative-index wraparound fix-up.
    # n_channels 3: (g, h, count); 2: (g, packed hess and count); 1: g and h packed in one
    # int64 passed as ``grad`` (``hess`` is not read), see the module docstring.
    F = np.uint64(n_features)
    stride = np.uint64(feature_stride)
    ch = np.uint64(n_channels)
    for i in range(lo, hi):
        r = np.uint64(rows[i]) if use_rows else np.uint64(i)
        if use_rows and i + 8 < hi:
            # A node's rows are scattered: prefetch the row 8 ahead (its <= 3 cache lines
            # of bins, its gradients) so that its memory latency overlaps this row's work
            # (measured 20-28% faster on nodes of 1/8 to 1/64 of the rows).
            rn = np.uint64(rows[i + 8])
            bn = rn * F
            prefetch(Xf, bn)
            prefetch(Xf, bn + min(np.uint64(64), F - np.uint64(1)))
            prefetch(Xf, bn + F - np.uint64(1))
            prefetch(grad, rn)
            prefetch(hess, rn)
        g = grad[r]
        hs = hess[r]
        base = r * F
        off = np.uint64(f_lo) * stride
        for f in range(f_lo, f_hi):
            _add(h, off + np.uint64(Xf[base + np.uint64(f)]) * ch, g, hs, n_channels)
            off += stride


#: Feature blocks of at most this many features read columns (:func:`accumulate_columns`):
#: one thread, a block of a node of 1,500 rows of 24,000 (31 features): 2 features 3.70 ->
#: 1.75 us, 4 features 4.85 -> 3.81 us, 16 features 11.9 -> 14.9 us (2-core Xeon, by hand)
COLUMN_BLOCK_FEATURES = 4


@njit(cache=True, inline="always")
def accumulate_columns(X_T, grad, hess, rows, lo, hi, f_lo, f_hi, h, feature_stride,
                       n_channels):
    """:func:`_accumulate` of ``rows[lo:hi]`` and features ``f_lo:f_hi`` from the columns
    ``X_T`` (``(n_features, n_samples)``, C order), two features a pass over the rows: the
    same sums, each bin's in row order."""
    f = f_lo
    while f < f_hi:
        pair = f + 1 < f_hi
        col0 = X_T[f]
        col1 = X_T[f + 1] if pair else X_T[f]
        off0 = np.uint64(f) * np.uint64(feature_stride)
        off1 = off0 + np.uint64(feature_stride)
        if pair:
            for i in range(lo, hi):
                r = np.uint64(rows[i])
                _add(h, off0 + np.uint64(col0[r]) * np.uint64(n_channels), grad[r], hess[r],
                     n_channels)
                _add(h, off1 + np.uint64(col1[r]) * np.uint64(n_channels), grad[r], hess[r],
                     n_channels)
        else:
            for i in range(lo, hi):
                r = np.uint64(rows[i])
                _add(h, off0 + np.uint64(col0[r]) * np.uint64(n_channels), grad[r], hess[r],
                     n_channels)
        f += 2


@njit(cache=True, inline="always")
def _add(h, idx, g, hs, n_channels):
    # one row's update of its record (uint64 index), by rows or by columns
    h[idx] += g
    if n_channels > 1:
        h[idx + np.uint64(1)] += hs
    if n_channels == 3:
        h[idx + np.uint64(2)] += 1


@njit(cache=True)
def integer_task_split(n_threads, n_features, n_rows, min_chunk_rows):
    """``(n_row_chunks, n_feature_blocks)`` of one node's parallel histogram in an integer
    layout: the rule of ``skltr._engine.histogram.integer_histogram_tasks``, which calls it
    with its module's constant; numba code (the whole-tree grower) calls it directly. Row
    chunks first: each thread reads whole rows once, where a feature block reads every
    row's cache line for a part of it; as many as keep ``min_chunk_rows`` rows each, the
    threads left over as feature blocks."""
    chunks = max(1, min(n_threads, n_rows // min_chunk_rows))
    return chunks, max(1, min(n_features, n_threads // chunks))


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
                n_features, flat, out.shape[1] * out.shape[2], out.shape[2])


@njit(parallel=True, cache=True)
def build_histogram(X_binned, grad, hess, rows, start, end, use_rows, out, scratch,
                    n_row_chunks, n_feature_blocks, reduce=True):
    """Histogram of the rows ``rows[start:end]`` (or of rows ``start:end`` without ``rows``).

    Work is split into ``n_row_chunks x n_feature_blocks`` tasks, one per thread (see the
    module docstring); with one row chunk there is no reduction and the float result does
    not depend on the number of feature blocks.

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_samples, n_features), C order
    grad, hess : ndarray, shape (n_samples,)
        float32 (float mode); int32 and int64 (quantised mode: ``hess`` holds packed hessian
        and count, ``out`` has 2 channels).
    rows : ndarray of uint32
        Row indices; the node owns ``rows[start:end]``. Ignored when ``use_rows`` is False.
    start, end : int
    use_rows : bool
        False: the node is rows ``start:end`` of ``X_binned`` themselves (the root).
    out : ndarray of float64 or int64, shape (n_features, n_bins_total, 3 or 2)
        Overwritten with the node's histogram: 3 channels ``(g, h, count)``, or 2 channels
        ``(g, packed)`` in which case every row counts through ``hess`` alone.
    scratch : ndarray of out's dtype, shape (>= n_row_chunks - 1, out.size)
        Histograms of row chunks 1.. (chunk 0 writes into ``out``).
    n_row_chunks, n_feature_blocks : int
        The float result depends on ``n_row_chunks`` (summation order), the quantised one
        does not.
    reduce : bool
        False: leave the row chunks 1.. in ``scratch``; the caller adds them feature by
        feature with :func:`reduce_feature` (the grower does it in its split search's
        region, saving this kernel's second region).
    """
    n_features = X_binned.shape[1]
    row_stride3 = out.shape[1] * out.shape[2]
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
        for j in range(f_lo * row_stride3, f_hi * row_stride3):  # a loop: a slice fill
            h[j] = 0                                              # is a parfor to compile
        lo = start + c * per
        hi = min(lo + per, end)
        _accumulate(Xf, n_features, grad, hess, rows, lo, hi, use_rows, f_lo, f_hi, h,
                    row_stride3, out.shape[2])
    if reduce and n_row_chunks > 1:
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


@njit(cache=True, inline="always")
def _used_ranges(n_bins, missing_bin, n_bins_total, n_channels, f):
    # flat [lo, hi) of feature f's bins 0..n_bins[f]-1, and of its missing bin
    lo = f * n_bins_total * n_channels
    m = lo + missing_bin * n_channels
    return lo, lo + n_bins[f] * n_channels, m, m + n_channels


@njit(cache=True)
def build_histogram_used_serial(X_binned, grad, hess, rows, start, end, use_rows, out, n_bins,
                                missing_bin):
    """:func:`build_histogram_serial` that zeroes only the bins a search reads (each
    feature's ``n_bins[f]`` bins and its missing bin: the bins a row can fall in); the others
    keep what they held. For the symmetric level buffers, whose nodes are small and many:
    with few bins a feature, zeroing the whole histogram cost more than summing its rows."""
    flat = out.reshape(-1)
    nbt, ch = out.shape[1], out.shape[2]
    for f in range(out.shape[0]):
        lo, hi, m0, m1 = _used_ranges(n_bins, missing_bin, nbt, ch, f)
        for j in range(lo, hi):
            flat[j] = 0
        for j in range(m0, m1):
            flat[j] = 0
    n_features = X_binned.shape[1]
    _accumulate(X_binned.reshape(-1), n_features, grad, hess, rows, start, end, use_rows, 0,
                n_features, flat, nbt * ch, ch)


@njit(cache=True)
def subtract_used_bins(parent, child, out, n_bins, missing_bin):
    """``out = parent - child`` on the bins a search reads (see
    :func:`build_histogram_used_serial`); the other bins of ``out`` are left as they are."""
    p = parent.reshape(-1)
    c = child.reshape(-1)
    o = out.reshape(-1)
    nbt, ch = parent.shape[1], parent.shape[2]
    for f in range(parent.shape[0]):
        lo, hi, m0, m1 = _used_ranges(n_bins, missing_bin, nbt, ch, f)
        for j in range(lo, hi):
            o[j] = p[j] - c[j]
        for j in range(m0, m1):
            o[j] = p[j] - c[j]


@njit(cache=True, inline="always")
def subtract_rows(parent, child, first, n_rows):
    """``parent[first:first + n_rows] -= child[...]``: rows (a feature, or a wide feature's
    rows) of :func:`subtract_histograms` in place (the fused subtraction and split search of
    ``skltr._cpu.split_children.find_child_splits``). One flat loop over contiguous rows,
    which LLVM vectorises (5.7x the nested loop over bins and channels)."""
    size = parent.shape[1] * parent.shape[2]
    p = parent.reshape(-1)
    c = child.reshape(-1)
    for j in range(first * size, (first + n_rows) * size):
        p[j] = p[j] - c[j]


@njit(cache=True, inline="always")
def reduce_feature(hist, scratch, n_row_chunks, f):
    """``hist[f] += scratch[k - 1][f]`` for ``k = 1 .. n_row_chunks - 1`` in that order: one
    feature of :func:`build_histogram`'s reduction, the same sums in the same order."""
    size = hist.shape[1] * hist.shape[2]
    flat = hist.reshape(-1)
    lo = f * size
    for k in range(1, n_row_chunks):
        s = scratch[k - 1]
        for j in range(lo, lo + size):
            flat[j] += s[j]
