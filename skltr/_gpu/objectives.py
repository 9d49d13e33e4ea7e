"""GPU objectives: lambdarank / RankNet gradients of every query in one launch, regression.

The pair rule is :mod:`skltr._cpu.objectives`' formula for formula (LightGBM 4.x
``lambdarank``; XGBoost top-k ``rank:pairwise``); only float64 summation orders differ (see
below), so gradients agree with the CPU's to about 1e-12 relative before their float32
rounding.

One thread block per query (no host loop over queries)::

    block q:  rows lo..hi of the query
      1. order   small queries (<= QUERY_SHARED_MAX_DOCS): rank of each document by counting
                 (rank_i = #{j: s_j > s_i or s_j == s_i and j < i}: a stable descending sort
                 in shared memory); larger queries: positions from one global segmented sort
                 (cupy.lexsort by (query, -score, row)) and scratch in global memory
      2. arrays by position: score, gain (or label), exp(sigmoid (s - s_max))
      3. for i < min(truncation, cnt - 1):   threads take j = i+1+t, i+1+t+T, ...
             pair (i, j): plam[j] += .., phes[j] += ..   (each j by one thread: no atomics)
             lam_i, hes_i: block reduction in a fixed tree order, added by thread 0
      4. factor = mean weight * log2(1 + S) / S (LightGBM's normalisation), write float32

Differences from the CPU kernel: the CPU adds document ``i``'s partner terms in ``j`` order,
here a fixed-shape tree reduction adds them (deterministic, not the same rounding); ``exp`` is
CUDA's. No atomics anywhere: two runs give identical bits.

``rank_xendcg`` (``xendcg`` kernel): one thread per query runs the CPU's
``_xendcg_query`` statement for statement -- softmax, LightGBM's random gammas by the same
jump-ahead of ``Random(seed + q)``, the three-term series -- with per-row scratch in global
memory; only CUDA's ``exp`` differs from the CPU's, so gradients agree to ~1e-15 relative
before their float32 rounding. XE-NDCG is O(documents) per query (no pairs), so a thread per
query is enough: the kernel is a small part of a round.
"""

from __future__ import annotations

import cupy
import numpy as np

from .._cpu.objectives import discounts
from . import _config
from ._compile import blocks, module

