"""GPU split finding: the best (feature, bin, missing direction) of every node of a level.

Two launches for all the nodes of a level. ``find_best_splits``: a grid of nodes x ``G``
feature groups; warp ``w`` of group ``g`` scans features ``g * n_warps + w``, then every
``G * n_warps`` after it. A warp takes a feature's bins 32 at a time, prefix-sums them with
shuffles (int64: exact) to get the left child's sums at every bin, evaluates both missing
directions in its lanes, and keeps the best; the block keeps its best feature and writes it
as the group's candidate. ``pick_splits`` (one warp a node) keeps the best of the node's
``G`` candidates and moves its threshold. ``G`` grows as the level's nodes shrink
(:func:`feature_groups`): one block scanning a root's 136 features was latency-bound (about
0.2 ms a launch on an H100, ~2 ms a round of depth 8), while 17 blocks of one feature a warp
fill more of the GPU::

    warp w, feature f:   bins  0 .. 31 | 32 .. 63 | ...       lane l holds bin base + l
                         inclusive scan (shfl_up) + carry of the previous 32 bins
                         lane candidates: (bin, missing left), (bin, missing right)

The rule is :mod:`skltr._cpu.split`'s, formula for formula (compiled without fused
multiply-adds, so gains are bit-equal): the same candidates, constraints
(``min_samples_leaf``, ``min_child_weight``, ``min_split_gain``), the more-samples rule
for nodes without missing rows, and the same tie-breaking -- among equal gains the lowest
(feature, bin, missing left before right) wins; empty bins are skipped as on the CPU (their
candidates repeat the previous bin's exactly; with ``hessian_counts`` a bin is empty when its
gradient and hessian sums are zero, as the CPU's ``_bin``). ``min_samples_leaf`` is checked on
rows or, with ``hessian_counts``, on LightGBM's estimates (each bin counts
``int64(h_bin * inv_h * count_factor + 0.5)`` rows, ``count_factor = node rows / node
hessian``, in the CPU's double operations and order; the estimates are prefix-summed in the
same scan, after a first pass sums the node's). The winner's threshold then moves up over the
following bins that hold no row of the node (LightGBM's threshold among equivalent ones, as
the CPU): one warp finds the next nonempty bin with a ballot.

Output: one record of 8 int64 per node ``(feature, gain as bits, bin, default_left, G_L,
H_L, n_L, 0)``, histogram units, ``feature = -1`` when no candidate qualifies (the groups'
candidates have the same form, their bin before the move).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import cupy
import numpy as np

from .._records import SplitInfo
from . import _config
from ._compile import NULL, module

_SOURCE = r"""
__device__ __forceinline__ double leaf_objective(double G, double H, double lam, double alpha) {
    if (alpha > 0.0) {
        if (G > alpha) G = G - alpha;
        else if (G < -alpha) G = G + alpha;
        else G = 0.0;
    }
    double d = H + lam;
    if (d <= 0.0) return 0.0;
    return G * G / d;
}

// A bin holds rows (c > 0), or -- with hessian counts (cf > 0), which see rows through their
// hessians as LightGBM does -- has a non-zero gradient or hessian sum: the CPU's _bin.
__device__ __forceinline__ bool nonempty(i64 g, i64 h, i64 c, double cf) {
    return cf > 0.0 ? (g != 0 || h != 0) : c > 0;
}

__device__ __forceinline__ i64 bin_count(i64 h, i64 c, double inv_h, double cf) {
    // rows of a bin: exact, or LightGBM's RoundInt(hessian * count_factor) as the CPU's
    // _bin_count (same double operations, same order; compiled without FMA)
    if (cf > 0.0) return (i64)((double)h * inv_h * cf + 0.5);
    return c;
}

__device__ __forceinline__ double soft(double G, double alpha) {
    if (alpha > 0.0) {
        if (G > alpha) return G - alpha;
        if (G < -alpha) return G + alpha;
        return 0.0;
    }
    return G;
}

