"""Compiling CUDA C sources with the options every kernel of the package shares."""

from __future__ import annotations

import cupy

#: ``--fmad=false``: no fused multiply-adds, so float64 expressions round exactly as the numba
#: (LLVM, no fast-math) CPU kernels do; ``-std=c++17`` for ``constexpr``.
NVRTC_OPTIONS = ("--fmad=false", "-std=c++17")

#: Helpers prepended to every source.
COMMON = r"""
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;
#define NEG_INF (__longlong_as_double(0xfff0000000000000LL))
"""


def module(source: str, defines: dict | None = None) -> cupy.RawModule:
    """A ``RawModule`` of ``source`` with ``#define``s prepended (compiled lazily by CuPy)."""
    head = "".join(f"#define {k} {int(v)}\n" for k, v in (defines or {}).items())
    return cupy.RawModule(code=head + COMMON + source, options=NVRTC_OPTIONS)


def blocks(n: int, threads: int) -> int:
    """Blocks of ``threads`` covering ``n`` items (at least 1)."""
    return max(1, -(-int(n) // int(threads)))
