"""RankBoost's round kernels on the GPU: potentials, integral histogram, best stump, update.

The CUDA source and one thin launch function per stage; the state they work on (binned
matrices, scores, potentials, histogram: CuPy arrays) is held by the CUDA back-end,
:class:`skltr._rankboost.kernels_cuda.GPURoundKernels`, which the loop of
:mod:`skltr._rankboost.boosting` drives as it drives the CPU's. Kernels only: nothing here
imports the engines, so the module sits beside :mod:`skltr._cpu.rankboost` (the same rounds
on the CPU). Everything of a round stays on the device; per round the host reads one
``(feature, bin, q_def, r)`` (32 bytes)::

    pair_log_sums   one warp per query, its rows in label order: log A(d), log B(d) per
                    row and log sum_d exp(-H(d)) A(d) per query (running log-sum-exp)
    log_normaliser  one block: log Z = log sum_q exp(log c_q + log_pairs_q)
    potentials      one thread per row: pi(d) in fixed point (int64, 2**-PI_SHIFT)
    build_histogram one block per (row chunk, FPB features): shared-memory sums of pi over
                    the one-byte bins, flushed to the global int64 histogram
    feature_best    one warp per feature: suffix sums over bins (the integral histogram),
                    the bin and missing side of largest |r|
    best_feature    one block: the feature of largest |r| -> (f, b, q_def, r), 4 x int64
    add_stump       one thread per row: H += alpha * h(d)

The shared histogram (why two 32-bit words and a carry): on Hopper a 64-bit ``atomicAdd`` to
shared memory is a compare-and-swap loop, 32-bit adds are native. Each potential ``q``
(int64) is split as ``q = hi * 2**32 + lo`` (``lo`` unsigned); a bin keeps the 32-bit sum of
``lo`` and the 32-bit sum of ``hi`` plus the carries out of ``lo`` (``atomicAdd`` returns the
old value: a carry is ``old + lo < old``). That is the exact 64-bit sum in any order, and
``hi``'s sum cannot overflow: ``sum |q| <= 2**61 + n`` (``sum |pi| <= 2``), so ``|sum hi +
carries| <= 2**29 + 2n``. Integer sums make the histogram, hence the stump, independent of
the order of the atomics: the GPU chooses what the CPU chooses from the same potentials.
The potentials themselves come from CUDA's ``exp`` / ``log``, which may differ from the
CPU's in the last bit, so a whole fit agrees with the CPU's stumps unless two candidates'
``|r|`` are within a few units of 2**-60 (``tests/test_rankboost_gpu.py``).
"""

from __future__ import annotations

import cupy
import numpy as np

from .._cpu.rankboost import PI_SHIFT
from ._compile import blocks, module

__all__ = ["add_stump", "best_stump", "build_histogram", "features_per_block",
           "fill_skipped_bins", "pair_log_sums", "potentials"]