// skltr._cpu.split.bounded_output / objective_at (monotone constraints), the same operations
__device__ __forceinline__ double bounded_output(double G, double H, double lam, double alpha,
                                                 double lo, double hi) {
    const double d = H + lam;
    double w = 0.0;
    if (d > 0.0) w = -soft(G, alpha) / d;
    if (w < lo) return lo;
    if (w > hi) return hi;
    return w;
}

__device__ __forceinline__ double objective_at(double G, double H, double lam, double alpha,
                                               double w, double lo, double hi) {
    if (lo < w && w < hi) return leaf_objective(G, H, lam, alpha);
    return -(2.0 * soft(G, alpha) * w + (H + lam) * w * w);
}

__device__ __forceinline__ bool better(double g, int key, double bg, int bkey) {
    return g > bg || (g == bg && key < bkey);
}

extern "C" __global__ void find_best_splits(
        const i64* __restrict__ hist, const i64* __restrict__ nodes,
        const int* __restrict__ n_bins,
        const u8* __restrict__ masks, int n_features, int slot_rows, int n_bins_total,
        int missing_bin, int count_shift, double inv_g, double inv_h, double lam,
        double alpha, double min_child_weight, i64 min_n, double min_split_gain,
        int hessian_counts, const signed char* __restrict__ monotone, int has_monotone,
        i64* parts, const i64* __restrict__ n_active) {
    const int t = blockIdx.x, g = blockIdx.y, n_groups = gridDim.y;
    // n_active (when not null): the nodes to search, on the device (skltr._gpu.levels)
    if (n_active != nullptr && t >= n_active[0]) return;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    // nodes: per node (slot, G, H, n, lo, hi, mask row, 0), 8 x int64 (lo, hi: double bits)
    const i64 slot = nodes[8 * t], sum_g = nodes[8 * t + 1], sum_h = nodes[8 * t + 2],
              count = nodes[8 * t + 3];
    const double lo = __longlong_as_double(nodes[8 * t + 4]),
                 hi = __longlong_as_double(nodes[8 * t + 5]);
    const u8* feature_mask = masks + nodes[8 * t + 6] * n_features;
    const i64 hmask = (((i64)1) << count_shift) - 1;
    const double H = sum_h * inv_h;
    double parent = leaf_objective(sum_g * inv_g, H, lam, alpha);
    if (has_monotone) {
        const double G = sum_g * inv_g;
        parent = objective_at(G, H, lam, alpha, bounded_output(G, H, lam, alpha, lo, hi), lo,
                              hi);
    }
    // LightGBM's count estimate: rows per unit of hessian in this node (0: exact counts)
    const double cf = (hessian_counts && H > 0.0) ? (double)count / H : 0.0;
    const i64* base_hist = hist + slot * slot_rows * n_bins_total * 2;

    double w_gain = NEG_INF; int w_feat = -1, w_bin = -1, w_left = 0;
    i64 w_gl = 0, w_hl = 0, w_cl = 0;
    for (int f = g * n_warps + warp; f < n_features; f += n_groups * n_warps) {
        const int nb = n_bins[f];
        if (!feature_mask[f] || nb <= 1) continue;
        const int mono_f = has_monotone ? monotone[f] : 0;
        const i64* hf = base_hist + (i64)f * n_bins_total * 2;
        const i64 mg = hf[missing_bin * 2], mv = hf[missing_bin * 2 + 1];
        const i64 mh = mv & hmask, mc = mv >> count_shift;
        const bool with_missing = nonempty(mg, mh, mc, cf);
        // counts checked against min_n: n_all for the node, an for the left part (rows, or
        // estimates summed per bin); a child's count is n_all - (its complement's)
        const i64 me = bin_count(mh, mc, inv_h, cf);
        i64 n_all = count;
        if (cf > 0.0) {
            i64 part = 0;
            for (int b = lane; b < nb; b += 32) {
                const i64 v = hf[b * 2 + 1];
                part += bin_count(v & hmask, v >> count_shift, inv_h, cf);
            }
            #pragma unroll
            for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
            n_all = me + part;
        }
        i64 cg = 0, ch = 0, cc = 0, ce = 0;            // carry: sums of earlier chunks
        double l_gain = NEG_INF; int l_key = 0x7fffffff, l_left = 0;
        i64 l_gl = 0, l_hl = 0, l_cl = 0;
        for (int b0 = 0; b0 < nb; b0 += 32) {
            const int b = b0 + lane;
            i64 vg = 0, vh = 0, vc = 0, ve = 0;
            if (b < nb) {
                vg = hf[b * 2]; const i64 v = hf[b * 2 + 1]; vh = v & hmask; vc = v >> count_shift;
                ve = bin_count(vh, vc, inv_h, cf);
            }
            i64 sg = vg, sh = vh, sc = vc, se = ve;
            #pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const i64 ug = __shfl_up_sync(0xffffffffu, sg, o);
                const i64 uh = __shfl_up_sync(0xffffffffu, sh, o);
                const i64 uc = __shfl_up_sync(0xffffffffu, sc, o);
                const i64 ue = __shfl_up_sync(0xffffffffu, se, o);
                if (lane >= o) { sg += ug; sh += uh; sc += uc; se += ue; }
            }
            const i64 ag = cg + sg, ah = ch + sh, ac = cc + sc, an = ce + se;
            cg += __shfl_sync(0xffffffffu, sg, 31);
            ch += __shfl_sync(0xffffffffu, sh, 31);
            cc += __shfl_sync(0xffffffffu, sc, 31);
            ce += __shfl_sync(0xffffffffu, se, 31);
            // (estimates are >= 0, so n_all - an only shrinks: the CPU's break)
            if (b >= nb || (!nonempty(vg, vh, vc, cf) && b > 0) || n_all - an < min_n) continue;
            for (int d = 0; d < 2; ++d) {
                i64 gl, hl, cl, cr; int left;
                if (with_missing) {
                    if (d == 0) {
                        if (b == nb - 1) continue;
                        gl = ag + mg; hl = ah + mh; cl = ac + mc; cr = n_all - an - me;
                    } else { gl = ag; hl = ah; cl = ac; cr = n_all - an; }
                    left = d == 0;
                } else {
                    if (d == 0 || b == nb - 1) continue;
                    gl = ag; hl = ah; cl = ac; cr = n_all - an;
                    left = count - cr > cr;      // more rows, counted as min_n is
                    // missing rows invisible to hessian counts (zero gradients and
                    // hessians) follow the default: a left default counts them left (the
                    // grower cuts the partition buffer at n_L)
                    if (left) cl += mc;
                }
                // child counts checked: rows, or (estimates) right = n_all - left part's
                // estimate and left = node rows - right, as the CPU
                if (count - cr < min_n || cr < min_n) continue;
                const double hl_f = hl * inv_h;
                const double hr_f = (sum_h - hl) * inv_h;
                if (hl_f < min_child_weight || hr_f < min_child_weight) continue;
                double gain;
                if (!has_monotone) {
                    gain = leaf_objective(gl * inv_g, hl_f, lam, alpha)
                           + leaf_objective((sum_g - gl) * inv_g, hr_f, lam, alpha) - parent;
                } else {  // the CPU's _monotone_gain
                    const double gl_f = gl * inv_g, gr_f = (sum_g - gl) * inv_g;
                    const double wl = bounded_output(gl_f, hl_f, lam, alpha, lo, hi);
                    const double wr = bounded_output(gr_f, hr_f, lam, alpha, lo, hi);
                    if ((mono_f > 0 && wl > wr) || (mono_f < 0 && wl < wr)) continue;
                    gain = objective_at(gl_f, hl_f, lam, alpha, wl, lo, hi)
                           + objective_at(gr_f, hr_f, lam, alpha, wr, lo, hi) - parent;
                }
                if (gain > min_split_gain && gain > l_gain) {   // keys grow: first wins
                    l_gain = gain; l_key = b * 2 + d; l_left = left;
                    l_gl = gl; l_hl = hl; l_cl = cl;
                }
            }
        }
        // warp arg-max: highest gain, ties to the lowest (bin, direction) key
        double r_gain = l_gain; int r_key = l_key; int r_lane = lane;
        for (int o = 16; o > 0; o >>= 1) {
            const double og = __shfl_down_sync(0xffffffffu, r_gain, o);
            const int ok = __shfl_down_sync(0xffffffffu, r_key, o);
            const int ol = __shfl_down_sync(0xffffffffu, r_lane, o);
            if (better(og, ok, r_gain, r_key)) { r_gain = og; r_key = ok; r_lane = ol; }
        }
        r_gain = __shfl_sync(0xffffffffu, r_gain, 0);
        r_key = __shfl_sync(0xffffffffu, r_key, 0);
        r_lane = __shfl_sync(0xffffffffu, r_lane, 0);
        const int c_left = __shfl_sync(0xffffffffu, l_left, r_lane);
        const i64 c_gl = __shfl_sync(0xffffffffu, l_gl, r_lane);
        const i64 c_hl = __shfl_sync(0xffffffffu, l_hl, r_lane);
        const i64 c_cl = __shfl_sync(0xffffffffu, l_cl, r_lane);
        if (r_key != 0x7fffffff && r_gain > w_gain) {          // features grow: first wins
            w_gain = r_gain; w_feat = f; w_bin = r_key >> 1; w_left = c_left;
            w_gl = c_gl; w_hl = c_hl; w_cl = c_cl;
        }
    }
    __shared__ double s_gain[32];
    __shared__ int s_feat[32];
    if (lane == 0) { s_gain[warp] = w_gain; s_feat[warp] = w_feat; }
    __syncthreads();
    if (threadIdx.x == 0) {
        int bw = -1; double bg = NEG_INF; int bf = 0x7fffffff;
        for (int w = 0; w < n_warps; ++w) {
            if (s_feat[w] >= 0 && better(s_gain[w], s_feat[w], bg, bf)) {
                bg = s_gain[w]; bf = s_feat[w]; bw = w;
            }
        }
        s_feat[0] = bw;
    }
    __syncthreads();
    const int bw = s_feat[0];
    i64* o = parts + ((i64)t * n_groups + g) * 8;
    if (bw < 0) {
        if (threadIdx.x == 0) { o[0] = -1; o[1] = __double_as_longlong(NEG_INF); o[2] = -1;
                                o[3] = 0; o[4] = 0; o[5] = 0; o[6] = 0; o[7] = 0; }
    } else if (warp == bw && lane == 0) {
        o[0] = w_feat; o[1] = __double_as_longlong(w_gain); o[2] = w_bin; o[3] = w_left;
        o[4] = w_gl; o[5] = w_hl; o[6] = w_cl; o[7] = 0;
    }
}

