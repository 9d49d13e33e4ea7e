"""GPU categorical split search: every categorical feature of every node of a batch, on the device.

:mod:`skltr._cpu.split_categorical`'s rule (LightGBM's), formula for formula and compiled
without fused multiply-adds, so that gains, left sets and sums are the CPU's bit for bit. One
block per (node, categorical feature), the feature's bins read from the node's histogram slot
(a byte feature's row, or a wide feature's rows as one long row of codes):

* few categories (``n_bins + 1 <= max_cat_to_onehot``): thread 0 tries each category
  against the rest, in order;
* many-vs-many: the threads write each bin's key ``G / (H + cat_smooth)`` (NaN for a bin the
  rule does not use) and count the used bins; the ``n`` first and ``n`` last entries of the
  stable order -- by ``(key, bin)``, the CPU's ``_order_ends`` -- are selected one a round,
  each round a block-wide minimum (or maximum) of the bins beyond the last one taken; thread
  0 then scans both prefixes as the CPU does.

Output per (node, feature): ``(feature or -1, gain as bits, G_L, H_L, n_L rows, many, 0,
0)`` and the left bins' bitset. The host keeps per node the best (highest gain, ties to the
lower feature) and weighs it against the numeric split (``CategoricalSearch``): a batch costs
one launch and one copy of these records instead of its categorical histogram rows (a wide
feature's thousands of codes a node) and a host search.
"""

from __future__ import annotations

import cupy
import numpy as np

from ._compile import module
from .split import DEVICE_FUNCTIONS

#: Threads of a block (one (node, feature) pair)
THREADS = 256

