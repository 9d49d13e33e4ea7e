"""Checks of ``fit(..., position=...)``: the displayed position of every row (clicks).

Kept apart from the estimator: validation only, no loops. :mod:`skltr._gbdt.position_bias`
describes what the positions are used for.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["check_position"]

_HOW = ("position must hold the 0-based position at which each row was displayed (whole "
        "numbers >= 0, one per row)")


def check_position(position, n_rows, *, objective, position_bias, above):
    """``position`` as an int64 array in the caller's row order, or None.

    Raises a ValueError naming ``position`` for a wrong length, a non-numeric, NaN,
    infinite, fractional or negative entry, and for ``position_bias`` set without
    ``position`` (or with an objective other than ``"lambdarank"``). Warns once, and returns
    None, when ``position`` is given but ``position_bias=None`` ignores it (``above``: frames
    between the caller and the user's call).
    """
    if position_bias is not None and objective != "lambdarank":
        raise ValueError(f"position_bias={position_bias!r} needs objective='lambdarank' (the "
                         f"position-debiased LambdaMART); got objective={objective!r}. Set "
                         f"objective='lambdarank' or position_bias=None.")
    if position is None:
        if position_bias is not None:
            raise ValueError(f"position_bias={position_bias!r} learns from the positions the "
                             f"rows were shown at: pass fit(X, y, qid=qid, position=position)"
                             f", or set position_bias=None.")
        return None
    if position_bias is None:
        warnings.warn("fit(position=...) is ignored because position_bias=None; set "
                      "position_bias='unbiased' or 'additive' to learn from clicks.",
                      UserWarning, stacklevel=3 + above)
        return None
    arr = np.asarray(position)
    if arr.ndim != 1:
        raise ValueError(f"position must be 1-D with one entry per row; got shape "
                         f"{arr.shape}. {_HOW}.")
    if arr.shape[0] != n_rows:
        raise ValueError(f"position has {arr.shape[0]} entries but X has {n_rows} rows. "
                         f"{_HOW}.")
    if arr.dtype.kind not in "iuf" and arr.dtype != bool:
        raise ValueError(f"position must be numeric; got dtype {arr.dtype}. {_HOW}.")
    values = arr.astype(np.float64)
    for bad, what in ((~np.isfinite(values), "non-finite (NaN or inf)"),
                      (np.isfinite(values) & (values != np.floor(values)), "fractional"),
                      (values < 0, "negative")):
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"position has {int(bad.sum())} {what} value(s) (first: "
                             f"{arr[row]!r} at row {row}). {_HOW}.")
    if values.size and values.max() >= 2.0 ** 31:
        raise ValueError(f"position has a value of {values.max():.0f}, beyond 2**31 - 1. "
                         f"{_HOW}.")
    return values.astype(np.int64)
