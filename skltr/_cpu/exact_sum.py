"""Exact sums of float64 values by key: the same bits in any order and on any partition.

A floating-point sum rounds after every addition, so its bits depend on the order of the
terms. Learning from clicks sums per-row costs per displayed position every round
(:mod:`skltr._gbdt.position_bias`); a Dask fit holds each query on one worker, so no worker
can add the rows in the one-process order. These kernels instead accumulate the **exact**
sum -- a superaccumulator of integers -- and round it once, to nearest (ties to even), at
the end: the result is the correctly rounded sum of the multiset of values, whatever the
order, the partition into workers, or the order of the partial accumulators' merge.

Representation. A finite float64 is ``m * 2**(s - 1074)`` with ``m`` a 53-bit integer
(subnormals: ``s = 0``) and ``0 <= s <= 2045``. Every finite float64 is thus an integer
multiple of ``2**-1074``, and so is any sum of them: the accumulator holds that integer in
:data:`LIMBS` signed int64 limbs of 32 bits each (limb ``i`` weighs ``2**(32 i - 1074)``;
67 limbs: a value's highest bit is bit 2097, limb 65, and the carries of up to ``2**63``
values fit above). Adding a value adds its significand, shifted by ``s mod 32``, into the
three limbs from ``s // 32`` (each part ``< 2**32``): integer additions, exact and
associative. A limb takes ``2**30`` such additions before it could overflow, so
:func:`add_by_key` normalises every ``2**30`` values (carries into the next limb, leaving
each limb in ``[-2**31, 2**31)``) and once at the end; it sums large inputs in row chunks on
numba's threads, an accumulator each, added limb by limb. The "balanced" limbs keep the
representation local -- a negative total does not spread carries into every limb -- so the
accumulators of ``W`` workers add limb by limb (an all-reduce of int64: exact) with
``|limb| <= W 2**31``, and a merge needs only the limbs some worker uses.

Four counters follow the limbs (columns :data:`NAN`, :data:`POS_INF`, :data:`NEG_INF`,
:data:`COUNT`): the non-finite values give the sum IEEE addition gives (NaN if any NaN or
both infinities, else the infinity); ``COUNT`` is the number of values added (finite or
not), which callers use as the per-key row count. An exact zero is ``+0.0`` (as the
sequential sum from ``0.0`` and Python 3.11's ``math.fsum`` give); an exact sum beyond
float64's range is ``+-inf``, as rounding to nearest makes it.

The gradient quantisation's exact sums (:func:`skltr._cpu.quantise.gh_accumulators`)
are a narrower case: float32 magnitudes, one int64 per float32 exponent holding 24-bit
significands (``2**39`` values each). Signed float64 values need another layout: a bucket
per float64 exponent would be 2046 int64 per key, each with room for only ``2**10``
53-bit significands, hence the 32-bit limbs and their carries here.

One row of an accumulator is 71 int64 (568 bytes) per key; :func:`used_limbs` gives the
limbs in use, so a merge over workers sends only those (gradients' exponents span a few
limbs; ``skltr._gbdt.position_bias`` measures the cost). ``math.fsum`` is the independent
reference (``tests/test_clicks.py``).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from ._intrinsics import float64_bits

__all__ = ["LIMBS", "WIDTH", "NAN", "POS_INF", "NEG_INF", "COUNT", "accumulator",
           "add_by_key", "to_float64", "used_limbs"]

#: Limbs of 32 bits (limb ``i`` weighs ``2**(32 i - 1074)``).
LIMBS = 67
#: Columns of the counters after the limbs.
NAN, POS_INF, NEG_INF, COUNT = LIMBS, LIMBS + 1, LIMBS + 2, LIMBS + 3
#: int64 columns of one key's accumulator.
WIDTH = LIMBS + 4

_MASK32 = (1 << 32) - 1
_FRACTION = (1 << 52) - 1
_HALF_LIMB = 1 << 31
#: values added between normalisations: 2**30 parts of < 2**32 keep |limb| < 2**62 + 2**31
_NORMALISE_EVERY = 1 << 30
#: the exponent of limb 0's lowest bit
_LOW = -1074


def accumulator(n_keys: int) -> np.ndarray:
    """An empty accumulator for ``n_keys`` keys: int64 zeros of shape ``(n_keys, WIDTH)``."""
    return np.zeros((n_keys, WIDTH), dtype=np.int64)


@njit(cache=True, inline="always")
def _add(acc, key, x):
    """``acc[key] += x`` exactly (``x`` float64)."""
    u = float64_bits(x)
    biased = (u >> 52) & 0x7FF
    fraction = u & _FRACTION
    acc[key, COUNT] += 1
    if biased == 0x7FF:  # inf or NaN: counted apart
        if fraction != 0:
            acc[key, NAN] += 1
        elif u < 0:
            acc[key, NEG_INF] += 1
        else:
            acc[key, POS_INF] += 1
        return
    # no branch on the value's class or sign (a random sign mispredicts half the time):
    # a subnormal is fraction * 2**-1074 (shift 0, no hidden bit), +-0.0 adds zeros, and a
    # negative value adds the two's complement of its parts
    # (as arithmetic: numba's conditional expressions compile to branches, which a column
    # of costs half zeros mispredicts -- measured: 2.3x the time)
    normal = (biased + 0x7FF) >> 11  # 1 for a normal value, 0 for a subnormal or zero
    m = fraction | (normal << 52)
    shift = biased - normal
    limb = shift >> 5
    off = shift & 31
    low = (m << off) & _MASK32  # the wrapped high bits of m << off are taken below
    rest = m >> (32 - off)      # bits 32.. of m << off (a shift by 1..32: defined)
    sign = u >> 63              # arithmetic: -1 for a negative value, else 0
    acc[key, limb] += (low ^ sign) - sign
    acc[key, limb + 1] += ((rest & _MASK32) ^ sign) - sign
    acc[key, limb + 2] += ((rest >> 32) ^ sign) - sign


@njit(cache=True)
def _normalise(acc):
    """Carry every limb but the last into the next, leaving it in ``[-2**31, 2**31)``."""
    for key in range(acc.shape[0]):
        for i in range(LIMBS - 1):
            carry = (acc[key, i] + _HALF_LIMB) >> 32  # arithmetic shift: floor
            acc[key, i] -= carry << 32
            acc[key, i + 1] += carry


@njit(cache=True)
def _add_rows(values, keys, lo, hi, acc):
    """``acc[keys[r]] += values[r]`` for rows ``lo .. hi - 1`` (keys outside ``acc``
    skipped); leaves ``acc`` normalised."""
    n_keys = acc.shape[0]
    since = 0
    for r in range(lo, hi):
        key = keys[r]
        if key < 0 or key >= n_keys:
            continue
        _add(acc, key, np.float64(values[r]))
        since += 1
        if since == _NORMALISE_EVERY:
            _normalise(acc)
            since = 0
    _normalise(acc)


@njit(parallel=True, cache=True)
def _add_rows_parallel(values, keys, acc, n_chunks):
    """:func:`_add_rows` over all rows in ``n_chunks`` row chunks, one accumulator each,
    merged by integer addition: exact, so the bits of the one-chunk sum."""
    n = values.shape[0]
    parts = np.zeros((n_chunks, acc.shape[0], acc.shape[1]), np.int64)
    for p in prange(n_chunks):
        c = np.int64(p)
        _add_rows(values, keys, n * c // n_chunks, n * (c + 1) // n_chunks, parts[c])
    for c in range(n_chunks):  # normalised parts: |limb| < 2**31 each, no overflow
        acc += parts[c]
    _normalise(acc)


#: rows from which :func:`add_by_key` splits the work over numba's threads (a column of 1M
#: rows took ~2.6 ms on one thread; below this a parallel region's start costs more)
PARALLEL_MIN_ROWS = 1 << 16


def add_by_key(values, keys, acc):
    """``acc[keys[r]] += values[r]`` for every row ``r``, exactly; rows whose key is outside
    ``0 .. acc.shape[0] - 1`` are skipped.

    Large inputs are summed in row chunks on numba's threads (the caller's thread count:
    :func:`skltr.utils._threads.numba_threads`); the sum is exact, so the result does not
    depend on the chunks.

    Parameters
    ----------
    values : ndarray of float64 or float32, shape (n,)
        float32 values are widened to float64 (exactly) first.
    keys : ndarray of int64, shape (n,)
    acc : ndarray of int64, shape (n_keys, WIDTH)
        From :func:`accumulator` (or earlier calls: it accumulates); left normalised.
    """
    n_chunks = min(numba.get_num_threads(), values.shape[0] // PARALLEL_MIN_ROWS)
    if n_chunks > 1:
        _add_rows_parallel(values, keys, acc, n_chunks)
    else:
        _add_rows(values, keys, 0, values.shape[0], acc)


@njit(cache=True, inline="always")
def _bits(digits, lo, n):
    """Bits ``lo .. lo + n - 1`` (``n <= 53``) of the integer whose base-2**32 digits are
    ``digits`` (each in ``[0, 2**32)``), as an int64."""
    i = lo >> 5
    word = digits[i] >> (lo & 31)
    got = 32 - (lo & 31)
    i += 1
    while got < n and i < digits.shape[0]:
        word |= digits[i] << got  # bits past 64 wrap away: only n <= 53 are kept
        got += 32
        i += 1
    return word & ((1 << n) - 1)


@njit(cache=True, inline="always")
def _bit_length(v):
    n = 0
    while v > 0:
        v >>= 1
        n += 1
    return n


@njit(cache=True)
def _carry_floor(digits):
    """Carries with floor division: limbs ``0 .. LIMBS - 2`` in ``[0, 2**32)``, the last
    signed (it holds the sign of the whole)."""
    for i in range(LIMBS - 1):
        carry = digits[i] >> 32
        digits[i] -= carry << 32
        digits[i + 1] += carry


@njit(cache=True)
def _round_limbs(limbs, digits):
    """The float64 nearest (ties to even) to the exact sum ``limbs`` (finite values only);
    ``digits`` is scratch of ``LIMBS`` int64."""
    for i in range(LIMBS):
        digits[i] = limbs[i]
    _carry_floor(digits)
    negative = digits[LIMBS - 1] < 0
    if negative:  # the magnitude: negate and carry again (the top limb is then >= 0)
        for i in range(LIMBS):
            digits[i] = -digits[i]
        _carry_floor(digits)
    sign = -1.0 if negative else 1.0
    if digits[LIMBS - 1] != 0:  # >= 2**(32 * 66 - 1074) = 2**1038: beyond float64
        return sign * math.inf
    top = LIMBS - 2
    while top >= 0 and digits[top] == 0:
        top -= 1
    if top < 0:
        return 0.0  # an exact zero is +0.0
    length = 32 * top + _bit_length(digits[top])  # bits of the integer N; sum = N 2**-1074
    if length <= 53:  # N itself is a float64 significand: exact (subnormals included)
        n = digits[0] if top == 0 else digits[0] | (digits[1] << 32)
        return sign * math.ldexp(float(n), _LOW)
    shift = length - 53
    mantissa = _bits(digits, shift, 53)
    half = _bits(digits, shift - 1, 1)
    sticky = False  # any bit below the half bit
    below = shift - 1
    for i in range(below >> 5):
        if digits[i] != 0:
            sticky = True
            break
    if not sticky and (digits[below >> 5] & ((1 << (below & 31)) - 1)) != 0:
        sticky = True
    if half != 0 and (sticky or (mantissa & 1) != 0):
        mantissa += 1
        if mantissa == (1 << 53):
            mantissa >>= 1
            shift += 1
    exponent = shift + _LOW
    if exponent > 1023 - 52:  # mantissa * 2**exponent >= 2**1024
        return sign * math.inf
    return sign * math.ldexp(float(mantissa), exponent)


@njit(cache=True)
def to_float64(acc, out):
    """``out[key]``: the correctly rounded sum of ``acc[key]`` (to nearest, ties to even).

    NaN where a NaN, or both infinities, were added; else the infinity added; else the
    rounded exact sum of the finite values (``+0.0`` for an exact zero, ``+-inf`` beyond
    float64's range). ``acc`` need not be normalised (a merge of accumulators is not) and is
    not modified.
    """
    digits = np.empty(LIMBS, dtype=np.int64)
    for key in range(acc.shape[0]):
        if acc[key, NAN] > 0 or (acc[key, POS_INF] > 0 and acc[key, NEG_INF] > 0):
            out[key] = math.nan
        elif acc[key, POS_INF] > 0:
            out[key] = math.inf
        elif acc[key, NEG_INF] > 0:
            out[key] = -math.inf
        else:
            out[key] = _round_limbs(acc[key, :LIMBS], digits)


def used_limbs(acc) -> tuple[int, int]:
    """``(first, stop)``: the limbs ``first .. stop - 1`` hold every non-zero limb of the
    accumulator(s) ``acc`` (shape ``(..., WIDTH)``); ``(0, 0)`` when none is non-zero."""
    used = np.flatnonzero(acc.reshape(-1, WIDTH)[:, :LIMBS].any(axis=0))
    if used.size == 0:
        return 0, 0
    return int(used[0]), int(used[-1]) + 1