_SOURCE = DEVICE_FUNCTIONS + r"""
#define QNAN (__longlong_as_double(0x7ff8000000000000LL))

// the CPU's _cat_gain: the children's objectives with L2 lam (checks done by the caller);
// under monotone constraints the outputs bounded, no direction (a categorical feature has none)
__device__ __forceinline__ double cat_gain(i64 gl, i64 hl, i64 sum_g, i64 sum_h, double inv_g,
                                           double inv_h, double lam, double alpha,
                                           double parent, int has_monotone, double lo,
                                           double hi) {
    const double hl_f = hl * inv_h;
    const double hr_f = (sum_h - hl) * inv_h;
    if (has_monotone) {
        const double gl_f = gl * inv_g, gr_f = (sum_g - gl) * inv_g;
        const double wl = bounded_output(gl_f, hl_f, lam, alpha, lo, hi);
        const double wr = bounded_output(gr_f, hr_f, lam, alpha, lo, hi);
        return objective_at(gl_f, hl_f, lam, alpha, wl, lo, hi)
               + objective_at(gr_f, hr_f, lam, alpha, wr, lo, hi) - parent;
    }
    return leaf_objective(gl * inv_g, hl_f, lam, alpha)
           + leaf_objective((sum_g - gl) * inv_g, hr_f, lam, alpha) - parent;
}

// (k, b) before (bk, bb) in the stable order (bb < 0: nothing yet)
__device__ __forceinline__ bool before(double k, int b, double bk, int bb) {
    return bb < 0 || k < bk || (k == bk && b < bb);
}

// the block's first (low) or last (!low) bin by (key, bin) among those each thread offers;
// every thread gets it (s_k / s_b: shared scratch of 33 entries)
__device__ int block_pick(double k, int b, bool low, double* s_k, int* s_b, double* out_k) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        const double ok = __shfl_down_sync(0xffffffffu, k, o);
        const int ob = __shfl_down_sync(0xffffffffu, b, o);
        if (ob >= 0 && (low ? before(ok, ob, k, b) : (b < 0 || ok > k || (ok == k && ob > b)))) {
            k = ok; b = ob;
        }
    }
    if (lane == 0) { s_k[warp] = k; s_b[warp] = b; }
    __syncthreads();
    if (threadIdx.x == 0) {
        double bk = s_k[0]; int bb = s_b[0];
        for (int w = 1; w < n_warps; ++w) {
            const double wk = s_k[w]; const int wb = s_b[w];
            if (wb >= 0 && (low ? before(wk, wb, bk, bb)
                                : (bb < 0 || wk > bk || (wk == bk && wb > bb)))) {
                bk = wk; bb = wb;
            }
        }
        s_k[32] = bk; s_b[32] = bb;
    }
    __syncthreads();
    *out_k = s_k[32];
    return s_b[32];
}

extern "C" __global__ void categorical_splits(
        const i64* __restrict__ hist, const i64* __restrict__ nodes,
        const i64* __restrict__ cats, const u8* __restrict__ masks, int n_features,
        int slot_rows, int n_bins_total, int count_shift, double inv_g, double inv_h,
        double lam, double alpha, double min_child_weight, i64 min_n, double min_split_gain,
        int hessian_counts, int has_monotone, int max_cat_to_onehot, int max_cat_threshold,
        double cat_smooth, double cat_l2, i64 min_data_per_group, double* keys_buf,
        i64 keys_stride, int* ends_buf, int max_seq, int n_words, i64* out, u64* out_bits) {
    __shared__ double s_k[33];
    __shared__ int s_b[33];
    __shared__ int s_used;
    const int t = blockIdx.x, j = blockIdx.y, n_cat = gridDim.y, tid = threadIdx.x;
    const i64 rec = (i64)t * n_cat + j;
    i64* o = out + rec * 8;
    u64* ob = out_bits + rec * n_words;
    for (int w = tid; w < n_words; w += blockDim.x) ob[w] = 0;
    if (tid == 0) {
        o[0] = -1; o[1] = __double_as_longlong(NEG_INF);
        for (int q = 2; q < 8; ++q) o[q] = 0;
        s_used = 0;
    }
    __syncthreads();
    // cats: per categorical feature (feature, first histogram row in a slot, bins, 0)
    const i64 f = cats[4 * j], row0 = cats[4 * j + 1];
    const int nb = (int)cats[4 * j + 2];
    // nodes: per node (slot, G, H, n, lo, hi, mask row, 0), as the numeric search's
    const i64 slot = nodes[8 * t], sum_g = nodes[8 * t + 1], sum_h = nodes[8 * t + 2],
              count = nodes[8 * t + 3];
    const double lo = __longlong_as_double(nodes[8 * t + 4]),
                 hi = __longlong_as_double(nodes[8 * t + 5]);
    if (!masks[nodes[8 * t + 6] * n_features + f] || nb <= 1) return;
    const i64 hmask = (((i64)1) << count_shift) - 1;
    const double H = sum_h * inv_h, G = sum_g * inv_g;
    double parent = leaf_objective(G, H, lam, alpha);
    if (has_monotone)
        parent = objective_at(G, H, lam, alpha, bounded_output(G, H, lam, alpha, lo, hi), lo, hi);
    const double cf = (hessian_counts && H > 0.0) ? (double)count / H : 0.0;
    const i64* hf = hist + (slot * slot_rows + row0) * n_bins_total * 2;

    if (nb + 1 <= max_cat_to_onehot) {              // one category against the rest
        if (tid != 0) return;
        double best = min_split_gain; int best_bin = -1; i64 bgl = 0, bhl = 0, bcl = 0;
        for (int b = 0; b < nb; ++b) {
            const i64 g = hf[2 * b], v = hf[2 * b + 1], h = v & hmask, c = v >> count_shift;
            if (!nonempty(g, h, c, cf)) continue;
            const i64 cl = bin_count(h, c, inv_h, cf), cr = count - cl;
            if (cl < min_n || cr < min_n) continue;
            if (h * inv_h < min_child_weight || (sum_h - h) * inv_h < min_child_weight) continue;
            const double gain = cat_gain(g, h, sum_g, sum_h, inv_g, inv_h, lam, alpha, parent,
                                         has_monotone, lo, hi);
            if (gain > best) { best = gain; best_bin = b; bgl = g; bhl = h; bcl = c; }
        }
        if (best_bin >= 0) {
            o[0] = f; o[1] = __double_as_longlong(best); o[2] = bgl; o[3] = bhl; o[4] = bcl;
            o[5] = 0;
            ob[best_bin >> 6] |= 1ull << (best_bin & 63);
        }
        return;
    }
    // many-vs-many: each bin's key, NaN where the rule does not use the bin
    double* keys = keys_buf + rec * keys_stride;
    int used = 0;
    for (int b = tid; b < nb; b += blockDim.x) {
        const i64 g = hf[2 * b], v = hf[2 * b + 1], h = v & hmask, c = v >> count_shift;
        const bool use = nonempty(g, h, c, cf) && (double)bin_count(h, c, inv_h, cf) >= cat_smooth;
        keys[b] = use ? (g * inv_g) / (h * inv_h + cat_smooth) : QNAN;  // G / 0: +-inf (IEEE)
        used += use;
    }
    for (int o2 = 16; o2 > 0; o2 >>= 1) used += __shfl_xor_sync(0xffffffffu, used, o2);
    if ((tid & 31) == 0) atomicAdd(&s_used, used);
    __syncthreads();
    used = s_used;
    if (used == 0) return;
    const int n_seq = min(used, min(max_cat_threshold, (used + 1) / 2));
    int* up = ends_buf + rec * 2 * max_seq;
    int* down = up + max_seq;
    // the stable order's first n_seq bins, then its last n_seq from the end: a round each
    for (int end = 0; end < 2; ++end) {
        const bool low = end == 0;
        double pk = 0.0; int pb = -1;                // the bin taken last round
        for (int r = 0; r < n_seq; ++r) {
            double bk = 0.0; int bb = -1;
            for (int b = tid; b < nb; b += blockDim.x) {
                const double k = keys[b];
                if (k != k) continue;                 // unused
                if (low) {
                    if (pb >= 0 && !(k > pk || (k == pk && b > pb))) continue;
                    if (before(k, b, bk, bb)) { bk = k; bb = b; }
                } else {
                    if (pb >= 0 && !(k < pk || (k == pk && b < pb))) continue;
                    if (bb < 0 || k > bk || (k == bk && b > bb)) { bk = k; bb = b; }
                }
            }
            pb = block_pick(bk, bb, low, s_k, s_b, &pk);
            if (tid == 0) (low ? up : down)[r] = pb;
        }
    }
    if (tid != 0) return;
    // both prefixes, as the CPU's scan (its checks, its order, its tie rule)
    const double lam_c = lam + cat_l2;
    double best = min_split_gain; int best_end = -1, best_len = 0; i64 bgl = 0, bhl = 0, bcl = 0;
    for (int end = 0; end < 2; ++end) {
        const int* seq = end == 0 ? up : down;
        i64 gl = 0, hl = 0, cl_rows = 0, cl = 0, group = 0;
        for (int i = 0; i < n_seq; ++i) {
            const int b = seq[i];
            const i64 g = hf[2 * b], v = hf[2 * b + 1], h = v & hmask, c = v >> count_shift;
            gl += g; hl += h; cl_rows += c;
            const i64 n_b = bin_count(h, c, inv_h, cf);
            cl += n_b; group += n_b;
            if (cl < min_n || hl * inv_h < min_child_weight) continue;
            const i64 cr = count - cl;
            if (cr < min_n || cr < min_data_per_group) break;
            if ((sum_h - hl) * inv_h < min_child_weight) break;
            if (group < min_data_per_group) continue;
            group = 0;
            const double gain = cat_gain(gl, hl, sum_g, sum_h, inv_g, inv_h, lam_c, alpha,
                                         parent, has_monotone, lo, hi);
            if (gain > best) {
                best = gain; bgl = gl; bhl = hl; bcl = cl_rows; best_end = end; best_len = i + 1;
            }
        }
    }
    if (best_end < 0) return;
    o[0] = f; o[1] = __double_as_longlong(best); o[2] = bgl; o[3] = bhl; o[4] = bcl; o[5] = 1;
    const int* seq = best_end == 0 ? up : down;
    for (int i = 0; i < best_len; ++i) ob[seq[i] >> 6] |= 1ull << (seq[i] & 63);
}
"""


