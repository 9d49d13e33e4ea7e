"""Tahoe-style traversal of a ``TreeEnsemble`` on the GPU: one thread per row, trees in order.

The ensemble is laid out once (:class:`ForestLayout`): every tree's nodes in depth-first
preorder, so that a node's left child is the next node and its right child sits at a stored
offset, in 16-byte records::

    Node { double v;      // threshold, or a leaf's contribution (value x tree weight, rounded
                          //   as the CPU kernel rounds it: float32 products for float32 sums)
           int feature;   // -1 at a leaf
           int meta; }    // bits 0-7: NodeFlags; bits 8-31: offset of the right child

Categorical sets stay in side arrays indexed by the node's new position. Forests routed and
summed in float32 without categorical splits (XGBoost's) take an 8-byte record instead: the
threshold as an order-preserving integer key of its float32 bits, and feature, default
direction, missing type and right-child offset packed in one word, so that a node costs half
the cache traffic and routing is integer compares (``_compact_nodes``). Routing is
``skltr._cpu.traversal.go_left`` line for line, and each row sums its trees' contributions
in tree order, in float64 or float32 as the CPU kernel does, then finishes the output as
``finish_output`` does: the raw scores equal ``TreeEnsemble.predict_raw`` bit for bit.

Placements (Xie et al., Tahoe), one kernel each; which is fastest depends on the forest's
size, the number of features and the batch, so :meth:`ForestLayout.placement` times the
eligible ones on the first batch of each size class and keeps the winner (``choices``):

``direct``
    rows and nodes read from global memory (through the caches);
``shared_data``
    a block's rows copied to shared memory feature-major first (one coalesced load), so that
    the scattered feature reads of a traversal hit shared memory;
``shared_forest``
    the forest staged through shared memory a chunk of whole trees at a time, every thread of
    the block walking its row through the chunk (trees that do not fit make it ineligible);
``shared_both``
    both: the block's rows and, in turn, each chunk of trees in shared memory.

The routing rules and output precision are compile-time constants of the module (one
compilation per rule set, cached by CuPy).
"""

from __future__ import annotations

import math

import cupy
import numpy as np
from numba import njit

from .._dtypes import NodeFlags
from ..trees._backends import Backend, register
from ._compile import EXACT_FLOAT32, blocks, module

__all__ = ["ForestLayout", "PLACEMENTS", "build_forest_layout", "predict_raw"]

#: The placements, in the order the autotune tries them.
PLACEMENTS = ("direct", "shared_data", "shared_forest", "shared_both")
#: Threads of a traversal block (shared_forest: SHARED_FOREST_THREADS; shared_data: as many
#: rows as SHARED_BYTES holds, at most this).
THREADS = 256
#: Threads of a shared-forest block: 128 measured best with 48 KiB (45.6 ms vs 96.5 ms with
#: 256 at 1M rows x 1,000 depth-6 trees, H100: more blocks share an SM's staged trees).
SHARED_FOREST_THREADS = 128
#: Rows (threads) of a shared-both block: its rows and one forest chunk share the block's
#: shared memory, at most MAX_SHARED_BYTES.
SHARED_BOTH_THREADS = 128
#: Most dynamic shared memory of one block on Hopper (227 KiB).
MAX_SHARED_BYTES = 227 * 1024
#: Shared memory a placement may use. 48 KiB measured as fast as 72 and 110 KiB for shared
#: data (47 ms) and fastest for the shared forest (benchmarks/results/predict_gpu-h100-*).
SHARED_BYTES = 48 * 1024

