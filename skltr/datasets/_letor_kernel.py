"""The LETOR / SVMlight line parser (numba): the kernel behind :func:`skltr.datasets.load_letor`.

Parsing is one pass of a numba kernel over the raw bytes (no per-line Python), with errors
reported by code and byte offsets so that the wrapper can name the line and the token. Numbers
are converted in the kernel to the correctly rounded double -- the value ``strtod`` and
Python's ``float`` give: Clinger's fast path (significand <= 2**53, decimal exponent within
+-22: one exact multiplication or division) covers short numbers such as ``0.89``, the
Eisel-Lemire algorithm (128-bit products with a table of powers of ten) covers the 17-digit
``repr`` output of :func:`dump_letor`; the rare numbers neither can decide (near-halfway
cases, subnormals, overflow, ``nan``/``inf``) are handed to Python's ``float`` afterwards.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _numba_cache  # noqa: F401 - kernel caches outside the package

# Exact powers of ten: 10**k is exactly representable as a double for k <= 22.
_POW10 = np.array([float(10**k) for k in range(23)], dtype=np.float64)

# Kernel error codes.
(_OK, _BAD_LABEL, _NO_COLON, _BAD_INDEX, _BAD_VALUE, _BAD_QID, _QID_POSITION, _DUPLICATE,
 _MIXED_QID) = range(9)


# --------------------------------------------------------------------------------------------
# numba kernel
# --------------------------------------------------------------------------------------------


@numba.njit(cache=True, inline="always")
def _is_space(c):
    # space, \t, \v, \f, \r (newline is the line separator and handled apart)
    return c == 32 or c == 9 or c == 11 or c == 12 or c == 13


def _pow10_table():
    """128-bit mantissas of 10**e, e in [-348, 347], rounded down (Go's detailedPowersOfTen)."""
    hi = np.empty(_POW10_MAX - _POW10_MIN + 1, dtype=np.uint64)
    lo = np.empty_like(hi)
    for i, e in enumerate(range(_POW10_MIN, _POW10_MAX + 1)):
        if e >= 0:
            v = 10**e
            n = v.bit_length()
            v = v << (128 - n) if n <= 128 else v >> (n - 128)
        else:
            d = 10**-e
            v = (1 << (128 + d.bit_length())) // d
            v >>= v.bit_length() - 128
        hi[i] = v >> 64
        lo[i] = v & 0xFFFFFFFFFFFFFFFF
    return hi, lo


_POW10_MIN, _POW10_MAX = -348, 347
_POW10_HI, _POW10_LO = _pow10_table()


@numba.njit(cache=True, inline="always")
def _mul64(a, b):
    """Full 64 x 64 -> 128-bit product of two uint64, as (hi, lo)."""
    mask = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0 = a & mask
    a1 = a >> s32
    b0 = b & mask
    b1 = b >> s32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> s32) + (p01 & mask) + (p10 & mask)
    lo = (mid << s32) | (p00 & mask)
    hi = p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)
    return hi, lo


@numba.njit(cache=True, inline="always")
def _clz64(x):
    n = 0
    if x >> np.uint64(32) == 0:
        n += 32
        x = x << np.uint64(32)
    if x >> np.uint64(48) == 0:
        n += 16
        x = x << np.uint64(16)
    if x >> np.uint64(56) == 0:
        n += 8
        x = x << np.uint64(8)
    if x >> np.uint64(60) == 0:
        n += 4
        x = x << np.uint64(4)
    if x >> np.uint64(62) == 0:
        n += 2
        x = x << np.uint64(2)
    if x >> np.uint64(63) == 0:
        n += 1
    return n


