"""Typed reads of the ``fitted`` entry of a ranker's model file (``meta.estimator.fitted``
or ``meta.fitted``): each value comes back in the type the ranker holds, or the read raises
a :class:`~skltr.utils._model_io.ModelFileError` naming the file and the entry.

A model file is untrusted: ``int("3.5")``, ``bool("false")`` or a list of names given as
one string would otherwise load as something the ranker never wrote.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..utils._model_io import ModelFileError

__all__ = ["fitted_dict", "read_int", "read_str", "read_names", "read_numbers",
           "read_evals_result"]

_EDITED = "the file is corrupt or was edited"


def _fail(path, key, value, expected):
    raise ModelFileError(path, f"its fitted entry {key!r} is {value!r:.60}; expected "
                               f"{expected}; {_EDITED}")


def fitted_dict(state, path) -> dict:
    """The ``fitted`` object of an estimator state."""
    fitted = state.get("fitted") if isinstance(state, dict) else None
    if not isinstance(fitted, dict):
        raise ModelFileError(path, f"its estimator state has no 'fitted' object; {_EDITED}")
    return fitted


def read_int(fitted, key, path, *, lo=None, hi=None, optional=False):
    """An integer entry in ``[lo, hi]`` (None allowed when ``optional``)."""
    if key not in fitted and not optional:
        raise ModelFileError(path, f"required entry {key!r} is missing from its fitted state; "
                                   f"{_EDITED}")
    value = fitted.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (
            lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"an integer in [{lo}, {'inf' if hi is None else hi}]"
        _fail(path, key, value, bounds + (" or null" if optional else ""))
    return int(value)


def read_str(fitted, key, path) -> str:
    value = fitted.get(key)
    if not isinstance(value, str):
        _fail(path, key, value, "a string")
    return value


def read_names(fitted, key, path, n):
    """None or a list of ``n`` strings."""
    value = fitted.get(key)
    if value is not None and not (isinstance(value, list)
                                  and all(isinstance(v, str) for v in value)):
        _fail(path, key, value, f"null or a list of {n} strings (one per feature)")
    _check_length(path, key, value, n)
    return value


def _check_length(path, key, value, n):
    if value is not None and len(value) != n:
        raise ModelFileError(path, f"its fitted state does not match: {key!r} has "
                                   f"{len(value)} entries for n_features_in_={n}; {_EDITED}")


def read_numbers(fitted, key, path, n, *, integer=False):
    """A list of ``n`` finite, non-negative numbers (integers when ``integer``)."""
    value = fitted.get(key)
    kinds = "integers" if integer else "numbers"
    want = f"a list of {n} finite non-negative {kinds} (one per feature)"
    if not isinstance(value, list):
        _fail(path, key, value, want)
    _check_length(path, key, value, n)
    ok_type = numbers.Integral if integer else numbers.Real
    if not all(isinstance(v, ok_type) and not isinstance(v, bool) for v in value):
        _fail(path, key, value, want)
    arr = np.asarray(value, dtype=np.int64 if integer else np.float64)
    if not (np.all(np.isfinite(arr)) and np.all(arr >= 0)):
        _fail(path, key, value, want)
    return arr


def read_evals_result(fitted, key, path) -> dict:
    """``{set name: {metric: [finite value per round]}}``."""
    value = fitted.get(key)
    ok = isinstance(value, dict) and all(
        isinstance(name, str) and isinstance(metrics, dict) and all(
            isinstance(metric, str) and isinstance(history, list) and all(
                isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
                for v in history)
            for metric, history in metrics.items())
        for name, metrics in value.items())
    if not ok:
        _fail(path, key, value, "{set name: {metric: [finite number per round]}}")
    return value