_SOURCE = r"""
#if COMPACT
struct Node { u32 key; u32 packed; };      // see ForestLayout: the 8-byte float32 layout
#else
struct Node { double v; int feature; int meta; };
#endif

// float32 values are held in doubles (widen, f32_round: skltr._gpu._compile.EXACT_FLOAT32,
// prepended), so that CuPy's -ftz=true cannot flush a subnormal the CPU keeps.

#define F_CAT 1
#define F_DEFAULT_LEFT 2
#define F_SET_RIGHT 16
#define F_INVALID_DEFAULT 32
#define F_TRUNC_FIRST 64
#define ZERO_THRESHOLD 1.0000000180025095e-35

#if !COMPACT
__device__ __forceinline__ bool go_left(double x, const Node& nd, i64 g, const int* cat_off,
                                        const int* cat_nw, const u32* bits, double missing) {
    // skltr._cpu.traversal.go_left; g: the node's index in the layout (categorical sets)
    // float32 routing, or the model's input rule reads every value as a float32 (a float64
    // CuPy array is rounded here); a no-op for float32 input
    if ((F32_INPUTS || INPUT_F32) && sizeof(XT) == 8) x = f32_round(x);
    if (HAS_SENTINEL && x == missing) x = __longlong_as_double(0x7ff8000000000000LL);
    const int fl = nd.meta & 255;
    const bool default_left = (fl & F_DEFAULT_LEFT) != 0;
    if (HAS_CAT && (fl & F_CAT)) {
        if (isnan(x)) return default_left;
        const bool invalid = (fl & F_TRUNC_FIRST) ? trunc(x) < 0.0 : x < 0.0;
        bool in_set = false;
        if (invalid) {
            if (fl & F_INVALID_DEFAULT) return default_left;
        } else if (x < 2147483648.0) {
            const i64 c = (i64)x;
            const i64 word = c >> 5;
            if (word < cat_nw[g]) in_set = ((bits[cat_off[g] + word] >> (u32)(c & 31)) & 1u) == 1u;
        }
        return (fl & F_SET_RIGHT) ? !in_set : in_set;
    }
    const int missing_type = (fl >> 2) & 3;
    if (isnan(x)) {
        if (HAS_MISSING_NONE && missing_type == 0) x = 0.0; else return default_left;
    }
    if (HAS_MISSING_ZERO && missing_type == 1 && fabs(x) <= ZERO_THRESHOLD)
        return default_left;
    return STRICT ? x < nd.v : x <= nd.v;
}

template <typename T>
__device__ __forceinline__ double walk(const Node* nd, i64 g0, const T* x, int step,
                                       const int* cat_off, const int* cat_nw, const u32* bits,
                                       double missing) {
    // the leaf contribution of one tree: nd its root (shared or global), g0 its layout index
    int i = 0;
    while (true) {
        const Node n = nd[i];
        if (n.feature < 0) return n.v;
        const double xv = widen(x[(i64)n.feature * step]);
        i += go_left(xv, n, g0 + i, cat_off, cat_nw, bits, missing) ? 1 : (n.meta >> 8);
    }
}

#else
// The 8-byte layout: float32 routing by integer compares of order-preserving keys of the
// float32 bits (no float compare: -ftz cannot flush anything), as go_left on float32 values.
#define ZERO_BITS 0x0554ad2eu   // bits of float32(1e-35), LightGBM's kZeroThreshold
__device__ __forceinline__ u32 x_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ u32 x_bits(double v) {      // bits of the nearest float32
    const double r = f32_round(v);
    if (fabs(r) < __longlong_as_double(0x3810000000000000LL))
        return (u32)(fabs(r) * __longlong_as_double(0x4940000000000000LL))
               | (signbit(r) ? 0x80000000u : 0u);
    return __float_as_uint((float)r);
}

template <typename T>
__device__ __forceinline__ double walk(const Node* nd, i64 g0, const T* x, int step,
                                       const int* cat_off, const int* cat_nw, const u32* bits,
                                       double missing) {
    // packed: bits 0-15 feature (0xffff: leaf, key = its contribution's float32 bits),
    // bit 16 default left, bits 17-18 missing type, bits 19-31 offset of the right child
    int i = 0;
    while (true) {
        const Node n = nd[i];
        const u32 f = n.packed & 0xffffu;
        if (f == 0xffffu) return widen(__uint_as_float(n.key));
        u32 b = x_bits(x[(i64)f * step]);
        if (b == 0x80000000u) b = 0u;                      // -0.0 compares as 0.0
        const int step_right = (int)(n.packed >> 19);
        const int to_default = ((n.packed >> 16) & 1u) ? 1 : step_right;
        const u32 mtype = (n.packed >> 17) & 3u;
        bool nan = (b & 0x7fffffffu) > 0x7f800000u;
        if (HAS_SENTINEL) {
            u32 mb = x_bits(missing);
            if (mb == 0x80000000u) mb = 0u;
            nan = nan || b == mb;
        }
        if (nan) {
            if (HAS_MISSING_NONE && mtype == 0u) b = 0u;
            else { i += to_default; continue; }
        }
        if (HAS_MISSING_ZERO && mtype == 1u && (b & 0x7fffffffu) <= ZERO_BITS) {
            i += to_default; continue;
        }
        const u32 k = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
        i += (STRICT ? k < n.key : k <= n.key) ? 1 : step_right;
    }
}
#endif

// Per-row sums: float64, or float32 sums held in doubles (a float32 sum computed in double
// then rounded once is the float32 sum: double rounding is exact for + at these widths).
struct Acc { double a[NOUT]; };

__device__ __forceinline__ void acc_init(Acc& a, const double* base) {
    for (int k = 0; k < NOUT; ++k) {
        const double s = AVERAGE ? 0.0 : base[k];
        a.a[k] = SUM_F32 ? f32_round(s) : s;
    }
}
__device__ __forceinline__ void acc_add(Acc& a, int k, double c) {
    // c: the leaf's contribution, already a float32 value when SUM_F32
    a.a[k] = SUM_F32 ? f32_round(a.a[k] + c) : a.a[k] + c;
}
__device__ __forceinline__ void acc_store(const Acc& a, const double* base,
                                          const double* counts, double* out) {
    // skltr._cpu.traversal.finish_output
    for (int k = 0; k < NOUT; ++k) {
        double total = a.a[k];
        if (AVERAGE) {
            if (counts[k] > 0.0) total = total / counts[k];
            total = SUM_F32 ? f32_round(f32_round(total) + f32_round(base[k]))
                            : total + base[k];
        }
        out[k] = total;
    }
}

extern "C" __global__ void to_float32(const double* in, u32* out, i64 n) {
    // float32 bits of doubles that hold float32 values (the -ftz cast would flush subnormals)
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double x = in[i];
    if (fabs(x) < __longlong_as_double(0x3810000000000000LL))
        out[i] = (u32)(fabs(x) * __longlong_as_double(0x4940000000000000LL))
                 | (signbit(x) ? 0x80000000u : 0u);
    else
        out[i] = __float_as_uint((float)x);
}

#define ARGS const XT* __restrict__ X, i64 n, int n_cols, const Node* __restrict__ nodes, \
    const i64* __restrict__ tree_start, const int* __restrict__ tree_out, int n_trees, \
    const int* __restrict__ cat_off, const int* __restrict__ cat_nw, \
    const u32* __restrict__ bits, const double* __restrict__ base, \
    const double* __restrict__ counts, double missing, double* __restrict__ out

extern "C" __global__ void direct(ARGS) {
    const i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const XT* x = X + row * n_cols;
    Acc a; acc_init(a, base);
    for (int t = 0; t < n_trees; ++t) {
        const i64 s = tree_start[t];
        acc_add(a, NOUT == 1 ? 0 : tree_out[t],
                walk(nodes + s, s, x, 1, cat_off, cat_nw, bits, missing));
    }
    acc_store(a, base, counts, out + row * NOUT);
}

extern "C" __global__ void shared_data(ARGS) {
    // the block's rows feature-major in shared memory: sx[f * blockDim.x + r]
    extern __shared__ __align__(16) unsigned char smem[];
    XT* sx = (XT*)smem;
    const i64 r0 = (i64)blockIdx.x * blockDim.x;
    const int rows = (int)min((i64)blockDim.x, n - r0);
    for (int k = threadIdx.x; k < rows * n_cols; k += blockDim.x) {
        const int r = k / n_cols, f = k - r * n_cols;
        sx[f * blockDim.x + r] = X[(r0 + r) * n_cols + f];
    }
    __syncthreads();
    if ((int)threadIdx.x >= rows) return;
    const XT* x = sx + threadIdx.x;
    Acc a; acc_init(a, base);
    for (int t = 0; t < n_trees; ++t) {
        const i64 s = tree_start[t];
        acc_add(a, NOUT == 1 ? 0 : tree_out[t],
                walk(nodes + s, s, x, (int)blockDim.x, cat_off, cat_nw, bits, missing));
    }
    acc_store(a, base, counts, out + (r0 + threadIdx.x) * NOUT);
}

extern "C" __global__ void shared_forest(ARGS, const int* __restrict__ chunk_tree,
                                         int n_chunks) {
    // chunks of whole trees (chunk_tree: first tree of each chunk, then n_trees) staged in
    // shared memory in turn; every thread walks its row through each chunk
    extern __shared__ __align__(16) unsigned char smem[];
    Node* sn = (Node*)smem;
    const i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = row < n;
    const XT* x = X + (live ? row : 0) * n_cols;
    Acc a; acc_init(a, base);
    for (int c = 0; c < n_chunks; ++c) {
        const int t0 = chunk_tree[c], t1 = chunk_tree[c + 1];
        const i64 g0 = tree_start[t0];
        const int m = (int)(tree_start[t1] - g0);
        __syncthreads();                   // the previous chunk is done with
        const i64* src = (const i64*)(nodes + g0);   // 8-byte words: both node sizes
        i64* dst = (i64*)sn;
        const int words = m * (int)(sizeof(Node) / 8);
        for (int k = threadIdx.x; k < words; k += blockDim.x) dst[k] = src[k];
        __syncthreads();
        if (live) {
            for (int t = t0; t < t1; ++t) {
                const i64 s = tree_start[t];
                acc_add(a, NOUT == 1 ? 0 : tree_out[t],
                        walk(sn + (s - g0), s, x, 1, cat_off, cat_nw, bits, missing));
            }
        }
    }
    if (live) acc_store(a, base, counts, out + row * NOUT);
}

extern "C" __global__ void shared_both(ARGS, const int* __restrict__ chunk_tree,
                                       int n_chunks) {
    // shared_data's rows and shared_forest's chunks together: every read of a walk is a
    // shared-memory read. Shared: the rows feature-major, then one chunk of trees.
    extern __shared__ __align__(16) unsigned char smem[];
    const int R = blockDim.x;
    XT* sx = (XT*)smem;
    Node* sn = (Node*)(smem + (((i64)n_cols * R * sizeof(XT) + 15) & ~(i64)15));
    const i64 r0 = (i64)blockIdx.x * R;
    const int rows = (int)min((i64)R, n - r0);
    for (int k = threadIdx.x; k < rows * n_cols; k += R) {
        const int r = k / n_cols, f = k - r * n_cols;
        sx[f * R + r] = X[(r0 + r) * n_cols + f];
    }
    const bool live = (int)threadIdx.x < rows;
    const XT* x = sx + threadIdx.x;
    Acc a; acc_init(a, base);
    for (int c = 0; c < n_chunks; ++c) {
        const int t0 = chunk_tree[c], t1 = chunk_tree[c + 1];
        const i64 g0 = tree_start[t0];
        const int m = (int)(tree_start[t1] - g0);
        __syncthreads();                   // rows stored; the previous chunk is done with
        const i64* src = (const i64*)(nodes + g0);
        i64* dst = (i64*)sn;
        const int words = m * (int)(sizeof(Node) / 8);
        for (int k = threadIdx.x; k < words; k += R) dst[k] = src[k];
        __syncthreads();
        if (live) {
            for (int t = t0; t < t1; ++t) {
                const i64 s = tree_start[t];
                acc_add(a, NOUT == 1 ? 0 : tree_out[t],
                        walk(sn + (s - g0), s, x, R, cat_off, cat_nw, bits, missing));
            }
        }
    }
    if (live) acc_store(a, base, counts, out + (r0 + threadIdx.x) * NOUT);
}
"""


