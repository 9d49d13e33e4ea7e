"""numba kernels of the wide categorical features' histograms (more categories than bins).

A categorical feature with more categories than ``max_bins`` (``BinMapper.wide``) is coded in
a second matrix, ``uint16`` per row (``BinMapper.transform_wide``), and its histogram takes
extra rows of the node's histogram array, after the features' rows
(:class:`skltr._engine.wide_categorical.WideCategorical`)::

    hist[n_features + r, b, k]   rows of wide feature w: r in row0[w] - n_features + (0 ..),
                                 its code c at record offsets[w] + c

so that the pool, the subtraction trick and the distributed all-reduce carry them with the
rest. A row adds one record per wide feature: one update, as one byte feature's.

Float histograms are built on one thread (the sums in row order: the model does not depend on
the thread count); integer ones (the quantised modes, exact in any order) in row chunks, each
in its own scratch, then summed.
"""

import numpy as np
from numba import njit, prange

from ._intrinsics import ctz64


@njit(cache=True, inline="always")
def wide_chunks(n_threads, n_rows, n_wide, out_bytes, update_bytes, region_bytes):
    """Row chunks of a node's wide histogram (1: one thread). A chunk's copy (``out_bytes``)
    is zeroed and summed whatever its rows, and a parallel region's start costs about
    ``region_bytes`` of that work: the chunks that minimise ``rows / chunks`` updates (each
    ``update_bytes``) plus the copies, and more than one only when that beats one thread
    with the region's start counted (a small node's wide rows were a region a split)."""
    serial = update_bytes * n_rows * n_wide
    k = min(n_threads, int(np.sqrt(serial / out_bytes)))
    if k < 2 or serial / k + k * out_bytes + region_bytes >= serial:
        return 1
    return k


@njit(cache=True, inline="always")
def _accumulate_wide(X_wide, grad, hess, rows, lo, hi, use_rows, out, offsets, n_channels,
                     w_lo=0, w_hi=-1):
    # wide features w_lo .. w_hi - 1 (w_hi -1: all)
    w_hi = X_wide.shape[1] if w_hi < 0 else w_hi
    for i in range(lo, hi):
        r = rows[i] if use_rows else i
        g = grad[r]
        hs = hess[r]
        for w in range(w_lo, w_hi):
            idx = (offsets[w] + np.int64(X_wide[r, w])) * n_channels
            out[idx] += g
            if n_channels > 1:
                out[idx + 1] += hs
            if n_channels == 3:
                out[idx + 2] += 1


@njit(cache=True)
def build_wide_histogram_serial(X_wide, grad, hess, rows, start, end, use_rows, out, offsets):
    """One thread: the wide rows ``out`` (``hist[n_features:]``) of ``rows[start:end]`` (or
    rows ``start:end``), overwritten.

    Parameters
    ----------
    X_wide : ndarray of uint16, shape (n_samples, n_wide), C order
    grad, hess, rows, start, end, use_rows
        As :func:`skltr._cpu.histogram.build_histogram`.
    out : ndarray, shape (n_wide_rows, n_bins_total, n_channels), C order
        The node histogram's rows after its features' rows.
    offsets : ndarray of int64, shape (n_wide,)
        Record (bin) index in ``out`` of each wide feature's code 0, counting records of
        ``n_channels`` values.
    """
    flat = out.reshape(-1)
    flat[:] = 0
    _accumulate_wide(X_wide, grad, hess, rows, start, end, use_rows, flat, offsets,
                     out.shape[2])


@njit(cache=True, inline="always")
def build_wide_feature(X_wide, grad, hess, rows, start, end, hist, n_features, offsets, w,
                       n_codes, present, update_bytes):
    """One thread: wide feature ``w``'s records of ``hist`` (the node's whole histogram)
    from ``rows[start:end]``, and in ``present`` the codes those rows hold (bit ``c % 64``
    of word ``c // 64``: code ``c``, the missing one included): a task of a parallel region
    (``skltr._cpu.split_children.build_child_splits``). The sums are the whole build's (row
    order). A small node holds a few hundred of a wide feature's thousands of codes, and
    zeroing, subtracting and scanning them all was most of its split search on 8-16
    threads: the records of its codes only are zeroed (a pass over the rows) where that
    is less work than zeroing all ``n_codes`` (``update_bytes``: the bytes zeroed in a
    row's time, :func:`wide_chunks`'); the others then keep whatever they held, and no
    reader looks at them (``present`` says which to read)."""
    n_ch = hist.shape[2]
    flat = hist.reshape(-1)[n_features * hist.shape[1] * n_ch:]
    base = offsets[w]
    present[:] = 0
    whole = n_codes * n_ch * hist.itemsize <= update_bytes * (end - start)
    if whole:
        for j in range(base * n_ch, (base + n_codes) * n_ch):
            flat[j] = 0
        for i in range(start, end):  # (a loop of its own: a test a row cost 40%)
            code = np.int64(X_wide[rows[i], w])
            present[code >> 6] |= np.uint64(1) << np.uint64(code & 63)
    else:
        for i in range(start, end):
            code = np.int64(X_wide[rows[i], w])
            present[code >> 6] |= np.uint64(1) << np.uint64(code & 63)
            idx = (base + code) * n_ch
            flat[idx] = 0  # (apart from the loop: a loop a row of n_ch steps: twice as long)
            for k in range(1, n_ch):
                flat[idx + k] = 0
    _accumulate_wide(X_wide, grad, hess, rows, start, end, True, flat, offsets, n_ch, w,
                     w + 1)