_SOURCE = r"""
__device__ __forceinline__ double block_sum(double v, double* red) {
    // deterministic: fixed warp-shuffle tree, then warp partials in order by thread 0
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    double total = 0.0;
    if (threadIdx.x == 0) {
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) total += red[w];
        red[32] = total;
    }
    __syncthreads();
    return red[32];
}

extern "C" __global__ void pair_gradients(
        const double* __restrict__ scores, const double* __restrict__ key_row,
        const i64* __restrict__ group_ptr, const int* __restrict__ queries,
        const double* __restrict__ qweight, const double* __restrict__ inv_max_dcg,
        const double* __restrict__ discount, int truncation, double sigmoid, int normalize,
        int ranknet, float* grad, float* hess,
        const i64* __restrict__ perm, double* g_scratch, i64 n_rows) {
    // key_row: gains (lambdarank) or labels (ranknet): equal keys <=> equal labels, and
    // a larger key is the more relevant document.
    const int q = queries[blockIdx.x];
    const i64 lo = group_ptr[q], hi = group_ptr[q + 1];
    const int cnt = (int)(hi - lo);
    __shared__ double red[33];
    if (cnt <= 1) {
        for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
            grad[lo + i] = 0.f; hess[lo + i] = 0.f;
        }
        return;
    }
    int differ = 0;
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) differ |= key_row[lo + i] != key_row[lo];
    if (!__syncthreads_or(differ)) {
        for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
            grad[lo + i] = 0.f; hess[lo + i] = 0.f;
        }
        return;
    }
    double *ps, *pg, *pe, *plam, *phes; int* prow;
#if GLOBAL_SCRATCH
    ps = g_scratch + lo; pg = ps + n_rows; pe = pg + n_rows; plam = pe + n_rows;
    phes = plam + n_rows; prow = (int*)(g_scratch + 5 * n_rows) + lo;  // 6th block: ints
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
        const i64 r = perm[lo + i];
        ps[i] = scores[r]; pg[i] = key_row[r]; prow[i] = (int)(r - lo);
    }
#else
    extern __shared__ double sh[];
    ps = sh; pg = ps + cnt; pe = pg + cnt; plam = pe + cnt; phes = plam + cnt;
    prow = (int*)(phes + cnt);
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
        const double si = scores[lo + i];
        int rank = 0;
        for (int j = 0; j < cnt; ++j) {
            const double sj = scores[lo + j];
            rank += (sj > si) || (sj == si && j < i);
        }
        ps[rank] = si; pg[rank] = key_row[lo + i]; prow[rank] = i;
    }
#endif
    __syncthreads();
    const double s_max = ps[0], s_min = ps[cnt - 1];
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
        pe[i] = exp(sigmoid * (ps[i] - s_max)); plam[i] = 0.0; phes[i] = 0.0;
    }
    __syncthreads();
    const double imd = ranknet ? 0.0 : inv_max_dcg[q];
    const bool norm_by_diff = normalize && s_max != s_min && !ranknet;
    const int n_high = min(cnt - 1, truncation);
    const bool exact = sigmoid * (s_max - s_min) > 700.0;
    const double dist0 = norm_by_diff ? 0.009999999776482582 : 1.0;
    const double dist1 = norm_by_diff ? 1.0 : 0.0;
    const double sig2 = sigmoid * sigmoid;
    double sum_local = 0.0;
    for (int i = 0; i < n_high; ++i) {
        const double yi = pg[i], si = ps[i], ei = pe[i];
        const double di = ranknet ? 0.0 : discount[i];
        double lam_i = 0.0, hes_i = 0.0;
        for (int j = i + 1 + threadIdx.x; j < cnt; j += blockDim.x) {
            const double yj = pg[j];
            if (yj == yi) continue;
            const double ds = si - ps[j];
            const bool i_high = yi > yj;
            const double dist = dist0 + dist1 * ds;
            double pl, ql;
            if (exact) {
                const double p = 1.0 / (1.0 + exp(sigmoid * (i_high ? ds : -ds)));
                pl = p / dist; ql = 1.0 - p;
            } else {
                const double ej = pe[j];
                const double inv = 1.0 / ((ei + ej) * dist);
                pl = (i_high ? ej : ei) * inv;
                ql = (i_high ? ei : ej) * inv * dist;
            }
            double lam, hs;
            if (ranknet) {
                lam = sigmoid * pl;
                hs = 2.0 * sig2 * fmax(pl * ql, 1e-16);
            } else {
                const double w = fabs((yi - yj) * (di - discount[j])) * imd;
                lam = sigmoid * w * pl;
                hs = sig2 * w * pl * ql;
            }
            if (i_high) { lam_i -= lam; plam[j] += lam; } else { lam_i += lam; plam[j] -= lam; }
            hes_i += hs; phes[j] += hs;
            sum_local += 2.0 * lam;
        }
        const double tl = block_sum(lam_i, red);
        const double th = block_sum(hes_i, red);
        if (threadIdx.x == 0) { plam[i] += tl; phes[i] += th; }
        __syncthreads();
    }
    const double sum_lambdas = block_sum(sum_local, red);
    double factor = qweight[q];
    if (normalize && sum_lambdas > 0.0) factor *= log2(1.0 + sum_lambdas) / sum_lambdas;
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
        const i64 r = lo + prow[i];
        grad[r] = (float)(plam[i] * factor);
        hess[r] = (float)(phes[i] * factor);
    }
}

extern "C" __global__ void query_stats(const double* sorted_gain, const double* weights,
                                       const i64* group_ptr, int n_queries, int k,
                                       const double* discount, int weighted,
                                       double* inv_max_dcg, double* qweight) {
    // one thread per query: sequential sums in the CPU kernels' order
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n_queries) return;
    const i64 lo = group_ptr[q], hi = group_ptr[q + 1];
    const i64 kk = min((i64)k, hi - lo);
    double total = 0.0;
    for (i64 r = 0; r < kk; ++r) total += sorted_gain[lo + r] * discount[r];
    inv_max_dcg[q] = total > 0.0 ? 1.0 / total : 0.0;
    double w = 1.0;
    if (weighted) {
        double s = 0.0;
        for (i64 r = lo; r < hi; ++r) s += weights[r];
        w = s / (double)(hi - lo);
    }
    qweight[q] = w;
}

__device__ __forceinline__ u64 lcg_state(u64 seed, u64 query, u64 n_draws) {
    // LightGBM's Random(seed + q) after n_draws draws (x <- 214013 x + 2531011 mod 2**32),
    // by repeated squaring of the affine map: the CPU's _lcg_state
    const u64 mask = 0xFFFFFFFFull;
    u64 x = (seed + query) & mask, mult = 214013ull, plus = 2531011ull;
    u64 acc_mult = 1ull, acc_plus = 0ull;
    while (n_draws > 0) {
        if (n_draws & 1ull) {
            acc_mult = (acc_mult * mult) & mask;
            acc_plus = (acc_plus * mult + plus) & mask;
        }
        plus = ((mult + 1ull) * plus) & mask;
        mult = (mult * mult) & mask;
        n_draws >>= 1;
    }
    return (acc_mult * x + acc_plus) & mask;
}

__device__ __forceinline__ double ratio(double term, double one_minus_rho) {
    return one_minus_rho > 0.0 ? term / one_minus_rho : 0.0;
}

extern "C" __global__ void xendcg(const double* __restrict__ scores,
                                  const double* __restrict__ y,
                                  const i64* __restrict__ group_ptr, int n_queries,
                                  const double* __restrict__ qweight,
                                  const i64* __restrict__ query_index, u64 seed, u64 iteration,
                                  double* rho, double* params, double* lam,
                                  float* grad, float* hess) {
    // one thread per query; rho, params, lam: scratch indexed by row
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n_queries) return;
    const i64 lo = group_ptr[q], hi = group_ptr[q + 1];
    const i64 cnt = hi - lo;
    if (cnt <= 1) {
        for (i64 r = lo; r < hi; ++r) { grad[r] = 0.f; hess[r] = 0.f; }
        return;
    }
    i64 m = lo;
    for (i64 r = lo; r < hi; ++r) if (scores[r] > scores[m]) m = r;
    double total = 0.0;
    for (i64 r = lo; r < hi; ++r) { rho[r] = exp(scores[r] - scores[m]); total += rho[r]; }
    double others = 0.0;
    for (i64 r = lo; r < hi; ++r) if (r != m) others += rho[r];
    const double one_minus_top = others / total;
    for (i64 r = lo; r < hi; ++r) rho[r] /= total;
    const u64 mask = 0xFFFFFFFFull;
    u64 x = lcg_state(seed, (u64)query_index[q], iteration * (u64)cnt);  // global index
    double denom = 0.0;
    for (i64 r = lo; r < hi; ++r) {
        x = (214013ull * x + 2531011ull) & mask;
        const double gamma = (double)((x >> 16) & 0x7FFFull) / 32768.0;
        params[r] = pow(2.0, y[r]) - gamma;
        denom += params[r];
    }
    const double inv_denominator = 1.0 / fmax(1.0000000036274937e-15, denom);
    double sum_l1 = 0.0, rest_l1 = 0.0;
    for (i64 r = lo; r < hi; ++r) {
        const double term = -params[r] * inv_denominator + rho[r];
        lam[r] = term;
        params[r] = ratio(term, r == m ? one_minus_top : 1.0 - rho[r]);
        sum_l1 += params[r];
        rest_l1 += r == m ? 0.0 : params[r];
    }
    double sum_l2 = 0.0, rest_l2 = 0.0;
    for (i64 r = lo; r < hi; ++r) {
        const double term = rho[r] * (r == m ? rest_l1 : sum_l1 - params[r]);
        lam[r] += term;
        params[r] = ratio(term, r == m ? one_minus_top : 1.0 - rho[r]);
        sum_l2 += params[r];
        rest_l2 += r == m ? 0.0 : params[r];
    }
    const double w = qweight[q];
    for (i64 r = lo; r < hi; ++r) {
        lam[r] += rho[r] * (r == m ? rest_l2 : sum_l2 - params[r]);
        grad[r] = (float)(lam[r] * w);
        hess[r] = (float)(rho[r] * (r == m ? one_minus_top : 1.0 - rho[r]) * w);
    }
}

extern "C" __global__ void regression(const double* s, const double* y, const double* w,
                                      int weighted, i64 n, float* grad, float* hess) {
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    const double wr = weighted ? w[r] : 1.0;
    grad[r] = (float)(wr * (s[r] - y[r]));
    hess[r] = (float)wr;
}
"""