@cupy.memoize(for_each_device=True)
def _kernel():
    return module(_SOURCE).get_function("categorical_splits")


def categorical_table(features, n_bins, wide) -> np.ndarray:
    """The launch's categorical features (host int64, shape (n, 4)), by increasing feature:
    ``(feature, first histogram row in a slot, bins, 0)`` -- a byte feature's own row and
    ``n_bins``, a wide feature's first row and codes (``WideCategorical``)."""
    wide_ids = [] if wide is None else wide.features.tolist()
    rows = []
    for f in features:
        if f in wide_ids:
            w = wide_ids.index(f)
            rows.append((f, int(wide.row0[w]), int(wide.n_bins[w]), 0))
        else:
            rows.append((f, f, int(n_bins[f]), 0))
    return np.array(rows, np.int64).reshape(-1, 4)


def find_categorical_splits(hist, nodes, cats, masks, c, k, n_words):
    """Each node's best split on each categorical feature (one launch).

    Parameters
    ----------
    hist : cupy.ndarray of int64, shape (n_slots, n_rows, n_bins_total, 2)
        The node histogram slots (layout ``TWO_WORD``), the wide features' rows included.
    nodes : cupy.ndarray of int64, shape (m, 8)
        ``skltr._gpu.split.split_records`` of the nodes, their mask rows indexing ``masks``.
    cats : ndarray of int64, shape (n, 4)
        :func:`categorical_table`.
    masks : cupy.ndarray of uint8, shape (n_masks, n_features)
        The features each node may split on (categorical ones included).
    c : skltr._records.SplitConstants
    k : skltr._records.CategoricalConstants
    n_words : int
        uint64 words of a left set (the widest feature's).

    Returns
    -------
    ints : ndarray of int64, shape (m, n, 8)
        Per node and feature ``(feature or -1, gain bits, G_L, H_L, n_L, many, 0, 0)``.
    bits : ndarray of uint64, shape (m, n, n_words)
        The left bins.
    """
    m, n = int(nodes.shape[0]), int(cats.shape[0])
    out = cupy.empty((m, n, 8), cupy.int64)
    bits = cupy.empty((m, n, n_words), cupy.uint64)
    if m == 0 or n == 0:
        return out.get(), bits.get()
    max_nb = int(cats[:, 2].max())
    max_seq = max(1, min(int(k.max_cat_threshold), (max_nb + 1) // 2))
    keys = cupy.empty((m * n, max_nb), cupy.float64)
    ends = cupy.empty((m * n, 2 * max_seq), cupy.int32)
    _kernel()((m, n), (THREADS,),
              (hist, nodes, cupy.asarray(cats), masks, np.int32(masks.shape[1]),
               np.int32(hist.shape[1]), np.int32(hist.shape[2]), np.int32(c.count_shift),
               np.float64(c.inv_scale_g), np.float64(c.inv_scale_h), np.float64(c.reg_lambda),
               np.float64(c.reg_alpha), np.float64(c.min_child_weight),
               np.int64(max(c.min_samples_leaf, 1)), np.float64(c.min_split_gain),
               np.int32(c.hessian_counts), np.int32(c.has_monotone),
               np.int32(k.max_cat_to_onehot), np.int32(k.max_cat_threshold),
               np.float64(k.cat_smooth), np.float64(k.cat_l2),
               np.int64(k.min_data_per_group), keys, np.int64(max_nb), ends,
               np.int32(max_seq), np.int32(n_words), out, bits))
    return out.get(), bits.get()