extern "C" __global__ void pick_splits(
        const i64* __restrict__ hist, const i64* __restrict__ nodes,
        const int* __restrict__ n_bins, const i64* __restrict__ parts, int n_groups,
        int slot_rows, int n_bins_total, int count_shift, double inv_h, int hessian_counts,
        i64* out, const i64* __restrict__ n_active) {
    // one warp a node: the best of its groups' candidates (highest gain, ties to the lowest
    // feature: the one-block search's rule), then its threshold moved
    const int t = blockIdx.x, lane = threadIdx.x;
    if (n_active != nullptr && t >= n_active[0]) return;
    const i64 slot = nodes[8 * t], sum_h = nodes[8 * t + 2], count = nodes[8 * t + 3];
    const i64 hmask = (((i64)1) << count_shift) - 1;
    const double H = sum_h * inv_h;
    const double cf = (hessian_counts && H > 0.0) ? (double)count / H : 0.0;
    const i64* p = parts + (i64)t * n_groups * 8;
    double r_gain = NEG_INF; int r_feat = 0x7fffffff, r_g = -1;
    for (int k = lane; k < n_groups; k += 32) {
        const int f = (int)p[8 * k];
        const double gk = __longlong_as_double(p[8 * k + 1]);
        if (f >= 0 && better(gk, f, r_gain, r_feat)) { r_gain = gk; r_feat = f; r_g = k; }
    }
    for (int o = 16; o > 0; o >>= 1) {
        const double og = __shfl_down_sync(0xffffffffu, r_gain, o);
        const int of = __shfl_down_sync(0xffffffffu, r_feat, o);
        const int ok = __shfl_down_sync(0xffffffffu, r_g, o);
        if (ok >= 0 && (r_g < 0 || better(og, of, r_gain, r_feat))) {
            r_gain = og; r_feat = of; r_g = ok;
        }
    }
    r_g = __shfl_sync(0xffffffffu, r_g, 0);
    i64* o = out + (i64)t * 8;
    if (r_g < 0) {
        if (lane == 0) { o[0] = -1; o[1] = __double_as_longlong(NEG_INF); o[2] = -1;
                         o[3] = 0; o[4] = 0; o[5] = 0; o[6] = 0; o[7] = 0; }
        return;
    }
    const i64* w = p + 8 * r_g;
    const int w_feat = (int)w[0];
    int w_bin = (int)w[2];
    i64 w_cl = w[6];
    // LightGBM's threshold among the equivalent ones (as the CPU): move up over the empty
    // bins after the winner; their rows, if any (zero gradients and hessians under hessian
    // counts), go left with them
    const int nbw = n_bins[w_feat];
    const i64* hf = hist + slot * slot_rows * n_bins_total * 2 + (i64)w_feat * n_bins_total * 2;
    int first = nbw;  // first nonempty bin above w_bin, or nb
    for (int b0 = w_bin + 1; b0 < nbw; b0 += 32) {
        const int b = b0 + lane;
        bool occupied = false;
        if (b < nbw) {
            const i64 v = hf[b * 2 + 1];
            occupied = nonempty(hf[b * 2], v & hmask, v >> count_shift, cf);
        }
        const unsigned m = __ballot_sync(0xffffffffu, occupied);
        if (m) { first = b0 + __ffs(m) - 1; break; }
    }
    i64 moved = 0;
    for (int b = w_bin + 1 + lane; b < first; b += 32) moved += hf[b * 2 + 1] >> count_shift;
    #pragma unroll
    for (int s = 16; s > 0; s >>= 1) moved += __shfl_xor_sync(0xffffffffu, moved, s);
    w_bin = first - 1;
    w_cl += moved;
    if (lane == 0) {
        o[0] = w_feat; o[1] = w[1]; o[2] = w_bin; o[3] = w[3];
        o[4] = w[4]; o[5] = w[5]; o[6] = w_cl; o[7] = 0;
    }
}
"""


@cupy.memoize(for_each_device=True)
def _no_directions():
    return cupy.zeros(1, cupy.int8)


@cupy.memoize(for_each_device=True)
def _kernels():
    mod = module(_SOURCE)
    return mod.get_function("find_best_splits"), mod.get_function("pick_splits")


def feature_groups(n_nodes: int, n_features: int) -> int:
    """Blocks a node's features are spread over: enough for about ``SPLIT_TARGET_BLOCKS``
    blocks in all, and no more than one feature a warp."""
    n_warps = _config.SPLIT_THREADS // 32
    most = max(1, -(-int(n_features) // n_warps))
    return max(1, min(most, -(-_config.SPLIT_TARGET_BLOCKS // max(1, int(n_nodes)))))


def split_records(node_slots, node_g, node_h, node_n, lo=None, hi=None, mask_row=None):
    """The nodes of a :func:`find_best_splits` launch (host int64, shape (m, 8)): histogram
    slot, gradient sum, hessian sum (histogram units, hessian unpacked), rows, the output
    bounds (monotone constraints; float64 bits, default none) and the row of the feature
    masks (default 0) of each."""
    m = len(node_slots)
    lo = np.full(m, -np.inf) if lo is None else np.asarray(lo, np.float64)
    hi = np.full(m, np.inf) if hi is None else np.asarray(hi, np.float64)
    rows = np.zeros(m, np.int64) if mask_row is None else np.asarray(mask_row, np.int64)
    out = np.zeros((m, 8), np.int64)
    out[:, :4] = np.array([node_slots, node_g, node_h, node_n], np.int64).reshape(4, -1).T
    out[:, 4], out[:, 5], out[:, 6] = lo.view(np.int64), hi.view(np.int64), rows
    return out


class _Scalars(NamedTuple):
    """The search kernel's scalar arguments, in its order (the pick kernel takes some)."""

    n_features: np.int32
    slot_rows: np.int32
    n_bins_total: np.int32
    missing_bin: np.int32
    count_shift: np.int32
    inv_g: np.float64
    inv_h: np.float64
    lam: np.float64
    alpha: np.float64
    min_child_weight: np.float64
    min_n: np.int64
    min_split_gain: np.float64
    hessian_counts: np.int32