@cupy.memoize(for_each_device=True)
def _module(global_scratch):
    return module(_SOURCE, {"GLOBAL_SCRATCH": int(global_scratch)})


#: Bytes of shared memory per document in the small-query kernel (5 float64 + 1 int32).
_BYTES_PER_DOC = 44


class _DeviceObjective:
    """Device gradients of one fit's training set: ``gradients(scores, grad, hess, it)``.

    Built by :func:`make_gpu_objective` from the host objective of the same name; a subclass
    per kernel family holds its per-query constants, computed once.
    """

    def __init__(self, objective, y, group_ptr, sample_weight, query_index=None):
        self.name = objective.name
        y = np.ascontiguousarray(y, np.float64)
        self.n = y.shape[0]
        self.y = cupy.asarray(y)
        self.w = None if sample_weight is None else cupy.asarray(
            np.ascontiguousarray(sample_weight, np.float64))

    def gradients(self, scores, grad, hess, iteration=0):
        """Fill float32 ``grad`` / ``hess`` (device) at float64 device ``scores``.

        ``iteration`` (0-based round) only matters to ``rank_xendcg``'s random gammas.
        """
        raise NotImplementedError


class _Regression(_DeviceObjective):
    def gradients(self, scores, grad, hess, iteration=0):
        t = _config.ELEMENTWISE_THREADS
        _module(False).get_function("regression")(
            (blocks(self.n, t),), (t,),
            (scores, self.y, self.w if self.w is not None else self.y,
             np.int32(self.w is not None), np.int64(self.n), grad, hess))


