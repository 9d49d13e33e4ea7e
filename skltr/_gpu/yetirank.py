"""CUDA twin of :mod:`skltr._cpu.yetirank`: YetiRank's pair gradients, the CPU's bits.

The same counter-based draws (SplitMix64 of ``(seed, round, query, permutation,
document)``), the same stable order of the noisy scores, and every float64 operation of the
numba kernel in its order, with fdlibm's ``exp`` (:mod:`skltr._gpu.libm`) and no fused
multiply-adds (``--fmad=false``), so ``grad`` / ``hess`` are the CPU's float32 bits,
subnormals and signed zeros included (``to_float32``: CuPy compiles with ``-ftz=true``).

Three launches a round (no atomics, no reductions: two runs give identical bits)::

    yetirank_query        one thread per query: the CPU's _yetirank_query preamble --
                          skip (one document or equal labels), exp(s - max s) per row,
                          mean row weight / permutations
    yetirank_orders       one thread per (query, permutation): the noisy keys and their
                          stable descending order (_yetirank_noisy, _yetirank_order, the
                          same insertion runs and merges) in global scratch; writes the
                          order and each document's noisy position
    yetirank_permutation  one thread per row: its pairs with its neighbours above and below
                          in each permutation's order (_yetirank_permutation's terms),
                          accumulated in the CPU's order -- permutation by permutation,
                          the upper pair (k = position) before the lower (k = position + 1):
                          the only two of a permutation's pairs that touch the row, in the
                          order the CPU's loop over k adds them

Both documents of a pair compute its terms (the same operations, the same bits). The
permutations run in launches of ``perms_per_launch`` (scratch of 24 bytes per row and
permutation, at most ``_config.YETIRANK_SCRATCH_BYTES``); the row sums carry over between
launches in float64, so the order of the additions does not depend on the split.
``tests/test_yetirank.py`` compares the launches with the CPU bit for bit, and
``tests/test_yetirank_cuda_source.py`` runs this source on the CPU (g++, the grid emulated
thread by thread) against the numba kernel where there is no GPU.
"""

from __future__ import annotations

from typing import NamedTuple

import cupy
import numpy as np

from . import _config
from ._compile import EXACT_FLOAT32, blocks, module
from .libm import SOURCE as LIBM

__all__ = ["YetiRankScratch", "perms_per_launch", "yetirank_gradients", "yetirank_scratch"]