@functools.lru_cache(maxsize=8)
def _scalars(c, n_features, slot_rows, n_bins_total) -> _Scalars:
    """:class:`_Scalars` of a tree's constants ``c``: made once a tree, not once a level
    (~1 us each)."""
    return _Scalars(np.int32(n_features), np.int32(slot_rows), np.int32(n_bins_total),
                    np.int32(c.missing_bin), np.int32(c.count_shift),
                    np.float64(c.inv_scale_g), np.float64(c.inv_scale_h),
                    np.float64(c.reg_lambda), np.float64(c.reg_alpha),
                    np.float64(c.min_child_weight), np.int64(max(c.min_samples_leaf, 1)),
                    np.float64(c.min_split_gain), np.int32(c.hessian_counts))


def find_best_splits(hist, nodes, n_bins, feature_mask, c, monotone=None):
    """Best split of each listed node (one launch); returns host records.

    Parameters
    ----------
    hist : cupy.ndarray of int64, shape (n_slots, n_rows, n_bins_total, 2)
        Quantised histograms (:mod:`skltr._gpu.histogram`, layout ``TWO_WORD``); the
        features' rows first (any rows after them are not read).
    nodes : ndarray or cupy.ndarray of int64, shape (m, 8)
        :func:`split_records` (on the device already, or copied there).
    n_bins : cupy.ndarray of int32, shape (n_features,)
    feature_mask : cupy.ndarray of uint8, shape (n_features,) or (n_masks, n_features)
        The features each node may split on: row ``mask_row`` of its record.
    c : skltr._records.SplitConstants
        As for ``skltr._cpu.split.find_best_splits``.
    monotone : cupy.ndarray of int8, shape (n_features,), optional
        The monotone directions, read when ``c.has_monotone``.

    Returns
    -------
    list of SplitInfo or None
        Per node the same record as the CPU's ``find_best_splits``, or None where no
        candidate qualifies.
    """
    m = int(nodes.shape[0])
    if m == 0:
        return []
    rec = search_splits(hist, nodes, n_bins, feature_mask, c, monotone).get()
    gains = rec[:, 1].copy().view(np.float64).tolist()
    return [None if r[0] < 0 else SplitInfo(r[0], g, r[2], bool(r[3]), r[4], r[5], r[6])
            for r, g in zip(rec.tolist(), gains)]