_SOURCE = r"""
__device__ __forceinline__ void lse_add(double& mx, double& s, double v) {
    // running log-sum-exp (the sum is s * exp(mx)); add exp(v)
    if (v > mx) { s = s * exp(mx - v) + 1.0; mx = v; } else { s += exp(v - mx); }
}
__device__ __forceinline__ double lse(double mx, double s) {
    return s > 0.0 ? mx + log(s) : NEG_INF;
}

__device__ __forceinline__ double warp_max(double v) {
    for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ void lse_merge(double& mx, double& s, double gm, double gs) {
    // (mx, s) += (gm, gs): two log-sum-exp partial sums, each s * exp(mx)
    if (gs == 0.0) return;
    if (gm > mx) { s = s * exp(mx - gm) + gs; mx = gm; } else { s += gs * exp(gm - mx); }
}
__device__ __forceinline__ void warp_merge(double& mx, double& s, double lm, double ls) {
    // add every lane's partial sum (lm, ls) to the warp-uniform running sum (mx, s)
    const double gm = warp_max(lm);
    lse_merge(mx, s, gm, warp_sum(ls > 0.0 ? ls * exp(lm - gm) : 0.0));
}
__device__ __forceinline__ i64 group_end(const double* y, const i64* order, i64 i, i64 hi,
                                         int lane) {
    // first k > i with y[order[k]] != y[order[i]] (or hi), by ballots over 32 rows at once
    const double yi = y[order[i]];
    for (i64 j = i;; j += 32) {
        const i64 k = j + lane;
        const unsigned same = __ballot_sync(0xffffffffu, k < hi && y[order[k]] == yi);
        if (same != 0xffffffffu) return j + __ffs(~same) - 1;
    }
}
__device__ __forceinline__ i64 group_start(const double* y, const i64* order, i64 lo, i64 i,
                                           int lane) {
    // first k >= lo with y[order[k]] == y[order[i - 1]], scanning downwards
    const double yi = y[order[i - 1]];
    for (i64 j = i;; j -= 32) {
        const i64 k = j - 1 - lane;
        const unsigned same = __ballot_sync(0xffffffffu, k >= lo && y[order[k]] == yi);
        if (same != 0xffffffffu) return j - (__ffs(~same) - 1);
    }
}

extern "C" __global__ void pair_log_sums(const double* H, const double* y, const i64* order,
                                         const i64* group_ptr, int n_queries, double* log_a,
                                         double* log_b, double* log_pairs) {
    // skltr._cpu.rankboost._query_log_sums with one warp per query: the label groups one
    // after another, a group's rows across the lanes (each lane a running log-sum-exp,
    // merged by warp reductions)
    const int q = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (q >= n_queries) return;            // whole warps leave together
    const i64 lo = group_ptr[q], hi = group_ptr[q + 1];
    double mx = NEG_INF, s = 0.0;          // sum of exp(H) over the lower labels
    double pm = NEG_INF, ps = 0.0;         // sum over rows of exp(log A - H)
    for (i64 i = lo; i < hi;) {            // ascending label groups: A over lower labels
        const i64 j = group_end(y, order, i, hi, lane);
        const double la = lse(mx, s);
        double lm = NEG_INF, ls = 0.0, qm = NEG_INF, qs = 0.0;
        for (i64 k = i + lane; k < j; k += 32) {
            const i64 r = order[k];
            const double h = H[r];
            log_a[r] = la;
            lse_add(lm, ls, h);
            if (la > NEG_INF) lse_add(qm, qs, la - h);
        }
        warp_merge(mx, s, lm, ls);
        warp_merge(pm, ps, qm, qs);
        i = j;
    }
    mx = NEG_INF; s = 0.0;                 // sum of exp(-H) over the higher labels
    for (i64 i = hi; i > lo;) {            // descending label groups: B over higher labels
        const i64 j = group_start(y, order, lo, i, lane);
        const double lb = lse(mx, s);
        double lm = NEG_INF, ls = 0.0;
        for (i64 k = j + lane; k < i; k += 32) {
            const i64 r = order[k];
            log_b[r] = lb;
            lse_add(lm, ls, -H[r]);
        }
        warp_merge(mx, s, lm, ls);
        i = j;
    }
    if (lane == 0) log_pairs[q] = lse(pm, ps);
}

extern "C" __global__ void log_normaliser(const double* log_c, const double* log_pairs,
                                          int n_queries, double* log_z, u64* total) {
    // one block: log Z = log-sum-exp of the finite log c_q + log_pairs_q (0 when none);
    // a fixed reduction tree: the same bits every run
    __shared__ double red[1024];
    const int t = threadIdx.x;
    double mx = NEG_INF;
    for (int q = t; q < n_queries; q += blockDim.x) {
        const double v = log_c[q] + log_pairs[q];
        if (isfinite(v)) mx = fmax(mx, v);
    }
    red[t] = mx;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) red[t] = fmax(red[t], red[t + k]);
        __syncthreads();
    }
    mx = red[0];
    __syncthreads();
    double s = 0.0;
    for (int q = t; q < n_queries; q += blockDim.x) {
        const double v = log_c[q] + log_pairs[q];
        if (isfinite(v)) s += exp(v - mx);
    }
    red[t] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) red[t] += red[t + k];
        __syncthreads();
    }
    if (t == 0) { *log_z = red[0] > 0.0 ? mx + log(red[0]) : 0.0; *total = 0; }
}

extern "C" __global__ void potentials(const double* H, const double* log_a,
                                      const double* log_b, const double* row_log_c,
                                      const double* log_z, i64 n, i64* pi, u64* total) {
    // pi(d) in fixed point; *total (zeroed by log_normaliser) += sum of pi, exact (mod 2**64)
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 q = 0;
    if (i < n) {
        const double base = row_log_c[i] - *log_z;
        const double v = exp(base - H[i] + log_a[i]) - exp(base + H[i] + log_b[i]);
        q = llrint(ldexp(v, PI_SHIFT));    // v * 2**PI_SHIFT, exact
        pi[i] = q;
    }
    for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
    if ((threadIdx.x & 31) == 0 && q != 0) atomicAdd(total, (u64)q);
}

extern "C" __global__ void build_histogram(const u32* __restrict__ XT, i64 n, int n_features,
                                           int n_bins_total, int rows_per_block,
                                           const i64* __restrict__ pi,
                                           const int* __restrict__ skip_bin, i64* hist) {
    // XT: the bins feature-major, 4 features a word: XT[w * n + row] (a warp reads 32 rows'
    // word w in one 128-byte line). Block (row chunk x, feature group y); shared: the low
    // words of the FPB x n_bins_total cells, their high words (+ carries), the skipped bins.
    // A row adds nothing to its feature's skip bin (fill_skipped_bins derives it): the most
    // frequent bin, whose atomics would otherwise queue on one address.
    extern __shared__ u32 sh[];
    const int n_cells = FPB * n_bins_total;
    int* skip = (int*)(sh + 2 * n_cells);
    const int f0 = blockIdx.y * FPB;
    for (int k = threadIdx.x; k < 2 * n_cells; k += blockDim.x) sh[k] = 0;
    for (int k = threadIdx.x; k < FPB; k += blockDim.x)
        skip[k] = f0 + k < n_features ? skip_bin[f0 + k] : -1;
    __syncthreads();
    const i64 start = (i64)blockIdx.x * rows_per_block;
    const i64 end = min(start + rows_per_block, n);
    const int n_words = min(FPB / 4, (n_features + 3) / 4 - blockIdx.y * (FPB / 4));
    const u32* xw = XT + (i64)blockIdx.y * (FPB / 4) * n;
    for (i64 row = start + threadIdx.x; row < end; row += blockDim.x) {
        const i64 q = pi[row];
        if (q == 0) continue;              // adds nothing (rows of queries without pairs)
        const u32 lo = (u32)q, hi = (u32)(q >> 32);   // arithmetic shift: q = hi*2**32 + lo
        for (int w = 0; w < n_words; ++w) {
            const u32 word = xw[(i64)w * n + row];
            #pragma unroll
            for (int b = 0; b < 4; ++b) {
                const int bin = (word >> (8 * b)) & 255u;
                if (bin == skip[w * 4 + b]) continue;
                const int cell = (w * 4 + b) * n_bins_total + bin;
                const u32 old = atomicAdd(sh + cell, lo);
                atomicAdd(sh + n_cells + cell, hi + (u32)(old + lo < old));
            }
        }
    }
    __syncthreads();
    const int n_f = min(FPB, n_features - f0);     // pad features are not written back
    for (int k = threadIdx.x; k < n_f * n_bins_total; k += blockDim.x) {
        const i64 v = (i64)(int)sh[n_cells + k] * 4294967296LL + (i64)sh[k];
        if (v != 0) atomicAdd((u64*)(hist + (i64)f0 * n_bins_total + k), (u64)v);
    }
}

extern "C" __global__ void fill_skipped_bins(i64* hist, const int* skip_bin, int n_features,
                                             int n_bins_total, const u64* total) {
    // one warp per feature: hist[f, skip] = (sum of pi) - (the other bins), exact mod 2**64
    const int f = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (f >= n_features || skip_bin[f] < 0) return;
    u64* h = (u64*)(hist + (i64)f * n_bins_total);
    u64 s = 0;
    for (int b = lane; b < n_bins_total; b += 32) s += h[b];   // the skip bin holds 0
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) h[skip_bin[f]] = *total - s;
}

__device__ __forceinline__ bool better(i64 a, int fa, i64 b, int fb) {
    // larger |r| wins; ties: the lower index (bin or feature)
    return a > b || (a == b && fa < fb);
}

extern "C" __global__ void feature_best(const i64* hist, const int* n_bins, int n_features,
                                        int n_bins_total, int missing_bin, i64* f_abs,
                                        i64* f_r, int* f_b, int* f_q) {
    // one warp per feature: skltr._cpu.rankboost._feature_best. r(b) = sum of the bins above
    // b (b < n_bins[f]), plus the missing bin's sum when q_def = 1; ties: lower bin, q_def 0.
    const int f = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (f >= n_features) return;
    const int nb = n_bins[f];
    const i64* h = hist + (i64)f * n_bins_total;
    const i64 miss = h[missing_bin];
    i64 best_abs = -1, best_r = 0;
    int best_b = 0x7fffffff, best_q = 0;
    i64 above = 0;                          // sum of the bins above the current chunk
    for (int top = nb; top > 0; top -= 32) {  // chunks of 32 bins, from the top down
        const int b = top - 1 - lane;
        const i64 v = b >= 0 ? h[b] : 0;
        i64 suffix = v;                     // inclusive sum of this chunk's bins >= b
        for (int o = 1; o < 32; o <<= 1) {
            const i64 u = __shfl_up_sync(0xffffffffu, suffix, o);
            if (lane >= o) suffix += u;
        }
        if (b >= 0) {
            const i64 r0 = above + suffix - v, r1 = r0 + miss;
            const i64 a0 = r0 < 0 ? -r0 : r0, a1 = r1 < 0 ? -r1 : r1;
            const i64 a = a0 >= a1 ? a0 : a1;
            if (better(a, b, best_abs, best_b)) {
                best_abs = a; best_b = b;
                best_q = a0 >= a1 ? 0 : 1; best_r = a0 >= a1 ? r0 : r1;
            }
        }
        above += __shfl_sync(0xffffffffu, suffix, 31);  // the chunk's total
    }
    for (int o = 16; o > 0; o >>= 1) {
        const i64 a = __shfl_down_sync(0xffffffffu, best_abs, o);
        const int b = __shfl_down_sync(0xffffffffu, best_b, o);
        const i64 r = __shfl_down_sync(0xffffffffu, best_r, o);
        const int qd = __shfl_down_sync(0xffffffffu, best_q, o);
        if (better(a, b, best_abs, best_b)) { best_abs = a; best_b = b; best_r = r; best_q = qd; }
    }
    if (lane == 0) {
        const bool ok = nb >= 1;
        f_abs[f] = ok ? best_abs : -1; f_r[f] = ok ? best_r : 0;
        f_b[f] = ok ? best_b : -1; f_q[f] = ok ? best_q : 0;
    }
}

extern "C" __global__ void best_feature(const i64* f_abs, const i64* f_r, const int* f_b,
                                        const int* f_q, int n_features, i64* out) {
    // one block of 1024: the feature of largest |r| (ties: the lowest); out = (f, b, q, r),
    // f = -1 when no feature has a threshold
    __shared__ i64 red_a[1024];
    __shared__ int red_f[1024];
    const int t = threadIdx.x;
    i64 ba = -1; int bf = 0x7fffffff;
    for (int f = t; f < n_features; f += blockDim.x)
        if (f_b[f] >= 0 && better(f_abs[f], f, ba, bf)) { ba = f_abs[f]; bf = f; }
    red_a[t] = ba; red_f[t] = bf;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k && better(red_a[t + k], red_f[t + k], red_a[t], red_f[t])) {
            red_a[t] = red_a[t + k]; red_f[t] = red_f[t + k];
        }
        __syncthreads();
    }
    if (t == 0) {
        const int f = red_f[0];
        const bool ok = red_a[0] >= 0;
        out[0] = ok ? f : -1; out[1] = ok ? f_b[f] : -1;
        out[2] = ok ? f_q[f] : 0; out[3] = ok ? f_r[f] : 0;
    }
}

extern "C" __global__ void add_stump(const u8* X, i64 n, i64 row_stride, i64 word_stride,
                                     int feature, int bin, int q_def, int missing_bin,
                                     double alpha, double* H) {
    // H += alpha * h(d), h = [bin > b] (missing: q_def); "+ 0.0" where h = 0, as the CPU.
    // The bin of (row i, feature f) is at (f / 4) * word_stride + f % 4 + i * row_stride:
    // row-major (row_stride = padded features, word_stride = 4) or XT (4, 4 n).
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int v = X[(i64)(feature / 4) * word_stride + feature % 4 + i * row_stride];
    const bool h = v == missing_bin ? q_def != 0 : v > bin;
    H[i] += h ? alpha : 0.0;
}
"""