#: CUDA C source (needs ``_compile.COMMON``, ``EXACT_FLOAT32`` and :mod:`skltr._gpu.libm`).
#: The constants are :mod:`skltr._cpu.yetirank`'s (``YETIRANK_PAIR_SCALE``,
#: ``YETIRANK_NOISE_GUARD``, ``_YETI_TINY``; tests/test_yetirank_cuda_source.py checks
#: them; ``YETI_RUN`` is this kernel's own).
SOURCE = r"""
#define YETIRANK_PAIR_SCALE 0.15
#define YETIRANK_NOISE_GUARD 1.000001
#define YETI_TINY 1e-300
#define YETI_RUN 32

__device__ __forceinline__ u64 mix64(u64 x) {
    // SplitMix64's finaliser of x + 0x9E3779B97F4A7C15 (the CPU's _mix64)
    u64 z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 yetirank_stream(u64 seed, u64 iteration, u64 query,
                                               u64 permutation) {
    u64 k = mix64(seed);
    k = mix64(k ^ iteration);
    k = mix64(k ^ query);
    return mix64(k ^ permutation);
}

__device__ __forceinline__ double yetirank_uniform(u64 stream, u64 doc) {
    // the top 53 bits, centred in their cell: exact, in (0, 1)
    const u64 k = mix64(stream ^ doc);
    return ((double)(k >> 11) + 0.5) * 1.1102230246251565e-16;
}

__device__ void yetirank_noisy(const double* ex, i64 cnt, u64 stream, double* keys) {
    // CatBoost's exp(s) * u / (1.000001 - u), as the CPU: the quotient first
    for (i64 i = 0; i < cnt; ++i) {
        const double u = yetirank_uniform(stream, (u64)i);
        keys[i] = ex[i] * (u / (YETIRANK_NOISE_GUARD - u));
    }
}

__device__ int* yetirank_order(const double* keys, i64 cnt, int* idx, int* tmp, double* skey,
                               double* stmp) {
    // 0..cnt-1 by descending key, ties in index order: the order of the CPU's
    // _yetirank_order (any stable sort's); insertion runs of YETI_RUN then bottom-up merges
    // between the two buffers. keys may be stmp (the
    // insertions only read it, and the merges write stmp after the last read).
    for (i64 start = 0; start < cnt; start += YETI_RUN) {
        const i64 stop = min(start + (i64)YETI_RUN, cnt);
        for (i64 i = start; i < stop; ++i) {
            const double key = keys[i];
            i64 j = i;
            while (j > start && skey[j - 1] < key) {  // strictly: ties keep index order
                skey[j] = skey[j - 1];
                idx[j] = idx[j - 1];
                --j;
            }
            skey[j] = key;
            idx[j] = (int)i;
        }
    }
    int *src = idx, *dst = tmp;
    double *ksrc = skey, *kdst = stmp;
    for (i64 width = YETI_RUN; width < cnt; width *= 2) {
        for (i64 left = 0; left < cnt; left += 2 * width) {
            const i64 mid = min(left + width, cnt), right = min(left + 2 * width, cnt);
            i64 i = left, j = mid;
            for (i64 k = left; k < right; ++k) {
                if (i < mid && (j >= right || ksrc[i] >= ksrc[j])) {  // left wins ties
                    dst[k] = src[i]; kdst[k] = ksrc[i]; ++i;
                } else {
                    dst[k] = src[j]; kdst[k] = ksrc[j]; ++j;
                }
            }
        }
        int* t = src; src = dst; dst = t;
        double* kt = ksrc; ksrc = kdst; kdst = kt;
    }
    return src;
}

extern "C" __global__ void yetirank_query(const double* __restrict__ scores,
                                          const double* __restrict__ y,
                                          const double* __restrict__ weights, int weighted,
                                          const i64* __restrict__ group_ptr, i64 n_queries,
                                          double permutations, unsigned char* active,
                                          double* scale, double* ex) {
    // one thread per query: the CPU's _yetirank_query before its permutations
    const i64 q = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n_queries) return;
    const i64 lo = group_ptr[q], hi = group_ptr[q + 1];
    bool equal = true;  // _all_labels_equal
    for (i64 r = lo + 1; r < hi && equal; ++r) equal = !(y[r] != y[lo]);
    active[q] = hi - lo > 1 && !equal;
    if (!active[q]) return;
    double top = scores[lo];
    for (i64 r = lo + 1; r < hi; ++r) top = scores[r] > top ? scores[r] : top;  // numba's max
    for (i64 r = lo; r < hi; ++r) ex[r] = det_exp(scores[r] - top);
    double w = 1.0;  // _query_weight: the rows' weights in row order, over the count
    if (weighted) {
        double total = 0.0;
        for (i64 r = lo; r < hi; ++r) total += weights[r];
        w = total / (double)(hi - lo);
    }
    scale[q] = w / permutations;
}

extern "C" __global__ void yetirank_orders(const double* __restrict__ ex,
                                           const i64* __restrict__ group_ptr, i64 n_queries,
                                           const unsigned char* __restrict__ active,
                                           const i64* __restrict__ query_index, u64 seed,
                                           u64 iteration, i64 perm0, i64 n_perm, i64 n_rows,
                                           int* order, int* rank, double* skey, double* stmp) {
    // one thread per (query, permutation perm0 + m); scratch row (m, lo..hi) of the
    // n_perm x n_rows arrays. Writes order[m, lo + k] (the document at noisy position k)
    // and rank[m, lo + d] (the position of document d); rank doubles as the sort's second
    // index buffer, so the order is moved into `order` first when it ended there.
    const i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_queries * n_perm) return;
    const i64 q = t / n_perm, m = t % n_perm;  // a warp's threads share queries
    if (!active[q]) return;
    const i64 lo = group_ptr[q], cnt = group_ptr[q + 1] - lo;
    const i64 base = m * n_rows + lo;
    const u64 stream = yetirank_stream(seed, iteration, (u64)query_index[q], (u64)(perm0 + m));
    yetirank_noisy(ex + lo, cnt, stream, stmp + base);
    const int* sorted = yetirank_order(stmp + base, cnt, order + base, rank + base,
                                       skey + base, stmp + base);
    if (sorted != order + base)
        for (i64 k = 0; k < cnt; ++k) order[base + k] = sorted[k];
    for (i64 k = 0; k < cnt; ++k) rank[base + order[base + k]] = (int)k;
}

__device__ __forceinline__ void yetirank_pair(i64 a, i64 b, i64 k, i64 d, i64 lo,
                                              const double* __restrict__ scores,
                                              const double* __restrict__ y,
                                              const double* __restrict__ ex,
                                              const double* __restrict__ decay_powers,
                                              double* lam, double* hes) {
    // the CPU's _yetirank_permutation for the pair (a above b) at positions (k - 1, k), its
    // terms for document d (a or b)
    const double diff = y[lo + a] - y[lo + b];
    if (diff != 0.0) {
        const i64 high = diff > 0.0 ? a : b, low = diff > 0.0 ? b : a;
        // decay**(k - 1) as the CPU's repeated products (the host's table of them)
        const double w = YETIRANK_PAIR_SCALE * decay_powers[k - 1] * fabs(diff);
        double p;
        if (ex[lo + high] >= YETI_TINY && ex[lo + low] >= YETI_TINY)
            p = ex[lo + low] / (ex[lo + high] + ex[lo + low]);
        else  // an exponential underflowed: the exact form
            p = 1.0 / (1.0 + det_exp(scores[lo + high] - scores[lo + low]));
        if (d == high) *lam -= w * p; else *lam += w * p;
        *hes += w * p * (1.0 - p);
    }
}

extern "C" __global__ void yetirank_permutation(
        const double* __restrict__ scores, const double* __restrict__ y,
        const i64* __restrict__ group_ptr, const int* __restrict__ row_query,
        const unsigned char* __restrict__ active, const double* __restrict__ scale,
        const double* __restrict__ ex, const double* __restrict__ decay_powers,
        const int* __restrict__ order, const int* __restrict__ rank, i64 n_perm, i64 n_rows,
        int first, int last, double* lam, double* hes, float* grad, float* hess) {
    // one thread per row: its pairs in the launch's n_perm permutations, added to the sums
    // carried in lam / hes (first launch: from 0.0); the last launch writes float32
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n_rows) return;
    const int q = row_query[r];
    if (!active[q]) {
        if (last) { grad[r] = 0.f; hess[r] = 0.f; }
        return;
    }
    const i64 lo = group_ptr[q], cnt = group_ptr[q + 1] - lo, d = r - lo;
    double l = first ? 0.0 : lam[r], h = first ? 0.0 : hes[r];
    for (i64 m = 0; m < n_perm; ++m) {
        const i64 base = m * n_rows + lo;
        const i64 k = rank[base + d];
        if (k >= 1) yetirank_pair(order[base + k - 1], d, k, d, lo, scores, y, ex,
                                  decay_powers, &l, &h);
        if (k + 1 < cnt) yetirank_pair(d, order[base + k + 1], k + 1, d, lo, scores, y, ex,
                                       decay_powers, &l, &h);
    }
    if (last) {
        grad[r] = to_float32(l * scale[q]);
        hess[r] = to_float32(h * scale[q]);
    } else {
        lam[r] = l; hes[r] = h;
    }
}
"""

