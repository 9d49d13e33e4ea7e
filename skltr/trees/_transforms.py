"""Output transforms of a TreeEnsemble (raw margin -> prediction), in double precision.

These follow LightGBM's and scikit-learn's formulas (double arithmetic, libm ``exp`` through
numba, which calls the C library rather than NumPy's vectorised exp, so results match the
source libraries to the last ulp on glibc).
"""

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _sigmoid(raw, scale, out):
    for i in range(raw.shape[0]):
        out[i] = 1.0 / (1.0 + math.exp(-scale * raw[i]))


@njit(cache=True)
def _exp(raw, out):
    for i in range(raw.shape[0]):
        out[i] = math.exp(raw[i])


@njit(cache=True)
def _softmax(raw, out):
    for i in range(raw.shape[0]):
        wmax = raw[i, 0]
        for k in range(1, raw.shape[1]):
            wmax = max(wmax, raw[i, k])
        total = 0.0
        for k in range(raw.shape[1]):
            out[i, k] = math.exp(raw[i, k] - wmax)
            total += out[i, k]
        for k in range(raw.shape[1]):
            out[i, k] /= total


def apply_transform(ensemble, raw: np.ndarray) -> np.ndarray:
    """Apply ``ensemble.output_transform`` to raw scores from ``predict_raw``."""
    name = ensemble.output_transform
    if name == "identity":
        return raw
    raw64 = np.ascontiguousarray(raw, dtype=np.float64)
    out = np.empty_like(raw64)
    if name == "sigmoid":
        _sigmoid(raw64.ravel(), float(ensemble.transform_params.get("scale", 1.0)), out.ravel())
    elif name == "exp":
        _exp(raw64.ravel(), out.ravel())
    elif name == "softmax":
        if raw64.ndim != 2:
            raise ValueError("softmax needs an ensemble with n_outputs > 1.")
        _softmax(raw64, out)
    else:  # validated by TreeEnsemble.validate
        raise ValueError(f"unknown output transform {name!r}")
    return out