@numba.njit(cache=True)
def _eisel_lemire(man, exp10, pow_hi, pow_lo):
    """Correctly rounded ``man * 10**exp10`` for a non-zero uint64 ``man`` -> (ok, value).

    The Eisel-Lemire algorithm (D. Lemire, "Number Parsing at a Gigabyte per Second", 2021;
    this follows Go's strconv.eiselLemire64). ok=False for the rare inputs it cannot decide
    (near-halfway cases, subnormal or overflowing results): the caller then asks Python.
    """
    if exp10 < -348 or exp10 > 347:
        return False, 0.0
    clz = _clz64(man)
    man = man << np.uint64(clz)
    ret_exp2 = ((217706 * exp10) >> 16) + 64 + 1023 - clz
    i = exp10 + 348
    x_hi, x_lo = _mul64(man, pow_hi[i])
    low9 = np.uint64(0x1FF)
    one = np.uint64(1)
    if (x_hi & low9) == low9 and x_lo + man < man:
        y_hi, y_lo = _mul64(man, pow_lo[i])
        merged_hi = x_hi
        merged_lo = x_lo + y_hi
        if merged_lo < x_lo:
            merged_hi += one
        if (merged_hi & low9) == low9 and merged_lo + one == np.uint64(0) and y_lo + man < man:
            return False, 0.0
        x_hi = merged_hi
        x_lo = merged_lo
    msb = x_hi >> np.uint64(63)
    mant = x_hi >> (msb + np.uint64(9))
    ret_exp2 -= 1 ^ np.int64(msb)
    if x_lo == np.uint64(0) and (x_hi & low9) == np.uint64(0) and (mant & np.uint64(3)) == one:
        return False, 0.0
    mant += mant & one
    mant = mant >> one
    if (mant >> np.uint64(53)) > np.uint64(0):
        mant = mant >> one
        ret_exp2 += 1
    if ret_exp2 <= 0 or ret_exp2 >= 0x7FF:
        return False, 0.0
    # mant carries the implicit bit: value = mant * 2**(ret_exp2 - 1075), exactly.
    return True, math.ldexp(float(mant), ret_exp2 - 1075)


@numba.njit(cache=True)
def _parse_float(buf, s, e, pow10, pow_hi, pow_lo):
    """Parse buf[s:e] as a float. Returns (status, value): 0 invalid, 1 ok, 2 ask Python.

    The decimal significand is kept exactly up to 19 digits (uint64). Clinger's fast path
    (significand <= 2**53, |exponent| <= 22: one exact operation, one rounding) and
    otherwise Eisel-Lemire give the correctly rounded double; a longer significand is
    resolved when its truncation and truncation + 1 round to the same double.
    """
    if s >= e:
        return 0, 0.0
    for p in range(s, e):
        c = buf[p]
        if not (
            (48 <= c <= 57) or c == 43 or c == 45 or c == 46 or (65 <= c <= 90) or (97 <= c <= 122)
        ):
            return 0, 0.0
    p = s
    neg = False
    c = buf[p]
    if c == 45 or c == 43:
        neg = c == 45
        p += 1
    m = np.uint64(0)
    ten = np.uint64(10)
    nd = 0
    frac = 0
    dropped = 0  # integer-part digits beyond the 19 kept
    trunc = False
    any_digit = False
    dot = False
    while p < e:
        c = buf[p]
        if 48 <= c <= 57:
            any_digit = True
            d = np.uint64(c - 48)
            if nd == 0 and d == np.uint64(0):
                if dot:
                    frac += 1
            elif nd < 19:
                m = m * ten + d
                nd += 1
                if dot:
                    frac += 1
            else:
                if d != np.uint64(0):
                    trunc = True
                if not dot:
                    dropped += 1
        elif c == 46 and not dot:
            dot = True
        else:
            break
        p += 1
    if not any_digit:
        return 2, 0.0  # nan, inf, or invalid: Python decides
    ex = 0
    if p < e and (buf[p] == 101 or buf[p] == 69):
        p += 1
        eneg = False
        if p < e and (buf[p] == 45 or buf[p] == 43):
            eneg = buf[p] == 45
            p += 1
        nexp = 0
        while p < e and 48 <= buf[p] <= 57:
            if nexp < 6:
                ex = ex * 10 + (buf[p] - 48)
            nexp += 1
            p += 1
        if nexp == 0 or nexp >= 6:
            return 2, 0.0
        if eneg:
            ex = -ex
    if p != e:
        return 2, 0.0
    if m == np.uint64(0):
        return 1, -0.0 if neg else 0.0
    e10 = ex - frac + dropped
    if not trunc and m <= np.uint64(9007199254740992) and -22 <= e10 <= 22:
        if e10 >= 0:
            v = float(m) * pow10[e10]
        else:
            v = float(m) / pow10[-e10]
        return 1, -v if neg else v
    ok, v = _eisel_lemire(m, e10, pow_hi, pow_lo)
    if not ok:
        return 2, 0.0
    if trunc:
        ok2, v2 = _eisel_lemire(m + np.uint64(1), e10, pow_hi, pow_lo)
        if not ok2 or v2 != v:
            return 2, 0.0
    return 1, -v if neg else v


