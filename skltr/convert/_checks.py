"""Typed reads of the fields of an untrusted model document (XGBoost JSON / UBJSON, LightGBM
text): each returns the value in the type the converter needs or raises a ``ValueError``
that names the field and says the model is corrupt.

A parsed document can hold anything where a number is expected (a string, a nested list,
a float where an index belongs, ``NaN``), and NumPy would silently truncate, wrap or
broadcast much of it; these helpers refuse instead.
"""

from __future__ import annotations

import numbers
import re

import numpy as np

__all__ = ["as_int", "int_array", "float_array"]

_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


def as_int(value, what: str, *, lo: int | None = None, hi: int | None = None,
           corrupt: str = "the model is corrupt") -> int:
    """``value`` (an integer, or a string of one) as an int in ``[lo, hi]``.

    Floats, booleans and other strings are refused: a model writes its counts and indices
    as integers (XGBoost JSON as strings such as ``"3"``).
    """
    if type(value) is int:  # the common cases first: this runs a few times per tree
        ok = True
    elif type(value) is str and value.isascii() and value.isdigit() and len(value) < 40:
        value, ok = int(value), True
    elif isinstance(value, (bool, np.bool_)):
        ok = False
    elif isinstance(value, numbers.Integral):
        value, ok = int(value), True
    elif isinstance(value, str) and len(value) < 40 and _INTEGER.fullmatch(value):
        value, ok = int(value), True
    else:
        ok = False
    if not ok:
        raise ValueError(f"{what} is {value!r:.60}, not an integer; {corrupt}.")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
        raise ValueError(f"{what} is {value}, outside {bounds}; {corrupt}.")
    return value


def _array(value, what: str, corrupt: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, (list, tuple)):
        # Nested lists come back 2-D or raise (ragged); dicts and strings as object or
        # string dtypes, which the callers refuse.
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ValueError(f"{what} cannot be read as an array ({exc}); {corrupt}.") from None
    else:
        raise ValueError(f"{what} is a {type(value).__name__}, not a list of numbers; "
                         f"{corrupt}.")
    if arr.ndim != 1:
        raise ValueError(f"{what} is not a flat list of numbers; {corrupt}.")
    return arr


def int_array(value, what: str, *, size: int | None = None, lo: int | None = None,
              hi: int | None = None, corrupt: str = "the model is corrupt") -> np.ndarray:
    """A flat list of integers as int64, optionally of ``size`` entries in ``[lo, hi]``.

    Booleans (``true`` / ``false``) count as 1 / 0; floats and strings are refused, so that
    ``1.5`` is not truncated to 1.
    """
    arr = _array(value, what, corrupt)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and np.any(arr > 2**63 - 1):
        raise ValueError(f"{what} holds a value beyond int64; {corrupt}.")
    elif arr.dtype.kind not in "iu":
        raise ValueError(f"{what} holds values that are not integers (dtype "
                         f"{arr.dtype}); {corrupt}.")
    arr = arr.astype(np.int64, copy=False)
    if size is not None and arr.size != size:
        raise ValueError(f"{what} has {arr.size} entries, expected {size}; {corrupt}.")
    if arr.size and ((lo is not None and arr.min() < lo) or (hi is not None and arr.max() > hi)):
        bad = int(np.flatnonzero(((arr < lo) if lo is not None else False)
                                 | ((arr > hi) if hi is not None else False))[0])
        bounds = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
        raise ValueError(f"{what}[{bad}] is {int(arr[bad])}, outside {bounds}; {corrupt}.")
    return arr


def float_array(value, what: str, *, size: int | None = None,
                corrupt: str = "the model is corrupt") -> np.ndarray:
    """A flat list of numbers as float64 (finiteness is the caller's concern: a leaf must be
    finite, a threshold of an unused node need not)."""
    arr = _array(value, what, corrupt)
    if arr.size and arr.dtype.kind not in "iuf":
        raise ValueError(f"{what} holds values that are not numbers (dtype {arr.dtype}); "
                         f"{corrupt}.")
    arr = arr.astype(np.float64)
    if size is not None and arr.size != size:
        raise ValueError(f"{what} has {arr.size} entries, expected {size}; {corrupt}.")
    return arr
