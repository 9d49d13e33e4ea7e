"""CUDA kernels of the GBDT objectives: lambdarank / RankNet gradients of every query in one
launch, XE-NDCG, regression (sources and launchers; the device objectives that hold each
fit's constants are :mod:`skltr._gbdt.objectives_cuda`).

Unbiased LambdaMART (modules compiled with ``UNBIASED``, so that plain LambdaRank keeps its
registers and shared memory) reweights the pairs shown above ``k`` by the propensities
and writes each row's costs (``li_row`` / ``lj_row``) in the CPU's order of every sum; the
propensity update from them runs on the host (:mod:`skltr._gbdt.position_bias`).

The pair rule is :mod:`skltr._cpu.objectives`' formula for formula (LightGBM 4.x
``lambdarank``; XGBoost top-k ``rank:pairwise``), in the CPU's order of every sum and with
its ``exp`` and ``log2`` (:mod:`skltr._gpu.libm`, fdlibm's algorithms on both devices), so
the gradients are the CPU's, bit for bit (``tests/test_gbdt_gpu.py``).

One thread block per query (no host loop over queries)::

    block q:  rows lo..hi of the query
      1. order   small queries (<= QUERY_SHARED_MAX_DOCS): rank of each document by counting
                 (rank_i = #{j: s_j > s_i or s_j == s_i and j < i}: a stable descending sort
                 in shared memory); larger queries: positions from one global segmented sort
                 (cupy.lexsort by (query, -score, row)) and scratch in global memory
      2. arrays by position: score, gain (or label), exp(sigmoid (s - s_max))
      3. one thread per position p:  the pairs (i, p), i < min(p, n_high), in i order, then
             p's own row (p, j), j > p, summed apart: the CPU's accumulation of plam[p] and
             phes[p] (each pair's terms are computed by both of its threads: no atomics, no
             reductions); row sums of 2 |lambda| added in row order by thread 0
      4. factor = mean weight * log2(1 + S) / S (LightGBM's normalisation), write float32

No atomics anywhere: two runs give identical bits.

``rank_xendcg`` (``xendcg`` kernel): one thread per query runs the CPU's
``_xendcg_query`` statement for statement -- softmax, LightGBM's random gammas by the same
jump-ahead of ``Random(seed + q)``, the three-term series -- with per-row scratch in global
memory: the CPU's gradients, bit for bit. XE-NDCG is O(documents) per query (no pairs), so a
thread per query is enough: the kernel is a small part of a round.
"""

from __future__ import annotations

import cupy
import numpy as np

from . import _config
from ._compile import EXACT_FLOAT32, blocks, module
from .libm import SOURCE as LIBM

