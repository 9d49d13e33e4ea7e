"""``exp`` and ``log2`` computed by one sequence of IEEE operations on both devices.

The objectives' gradients must be the same bits on the CPU and the GPU (a CPU fit and a GPU
fit give the same model, issue #27), but the two math libraries round ``exp`` and ``log``
differently in the last place. These are fdlibm's algorithms (``e_exp.c``, ``e_log.c``: under
1 ulp) written once here for numba and once in :data:`skltr._gpu.libm.SOURCE` for CUDA,
operation for operation; with no fused multiply-adds on either side (numba without fast-math,
NVRTC with ``--fmad=false``) every intermediate rounds alike. ``tests/test_gbdt_gpu.py``
checks the two bit for bit.
"""

import math

from numba import njit

__all__ = ["exp", "log2"]

_O_THRESHOLD = 7.09782712893383973096e+02
_U_THRESHOLD = -7.45133219101941108420e+02
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
_P1 = 1.66666666666666019037e-01
_P2 = -2.77777777770155933842e-03
_P3 = 6.61375632143793436117e-05
_P4 = -1.65339022054652515390e-06
_P5 = 4.13813679705723846039e-08

_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_SQRT_HALF = 0.70710678118654752440


@njit(cache=True, inline="always")
def exp(x):
    """``e**x`` (fdlibm ``__ieee754_exp``; NaN gives NaN)."""
    if x != x:
        return x
    if x > _O_THRESHOLD:
        return math.inf
    if x < _U_THRESHOLD:
        return 0.0
    ax = abs(x)
    if ax < 3.7252902984e-09:  # 2**-28: 1 + x is exact to the last place
        return 1.0 + x
    k = 0
    hi = x
    lo = 0.0
    if ax > 0.34657359027997264:  # 0.5 * ln2
        k = int(_INV_LN2 * x + (-0.5 if x < 0.0 else 0.5))
        hi = x - k * _LN2_HI
        lo = k * _LN2_LO
        x = hi - lo
    t = x * x
    c = x - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
    if k == 0:
        return 1.0 - ((x * c) / (c - 2.0) - x)
    y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi)
    return math.ldexp(y, k)


@njit(cache=True, inline="always")
def log2(x):
    """``log2(x)`` for finite ``x > 0`` (fdlibm ``__ieee754_log`` times ``1 / ln2``)."""
    m, e = math.frexp(x)  # x = m * 2**e, m in [0.5, 1)
    if m < _SQRT_HALF:
        m *= 2.0
        e -= 1
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    r = t2 + t1
    hfsq = 0.5 * f * f
    dk = float(e)
    ln = dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)
    return ln * _INV_LN2