@cupy.memoize(for_each_device=True)
def _module(strict, f32_inputs, input_f32, has_sentinel, sum_f32, average, n_outputs,
            x_dtype, node_kinds, compact):
    has_cat, has_missing_none, has_missing_zero = node_kinds
    defines = {"COMPACT": compact, "STRICT": strict, "F32_INPUTS": f32_inputs,
               "INPUT_F32": input_f32,
               "HAS_SENTINEL": has_sentinel, "HAS_CAT": has_cat,
               "HAS_MISSING_NONE": has_missing_none, "HAS_MISSING_ZERO": has_missing_zero,
               "SUM_F32": sum_f32, "AVERAGE": average, "NOUT": n_outputs}
    xt = "typedef float XT;\n" if x_dtype == "float32" else "typedef double XT;\n"
    return module(xt + EXACT_FLOAT32 + _SOURCE, defines)


@njit(cache=True)
def _preorder(tree_ptr, left, right):
    """Old global index of every node in depth-first preorder (left child first), per tree."""
    perm = np.empty(tree_ptr[-1], np.int64)
    stack = np.empty(max(1, np.max(np.diff(tree_ptr)) if tree_ptr.size > 1 else 1), np.int64)
    pos = 0
    for t in range(tree_ptr.size - 1):
        start = tree_ptr[t]
        if tree_ptr[t + 1] == start:
            continue
        top = 0
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            perm[pos] = start + node
            pos += 1
            if left[start + node] >= 0:
                stack[top] = right[start + node]
                stack[top + 1] = left[start + node]
                top += 2
    return perm[:pos]