_SOURCE = EXACT_FLOAT32 + LIBM + r"""
struct Unbiased {
    // Unbiased LambdaMART (UNBIASED modules): positions by sorted position, propensities
    const int* ppos; const double* tplus; const double* tminus; int k; int xgboost_cost;
};

__device__ __forceinline__ void pair_terms(
        int i, int j, const double* ps, const double* pg, const double* pe,
        const double* __restrict__ discount, double imd, double sigmoid, double sig2,
        double dist0, double dist1, bool exact, int ranknet, double* lam, double* hs,
        const Unbiased& ub, bool* add_li, double* li_v, bool* add_lj, double* lj_v) {
    // the CPU's _pair_lambdas statement for statement: pair (i, j), i < j by position
    *add_li = false; *add_lj = false;
    const double yi = pg[i], yj = pg[j];
    const double ds = ps[i] - ps[j];
    const bool i_high = yi > yj;
    const double dist = dist0 + dist1 * ds;
    double pl, ql;
    if (exact) {
        const double p = 1.0 / (1.0 + det_exp(sigmoid * (i_high ? ds : -ds)));
        pl = p / dist; ql = 1.0 - p;
    } else {
        const double ei = pe[i], ej = pe[j];
        const double inv = 1.0 / ((ei + ej) * dist);
        pl = (i_high ? ej : ei) * inv;
        ql = (i_high ? ei : ej) * inv * dist;
    }
    if (ranknet) {
        *lam = sigmoid * pl;
        *hs = 2.0 * sig2 * fmax(pl * ql, 1e-16);
    } else {
        const double w = fabs((yi - yj) * (discount[i] - discount[j])) * imd;
        double l = sigmoid * w * pl;
        double h = sig2 * w * pl * ql;
        if (UNBIASED) {  // the CPU's _pair_lambdas statement for statement
            const int pos_h = i_high ? ub.ppos[i] : ub.ppos[j];
            const int pos_l = i_high ? ub.ppos[j] : ub.ppos[i];
            if (pos_h < ub.k && pos_l < ub.k) {
                const double t_h = ub.tplus[pos_h];
                const double t_l = ub.tminus[pos_l];
                double loss;
                if (exact) {
                    loss = det_log2(1.0 + det_exp(-sigmoid * ds));
                    if (i_high == (ub.xgboost_cost != 0)) loss += sigmoid * ds * 1.4426950408889634;
                } else if (ub.xgboost_cost) {
                    loss = -det_log2(pl * dist);
                } else {
                    loss = -det_log2(ql);
                }
                const double cost = w / dist * loss;
                if (t_l >= 1e-16) { *add_li = true; *li_v = cost / t_l; }  // the high row's
                if (t_h >= 1e-16) { *add_lj = true; *lj_v = cost / t_h; }  // the low row's
                if (t_l >= 1e-16 && t_h >= 1e-16) { l /= t_h * t_l; h /= t_h * t_l; }
            }
        }
        *lam = l;
        *hs = h;
    }
}

extern "C" __global__ void pair_gradients(
        const double* __restrict__ scores, const double* __restrict__ key_row,
        const i64* __restrict__ group_ptr, const int* __restrict__ queries,
        const double* __restrict__ qweight, const double* __restrict__ inv_max_dcg,
        const double* __restrict__ discount, int truncation, double sigmoid, int normalize,
        int ranknet, float* grad, float* hess,
        const i64* __restrict__ perm, double* g_scratch, i64 n_rows,
        const i64* __restrict__ position, const double* __restrict__ tplus,
        const double* __restrict__ tminus, int k, int xgboost_cost, double* li_row,
        double* lj_row) {
    // position .. lj_row: Unbiased LambdaMART (UNBIASED modules; unread otherwise)
    // key_row: gains (lambdarank) or labels (ranknet): equal keys <=> equal labels, and
    // a larger key is the more relevant document.
    const int q = queries[blockIdx.x];
    const i64 lo = group_ptr[q], hi = group_ptr[q + 1];
    const int cnt = (int)(hi - lo);
    __shared__ double red[1];
    if (cnt <= 1) {
        for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
            grad[lo + i] = 0.f; hess[lo + i] = 0.f;
            if (UNBIASED) { li_row[lo + i] = 0.0; lj_row[lo + i] = 0.0; }
        }
        return;
    }
    int differ = 0;
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) differ |= key_row[lo + i] != key_row[lo];
    if (!__syncthreads_or(differ)) {
        for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
            grad[lo + i] = 0.f; hess[lo + i] = 0.f;
            if (UNBIASED) { li_row[lo + i] = 0.0; lj_row[lo + i] = 0.0; }
        }
        return;
    }
    double *ps, *pg, *pe, *plam, *phes, *prs; int *prow, *ppos;
#if GLOBAL_SCRATCH
    ps = g_scratch + lo; pg = ps + n_rows; pe = pg + n_rows; plam = pe + n_rows;
    phes = plam + n_rows; prs = phes + n_rows;
    prow = (int*)(g_scratch + 6 * n_rows) + lo;  // 7th block: ints, rows then positions
    ppos = (int*)(g_scratch + 6 * n_rows) + n_rows + lo;
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
        const i64 r = perm[lo + i];
        ps[i] = scores[r]; pg[i] = key_row[r]; prow[i] = (int)(r - lo);
        if (UNBIASED) ppos[i] = (int)position[r];
    }
#else
    extern __shared__ double sh[];
    ps = sh; pg = ps + cnt; pe = pg + cnt; plam = pe + cnt; phes = plam + cnt;
    prs = phes + cnt; prow = (int*)(prs + cnt); ppos = prow + cnt;
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
        const double si = scores[lo + i];
        int rank = 0;
        for (int j = 0; j < cnt; ++j) {
            const double sj = scores[lo + j];
            rank += (sj > si) || (sj == si && j < i);
        }
        ps[rank] = si; pg[rank] = key_row[lo + i]; prow[rank] = i;
        if (UNBIASED) ppos[rank] = (int)position[lo + i];
    }
#endif
    __syncthreads();
    const double s_max = ps[0], s_min = ps[cnt - 1];
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) pe[i] = det_exp(sigmoid * (ps[i] - s_max));
    __syncthreads();
    const double imd = ranknet ? 0.0 : inv_max_dcg[q];
    const bool norm_by_diff = normalize && s_max != s_min && !ranknet;
    const int n_high = min(cnt - 1, truncation);
    const bool exact = sigmoid * (s_max - s_min) > 700.0;
    const double dist0 = norm_by_diff ? 0.009999999776482582 : 1.0;
    const double dist1 = norm_by_diff ? 1.0 : 0.0;
    const double sig2 = sigmoid * sigmoid;
    const Unbiased ub = {ppos, tplus, tminus, k, xgboost_cost};
    // One thread per position p, in the CPU's order: p's terms as the lower position of
    // the pairs (i, p), i < min(p, n_high), added in i order, then p's own row (p, j),
    // j > p, summed apart and added once -- the CPU's plam[p] bit for bit.
    for (int p = threadIdx.x; p < cnt; p += blockDim.x) {
        const double yp = pg[p];
        double acc_l = 0.0, acc_h = 0.0, lam, hs;
        double acc_li = 0.0, acc_lj = 0.0, li_v = 0.0, lj_v = 0.0;  // Unbiased: p's costs
        bool add_li = false, add_lj = false;
        const int n_up = min(p, n_high);
        for (int i = 0; i < n_up; ++i) {
            const double yi = pg[i];
            if (yi == yp) continue;
            pair_terms(i, p, ps, pg, pe, discount, imd, sigmoid, sig2, dist0, dist1, exact,
                       ranknet, &lam, &hs, ub, &add_li, &li_v, &add_lj, &lj_v);
            if (yi > yp) acc_l += lam; else acc_l -= lam;
            acc_h += hs;
            // p is the pair's low document when i's label is higher: its lj, else its li
            if (yi > yp) { if (add_lj) acc_lj += lj_v; } else { if (add_li) acc_li += li_v; }
        }
        double row = 0.0;
        if (p < n_high) {
            double lam_p = 0.0, hes_p = 0.0, li_p = 0.0, lj_p = 0.0;
            for (int j = p + 1; j < cnt; ++j) {
                const double yj = pg[j];
                if (yj == yp) continue;
                pair_terms(p, j, ps, pg, pe, discount, imd, sigmoid, sig2, dist0, dist1,
                           exact, ranknet, &lam, &hs, ub, &add_li, &li_v, &add_lj, &lj_v);
                if (yp > yj) lam_p -= lam; else lam_p += lam;
                hes_p += hs;
                if (yp > yj) { if (add_li) li_p += li_v; } else { if (add_lj) lj_p += lj_v; }
                row += 2.0 * lam;
            }
            acc_l += lam_p; acc_h += hes_p;
            acc_li += li_p; acc_lj += lj_p;
        }
        plam[p] = acc_l; phes[p] = acc_h; prs[p] = row;
        if (UNBIASED) {  // the costs are neither weighted nor normalised (the CPU, XGBoost)
            li_row[lo + prow[p]] = acc_li;
            lj_row[lo + prow[p]] = acc_lj;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {  // LightGBM's sum_lambdas, rows added in the CPU's order
        double total = 0.0;
        for (int i = 0; i < n_high; ++i) total += prs[i];
        red[0] = total;
    }
    __syncthreads();
    const double sum_lambdas = red[0];
    double factor = qweight[q];
    if (normalize && sum_lambdas > 0.0) factor *= det_log2(1.0 + sum_lambdas) / sum_lambdas;
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) {
        const i64 r = lo + prow[i];
        grad[r] = to_float32(plam[i] * factor);
        hess[r] = to_float32(phes[i] * factor);
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
    for (i64 r = lo; r < hi; ++r) { rho[r] = det_exp(scores[r] - scores[m]); total += rho[r]; }
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
        grad[r] = to_float32(lam[r] * w);
        hess[r] = to_float32(rho[r] * (r == m ? one_minus_top : 1.0 - rho[r]) * w);
    }
}

extern "C" __global__ void regression(const double* s, const double* y, const double* w,
                                      int weighted, i64 n, float* grad, float* hess) {
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    const double wr = weighted ? w[r] : 1.0;
    grad[r] = to_float32(wr * (s[r] - y[r]));
    hess[r] = to_float32(wr);
}
"""


