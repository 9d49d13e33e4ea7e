"""CUDA kernels of gradient quantisation: the statistics the scales need, and the rounding.

The CUDA twins of :mod:`skltr._cpu.quantise`; the rule that turns the statistics into scales
is :mod:`skltr._gbdt.quantisation` (host, the same for both devices). Each row brings
``q_g = rint(g * 2**kg)`` (int32) and ``q_h = rint(h * 2**kh)`` (uint32: one-word scales let
one row's hessian reach ``2**32 - 1``), which :mod:`skltr._gpu.histogram` sums exactly.

* :func:`gradient_maxima`: ``max |g|``, ``max h`` and whether some ``h < 0`` (two-word scales).
* :func:`abs_sum_accumulators`: the exact sums of ``|g|`` and ``h`` as the CPU's integer
  accumulators (one per float32 exponent; one-word scales). Each block adds one chunk of
  ``STATS_CHUNK`` rows into 32-bit shared limbs (native shared atomics; a 64-bit shared add
  is a compare-and-swap loop on Hopper), the lanes of a warp with the same exponent in one
  atomic (``__match_any_sync``), and flushes them to global int64.
* :func:`quantise`: the rounding, and the root's sums.
"""

from __future__ import annotations

import cupy
import numpy as np

from .._cpu.quantise import N_FLOAT32_EXPONENTS
from . import _config
from ._compile import EXACT_FLOAT32, blocks, module

__all__ = ["gradient_maxima", "abs_sum_accumulators", "quantise", "STATS_CHUNK"]

#: Rows of one block of :func:`abs_sum_accumulators`: 8192 x (2**16 - 1) fits a 32-bit limb.
STATS_CHUNK = 8192

_SOURCE = EXACT_FLOAT32 + r"""
// Rows used: row = use_rows ? rows[p] : p for p < n_used.
extern "C" __global__ void gradient_stats(const float* g, const float* h, const u32* rows,
                                          int use_rows, i64 n_used, u32* out) {
    // out[0] = bits of max |g|, out[1] = bits of max(h, 0), out[2] = 1 if some h < 0.
    // Non-negative floats order as their bit patterns, so atomicMax on the bits is exact
    // (on the bits, not the flushed values: subnormals count).
    u32 mg = 0u, mh = 0u, neg = 0u;
    for (i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x; p < n_used;
         p += (i64)gridDim.x * blockDim.x) {
        const i64 r = use_rows ? (i64)rows[p] : p;
        const u32 gb = __float_as_uint(g[r]) & 0x7fffffffu, hb = __float_as_uint(h[r]);
        mg = max(mg, gb);
        if (hb >> 31) { neg |= (hb & 0x7fffffffu) != 0u; } else { mh = max(mh, hb); }
    }
    for (int o = 16; o > 0; o >>= 1) {
        mg = max(mg, __shfl_down_sync(0xffffffffu, mg, o));
        mh = max(mh, __shfl_down_sync(0xffffffffu, mh, o));
        neg |= __shfl_down_sync(0xffffffffu, neg, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMax(out, mg); atomicMax(out + 1, mh);
        if (neg) atomicOr(out + 2, 1u);
    }
}

extern "C" __global__ void abs_sum_accumulators(const float* g, const float* h, const u32* rows,
                                                int use_rows, i64 n_used, i64* acc) {
    // acc[c * 256 + e] += 24-bit significands of |v| with biased exponent e (subnormals:
    // e = 1), v = g (c = 0) or h (c = 1): skltr._cpu.quantise.gh_accumulators exactly;
    // acc[512] = 1 if some h < 0 (one read for both).
    __shared__ u32 lo[512], hi[512];
    for (int k = threadIdx.x; k < 512; k += blockDim.x) { lo[k] = 0u; hi[k] = 0u; }
    __syncthreads();
    const i64 start = (i64)blockIdx.x * STATS_CHUNK;
    const i64 end = min(start + STATS_CHUNK, n_used);
    u32 any_neg = 0u;
    // whole warps iterate together (inactive lanes add 0), so that lanes with the same
    // exponent add their significands in one atomic: gradients cluster on a few exponents,
    // and per-lane atomics on the same shared word serialise
    const i64 span = ((end - start + 31) / 32) * 32;
    for (i64 off = threadIdx.x; off < span; off += blockDim.x) {
        const i64 p = start + off;
        const bool live = p < end;
        const i64 r = live ? (use_rows ? (i64)rows[p] : p) : 0;
        #pragma unroll
        for (int c = 0; c < 2; ++c) {
            const u32 b = live ? __float_as_uint(c ? h[r] : g[r]) : 0u;
            if (c && (b >> 31) && (b & 0x7fffffffu)) any_neg = 1u;
            u32 e = (b >> 23) & 0xffu, m = b & 0x7fffffu;
            if (e > 0u) m += 0x800000u; else e = 1u;
#if __CUDA_ARCH__ >= 800
            const u32 group = __match_any_sync(0xffffffffu, e);
            const u32 m_lo = __reduce_add_sync(group, m & 0xffffu);  // < 2**21
            const u32 m_hi = __reduce_add_sync(group, m >> 16);      // < 2**13
            if ((threadIdx.x & 31) == __ffs(group) - 1) {
                atomicAdd(&lo[c * 256 + e], m_lo);
                atomicAdd(&hi[c * 256 + e], m_hi);
            }
#else
            atomicAdd(&lo[c * 256 + e], m & 0xffffu);
            atomicAdd(&hi[c * 256 + e], m >> 16);
#endif
        }
    }
    if (any_neg) atomicOr((unsigned long long*)(acc + 512), 1ull);
    __syncthreads();
    for (int k = threadIdx.x; k < 512; k += blockDim.x) {
        const i64 v = (i64)hi[k] * 65536 + (i64)lo[k];
        if (v) atomicAdd((u64*)(acc + k), (u64)v);
    }
}

extern "C" __global__ void quantise(const float* g, const float* h, const u32* rows,
                                    int use_rows, i64 n_used, double sg, double sh,
                                    int* qg, u32* qh, u64* sums) {
    // q_g = rint(g * 2**kg), q_h = rint(h * 2**kh) of the float32 values (subnormals kept),
    // as np.rint on float64; the rule's scales keep |q_g| < 2**31 and 0 <= q_h < 2**32.
    // sums[0] += q_g, sums[1] += q_h (exact, int64).
    i64 s0 = 0, s1 = 0;
    for (i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x; p < n_used;
         p += (i64)gridDim.x * blockDim.x) {
        const i64 r = use_rows ? (i64)rows[p] : p;
        const i64 a = (i64)rint(widen(g[r]) * sg);
        const i64 b = (i64)rint(widen(h[r]) * sh);
        qg[r] = (int)a; qh[r] = (u32)b; s0 += a; s1 += b;
    }
    for (int o = 16; o > 0; o >>= 1) {
        s0 += __shfl_down_sync(0xffffffffu, s0, o);
        s1 += __shfl_down_sync(0xffffffffu, s1, o);
    }
    if ((threadIdx.x & 31) == 0) { atomicAdd(sums, (u64)s0); atomicAdd(sums + 1, (u64)s1); }
}
"""