class ForestLayout:
    """A ``TreeEnsemble`` on the GPU in the traversal kernels' layout (built once).

    Attributes
    ----------
    nbytes : int
        Device bytes of the tables.
    choices : dict
        ``{batch size class: placement}`` chosen so far (size class: ``ceil(log2(rows))``).
    """

    def __init__(self, ensemble):
        from .._records import routing  # noqa: PLC0415

        e = ensemble
        self._ensemble = e  # pickled as the ensemble: the tables are rebuilt on load
        r = routing(e)
        self.routing = r
        self.n_outputs = int(e.n_outputs)
        self.input_rule = e.input_rule
        tree_ptr = np.asarray(e.tree_ptr, np.int64)
        perm = _preorder(tree_ptr, np.asarray(e.left, np.int64), np.asarray(e.right, np.int64))
        n_nodes = perm.size
        new_of_old = np.empty(max(tree_ptr[-1], 1), np.int64)
        new_of_old[perm] = np.arange(n_nodes)
        sizes = np.diff(tree_ptr)
        tree_of_old = np.repeat(np.arange(sizes.size), sizes)
        leaf = np.asarray(e.left)[perm] < 0
        feature = np.where(leaf, -1, np.asarray(e.feature)[perm]).astype(np.int32)
        weight = np.asarray(e.tree_weight, np.float64)[tree_of_old[perm]]
        value = np.asarray(e.value, np.float64)[perm]
        if r.sum_f32:  # as the CPU kernel: float32(float32(value) * float32(weight))
            contrib = (value.astype(np.float32) * weight.astype(np.float32)).astype(np.float64)
        else:
            contrib = value * weight
        v = np.where(leaf, contrib, np.asarray(e.threshold, np.float64)[perm])
        start_old = tree_ptr[tree_of_old[perm]]
        right_new = new_of_old[start_old + np.maximum(np.asarray(e.right)[perm], 0)]
        offset = np.where(leaf, 0, right_new - np.arange(n_nodes))
        if offset.max(initial=0) >= 2**23:
            raise ValueError("a tree has more than 2**23 nodes: too large for the GPU layout.")
        flags = np.asarray(e.flags, np.int64)[perm]
        meta = (flags | (offset << 8)).astype(np.int32)
        # the routing branches this forest needs: the others are compiled out
        split = ~leaf
        cat = split & ((flags & NodeFlags.CATEGORICAL) != 0)
        kind = NodeFlags.missing_type(flags)
        self.node_kinds = (int(cat.any()),
                           int((split & ~cat & (kind == NodeFlags.MISSING_NONE)).any()),
                           int((split & ~cat & (kind == NodeFlags.MISSING_ZERO)).any()))
        self.compact = _compact_ok(e, r, v, leaf, feature, offset, self.node_kinds)
        if self.compact:  # float32 keys and values, packed feature / flags / offset
            rec = _compact_nodes(v, leaf, feature, flags, offset)
        else:
            rec = np.empty(max(n_nodes, 1), dtype=[("v", "<f8"), ("feature", "<i4"),
                                                   ("meta", "<i4")])
            rec["v"][:n_nodes], rec["feature"][:n_nodes], rec["meta"][:n_nodes] = (
                v, feature, meta)
        self.node_bytes = rec.dtype.itemsize
        self.nodes = cupy.asarray(rec.view(np.uint8))
        has_cat = e.cat_offset is not None and e.cat_nwords is not None
        self.cat_off = cupy.asarray(np.asarray(e.cat_offset, np.int32)[perm] if has_cat
                                    else np.zeros(1, np.int32))
        self.cat_nw = cupy.asarray(np.asarray(e.cat_nwords, np.int32)[perm] if has_cat
                                   else np.zeros(1, np.int32))
        bits = e.cat_bitsets if has_cat and e.cat_bitsets is not None else None
        self.bits = cupy.asarray(np.asarray(bits, np.uint32) if bits is not None and len(bits)
                                 else np.zeros(1, np.uint32))
        self.tree_start_d = cupy.asarray(tree_ptr)  # the preorder keeps every tree's size
        self.tree_out = cupy.asarray(np.asarray(e.tree_output, np.int32))
        self.base = cupy.asarray(np.asarray(e.base_score, np.float64))
        counts = np.bincount(np.asarray(e.tree_output, np.int64), minlength=self.n_outputs)
        self.counts = cupy.asarray(counts.astype(np.float64))
        self.n_trees = int(sizes.size)
        max_tree = int(sizes.max(initial=0)) * self.node_bytes
        self.chunks = (_tree_chunks(sizes, SHARED_BYTES, self.node_bytes)
                       if max_tree <= SHARED_BYTES else None)
        self.choices = {}
        self.nbytes = int(sum(a.nbytes for a in (self.nodes, self.cat_off, self.cat_nw,
                                                  self.bits, self.tree_start_d, self.tree_out)))

    def __reduce__(self):
        return (build_forest_layout, (self._ensemble,))

    # ------------------------------------------------------------------ kernels
    def _kernel(self, name, x_dtype):
        r = self.routing
        mod = _module(int(r.strict), int(r.f32_inputs), int(self.input_rule == "float32"),
                      int(r.has_sentinel), int(r.sum_f32), int(r.average), self.n_outputs,
                      x_dtype, self.node_kinds, int(self.compact))
        return mod.get_function(name)

    def eligible(self, X):
        """The placements that can run ``X`` (shared memory budgets)."""
        out = ["direct"]
        if X.shape[1] * 32 * X.dtype.itemsize <= SHARED_BYTES:
            out.append("shared_data")
        if self.chunks is not None:
            out.append("shared_forest")
            if self._both_bytes(X) <= MAX_SHARED_BYTES:
                out.append("shared_both")
        return out

    def _both_bytes(self, X):
        rows = -(-X.shape[1] * SHARED_BOTH_THREADS * X.dtype.itemsize // 16) * 16
        return rows + self.chunks[1]

    def run(self, placement, X, out):
        """Score ``X`` (CuPy, float32 / float64, C order) into ``out`` (n, n_outputs) float64."""
        n = X.shape[0]
        if n == 0:
            return
        name = "float32" if X.dtype == cupy.float32 else "float64"
        args = (X, np.int64(n), np.int32(X.shape[1]), self.nodes, self.tree_start_d,
                self.tree_out, np.int32(self.n_trees), self.cat_off, self.cat_nw, self.bits,
                self.base, self.counts, np.float64(self.routing.missing_value), out)
        kern = self._kernel(placement, name)
        threads, smem = THREADS, 0
        if placement == "shared_data":
            per_row = X.shape[1] * X.dtype.itemsize
            threads = max(32, min(THREADS, SHARED_BYTES // max(per_row, 1) // 32 * 32))
            smem = per_row * threads
        elif placement == "shared_forest":
            threads = SHARED_FOREST_THREADS
            chunk_tree, max_bytes = self.chunks
            args = args + (chunk_tree, np.int32(chunk_tree.size - 1))
            smem = max_bytes
        elif placement == "shared_both":
            threads = SHARED_BOTH_THREADS
            chunk_tree, _ = self.chunks
            args = args + (chunk_tree, np.int32(chunk_tree.size - 1))
            smem = self._both_bytes(X)
        if smem > 48 * 1024:
            kern.max_dynamic_shared_size_bytes = smem
        kern((blocks(n, threads),), (threads,), args, shared_mem=smem)

    def to_float32(self, out):
        """``out`` (float64 holding float32 values) as float32 on the device, subnormals
        kept."""
        bits = cupy.empty(out.shape, cupy.uint32)
        n, t = out.size, THREADS
        if n:
            self._kernel("to_float32", "float64")((blocks(n, t),), (t,),
                                                  (out, bits, np.int64(n)))
        return bits.view(cupy.float32)

    def placement(self, X, out):
        """The placement for a batch like ``X``: measured on the first batch of its size class
        (every eligible placement run once warm, CUDA events), then remembered."""
        key = max(0, math.ceil(math.log2(max(X.shape[0], 1))))
        if key not in self.choices:
            candidates = self.eligible(X)
            if len(candidates) == 1:
                self.choices[key] = candidates[0]
            else:
                times = {}
                for p in candidates:
                    self.run(p, X, out)  # compile, warm the caches
                    start, end = cupy.cuda.Event(), cupy.cuda.Event()
                    start.record()
                    self.run(p, X, out)
                    end.record()
                    end.synchronize()
                    times[p] = cupy.cuda.get_elapsed_time(start, end)
                self.choices[key] = min(times, key=times.get)
        return self.choices[key]


def _compact_ok(e, r, v, leaf, feature, offset, node_kinds):
    """Whether the 8-byte layout reproduces the ensemble: float32 routing and float32 sums,
    no categorical node, every threshold a float32, features and offsets that fit."""
    split = ~leaf
    t = v[split]
    with np.errstate(over="ignore"):
        f32 = bool(np.all(t.astype(np.float32).astype(np.float64) == t))
    return bool(r.f32_inputs and r.sum_f32 and not node_kinds[0] and f32
                and feature.max(initial=0) < 0xFFFF and offset.max(initial=0) < 2**13)


def _compact_nodes(v, leaf, feature, flags, offset):
    """The 8-byte records: ``key`` (an internal node's threshold as an order-preserving key of
    its float32 bits, -0.0 as 0.0; a leaf's contribution as float32 bits) and ``packed``
    (feature or 0xffff, default-left bit 16, missing type bits 17-18, offset bits 19-31)."""
    bits = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = np.where(bits == 0x80000000, 0, bits)
    key = np.where(b & 0x80000000, ~b & 0xFFFFFFFF, b | 0x80000000)
    key = np.where(leaf, bits, key)
    dl = (flags & NodeFlags.DEFAULT_LEFT) != 0
    packed = (np.where(leaf, 0xFFFF, feature).astype(np.uint64) | (dl.astype(np.uint64) << 16)
              | (NodeFlags.missing_type(flags).astype(np.uint64) << 17)
              | (offset.astype(np.uint64) << 19))
    rec = np.empty(max(v.size, 1), dtype=[("key", "<u4"), ("packed", "<u4")])
    rec["key"][:v.size], rec["packed"][:v.size] = key, packed
    return rec


def _tree_chunks(sizes, budget, node_bytes):
    """Chunks of consecutive whole trees of at most ``budget`` bytes of nodes: (first tree of
    each chunk then n_trees as a CuPy int32 array, the largest chunk's bytes)."""
    per = budget // node_bytes
    starts, used, largest = [0], 0, 0
    for t, s in enumerate(sizes):
        if used + s > per:
            starts.append(t)
            largest = max(largest, used)
            used = 0
        used += int(s)
    largest = max(largest, used)
    starts.append(len(sizes))
    if len(sizes) == 0:
        starts = [0, 0]
    return cupy.asarray(np.asarray(starts, np.int32)), max(largest * node_bytes, 16)


def build_forest_layout(ensemble) -> ForestLayout:
    """:class:`ForestLayout` of ``ensemble`` on the current GPU."""
    return ForestLayout(ensemble)


def device_input(ensemble, X):
    """``X`` as the kernels read it, on the GPU: the ensemble's ``input_rule`` applied
    (:mod:`skltr.trees._input`), float32 kept where the rule makes every value a float32,
    C order. Host arrays, DataFrames and scipy matrices go through the host rules first."""
    rule = ensemble.input_rule
    if isinstance(X, cupy.ndarray):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric; got dtype {X.dtype}.")
        # A float64 array under the float32 rule stays float64: the kernels round each value
        # (a device cast would flush float32 subnormals); integers are never subnormal.
        if X.dtype.kind in "biu" and rule != "float64":
            X = X.astype(cupy.float32)
        elif rule == "float64" or X.dtype not in (cupy.float32, cupy.float64):
            X = X.astype(cupy.float64)
        return cupy.ascontiguousarray(X)
    from ..trees._input import model_input  # noqa: PLC0415

    Xh = model_input(ensemble, X)  # float64, the rule applied
    if rule == "float32":  # every value is a float32: send half the bytes
        Xh = Xh.astype(np.float32)
    return cupy.asarray(np.ascontiguousarray(Xh))


def predict_raw(ensemble, layout, X, n_jobs=None):
    """Raw scores of ``ensemble`` on ``X`` by GPU traversal, equal to
    ``TreeEnsemble.predict_raw`` bit for bit; a CuPy array for CuPy input, else NumPy."""
    on_device = isinstance(X, cupy.ndarray)
    from ..trees._sparse_input import is_sparse  # noqa: PLC0415

    if is_sparse(X):
        from ..trees._sparse_input import map_row_chunks  # noqa: PLC0415

        return map_row_chunks(ensemble, X, lambda rows: predict_raw(ensemble, layout, rows))
    Xd = device_input(ensemble, X)
    if Xd.shape[1] != ensemble.n_features:
        raise ValueError(f"X has {Xd.shape[1]} features, but the model expects "
                         f"{ensemble.n_features}.")
    out = cupy.empty((Xd.shape[0], ensemble.n_outputs), cupy.float64)
    layout.run(layout.placement(Xd, out), Xd, out)
    if ensemble.sum_dtype == "float32":
        out = layout.to_float32(out) if on_device else out.get().astype(np.float32)
    out = out[:, 0] if ensemble.n_outputs == 1 else out
    return out if on_device or not isinstance(out, cupy.ndarray) else out.get()


register(Backend("gpu_traversal", "cuda", build_forest_layout, predict_raw))