@cupy.memoize(for_each_device=True)
def _module(global_scratch, unbiased=False):
    return module(_SOURCE, {"GLOBAL_SCRATCH": int(global_scratch), "UNBIASED": int(unbiased)})


#: Bytes of shared memory per document in the small-query kernel (6 float64 + 1 int32, the
#: row; Unbiased LambdaMART adds :data:`POSITION_BYTES` for the displayed position).
BYTES_PER_DOC = 52
POSITION_BYTES = 4


def regression(scores, y, w, grad, hess):
    """``grad = w * (scores - y)``, ``hess = w`` (``w`` None: 1)."""
    n = y.shape[0]
    t = _config.ELEMENTWISE_THREADS
    _module(False).get_function("regression")(
        (blocks(n, t),), (t,),
        (scores, y, w if w is not None else y, np.int32(w is not None), np.int64(n), grad,
         hess))


def query_stats(sorted_gain, y, w, group_ptr, k, discount, inv_max_dcg, qweight):
    """Per query: ``1 / maxDCG@k`` of ``sorted_gain`` (gains sorted descending within each
    query; ``k = 0``: none) and the mean row weight (``w`` None: 1), in the CPU's order."""
    n_queries = qweight.shape[0]
    t = _config.ELEMENTWISE_THREADS
    _module(False).get_function("query_stats")(
        (blocks(n_queries, t),), (t,),
        (sorted_gain, w if w is not None else y, group_ptr, np.int32(n_queries), np.int32(k),
         discount, np.int32(w is not None), inv_max_dcg, qweight))


