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
from .grower import DeviceBinned

__all__ = ["GPURoundKernels", "boost", "features_per_block"]

_SOURCE = r"""
__device__ __forceinline__ void lse_add(double& mx, double& s, double v) {
    // running log-sum-exp (the sum is s * exp(mx)); add exp(v)
    if (v > mx) { s = s * exp(mx - v) + 1.0; mx = v; } else { s += exp(v - mx); }
}
__device__ __forceinline__ double lse(double mx, double s) {
    return s > 0.0 ? mx + log(s) : NEG_INF;
}

extern "C" __global__ void pair_log_sums(const double* H, const double* y, const i64* order,
                                         const i64* group_ptr, int n_queries, double* log_a,
                                         double* log_b, double* log_pairs) {
    // skltr._cpu.rankboost._query_log_sums, one thread per query
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n_queries) return;
    const i64 lo = group_ptr[q], hi = group_ptr[q + 1];
    double mx = NEG_INF, s = 0.0;
    for (i64 i = lo; i < hi;) {            // ascending label groups: A over lower labels
        i64 j = i;
        const double yi = y[order[i]];
        while (j < hi && y[order[j]] == yi) ++j;
        const double la = lse(mx, s);
        for (i64 k = i; k < j; ++k) log_a[order[k]] = la;
        for (i64 k = i; k < j; ++k) lse_add(mx, s, H[order[k]]);
        i = j;
    }
    mx = NEG_INF; s = 0.0;
    for (i64 i = hi; i > lo;) {            // descending label groups: B over higher labels
        i64 j = i;
        const double yi = y[order[i - 1]];
        while (j > lo && y[order[j - 1]] == yi) --j;
        const double lb = lse(mx, s);
        for (i64 k = j; k < i; ++k) log_b[order[k]] = lb;
        for (i64 k = j; k < i; ++k) lse_add(mx, s, -H[order[k]]);
        i = j;
    }
    mx = NEG_INF; s = 0.0;
    for (i64 k = lo; k < hi; ++k) {
        const i64 r = order[k];
        if (log_a[r] > NEG_INF) lse_add(mx, s, log_a[r] - H[r]);
    }
    log_pairs[q] = lse(mx, s);
}

extern "C" __global__ void log_normaliser(const double* log_c, const double* log_pairs,
                                          int n_queries, double* log_z) {
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
    if (t == 0) *log_z = red[0] > 0.0 ? mx + log(red[0]) : 0.0;
}

extern "C" __global__ void potentials(const double* H, const double* log_a,
                                      const double* log_b, const double* row_log_c,
                                      const double* log_z, i64 n, i64* pi) {
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double base = row_log_c[i] - *log_z;
    const double v = exp(base - H[i] + log_a[i]) - exp(base + H[i] + log_b[i]);
    pi[i] = llrint(ldexp(v, PI_SHIFT));   // v * 2**PI_SHIFT, exact
}

extern "C" __global__ void build_histogram(const u32* __restrict__ X, int words_per_row,
                                           i64 n, int n_features, int n_bins_total,
                                           int rows_per_block, const i64* __restrict__ pi,
                                           i64* hist) {
    // block (row chunk x, feature group y); shared: the low words of the FPB x n_bins_total
    // cells, then their high words (+ carries): neighbouring bins in neighbouring banks
    extern __shared__ u32 sh[];
    const int n_cells = FPB * n_bins_total;
    for (int k = threadIdx.x; k < 2 * n_cells; k += blockDim.x) sh[k] = 0;
    __syncthreads();
    const i64 start = (i64)blockIdx.x * rows_per_block;
    const i64 end = min(start + rows_per_block, n);
    const int w0 = blockIdx.y * (FPB / 4);
    const int n_words = min(FPB / 4, words_per_row - w0);
    for (i64 row = start + threadIdx.x; row < end; row += blockDim.x) {
        const i64 q = pi[row];
        if (q == 0) continue;              // adds nothing (rows of queries without pairs)
        const u32 lo = (u32)q, hi = (u32)(q >> 32);   // arithmetic shift: q = hi*2**32 + lo
        const u32* xr = X + row * words_per_row + w0;
        for (int w = 0; w < n_words; ++w) {
            const u32 word = xr[w];
            #pragma unroll
            for (int b = 0; b < 4; ++b) {
                const int cell = (w * 4 + b) * n_bins_total + ((word >> (8 * b)) & 255u);
                const u32 old = atomicAdd(sh + cell, lo);
                atomicAdd(sh + n_cells + cell, hi + (u32)(old + lo < old));
            }
        }
    }
    __syncthreads();
    const int f0 = blockIdx.y * FPB;
    const int n_f = min(FPB, n_features - f0);     // pad features are not written back
    for (int k = threadIdx.x; k < n_f * n_bins_total; k += blockDim.x) {
        const i64 v = (i64)(int)sh[n_cells + k] * 4294967296LL + (i64)sh[k];
        if (v != 0) atomicAdd((u64*)(hist + (i64)f0 * n_bins_total + k), (u64)v);
    }
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

extern "C" __global__ void add_stump(const u8* X, i64 n, int stride, int feature, int bin,
                                     int q_def, int missing_bin, double alpha, double* H) {
    // H += alpha * h(d), h = [bin > b] (missing: q_def); "+ 0.0" where h = 0, as the CPU
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int v = X[i * stride + feature];
    const bool h = v == missing_bin ? q_def != 0 : v > bin;
    H[i] += h ? alpha : 0.0;
}
"""