@cupy.memoize(for_each_device=True)
def _module():
    return module(_SOURCE, {"STATS_CHUNK": STATS_CHUNK})


def _rows_args(rows, n_used):
    use_rows = rows is not None
    if not use_rows:
        rows = cupy.zeros(1, cupy.uint32)
    return rows, np.int32(use_rows), np.int64(n_used)


def gradient_maxima(grad, hess, rows, n_used):
    """``(max |g|, max h, some h < 0)`` over the used rows (host floats, exact)."""
    t = _config.ELEMENTWISE_THREADS
    grid = min(blocks(n_used, t), _config.STATS_BLOCKS)
    out = cupy.zeros(3, cupy.uint32)
    _module().get_function("gradient_stats")(
        (grid,), (t,), (grad, hess, *_rows_args(rows, n_used), out))
    st = out.get()
    gmax, hmax = (float(v) for v in st[:2].view(np.float32))
    return gmax, hmax, bool(st[2])


def abs_sum_accumulators(grad, hess, rows, n_used):
    """The integer accumulators of ``|g|`` and ``h`` (host int64, shape ``(2, 256)``) and
    whether some ``h < 0``."""
    acc = cupy.zeros(2 * N_FLOAT32_EXPONENTS + 1, cupy.int64)
    _module().get_function("abs_sum_accumulators")(
        (blocks(n_used, STATS_CHUNK),), (_config.ELEMENTWISE_THREADS,),
        (grad, hess, *_rows_args(rows, n_used), acc))
    host = acc.get()
    return host[:-1].reshape(2, N_FLOAT32_EXPONENTS), bool(host[-1])


def quantise(grad, hess, rows, n_used, scale_g, scale_h, qg, qh):
    """Fill ``qg`` (int32) and ``qh`` (uint32) at the used rows; returns the host int64
    sums ``(sum q_g, sum q_h)``."""
    t = _config.ELEMENTWISE_THREADS
    grid = min(blocks(n_used, t), _config.STATS_BLOCKS)
    sums = cupy.zeros(2, cupy.uint64)
    _module().get_function("quantise")(
        (grid,), (t,), (grad, hess, *_rows_args(rows, n_used), np.float64(scale_g),
                        np.float64(scale_h), qg, qh, sums))
    return sums.get().view(np.int64)