def xendcg(scores, y, group_ptr, qweight, query_index, seed, iteration, scratch, grad, hess):
    """XE-NDCG gradients, one thread per query (``scratch``: 3 x n_rows float64)."""
    n_queries = qweight.shape[0]
    t = _config.ELEMENTWISE_THREADS
    _module(False).get_function("xendcg")(
        (blocks(n_queries, t),), (t,),
        (scores, y, group_ptr, np.int32(n_queries), qweight, query_index,
         np.uint64(seed & 0xFFFFFFFFFFFFFFFF), np.uint64(int(iteration)),
         scratch[0], scratch[1], scratch[2], grad, hess))


def pair_gradients(queries, scores, key, group_ptr, qweight, query_args, tail, *,
                   max_docs=0, global_scratch=False, unbiased=None):
    """Pair gradients of ``queries`` (int32 device array), one block per query.

    ``query_args``: ``(inv_max_dcg or qweight, discount, truncation, sigmoid, normalize,
    ranknet, grad, hess)``; ``tail``: ``(perm, scratch, n_rows)`` (global scratch, queries
    above ``QUERY_SHARED_MAX_DOCS`` documents, sorted by one global segmented sort) or
    unused arrays and ``max_docs``, the largest query (shared memory). ``unbiased``:
    ``(position int64, tplus, tminus, xgboost_cost, li_row, lj_row)`` of Unbiased
    LambdaMART (device arrays; ``li_row`` / ``lj_row`` written), or None.
    """
    if unbiased is None:
        dummy = scores  # never read outside UNBIASED modules
        bias = (dummy, dummy, dummy, np.int32(0), np.int32(0), dummy, dummy)
    else:
        position, tplus, tminus, xgboost_cost, li_row, lj_row = unbiased
        bias = (position, tplus, tminus, np.int32(tplus.size), np.int32(bool(xgboost_cost)),
                li_row, lj_row)
    kern = _module(global_scratch, unbiased is not None).get_function("pair_gradients")
    smem = 0
    if not global_scratch:
        per_doc = BYTES_PER_DOC + (POSITION_BYTES if unbiased is not None else 0)
        smem = max(max_docs, 1) * per_doc
        kern.max_dynamic_shared_size_bytes = max(smem, 48 * 1024)
    kern((int(queries.size),), (_config.QUERY_THREADS,),
         (scores, key, group_ptr, queries, qweight) + tuple(query_args) + tuple(tail) + bias,
         shared_mem=smem)