#: Threads of the histogram block: 256 (8 warps), as the GBDT's histogram.
HIST_THREADS = 256
#: Shared memory of one histogram block: 8 bytes a bin, so 24 features of 256 bins in 48 KiB
#: (no opt-in needed; four blocks fit one Hopper SM).
HIST_SHARED_BYTES = 48 * 1024
#: Most features of one histogram block (bounds the per-row loop when bins are few).
HIST_MAX_FEATURES_PER_BLOCK = 32
#: Rows of one histogram block: fewer global atomics the larger; small enough for some
#: thousand blocks at the paper's 173k rows.
HIST_ROWS_PER_BLOCK = 8192
#: Threads of the per-query, per-row and per-feature (a warp each) kernels.
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
    potentials and histogram stay on the device. Stage times are CUDA event times (no
    synchronisation added to the loop).
    """

    def __init__(self, X, eval_Xs, params):
        self.mapper = fit_bin_mapper(X, params.n_thresholds, binning_seed(params.seed),
                                     params.n_jobs)
        self.data = DeviceBinned.from_mapper(X, self.mapper)
        self.mapper.has_missing = self.data.has_missing
        self.evals = [DeviceBinned.from_mapper(Xe, self.mapper).X_bytes for Xe in eval_Xs]
        self._timer = StageTimer()
        self.stage = self._timer.stage

    def start(self, y, group_ptr, log_c, order):
        """Send the fixed per-row and per-query arrays; zero the scores."""
        d = self.data
        n = d.n_samples
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
        self.pi = cupy.empty(n, cupy.int64)
        self.hist = cupy.zeros((d.n_features, d.n_bins_total), cupy.int64)
        m = max(d.n_features, 1)  # per feature: |r|, r, bin, q_def of its best threshold
        self.f_abs, self.f_r = cupy.empty(m, cupy.int64), cupy.empty(m, cupy.int64)
        self.f_b, self.f_q = cupy.empty(m, cupy.int32), cupy.empty(m, cupy.int32)
        self.best = cupy.empty(4, cupy.int64)
        self.fpb = features_per_block(d.n_bins_total, d.n_features)
        self.eval_scores_ = [cupy.zeros(Xe.shape[0]) for Xe in self.evals]

    def _kernel(self, name):
        return _module(self.fpb).get_function(name)

    def potentials(self):
        """``pi`` (fixed point) from the current scores."""
        n, t = self.data.n_samples, THREADS
        self._kernel("pair_log_sums")(
            (blocks(self.n_queries, t),), (t,),
            (self.H, self.y, self.order, self.group_ptr, np.int32(self.n_queries),
             self.log_a, self.log_b, self.log_pairs))
        self._kernel("log_normaliser")((1,), (1024,), (self.log_c, self.log_pairs,
                                                       np.int32(self.n_queries), self.log_z))
        self._kernel("potentials")((blocks(n, t),), (t,),
                                   (self.H, self.log_a, self.log_b, self.row_log_c,
                                    self.log_z, np.int64(n), self.pi))

    def histogram(self):
        """``hist[f, b]``: the fixed-point sum of ``pi`` over the rows in bin ``b``."""
        d = self.data
        self.hist.fill(0)
        if d.n_samples == 0 or d.n_features == 0:
            return
        smem = self.fpb * d.n_bins_total * 8
        grid = (blocks(d.n_samples, HIST_ROWS_PER_BLOCK), -(-d.n_features // self.fpb))
        kern = self._kernel("build_histogram")
        if smem > 48 * 1024:  # above the default: opt in (Hopper allows up to 227 KiB)
            kern.max_dynamic_shared_size_bytes = smem
        kern(
            grid, (HIST_THREADS,),
            (d.X_words, np.int32(d.X_words.shape[1]), np.int64(d.n_samples),
             np.int32(d.n_features), np.int32(d.n_bins_total), np.int32(HIST_ROWS_PER_BLOCK),
             self.pi, self.hist), shared_mem=smem)

    def best_stump(self):
        """``(feature, bin, q_def, r)`` of largest ``|r|`` (one 32-byte read)."""
        d = self.data
        t = THREADS
        self._kernel("feature_best")(
            (blocks(d.n_features * 32, t),), (t,),
            (self.hist, d.n_bins, np.int32(d.n_features), np.int32(d.n_bins_total),
             np.int32(d.missing_bin), self.f_abs, self.f_r, self.f_b, self.f_q))
        self._kernel("best_feature")((1,), (1024,), (self.f_abs, self.f_r, self.f_b, self.f_q,
                                                     np.int32(d.n_features), self.best))
        f, b, q_def, r = (int(v) for v in self.best.get())
        return f, b, q_def, r / 2.0 ** PI_SHIFT

    def _add(self, X_bytes, scores, f, b, q_def, alpha):
        n, t = X_bytes.shape[0], THREADS
        if n:
            self._kernel("add_stump")(
                (blocks(n, t),), (t,),
                (X_bytes, np.int64(n), np.int32(X_bytes.shape[1]), np.int32(f), np.int32(b),
                 np.int32(q_def), np.int32(self.data.missing_bin), np.float64(alpha), scores))

    def add_stump(self, f, b, q_def, alpha):
        """Training scores ``H += alpha * h``."""
        self._add(self.data.X_bytes, self.H, f, b, q_def, alpha)

    def eval_scores(self, f, b, q_def, alpha):
        """Add the stump to every eval set's scores; their host copies."""
        out = []
        for Xe, s in zip(self.evals, self.eval_scores_):
            self._add(Xe, s, f, b, q_def, alpha)
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