def search_splits(hist, nodes, n_bins, feature_mask, c, monotone=None, n_active=None):
    """The launches of :func:`find_best_splits`, without the read: the records on the device,
    int64, shape (m, 8): feature (-1: none), gain (float64 bits), bin, default left, left
    gradient and hessian sums, left rows, 0. ``n_active`` (device int64, shape (1,)): only
    the first ``n_active[0]`` nodes of ``nodes`` are searched (a level planned on the
    device, :mod:`skltr._gpu.levels`; the other rows of the result are not written)."""
    m = int(nodes.shape[0])
    n_features, n_bins_total = int(n_bins.shape[0]), hist.shape[2]
    n_groups = feature_groups(m, n_features)
    nodes = cupy.asarray(nodes)
    parts = cupy.empty((m * n_groups, 8), dtype=cupy.int64)
    out = cupy.empty((m, 8), dtype=cupy.int64)
    search, pick = _kernels()
    active = NULL if n_active is None else n_active
    scalars = _scalars(c, n_features, hist.shape[1], n_bins_total)
    search((m, n_groups), (_config.SPLIT_THREADS,),
           (hist, nodes, n_bins, feature_mask, *scalars,
            _no_directions() if monotone is None else monotone,
            np.int32(c.has_monotone), parts, active))
    pick((m,), (32,),
         (hist, nodes, n_bins, parts, np.int32(n_groups), scalars.slot_rows,
          scalars.n_bins_total, scalars.count_shift, scalars.inv_h, scalars.hessian_counts,
          out, active))
    return out
