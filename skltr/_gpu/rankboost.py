"""RankBoost's round kernels on the GPU: potentials, integral histogram, best stump, update.

The same rounds as the CPU (:mod:`skltr._cpu.rankboost`, the loop in
:mod:`skltr._rankboost.boosting`), with everything of a round on the device; per round the
host reads one ``(feature, bin, q_def, r)`` (32 bytes)::

    pair_log_sums   one thread per query, its rows in label order: log A(d), log B(d) per
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
from .._engine.rounds import binning_seed
from .._rankboost import boosting
from ._compile import blocks, module
from ._profile import StageTimer
from .binning import fit_bin_mapper
from .binned import DeviceBinned

__all__ = ["GPURoundKernels", "boost", "features_per_block"]

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


class GPURoundKernels:
    """The round kernels of :func:`skltr._rankboost.boosting.boost` on the current GPU.

    The methods and their meaning are those of
    :class:`skltr._rankboost.boosting.CPURoundKernels`; the binned matrices, scores,
    potentials and histogram stay on the device. The training rows' bins are kept
    feature-major (``XT``, 4 features a 32-bit word: coalesced reads in the histogram and
    the update); eval sets stay row-major. Stage times are CUDA event times (no
    synchronisation added to the loop).
    """

    def __init__(self, X, eval_Xs, params):
        self.mapper = fit_bin_mapper(X, params.n_thresholds, binning_seed(params.seed),
                                     params.n_jobs)
        data = DeviceBinned.from_mapper(X, self.mapper)
        self.mapper.has_missing = data.has_missing
        self.n, self.n_features = data.n_samples, data.n_features
        self.n_bins, self.missing_bin = data.n_bins, data.missing_bin
        self.n_bins_total = data.n_bins_total
        n_words = -(-self.n_features // 4)
        # one transposed copy, then the row-major matrix is freed (one byte a value kept)
        self.XT = cupy.ascontiguousarray(data.X_words[:, :n_words].T)
        del data
        self.evals = [DeviceBinned.from_mapper(Xe, self.mapper).X_bytes for Xe in eval_Xs]
        self.fpb = features_per_block(self.n_bins_total, self.n_features)
        self._timer = StageTimer()
        self.stage = self._timer.stage

    def start(self, y, group_ptr, log_c, order):
        """Send the fixed per-row and per-query arrays; zero the scores; find each feature's
        most frequent bin (the histogram's skipped bin)."""
        n, F = self.n, self.n_features
        self.y = cupy.asarray(y, cupy.float64)
        self.group_ptr = cupy.asarray(group_ptr, cupy.int64)
        self.n_queries = int(group_ptr.size - 1)
        self.log_c = cupy.asarray(log_c, cupy.float64)
        self.row_log_c = cupy.asarray(np.repeat(log_c, np.diff(group_ptr)), cupy.float64)
        self.order = cupy.asarray(order, cupy.int64)
        self.H = cupy.zeros(n, cupy.float64)
        self.log_a, self.log_b = cupy.empty(n), cupy.empty(n)
        self.log_pairs = cupy.empty(max(self.n_queries, 1))
        self.log_z = cupy.zeros(1)
        self.total = cupy.zeros(1, cupy.uint64)  # sum of pi, for the skipped bins
        self.hist = cupy.zeros((F, self.n_bins_total), cupy.int64)
        m = max(F, 1)  # per feature: |r|, r, bin, q_def of its best threshold
        self.f_abs, self.f_r = cupy.empty(m, cupy.int64), cupy.empty(m, cupy.int64)
        self.f_b, self.f_q = cupy.empty(m, cupy.int32), cupy.empty(m, cupy.int32)
        self.best = cupy.empty(4, cupy.int64)
        self.eval_scores_ = [cupy.zeros(Xe.shape[0]) for Xe in self.evals]
        # row counts per bin: the histogram of pi = 1 with nothing skipped
        self.skip_bin = cupy.full(m, -1, cupy.int32)
        self.pi = cupy.ones(n, cupy.int64)
        self._build_histogram()
        if F:
            self.skip_bin = cupy.argmax(self.hist, axis=1).astype(cupy.int32)

    def _kernel(self, name):
        return _module(self.fpb).get_function(name)

    def potentials(self):
        """``pi`` (fixed point) from the current scores, and their sum."""
        n, t = self.n, THREADS
        self._kernel("pair_log_sums")(
            (blocks(self.n_queries * 32, t),), (t,),
            (self.H, self.y, self.order, self.group_ptr, np.int32(self.n_queries),
             self.log_a, self.log_b, self.log_pairs))
        self._kernel("log_normaliser")((1,), (1024,), (self.log_c, self.log_pairs,
                                                       np.int32(self.n_queries), self.log_z,
                                                       self.total))
        self._kernel("potentials")((blocks(n, t),), (t,),
                                   (self.H, self.log_a, self.log_b, self.row_log_c,
                                    self.log_z, np.int64(n), self.pi, self.total))

    def _build_histogram(self):
        self.hist.fill(0)
        if self.n == 0 or self.n_features == 0:
            return
        smem = self.fpb * self.n_bins_total * 8 + self.fpb * 4
        grid = (blocks(self.n, HIST_ROWS_PER_BLOCK), -(-self.n_features // self.fpb))
        kern = self._kernel("build_histogram")
        if smem > 48 * 1024:  # above the default: opt in (Hopper allows up to 227 KiB)
            kern.max_dynamic_shared_size_bytes = smem
        kern(grid, (HIST_THREADS,),
             (self.XT, np.int64(self.n), np.int32(self.n_features),
              np.int32(self.n_bins_total), np.int32(HIST_ROWS_PER_BLOCK), self.pi,
              self.skip_bin, self.hist), shared_mem=smem)

    def histogram(self):
        """``hist[f, b]``: the fixed-point sum of ``pi`` over the rows in bin ``b``."""
        self._build_histogram()
        if self.n and self.n_features:
            t = THREADS
            self._kernel("fill_skipped_bins")(
                (blocks(self.n_features * 32, t),), (t,),
                (self.hist, self.skip_bin, np.int32(self.n_features),
                 np.int32(self.n_bins_total), self.total))

    def best_stump(self):
        """``(feature, bin, q_def, r)`` of largest ``|r|`` (one 32-byte read)."""
        t, F = THREADS, self.n_features
        self._kernel("feature_best")(
            (blocks(F * 32, t),), (t,),
            (self.hist, self.n_bins, np.int32(F), np.int32(self.n_bins_total),
             np.int32(self.missing_bin), self.f_abs, self.f_r, self.f_b, self.f_q))
        self._kernel("best_feature")((1,), (1024,), (self.f_abs, self.f_r, self.f_b, self.f_q,
                                                     np.int32(F), self.best))
        f, b, q_def, r = (int(v) for v in self.best.get())
        return f, b, q_def, r / 2.0 ** PI_SHIFT

    def _add(self, X, n, row_stride, word_stride, scores, f, b, q_def, alpha):
        if n:
            t = THREADS
            self._kernel("add_stump")(
                (blocks(n, t),), (t,),
                (X, np.int64(n), np.int64(row_stride), np.int64(word_stride), np.int32(f),
                 np.int32(b), np.int32(q_def), np.int32(self.missing_bin), np.float64(alpha),
                 scores))

    def add_stump(self, f, b, q_def, alpha):
        """Training scores ``H += alpha * h``."""
        self._add(self.XT, self.n, 4, 4 * self.n, self.H, f, b, q_def, alpha)

    def eval_scores(self, f, b, q_def, alpha):
        """Add the stump to every eval set's scores; their host copies."""
        out = []
        for Xe, s in zip(self.evals, self.eval_scores_):
            self._add(Xe, Xe.shape[0], Xe.shape[1], 4, s, f, b, q_def, alpha)
            out.append(s.get())
        return out

    def stage_seconds(self):
        """Seconds of GPU time per stage, summed over the rounds (synchronises once)."""
        return self._timer.summary()


def boost(X, y, group_ptr, sample_weight, params, eval_sets=(), device_index=0):
    """:func:`skltr._rankboost.boosting.boost` on GPU ``device_index`` (same parameters)."""
    with cupy.cuda.Device(int(device_index)):
        return boosting.boost(X, y, group_ptr, sample_weight, params, eval_sets,
                              kernels=GPURoundKernels)