@njit(cache=True, inline="always")
def all_codes(present, n_codes):
    """``present`` (a wide feature's code words, :func:`build_wide_feature`) holding every
    code below ``n_codes``: its records built whole."""
    for i in range(present.size):
        present[i] = _code_word(i, n_codes)


@njit(cache=True, inline="always")
def _code_word(i, n_codes):
    # word i of the codes below n_codes
    lo = i * 64
    if lo + 64 <= n_codes:
        return ~np.uint64(0)
    if lo >= n_codes:
        return np.uint64(0)
    return (np.uint64(1) << np.uint64(n_codes - lo)) - np.uint64(1)


@njit(cache=True)
def whole_codes(hist, n_features, offsets, n_codes, present):
    """Zero the records of the codes outside each wide feature's ``present`` words
    (``present[w]``; :func:`build_wide_feature`), which then hold every code: the wide rows
    of ``hist`` made whole, for a reader of every record (a full subtraction). A word
    at a time: rows built whole (every code) cost a test a word."""
    n_ch = hist.shape[2]
    flat = hist.reshape(-1)[n_features * hist.shape[1] * n_ch:]
    for w in range(offsets.size):
        words = present[w]
        for i in range(words.size):
            full = _code_word(i, n_codes[w])
            absent = full & ~words[i]
            while absent != 0:
                at = (offsets[w] + i * 64 + np.int64(ctz64(absent))) * n_ch
                absent &= absent - np.uint64(1)
                for k in range(n_ch):
                    flat[at + k] = 0
            words[i] = full


@njit(cache=True, inline="always")
def subtract_codes(parent, child, child_codes, parent_codes):
    """``parent -= child`` at the codes of ``child_codes`` only (both: a wide feature's rows
    as one long row, shape ``(1, n, n_channels)``), which join ``parent_codes``: the larger
    child by subtraction from its parent where the smaller one has rows
    (:func:`build_wide_feature`), elsewhere the parent's own records. (A scan drops a code
    whose record is all zeros, which rows can sum to; the smaller child's rows of it may
    not, and the difference is then the larger child's record to read.)"""
    n_ch = parent.shape[2]
    p = parent.reshape(-1)
    q = child.reshape(-1)
    for i in range(child_codes.size):
        word = child_codes[i]
        parent_codes[i] |= word
        while word != 0:
            at = (i * 64 + np.int64(ctz64(word))) * n_ch
            word &= word - np.uint64(1)
            for k in range(n_ch):
                p[at + k] = p[at + k] - q[at + k]


@njit(parallel=True, cache=True)
def build_wide_histogram(X_wide, grad, hess, rows, start, end, use_rows, out, offsets,
                         scratch, n_chunks):
    """:func:`build_wide_histogram_serial` in ``n_chunks`` row chunks (integer histograms:
    the sum does not depend on the chunks); ``scratch`` (>= n_chunks - 1, out.size) holds
    chunks 1.., summed into ``out`` in parallel over its records."""
    flat = out.reshape(-1)
    size = flat.size
    n = end - start
    per = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        h = flat if c == 0 else scratch[c - 1]
        for j in range(size):  # a loop: a slice fill is a parfor to compile
            h[j] = 0
        lo = start + c * per
        hi = min(lo + per, end)
        _accumulate_wide(X_wide, grad, hess, rows, lo, hi, use_rows, h, offsets,
                         out.shape[2])
    n_red = 16
    per_red = (size + n_red - 1) // n_red
    for t in prange(n_red):
        lo = t * per_red
        hi = min(lo + per_red, size)
        for k in range(1, n_chunks):
            s = scratch[k - 1]
            for j in range(lo, hi):
                flat[j] += s[j]
