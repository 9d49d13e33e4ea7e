"""Compiling CUDA C sources with the options every kernel of the package shares."""

from __future__ import annotations

import cupy
import numpy as np

#: ``--fmad=false``: no fused multiply-adds, so float64 expressions round exactly as the numba
#: (LLVM, no fast-math) CPU kernels do; ``-std=c++17`` for ``constexpr``.
NVRTC_OPTIONS = ("--fmad=false", "-std=c++17")

#: A null device pointer, for a kernel's optional array argument ("none given").
NULL = np.uint64(0)

#: Helpers prepended to every source.
COMMON = r"""
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;
#define NEG_INF (__longlong_as_double(0xfff0000000000000LL))
"""


#: float32 exactly under CuPy's ``-ftz=true`` (which cannot be turned off: float32 arithmetic,
#: compares and conversions would flush subnormals to zero, which the CPU does not). float32
#: values are held in doubles: ``widen`` (float -> double, a subnormal rebuilt from its
#: bits) and ``f32_round`` (double -> nearest float32, ties to even, subnormals included) and
#: ``to_float32`` (the same as a float).
EXACT_FLOAT32 = r"""
__device__ __forceinline__ double widen(double x) { return x; }
__device__ __forceinline__ double widen(float x) {
    const u32 u = __float_as_uint(x);
    if ((u & 0x7f800000u) == 0u) {                       // zero or subnormal
        const double v = (double)(u & 0x007fffffu) * __longlong_as_double(0x36a0000000000000LL);
        return (u >> 31) ? -v : v;                       // mantissa * 2**-149
    }
    return (double)x;
}
__device__ __forceinline__ double f32_round(double x) {
    if (fabs(x) < __longlong_as_double(0x3810000000000000LL))    // below 2**-126: subnormal
        return rint(x * __longlong_as_double(0x4940000000000000LL))   // x * 2**149
               * __longlong_as_double(0x36a0000000000000LL);          // * 2**-149
    return (double)(float)x;                   // normal (or inf / NaN): no flush involved
}
__device__ __forceinline__ float to_float32(double x) {
    // (float)x, subnormal results included (a flushed conversion would give 0): the
    // subnormal's bits are its mantissa, x * 2**149 rounded to even (2**23: the smallest
    // normal, whose bits follow on)
    if (fabs(x) < __longlong_as_double(0x3810000000000000LL)) {
        const u32 m = (u32)rint(fabs(x) * __longlong_as_double(0x4940000000000000LL));
        return __uint_as_float((signbit(x) ? 0x80000000u : 0u) | m);  // -0.0 stays -0.0
    }
    return (float)x;
}
"""


def module(source: str, defines: dict | None = None) -> cupy.RawModule:
    """A ``RawModule`` of ``source`` with ``#define``s prepended (compiled lazily by CuPy)."""
    head = "".join(f"#define {k} {int(v)}\n" for k, v in (defines or {}).items())
    return cupy.RawModule(code=head + COMMON + source, options=NVRTC_OPTIONS)


def blocks(n: int, threads: int) -> int:
    """Blocks of ``threads`` covering ``n`` items (at least 1)."""
    return max(1, -(-int(n) // int(threads)))