#: Scratch bytes per row and permutation of one launch: order and rank (int32), the sort's
#: two key buffers (float64).
BYTES_PER_ROW_PERMUTATION = 24


@cupy.memoize(for_each_device=True)
def _module():
    return module(EXACT_FLOAT32 + LIBM + SOURCE)


def perms_per_launch(n_rows, permutations, budget=None):
    """Permutations one launch of ``yetirank_orders`` sorts.

    Parameters
    ----------
    n_rows, permutations : int
        Rows of the training set; permutations a round.
    budget : int, optional
        Most scratch bytes (:data:`BYTES_PER_ROW_PERMUTATION` a row and permutation);
        default ``_config.YETIRANK_SCRATCH_BYTES``.

    Returns
    -------
    int
        As many permutations as fit, at least 1, at most ``permutations``.
    """
    budget = _config.YETIRANK_SCRATCH_BYTES if budget is None else budget
    per_perm = BYTES_PER_ROW_PERMUTATION * max(int(n_rows), 1)
    return int(max(1, min(int(permutations), budget // per_perm)))


class YetiRankScratch(NamedTuple):
    """Device scratch of one training set (:func:`yetirank_scratch`; CuPy arrays, garbage
    until the kernels write them).

    Attributes
    ----------
    batch : int
        Permutations a launch (:func:`perms_per_launch`).
    active : uint8, (n_queries,)
        Whether the query has pairs (more than one document, not all labels equal).
    scale : float64, (n_queries,)
        Mean row weight over the permutation count.
    ex : float64, (n_rows,)
        ``exp(s - max s)`` of the row's query.
    order, rank : int32, (batch * n_rows,)
        Per permutation of the launch: the document at each noisy position, and each
        document's position (``rank`` is the sort's second index buffer before that).
    skey, stmp : float64, (batch * n_rows,)
        The sort's key buffers (``stmp`` first holds the noisy keys).
    lam, hes : float64, (n_rows,)
        The row sums carried from one launch to the next.
    """

    batch: int
    active: object
    scale: object
    ex: object
    order: object
    rank: object
    skey: object
    stmp: object
    lam: object
    hes: object


def yetirank_scratch(n_rows, n_queries, permutations):
    """The device scratch of :func:`yetirank_gradients` (allocated once a fit)."""
    batch = perms_per_launch(n_rows, permutations)
    size = batch * max(int(n_rows), 1)
    return YetiRankScratch(
        batch=batch, active=cupy.empty(max(n_queries, 1), cupy.uint8),
        scale=cupy.empty(max(n_queries, 1), cupy.float64),
        ex=cupy.empty(max(n_rows, 1), cupy.float64), order=cupy.empty(size, cupy.int32),
        rank=cupy.empty(size, cupy.int32), skey=cupy.empty(size, cupy.float64),
        stmp=cupy.empty(size, cupy.float64), lam=cupy.empty(max(n_rows, 1), cupy.float64),
        hes=cupy.empty(max(n_rows, 1), cupy.float64))


def yetirank_gradients(scores, y, group_ptr, row_query, weights, query_index, seed,
                       iteration, permutations, decay_powers, scratch, grad, hess):
    """YetiRank gradients and hessians on the device: the CPU's
    :func:`skltr._cpu.yetirank.yetirank_gradients`, bit for bit.

    Parameters
    ----------
    scores, y : cupy.ndarray of float64, shape (n_rows,)
    group_ptr : cupy.ndarray of int64, shape (n_queries + 1,)
    row_query : cupy.ndarray of int32, shape (n_rows,)
        Each row's query (0-based in ``group_ptr``).
    weights : cupy.ndarray of float64, shape (n_rows,), or None
    query_index : cupy.ndarray of int64, shape (n_queries,)
        Each query's index in the whole training set (its draws' counter).
    seed, iteration, permutations : int
        As for the CPU kernel.
    decay_powers : cupy.ndarray of float64
        :func:`skltr._cpu.yetirank.yetirank_decay_powers` of the decay, at least as long as
        the largest query.
    scratch : YetiRankScratch
        From :func:`yetirank_scratch` for these rows, queries and permutations.
    grad, hess : cupy.ndarray of float32, shape (n_rows,)
        Overwritten.
    """
    n_rows = int(y.shape[0])
    n_queries = int(group_ptr.shape[0]) - 1
    permutations = int(permutations)
    t = _config.ELEMENTWISE_THREADS
    mod = _module()
    s = scratch
    mod.get_function("yetirank_query")(
        (blocks(n_queries, t),), (t,),
        (scores, y, weights if weights is not None else y, np.int32(weights is not None),
         group_ptr, np.int64(n_queries), np.float64(permutations), s.active, s.scale, s.ex))
    for perm0 in range(0, permutations, s.batch):
        n_perm = min(s.batch, permutations - perm0)
        mod.get_function("yetirank_orders")(
            (blocks(n_queries * n_perm, t),), (t,),
            (s.ex, group_ptr, np.int64(n_queries), s.active, query_index,
             np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF), np.uint64(int(iteration)),
             np.int64(perm0), np.int64(n_perm), np.int64(n_rows), s.order, s.rank, s.skey,
             s.stmp))
        mod.get_function("yetirank_permutation")(
            (blocks(n_rows, t),), (t,),
            (scores, y, group_ptr, row_query, s.active, s.scale, s.ex, decay_powers, s.order,
             s.rank, np.int64(n_perm), np.int64(n_rows), np.int32(perm0 == 0),
             np.int32(perm0 + n_perm >= permutations), s.lam, s.hes, grad, hess))
