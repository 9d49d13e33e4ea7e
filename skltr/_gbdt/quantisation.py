"""The quantisation rule of ``hist_mode="quantised"``: one histogram layout and one pair of
scales per tree, the same on every device and any number of workers.

Each tree, gradients are scaled by ``2**kg`` and hessians by ``2**kh`` (powers of two: the
scaling is exact) and rounded to integers, whose histogram sums are exact in any order. The
rule picks the layout from the parameters and the tree's row count, and the scales from
statistics of the used rows that every back-end gathers exactly (and all-reduces), so that a
CPU, a GPU and a Dask fit quantise every row to the same integers::

    hist_mode="float"                                 -> FLOAT     (CPU only)
    counts "hessian" and n_rows <= GH64_MAX_ROWS      -> ONE_WORD  scales from sum |g|, sum h
    otherwise                                         -> TWO_WORD  scales from max |g|, max h

* ONE_WORD: ``q_g * 2**32 + q_h`` in one int64 (``skltr._engine.histogram``), the scales chosen
  from the exact sums of ``|g|`` and ``h`` (:func:`gh64_exponent`) so that no set of rows sums
  past ``2**31`` (gradients) or ``2**32`` (hessians): no sum carries from one field into the
  other. Bounding the sum of magnitudes instead of ``n_rows * max|g|`` keeps 3-6 more bits of
  lambdarank's heavy-tailed gradients. No row counts in the bins: the split search counts rows
  from hessians, as LightGBM, and the partition gives children their row counts.
* TWO_WORD: ``q_g`` as int32 with ``max|g| * 2**kg <= min(2**30, 2**62 / n_rows)``, and
  ``(1 << K) + q_h`` in int64 with the bound ``2**(K-1) / n_rows``, so that one channel sums
  both the hessian (low ``K = 63 - bits(n_rows)`` bits) and the row count (high bits).

The GPU back-end stores both in its two-word bins (``skltr._gpu.histogram``: its 32-bit shared
atomics want the count word anyway); only the scales decide the integers, so its trees are
the CPU's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._cpu.quantise import accumulated_value
from .._engine.histogram import FLOAT, ONE_WORD, TWO_WORD

__all__ = ["GH64_MAX_ROWS", "Scales", "choose_layout", "quantisation_exponent",
           "gh64_exponent", "one_word_scales", "two_word_scales", "check_hessians"]

#: Most rows (of the whole tree) for one-word bins. Their scale keeps the sum of all rows'
#: ``|q_g|`` below ``2**31``, so a row of average ``|g|`` gets about ``31 - log2(n_rows)``
#: bits (10 at this bound); larger trees use two-word bins.
GH64_MAX_ROWS = 2**21


class Scales(NamedTuple):
    """The quantisation of one tree: layout, exponents, and the two-word count bit ``K``."""

    layout: object  # a HistogramLayout
    kg: int
    kh: int
    count_shift: int  # K of TWO_WORD; 0 otherwise

    @property
    def inv_g(self) -> float:
        """Histogram units -> gradient units."""
        return 2.0 ** -self.kg

    @property
    def inv_h(self) -> float:
        return 2.0 ** -self.kh


FLOAT_SCALES = Scales(FLOAT, 0, 0, 0)


def choose_layout(tree_params, n_rows: int):
    """The histogram layout of a tree of ``n_rows`` used rows (all workers) -- see the module
    docstring; ``tree_params`` is a :class:`~skltr._gbdt.params.TreeParams`."""
    if tree_params.hist_mode == "float":
        return FLOAT
    if tree_params.hessian_counts and n_rows <= GH64_MAX_ROWS:
        return ONE_WORD
    return TWO_WORD


def check_hessians(any_negative) -> None:
    """Refuse negative hessians: quantised bins hold them unsigned (beside a count or a
    gradient field)."""
    if any_negative:
        raise ValueError("hist_mode='quantised' needs hessians >= 0; use hist_mode='float' "
                         "(CPU).")


def quantisation_exponent(max_abs: float, n_rows: int, total_bits: int = 62) -> int:
    """Largest ``k`` with ``max_abs * 2**k <= min(2**30, 2**total_bits / n_rows)``; 0 if no max.

    ``|round(v * 2**k)| <= 2**30`` fits int32, and ``n_rows`` such values sum below
    ``2**total_bits`` (62: within int64; ``count_shift - 1`` for packed hessians).
    """
    if not max_abs > 0.0:
        return 0
    limit = min(2.0 ** 30, 2.0 ** total_bits / max(n_rows, 1))
    k = math.floor(math.log2(limit / max_abs))
    while max_abs * 2.0 ** k > limit:  # guard log2 rounding
        k -= 1
    while max_abs * 2.0 ** (k + 1) <= limit:
        k += 1
    return k


def gh64_exponent(total_abs: float, n_rows: int, bits: int) -> int:
    """Largest ``k`` such that ``sum |rint(v * 2**k)| < 2**bits`` for values of ``sum |v| <=
    total_abs`` over ``n_rows`` rows: ``total_abs * 2**k + n_rows / 2 < 2**bits``; 0 if no sum.

    A 1e-6 relative margin covers the float64 rounding of ``total_abs``.
    """
    room = 2.0 ** bits - 1.0 - 0.5 * n_rows
    if not total_abs > 0.0 or room <= 0.0:
        return 0
    bound = total_abs * (1.0 + 1e-6)
    k = math.floor(math.log2(room / bound))
    while bound * 2.0 ** k > room:  # guard log2 rounding
        k -= 1
    while bound * 2.0 ** (k + 1) <= room:
        k += 1
    return min(k, 1000)


def one_word_scales(accumulators, n_rows: int) -> Scales:
    """ONE_WORD scales from the exact sums of ``|g|`` and ``h`` (``accumulators[0]`` and
    ``[1]``: :func:`skltr._cpu.quantise.gh_accumulators`' two channels, all workers')."""
    acc = np.asarray(accumulators)
    return Scales(ONE_WORD, gh64_exponent(accumulated_value(acc[0]), n_rows, 31),
                  gh64_exponent(accumulated_value(acc[1]), n_rows, 32), 0)


def two_word_scales(max_abs_g: float, max_h: float, n_rows: int) -> Scales:
    """TWO_WORD scales from the largest ``|g|`` and ``h`` (all workers)."""
    K = count_bit(n_rows)
    return Scales(TWO_WORD, quantisation_exponent(float(max_abs_g), n_rows),
                  quantisation_exponent(float(max_h), n_rows, total_bits=K - 1), K)


def count_bit(n_rows: int) -> int:
    """``K = 63 - bits(n_rows)``: the lowest bit of the row count in a packed hessian word."""
    return 63 - max(int(n_rows).bit_length(), 1)