class _XENDCG(_DeviceObjective):
    def __init__(self, objective, y, group_ptr, sample_weight, query_index=None):
        super().__init__(objective, y, group_ptr, sample_weight)
        group_ptr = np.ascontiguousarray(group_ptr, np.int64)
        self.seed = int(objective.seed)
        self.n_queries = int(group_ptr.size - 1)
        self.group_ptr = cupy.asarray(group_ptr)
        # each query's mean row weight, summed in the CPU's order (query_stats; k = 0: no DCG)
        self.qweight = cupy.empty(self.n_queries, cupy.float64)
        unused = cupy.empty(self.n_queries, cupy.float64)
        t = _config.ELEMENTWISE_THREADS
        _module(False).get_function("query_stats")(
            (blocks(self.n_queries, t),), (t,),
            (self.y, self.w if self.w is not None else self.y, self.group_ptr,
             np.int32(self.n_queries), np.int32(0), self.y, np.int32(self.w is not None),
             unused, self.qweight))
        self.scratch = cupy.empty((3, self.n), cupy.float64)
        # the gammas are seeded by the query's index in the whole training set
        self.query_index = cupy.asarray(np.ascontiguousarray(
            np.arange(self.n_queries) if query_index is None else query_index, np.int64))

    def gradients(self, scores, grad, hess, iteration=0):
        t = _config.ELEMENTWISE_THREADS
        _module(False).get_function("xendcg")(
            (blocks(self.n_queries, t),), (t,),
            (scores, self.y, self.group_ptr, np.int32(self.n_queries), self.qweight,
             self.query_index, np.uint64(self.seed & 0xFFFFFFFFFFFFFFFF),
             np.uint64(int(iteration)),
             self.scratch[0], self.scratch[1], self.scratch[2], grad, hess))