#: Threads of the histogram block: 512 (16 warps) measured faster than 256 on the H100 with
#: the feature-major reads (467 vs 583 us at 173k x 2,576, uniform bins).
HIST_THREADS = 512
#: Shared memory of one histogram block: 8 bytes a bin, so 24 features of 256 bins in 48 KiB
#: (no opt-in needed; four blocks fit one Hopper SM). 64 and 96 KiB measured no faster.
HIST_SHARED_BYTES = 48 * 1024
#: Most features of one histogram block (bounds the per-row loop when bins are few).
HIST_MAX_FEATURES_PER_BLOCK = 32
#: Rows of one histogram block: fewer global atomics the larger, more blocks the smaller;
#: at 173k x 2,576 on the H100, 2048 / 4096 / 8192 rows measured 570 / 542 / 538 us (512
#: threads, the final kernel).
HIST_ROWS_PER_BLOCK = 4096
#: Threads of the per-query (a warp each), per-row and per-feature (a warp each) kernels.
THREADS = 128


@cupy.memoize(for_each_device=True)
def _module(fpb):
    return module(_SOURCE, {"FPB": fpb, "PI_SHIFT": PI_SHIFT})


def features_per_block(n_bins_total: int, n_features: int) -> int:
    """Features of one histogram block (a multiple of 4: one 32-bit word of packed bins)."""
    fit = min(HIST_SHARED_BYTES // (8 * int(n_bins_total)), HIST_MAX_FEATURES_PER_BLOCK)
    return max(4, min(fit, -(-int(n_features) // 4) * 4) // 4 * 4)


def _kernel(fpb, name):
    return _module(fpb).get_function(name)


def pair_log_sums(fpb, H, y, order, group_ptr, n_queries, log_a, log_b, log_pairs):
    """``log A``, ``log B`` per row and ``log_pairs`` per query from the scores ``H`` (a warp
    a query; ``order``: each query's rows in label order). ``fpb``: the features per
    histogram block the module was compiled for (:func:`features_per_block`)."""
    t = THREADS
    _kernel(fpb, "pair_log_sums")(
        (blocks(n_queries * 32, t),), (t,),
        (H, y, order, group_ptr, np.int32(n_queries), log_a, log_b, log_pairs))


def potentials(fpb, H, log_a, log_b, log_c, log_pairs, row_log_c, n_queries, log_z, pi,
               total):
    """``log_z`` (one block), then ``pi`` (fixed point) per row and their sum in ``total``
    (exact mod 2**64, for :func:`fill_skipped_bins`)."""
    n, t = H.shape[0], THREADS
    _kernel(fpb, "log_normaliser")((1,), (1024,), (log_c, log_pairs, np.int32(n_queries),
                                                   log_z, total))
    _kernel(fpb, "potentials")((blocks(n, t),), (t,),
                               (H, log_a, log_b, row_log_c, log_z, np.int64(n), pi, total))


def build_histogram(fpb, XT, n, n_features, n_bins_total, pi, skip_bin, hist):
    """Add the fixed-point sums of ``pi`` per (feature, bin) into ``hist`` (zeroed by the
    caller), but for each feature's ``skip_bin``. ``XT``: the bins feature-major, 4 features a
    32-bit word (``XT[w, row]``); ``n`` rows, ``n`` and ``n_features`` both non-zero."""
    smem = fpb * n_bins_total * 8 + fpb * 4
    grid = (blocks(n, HIST_ROWS_PER_BLOCK), -(-n_features // fpb))
    kern = _kernel(fpb, "build_histogram")
    if smem > 48 * 1024:  # above the default: opt in (Hopper allows up to 227 KiB)
        kern.max_dynamic_shared_size_bytes = smem
    kern(grid, (HIST_THREADS,),
         (XT, np.int64(n), np.int32(n_features), np.int32(n_bins_total),
          np.int32(HIST_ROWS_PER_BLOCK), pi, skip_bin, hist), shared_mem=smem)


def fill_skipped_bins(fpb, hist, skip_bin, n_features, n_bins_total, total):
    """``hist[f, skip_bin[f]]``: ``total`` (the sum of ``pi``) less the feature's other bins."""
    t = THREADS
    _kernel(fpb, "fill_skipped_bins")(
        (blocks(n_features * 32, t),), (t,),
        (hist, skip_bin, np.int32(n_features), np.int32(n_bins_total), total))


def best_stump(fpb, hist, n_bins, n_features, n_bins_total, missing_bin, f_abs, f_r, f_b,
               f_q, out):
    """Each feature's best threshold (``f_abs``, ``f_r``, ``f_b``, ``f_q``: |r|, r, bin,
    q_def), then the best feature's ``(f, b, q_def, r)`` in ``out`` (4 x int64, ``r`` in
    fixed point; ``f`` -1 when no feature has a threshold). Not read back here."""
    t = THREADS
    _kernel(fpb, "feature_best")(
        (blocks(n_features * 32, t),), (t,),
        (hist, n_bins, np.int32(n_features), np.int32(n_bins_total), np.int32(missing_bin),
         f_abs, f_r, f_b, f_q))
    _kernel(fpb, "best_feature")((1,), (1024,), (f_abs, f_r, f_b, f_q, np.int32(n_features),
                                                 out))


def add_stump(fpb, X, n, row_stride, word_stride, feature, bin, q_def, missing_bin, alpha,
              scores):
    """``scores += alpha * h`` over ``n`` rows of the binned ``X`` (uint8 bins: row-major,
    ``row_stride`` = padded features and ``word_stride`` 4, or feature-major words, 4 and
    ``4 n``)."""
    t = THREADS
    _kernel(fpb, "add_stump")(
        (blocks(n, t),), (t,),
        (X, np.int64(n), np.int64(row_stride), np.int64(word_stride), np.int32(feature),
         np.int32(bin), np.int32(q_def), np.int32(missing_bin), np.float64(alpha), scores))
