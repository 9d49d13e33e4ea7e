"""``det_exp`` and ``det_log2``: :mod:`skltr._cpu.libm` in CUDA C, operation for operation.

Prepended to the sources whose results must be the CPU's bits (the objectives); compiled with
``--fmad=false`` like every skltr kernel (``_compile.NVRTC_OPTIONS``), so each product and
sum rounds as numba's. ``tests/test_gbdt_gpu.py`` compares the two devices bit for bit.
"""

#: CUDA C source of the two functions (needs ``_compile.COMMON``).
SOURCE = r"""
__device__ __forceinline__ double det_exp(double x) {
    if (x != x) return x;
    if (x > 7.09782712893383973096e+02) return __longlong_as_double(0x7ff0000000000000LL);
    if (x < -7.45133219101941108420e+02) return 0.0;
    const double ax = fabs(x);
    if (ax < 3.7252902984e-09) return 1.0 + x;
    int k = 0;
    double hi = x, lo = 0.0;
    if (ax > 0.34657359027997264) {
        k = (int)(1.44269504088896338700e+00 * x + (x < 0.0 ? -0.5 : 0.5));
        hi = x - k * 6.93147180369123816490e-01;
        lo = k * 1.90821492927058770002e-10;
        x = hi - lo;
    }
    const double t = x * x;
    const double c = x - t * (1.66666666666666019037e-01 + t * (-2.77777777770155933842e-03
        + t * (6.61375632143793436117e-05 + t * (-1.65339022054652515390e-06
        + t * 4.13813679705723846039e-08))));
    if (k == 0) return 1.0 - ((x * c) / (c - 2.0) - x);
    const double y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi);
    return ldexp(y, k);
}

__device__ __forceinline__ double det_log2(double x) {
    int e;
    double m = frexp(x, &e);
    if (m < 0.70710678118654752440) { m *= 2.0; e -= 1; }
    const double f = m - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s, w = z * z;
    const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01
        + w * 1.531383769920937332e-01));
    const double t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01
        + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    const double r = t2 + t1;
    const double hfsq = 0.5 * f * f;
    const double dk = (double)e;
    const double ln = dk * 6.93147180369123816490e-01
        - ((hfsq - (s * (hfsq + r) + dk * 1.90821492927058770002e-10)) - f);
    return ln * 1.44269504088896338700e+00;
}
"""
