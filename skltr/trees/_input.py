"""How a :class:`~skltr.trees.TreeEnsemble` reads the values it is given.

Each source library reads a caller's input its own way before any tree sees it, and a score
can only equal the library's own if skltr reads the input the same way. The rule is a
property of the model (``TreeEnsemble.input_rule``), recorded by its converter, applied here
on every backend (traversal, QuickScorer, and the GPU backends when they come):

``"float64"``
    Every numeric dtype is converted to float64 (skltr's own models; scikit-learn's
    HistGradientBoosting, whose ``predict`` validates ``X`` as float64).
``"float32"``
    Every value is rounded to float32 from its own dtype (XGBoost; scikit-learn's decision
    trees and the forests and gradient boosting built on them, which validate ``X`` as
    float32). An int64 goes straight to float32, as the libraries cast it, not through
    float64 (the two differ above 2**53).
``"float32_unless_float"``
    float32 and float64 arrays are read as they are; every other dtype is rounded to float32
    first (LightGBM's ``predict`` on a NumPy array: ``np.float32`` unless the array is
    already float32 or float64).

The kernels always take float64 (a float32 value is exact in float64), so after the rule the
values are widened to float64.
"""

from __future__ import annotations

import numpy as np

__all__ = ["INPUT_RULES", "cast_input_values", "model_input"]

#: Values a ``TreeEnsemble.input_rule`` may take (see the module docstring).
INPUT_RULES = ("float64", "float32", "float32_unless_float")


def cast_input_values(values: np.ndarray, rule: str) -> np.ndarray:
    """Apply ``rule`` to a numeric array of any shape; return float64 (no copy when possible).

    Used on dense arrays and on the stored values of sparse matrices alike.
    """
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise ValueError(f"X must be numeric; got dtype {values.dtype}.")
    if rule == "float64":
        return values.astype(np.float64, copy=False)
    if rule == "float32" or (rule == "float32_unless_float"
                             and values.dtype not in (np.float32, np.float64)):
        return values.astype(np.float32, copy=False).astype(np.float64)
    if rule == "float32_unless_float":
        return values.astype(np.float64, copy=False)
    raise ValueError(f"unknown input_rule {rule!r}; expected one of {INPUT_RULES}.")


def model_input(ensemble, X) -> np.ndarray:
    """Dense 2-D ``X`` as the float64, C-contiguous array the kernels read, after the
    ensemble's input rule. Checks the shape against ``ensemble.n_features``."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}.")
    if X.shape[1] != ensemble.n_features:
        raise ValueError(
            f"X has {X.shape[1]} features, but the ensemble was built for "
            f"{ensemble.n_features}."
        )
    return np.ascontiguousarray(cast_input_values(X, ensemble.input_rule))