@numba.njit(cache=True)
def _parse_int(buf, s, e, signed):
    """Parse buf[s:e] as a (signed) decimal integer of at most 18 digits -> (ok, value)."""
    neg = False
    if signed and s < e and (buf[s] == 45 or buf[s] == 43):
        neg = buf[s] == 45
        s += 1
    if s >= e or e - s > 18:
        return False, np.int64(0)
    v = np.int64(0)
    for p in range(s, e):
        c = buf[p]
        if c < 48 or c > 57:
            return False, np.int64(0)
        v = v * 10 + (c - 48)
    return True, -v if neg else v


@numba.njit(cache=True)
def _grow(a):
    b = np.empty((2 * a.shape[0], a.shape[1]), a.dtype)
    b[: a.shape[0]] = a
    return b


@numba.njit(cache=True)
def _parse_letor(buf, max_rows, max_pairs, pow10, pow_hi, pow_lo):
    """Parse a whole LETOR/SVMlight buffer.

    Returns (counts, err, labels, qids, row_line, indptr, indices, values, slow) where
    counts = [n_rows, nnz, n_slow, has_qid]; err = [code, line, tok_start, tok_end, extra];
    slow rows are (kind, where, start, end): kind 0 = label of row ``where``, kind 1 = value
    of entry ``where``, to be converted by Python.
    """
    labels = np.empty(max_rows, np.float64)
    qids = np.zeros(max_rows, np.int64)
    row_line = np.empty(max_rows, np.int64)
    indptr = np.zeros(max_rows + 1, np.int64)
    indices = np.empty(max_pairs, np.int64)
    values = np.empty(max_pairs, np.float64)
    slow = np.empty((1024, 4), np.int64)  # grows by doubling; usually few entries
    err = np.zeros(5, np.int64)
    counts = np.zeros(4, np.int64)
    counts[3] = -1

    n = buf.shape[0]
    i = 0
    line = 0
    row = 0
    nnz = 0
    n_slow = 0
    file_has_qid = -1
    first_line = 0
    while i < n:
        line += 1
        eol = i
        while eol < n and buf[eol] != 10:
            eol += 1
        end = i
        while end < eol and buf[end] != 35:  # '#'
            end += 1
        p = i
        while p < end and _is_space(buf[p]):
            p += 1
        if p == end:
            i = eol + 1
            continue
        # label
        t0 = p
        while p < end and not _is_space(buf[p]):
            p += 1
        status, val = _parse_float(buf, t0, p, pow10, pow_hi, pow_lo)
        if status == 0:
            err[0] = _BAD_LABEL
            err[1] = line
            err[2] = t0
            err[3] = p
            return counts, err, labels, qids, row_line, indptr, indices, values, slow
        if status == 2:
            if n_slow == slow.shape[0]:
                slow = _grow(slow)
            slow[n_slow, 0] = 0
            slow[n_slow, 1] = row
            slow[n_slow, 2] = t0
            slow[n_slow, 3] = p
            n_slow += 1
        labels[row] = val
        row_start = nnz
        row_has_qid = 0
        first = True
        while True:
            while p < end and _is_space(buf[p]):
                p += 1
            if p >= end:
                break
            t0 = p
            colon = -1
            while p < end and not _is_space(buf[p]):
                if colon < 0 and buf[p] == 58:  # ':'
                    colon = p
                p += 1
            t1 = p
            if colon < 0:
                err[0] = _NO_COLON
                err[1] = line
                err[2] = t0
                err[3] = t1
                return counts, err, labels, qids, row_line, indptr, indices, values, slow
            if colon - t0 == 3 and buf[t0] == 113 and buf[t0 + 1] == 105 and buf[t0 + 2] == 100:
                if not first:
                    err[0] = _QID_POSITION
                    err[1] = line
                    err[2] = t0
                    err[3] = t1
                    return counts, err, labels, qids, row_line, indptr, indices, values, slow
                ok, q = _parse_int(buf, colon + 1, t1, True)
                if not ok:
                    err[0] = _BAD_QID
                    err[1] = line
                    err[2] = t0
                    err[3] = t1
                    return counts, err, labels, qids, row_line, indptr, indices, values, slow
                qids[row] = q
                row_has_qid = 1
            else:
                ok, idx = _parse_int(buf, t0, colon, False)
                if not ok:
                    err[0] = _BAD_INDEX
                    err[1] = line
                    err[2] = t0
                    err[3] = t1
                    return counts, err, labels, qids, row_line, indptr, indices, values, slow
                status, val = _parse_float(buf, colon + 1, t1, pow10, pow_hi, pow_lo)
                if status == 0:
                    err[0] = _BAD_VALUE
                    err[1] = line
                    err[2] = t0
                    err[3] = t1
                    return counts, err, labels, qids, row_line, indptr, indices, values, slow
                if status == 2:
                    if n_slow == slow.shape[0]:
                        slow = _grow(slow)
                    slow[n_slow, 0] = 1
                    slow[n_slow, 1] = nnz
                    slow[n_slow, 2] = colon + 1
                    slow[n_slow, 3] = t1
                    n_slow += 1
                indices[nnz] = idx
                values[nnz] = val
                nnz += 1
            first = False
        # every data line has a qid, or none has
        if file_has_qid < 0:
            file_has_qid = row_has_qid
            first_line = line
        elif row_has_qid != file_has_qid:
            err[0] = _MIXED_QID
            err[1] = line
            err[2] = row_has_qid
            err[4] = first_line
            return counts, err, labels, qids, row_line, indptr, indices, values, slow
        # any index order is accepted; rows are stored sorted; duplicates are errors
        increasing = True
        for k in range(row_start + 1, nnz):
            if indices[k] <= indices[k - 1]:
                increasing = False
                break
        if not increasing:
            seg = indices[row_start:nnz].copy()
            order = np.argsort(seg, kind="mergesort")
            vseg = values[row_start:nnz].copy()
            for k in range(order.shape[0]):
                indices[row_start + k] = seg[order[k]]
                values[row_start + k] = vseg[order[k]]
            # slow-path entries of this row moved: remap their entry numbers
            if n_slow > 0:
                inverse = np.empty(order.shape[0], np.int64)
                for k in range(order.shape[0]):
                    inverse[order[k]] = k
                s = n_slow - 1
                while s >= 0 and slow[s, 0] == 1 and slow[s, 1] >= row_start:
                    slow[s, 1] = row_start + inverse[slow[s, 1] - row_start]
                    s -= 1
            for k in range(row_start + 1, nnz):
                if indices[k] == indices[k - 1]:
                    err[0] = _DUPLICATE
                    err[1] = line
                    err[4] = indices[k]
                    return counts, err, labels, qids, row_line, indptr, indices, values, slow
        row_line[row] = line
        row += 1
        indptr[row] = nnz
        i = eol + 1

    counts[0] = row
    counts[1] = nnz
    counts[2] = n_slow
    counts[3] = file_has_qid
    return counts, err, labels, qids, row_line, indptr, indices, values, slow
