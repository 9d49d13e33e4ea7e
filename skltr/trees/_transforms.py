"""Output transforms of a TreeEnsemble (raw margin -> prediction), in double precision.

These follow LightGBM's and scikit-learn's formulas (double arithmetic, libm ``exp`` through
numba, which calls the C library rather than NumPy's vectorised exp, so results match the
source libraries to the last ulp on glibc). The ``xgb_*`` transforms are XGBoost's own, in
float32 with glibc ``expf``, and return float32. The ``sklearn_*`` transforms repeat
scikit-learn's own NumPy calls, because NumPy's vectorised ``exp`` (AVX-512 builds) differs from
the C library's by an ulp on some inputs and scikit-learn's links use NumPy.
"""

import math

import numpy as np
from numba import njit

from .. import _numba_cache  # noqa: F401 - kernel caches outside the package


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


# XGBoost's PredTransform formulas, in float32 as XGBoost computes them. numba's math.exp on
# a float32 value calls glibc's expf (NumPy's vectorised exp does not match it).
@njit(cache=True)
def _xgb_sigmoid(raw, out):
    """common::Sigmoid: ``1 / (expf(min(-x, 88.7f)) + 1 + 1e-16f)``, all in float32."""
    one = np.float32(1.0)
    eps = np.float32(1e-16)
    cap = np.float32(88.7)
    for i in range(raw.shape[0]):
        x = -raw[i]
        if cap < x:  # std::min(-x, 88.7f) keeps -x when it is NaN
            x = cap
        out[i] = one / (math.exp(x) + one + eps)


@njit(cache=True)
def _xgb_exp(raw, out):
    for i in range(raw.shape[0]):
        out[i] = math.exp(raw[i])


@njit(cache=True)
def _xgb_softmax(raw, out):
    """common::Softmax: float32 max (fmaxf), expf of x - max, the sum in double, then each
    value divided by the float32 of that sum."""
    for i in range(raw.shape[0]):
        wmax = raw[i, 0]
        for k in range(1, raw.shape[1]):
            v = raw[i, k]
            if np.isnan(wmax) or v > wmax:  # fmaxf(v, wmax): NaN loses
                if not np.isnan(v):
                    wmax = v
        wsum = 0.0
        for k in range(raw.shape[1]):
            out[i, k] = math.exp(raw[i, k] - wmax)
            wsum += np.float64(out[i, k])
        total = np.float32(wsum)
        for k in range(raw.shape[1]):
            out[i, k] = out[i, k] / total


def _sklearn_softmax(raw, order="F"):
    """``sklearn.utils.extmath.softmax`` on raw scores laid out in ``order``: Fortran order
    for HistGradientBoosting (the default), C order for GradientBoosting
    (``transform_params={"order": "C"}``).

    The same NumPy calls on the same memory order give the same reduction order, hence the
    same bits as ``predict_proba`` (with 8 or more classes NumPy sums a C-ordered row
    pairwise and a Fortran-ordered one sequentially, which differ in the last ulp).
    """
    if order not in ("C", "F"):
        raise ValueError(f"sklearn_softmax: transform_params['order'] must be 'C' or 'F'; "
                         f"got {order!r}.")
    out = np.array(raw, dtype=np.float64, order=order, copy=True)
    out -= out.max(axis=1).reshape((-1, 1))
    np.exp(out, out=out)
    out /= out.sum(axis=1).reshape((-1, 1))
    return out


def apply_transform(ensemble, raw: np.ndarray) -> np.ndarray:
    """Apply ``ensemble.output_transform`` to raw scores from ``predict_raw``."""
    name = ensemble.output_transform
    if name == "identity":
        return raw
    if name.startswith("xgb_"):
        raw32 = np.ascontiguousarray(raw, dtype=np.float32)
        out32 = np.empty_like(raw32)
        if name == "xgb_sigmoid":
            _xgb_sigmoid(raw32.ravel(), out32.ravel())
        elif name == "xgb_exp":
            _xgb_exp(raw32.ravel(), out32.ravel())
        elif name == "xgb_softmax":
            if raw32.ndim != 2:
                raise ValueError("xgb_softmax needs an ensemble with n_outputs > 1.")
            _xgb_softmax(raw32, out32)
        else:
            raise ValueError(f"unknown output transform {name!r}")
        return out32
    if name == "sklearn_exp":  # scikit-learn's LogLink.inverse
        return np.exp(np.asarray(raw, dtype=np.float64))
    if name == "sklearn_softmax":
        if raw.ndim != 2:
            raise ValueError("sklearn_softmax needs an ensemble with n_outputs > 1.")
        return _sklearn_softmax(raw, ensemble.transform_params.get("order", "F"))
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