class _PairGradients(_DeviceObjective):
    """lambdarank and rank_pairwise: one kernel, pairs weighted by |delta NDCG| or 1."""

    def __init__(self, objective, y, group_ptr, sample_weight, query_index=None):
        super().__init__(objective, y, group_ptr, sample_weight)
        name = objective.name
        y = np.ascontiguousarray(y, np.float64)
        group_ptr = np.ascontiguousarray(group_ptr, np.int64)
        self.ranknet = name == "rank_pairwise"
        self.sigmoid = float(objective.sigmoid)
        self.normalize = bool(objective.normalize)
        if self.ranknet:
            level = objective.truncation_level
            self.truncation = np.iinfo(np.int32).max if level is None else int(level)
            key = y
        else:
            self.truncation = int(objective.truncation_level)
            key = np.power(2.0, y) - 1.0 if objective.gain == "exp2" else y
        self.truncation = int(min(self.truncation, np.iinfo(np.int32).max))
        self.key = cupy.asarray(np.ascontiguousarray(key, np.float64))
        sizes = np.diff(group_ptr)
        n_queries = sizes.size
        self.group_ptr = cupy.asarray(group_ptr)
        max_cnt = int(sizes.max(initial=1))
        self.discount = cupy.asarray(discounts(max(max_cnt, 1)))
        qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
        self.qid = cupy.asarray(qid.astype(np.float64))
        self.rowf = cupy.arange(self.n, dtype=cupy.float64)
        # ideal DCG: gains sorted descending within each query (one-time global sort)
        if self.ranknet:
            sorted_gain = cupy.zeros(self.n, cupy.float64)
        else:
            order = cupy.lexsort(cupy.stack([-self.key, self.qid]))
            sorted_gain = self.key[order]
        self.inv_max_dcg = cupy.empty(n_queries, cupy.float64)
        self.qweight = cupy.empty(n_queries, cupy.float64)
        t = _config.ELEMENTWISE_THREADS
        _module(False).get_function("query_stats")(
            (blocks(n_queries, t),), (t,),
            (sorted_gain, self.w if self.w is not None else self.y, self.group_ptr,
             np.int32(n_queries), np.int32(min(self.truncation, max_cnt + 1)), self.discount,
             np.int32(self.w is not None), self.inv_max_dcg, self.qweight))
        big = sizes > _config.QUERY_SHARED_MAX_DOCS
        self.small = cupy.asarray(np.flatnonzero(~big).astype(np.int32))
        self.big = cupy.asarray(np.flatnonzero(big).astype(np.int32))
        self.small_max = int(sizes[~big].max(initial=0))
        self.scratch = cupy.empty(6 * self.n, cupy.float64) if big.any() else None

    def gradients(self, scores, grad, hess, iteration=0):
        common = (self.inv_max_dcg if not self.ranknet else self.qweight, self.discount,
                  np.int32(self.truncation), np.float64(self.sigmoid),
                  np.int32(self.normalize), np.int32(self.ranknet), grad, hess)
        threads = _config.QUERY_THREADS
        if self.small.size:
            kern = _module(False).get_function("pair_gradients")
            smem = max(self.small_max, 1) * _BYTES_PER_DOC
            kern.max_dynamic_shared_size_bytes = max(smem, 48 * 1024)
            kern((int(self.small.size),), (threads,),
                 (scores, self.key, self.group_ptr, self.small, self.qweight) + common
                 + (self.group_ptr, self.y, np.int64(self.n)), shared_mem=smem)
        if self.big.size:
            # global segmented sort: by query, then descending score, then row (stable)
            neg = -scores + 0.0  # + 0.0: -0.0 and 0.0 are one key, as for numpy's sort
            perm = cupy.lexsort(cupy.stack([self.rowf, neg, self.qid])).astype(cupy.int64)
            kern = _module(True).get_function("pair_gradients")
            kern((int(self.big.size),), (threads,),
                 (scores, self.key, self.group_ptr, self.big, self.qweight) + common
                 + (perm, self.scratch, np.int64(self.n)))


#: objective name -> device implementation; the names of ``skltr._gbdt.objectives.OBJECTIVES``.
GPU_OBJECTIVES = {"lambdarank": _PairGradients, "rank_pairwise": _PairGradients,
                  "rank_xendcg": _XENDCG, "regression": _Regression}


def make_gpu_objective(objective, y, group_ptr, sample_weight=None, query_index=None):
    """The device version of a host :class:`skltr._gbdt.objectives.Objective`.

    ``query_index``: the global index of each query when ``group_ptr`` holds a worker's
    share of them (``rank_xendcg`` seeds its gammas by it); None: ``0 .. n_queries - 1``.
    """
    return GPU_OBJECTIVES[objective.name](objective, y, group_ptr, sample_weight, query_index)
