"""Tahoe-style traversal of a ``TreeEnsemble`` on the GPU, and the GPU backends' dispatch.

The ensemble is laid out once (:mod:`skltr._gpu.forest_layout`: preorder nodes, the more
visited child next, 16- or 8-byte records). Routing is ``skltr._cpu.traversal.go_left`` line
for line, and every row's trees are summed in tree order, in float64 or float32 as the CPU
kernel does, then finished as ``finish_output`` does: raw scores equal
``TreeEnsemble.predict_raw`` bit for bit in every placement.

Placements (Xie et al., Tahoe), one kernel each; which is fastest depends on the forest's
size, the number of features and the batch, so :meth:`ForestLayout.placement` times the
eligible ones on the first batch of each size class and keeps the winner (``choices``):

``direct``
    one thread per row, rows and nodes read from global memory (through the caches);
``shared_data``
    a block's rows copied to shared memory feature-major first (one coalesced load), so that
    the scattered feature reads of a traversal hit shared memory;
``shared_forest``
    the forest staged through shared memory a chunk of whole trees at a time, every thread of
    the block walking its row through the chunk (trees that do not fit make it ineligible);
``shared_both``
    both: the block's rows and, in turn, each chunk of trees in shared memory;
``split_rows``
    Tahoe's split shared forest: blocks over (rows, chunks of trees), each chunk in shared
    memory; every walk stores its tree's contribution and ``sum_in_order`` adds a row's
    contributions in tree order, so the sums stay exact (no atomics);
``split_trees``
    one thread per (row, tree), neighbouring threads on neighbouring trees of a shape-grouped
    order (by depth, then size: a warp's walks end together), summed as ``split_rows``.

The split placements give a small batch many blocks (the latency of one query); they buffer
8 bytes per (row, tree), at most ``SPLIT_MAX_ENTRIES``. GPU-QuickScorer
(:mod:`skltr._gpu.quickscorer`) is one more strategy of the same autotune for ``"auto"``.

The routing rules and output precision are compile-time constants of the module (one
compilation per rule set, cached by CuPy).
"""

from __future__ import annotations

import math

import cupy
import numpy as np

from ..trees._backends import Backend, register
from ._compile import EXACT_FLOAT32, blocks, module
from .forest_layout import forest_arrays, tree_chunks
from .quickscorer import QuickScorerTables
from .tree_walk import DEVICE_SOURCE

__all__ = ["ForestLayout", "PLACEMENTS", "STRATEGIES", "build_forest_layout", "predict_raw"]

#: The traversal placements, in the order the autotune tries them.
PLACEMENTS = ("direct", "shared_data", "shared_forest", "shared_both", "split_rows",
              "split_trees")
#: Every strategy of the GPU backends: the traversal placements and GPU-QuickScorer.
STRATEGIES = PLACEMENTS + ("quickscorer",)
#: The placements that store every (row, tree) contribution before summing each row in order.
SPLIT = ("split_rows", "split_trees")
#: Most (row, tree) contributions a split placement buffers (8 bytes each: 256 MiB).
SPLIT_MAX_ENTRIES = 1 << 25
#: Node bytes of a split_rows block's chunk: small chunks give a small batch many blocks.
SPLIT_BYTES = 8 * 1024
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

_KERNELS = r"""
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

// Split placements (after Tahoe's split shared forest): the trees are split over blocks,
// every (row, tree) walk stores its contribution, and sum_in_order adds each row's in tree
// order -- the CPU's order, so the sums are bit for bit the same (no atomics, no reordered
// reduction). Many blocks for few rows: the latency of one small batch.

extern "C" __global__ void split_rows(ARGS, const int* __restrict__ chunk_tree,
                                      double* __restrict__ contrib) {
    // block (row block, chunk): the chunk's trees staged in shared memory, each thread
    // walks its row through them
    extern __shared__ __align__(16) unsigned char smem[];
    Node* sn = (Node*)smem;
    const int t0 = chunk_tree[blockIdx.y], t1 = chunk_tree[blockIdx.y + 1];
    const i64 g0 = tree_start[t0];
    const int words = (int)(tree_start[t1] - g0) * (int)(sizeof(Node) / 8);
    const i64* src = (const i64*)(nodes + g0);
    i64* dst = (i64*)sn;
    for (int k = threadIdx.x; k < words; k += blockDim.x) dst[k] = src[k];
    __syncthreads();
    const i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const XT* x = X + row * n_cols;
    for (int t = t0; t < t1; ++t) {
        const i64 s = tree_start[t];
        contrib[row * n_trees + t] = walk(sn + (s - g0), s, x, 1, cat_off, cat_nw, bits,
                                          missing);
    }
}

extern "C" __global__ void split_trees(ARGS, const int* __restrict__ tree_order,
                                       double* __restrict__ contrib) {
    // one thread per (row, tree): neighbouring threads walk neighbouring trees of
    // tree_order (trees of similar shape grouped, so that a warp's walks end together)
    const i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n * n_trees) return;
    const i64 row = k / n_trees;
    const int t = tree_order[k - row * n_trees];
    const i64 s = tree_start[t];
    contrib[row * n_trees + t] = walk(nodes + s, s, X + row * n_cols, 1, cat_off, cat_nw,
                                      bits, missing);
}

extern "C" __global__ void sum_in_order(const double* __restrict__ contrib, i64 n,
                                        const int* __restrict__ tree_out, int n_trees,
                                        const double* __restrict__ base,
                                        const double* __restrict__ counts,
                                        double* __restrict__ out) {
    const i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const double* c = contrib + row * n_trees;
    Acc a; acc_init(a, base);
    for (int t = 0; t < n_trees; ++t) acc_add(a, NOUT == 1 ? 0 : tree_out[t], c[t]);
    acc_store(a, base, counts, out + row * NOUT);
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
    return module(xt + EXACT_FLOAT32 + DEVICE_SOURCE + _KERNELS, defines)


class ForestLayout:
    """A ``TreeEnsemble`` on the GPU, ready for the traversal kernels (and, when asked for,
    GPU-QuickScorer), with the strategy chosen per batch size.

    Parameters
    ----------
    ensemble : TreeEnsemble
    visits : ndarray of int64 or None
        Rows through each node (``skltr.trees._traversal.node_visits`` on calibration data):
        the more visited child is stored next to its parent (see
        :mod:`skltr._gpu.forest_layout`). Scores do not depend on it.
    strategies : tuple of str
        Among which :data:`STRATEGIES` to choose (``"quickscorer"`` needs trees of at most 64
        leaves; the others are skipped where ineligible).

    Attributes
    ----------
    nbytes : int
        Device bytes of the tables.
    choices : dict
        ``{batch size class: strategy}`` chosen so far (size class: ``ceil(log2(rows))``).
    """

    def __init__(self, ensemble, visits=None, strategies=PLACEMENTS):
        from .._records import routing  # noqa: PLC0415

        e = ensemble
        self._ensemble, self._visits, self._strategies = e, visits, tuple(strategies)
        self.routing = r = routing(e)
        self.n_outputs = int(e.n_outputs)
        self.input_rule = e.input_rule
        fa = forest_arrays(e, r, visits)
        self.compact, self.node_kinds = fa.compact, fa.node_kinds
        self.node_bytes = fa.nodes.dtype.itemsize
        self.nodes = cupy.asarray(fa.nodes.view(np.uint8))
        self.cat_off, self.cat_nw = cupy.asarray(fa.cat_off), cupy.asarray(fa.cat_nw)
        self.bits = cupy.asarray(fa.bits)
        self.new_of_old = fa.new_of_old
        self.tree_start_d = cupy.asarray(fa.tree_ptr)  # the preorder keeps every tree's size
        self.tree_out = cupy.asarray(np.asarray(e.tree_output, np.int32))
        self.base = cupy.asarray(np.asarray(e.base_score, np.float64))
        counts = np.bincount(np.asarray(e.tree_output, np.int64), minlength=self.n_outputs)
        self.counts = cupy.asarray(counts.astype(np.float64))
        sizes = np.diff(fa.tree_ptr)
        self.n_trees = int(sizes.size)
        fits = int(sizes.max(initial=0)) * self.node_bytes <= SHARED_BYTES
        self.chunks = (_device_chunks(sizes, SHARED_BYTES, self.node_bytes) if fits else None)
        self.split_chunks = (_device_chunks(sizes, SPLIT_BYTES, self.node_bytes)
                             if int(sizes.max(initial=0)) * self.node_bytes <= SPLIT_BYTES
                             else self.chunks)
        # trees of similar shape side by side for split_trees: by depth, then size
        depth = e.depths() if e.n_nodes else np.zeros(0, np.int32)
        tree_depth = (np.maximum.reduceat(depth, fa.tree_ptr[:-1]) if self.n_trees
                      and e.n_nodes else np.zeros(self.n_trees, np.int32))
        self.tree_order = cupy.asarray(
            np.lexsort((np.arange(self.n_trees), sizes, tree_depth)).astype(np.int32))
        self.qs = None
        if "quickscorer" in self._strategies:
            self.qs = QuickScorerTables.build(e, self)
        self.choices = {}
        self.nbytes = int(sum(a.nbytes for a in (
            self.nodes, self.cat_off, self.cat_nw, self.bits, self.tree_start_d,
            self.tree_out, self.tree_order)) + (self.qs.nbytes if self.qs else 0))

    def __reduce__(self):
        return (ForestLayout, (self._ensemble, self._visits, self._strategies))

    # ------------------------------------------------------------------ kernels
    def kernel(self, name, x_dtype):
        """The compiled kernel ``name`` for inputs of ``x_dtype`` ("float32" / "float64")."""
        return _module(*self.module_key(x_dtype)).get_function(name)

    def module_key(self, x_dtype):
        """The compile-time constants of this forest's kernels (the module cache key)."""
        r = self.routing
        return (int(r.strict), int(r.f32_inputs), int(self.input_rule == "float32"),
                int(r.has_sentinel), int(r.sum_f32), int(r.average), self.n_outputs, x_dtype,
                self.node_kinds, int(self.compact))

    def args(self, X, out):
        """The arguments every traversal kernel starts with (``ARGS``)."""
        return (X, np.int64(X.shape[0]), np.int32(X.shape[1]), self.nodes, self.tree_start_d,
                self.tree_out, np.int32(self.n_trees), self.cat_off, self.cat_nw, self.bits,
                self.base, self.counts, np.float64(self.routing.missing_value), out)

    def eligible(self, X):
        """The strategies that can run ``X`` (shared memory and buffer budgets)."""
        n = X.shape[0]
        out = []
        for s in self._strategies:
            if s == "shared_data":
                ok = X.shape[1] * 32 * X.dtype.itemsize <= SHARED_BYTES
            elif s in ("shared_forest", "split_rows"):
                ok = self.chunks is not None
            elif s == "shared_both":
                ok = self.chunks is not None and self._both_bytes(X) <= MAX_SHARED_BYTES
            elif s == "quickscorer":
                ok = self.qs is not None
            else:
                ok = True
            if s in SPLIT and n * self.n_trees > SPLIT_MAX_ENTRIES:
                ok = False
            if ok:
                out.append(s)
        return out

    def _both_bytes(self, X):
        rows = -(-X.shape[1] * SHARED_BOTH_THREADS * X.dtype.itemsize // 16) * 16
        return rows + self.chunks[1]

    def run(self, strategy, X, out):
        """Score ``X`` (CuPy, float32 / float64, C order) into ``out`` (n, n_outputs) float64
        with ``strategy``."""
        n = X.shape[0]
        if n == 0:
            return
        if strategy == "quickscorer":
            return self.qs.run(self, X, out)
        name = "float32" if X.dtype == cupy.float32 else "float64"
        args = self.args(X, out)
        kern = self.kernel(strategy, name)
        grid, threads, smem = (blocks(n, THREADS),), THREADS, 0
        if strategy == "shared_data":
            per_row = X.shape[1] * X.dtype.itemsize
            threads = max(32, min(THREADS, SHARED_BYTES // max(per_row, 1) // 32 * 32))
            grid, smem = (blocks(n, threads),), per_row * threads
        elif strategy in ("shared_forest", "shared_both"):
            threads = SHARED_FOREST_THREADS if strategy == "shared_forest" else (
                SHARED_BOTH_THREADS)
            chunk_tree, max_bytes = self.chunks
            args = args + (chunk_tree, np.int32(chunk_tree.size - 1))
            grid = (blocks(n, threads),)
            smem = max_bytes if strategy == "shared_forest" else self._both_bytes(X)
        elif strategy in SPLIT:
            contrib = cupy.empty(n * self.n_trees, cupy.float64)
            if strategy == "split_rows":
                chunk_tree, smem = self.split_chunks
                threads = 128 if n > 64 else 32 * -(-n // 32)
                grid = (blocks(n, threads), int(chunk_tree.size - 1))
                args = args + (chunk_tree, contrib)
            else:
                grid = (blocks(n * self.n_trees, THREADS),)
                args = args + (self.tree_order, contrib)
        if smem > 48 * 1024:
            kern.max_dynamic_shared_size_bytes = smem
        kern(grid, (threads,), args, shared_mem=smem)
        if strategy in SPLIT:
            self.kernel("sum_in_order", name)(
                (blocks(n, 128),), (128,), (contrib, np.int64(n), self.tree_out,
                                            np.int32(self.n_trees), self.base, self.counts,
                                            out))

    def to_float32(self, out):
        """``out`` (float64 holding float32 values) as float32 on the device, subnormals
        kept."""
        bits = cupy.empty(out.shape, cupy.uint32)
        n, t = out.size, THREADS
        if n:
            self.kernel("to_float32", "float64")((blocks(n, t),), (t,),
                                                 (out, bits, np.int64(n)))
        return bits.view(cupy.float32)

    def placement(self, X, out):
        """The strategy for a batch like ``X``: measured on the first batch of its size class
        (every eligible strategy run once warm, CUDA events), then remembered."""
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


def _device_chunks(sizes, budget, node_bytes):
    starts, largest = tree_chunks(sizes, budget, node_bytes)
    return cupy.asarray(starts), largest


def build_forest_layout(ensemble, visits=None) -> ForestLayout:
    """:class:`ForestLayout` of ``ensemble`` for the traversal placements, on the current
    GPU."""
    return ForestLayout(ensemble, visits, PLACEMENTS)


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
        from ..trees._input import inf_error, refuses_inf  # noqa: PLC0415

        if refuses_inf(ensemble) and X.dtype.kind == "f" and bool(cupy.isinf(X).any()):
            raise inf_error()  # as the host path (model_input) refuses it
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


def _auto_strategies(ensemble):
    """``"auto"``: the traversal placements, and GPU-QuickScorer where the CPU's ``auto``
    would take QuickScorer (most trees of at most 64 leaves)."""
    from ..trees._backends import choose_backend  # noqa: PLC0415

    return STRATEGIES if choose_backend(ensemble) == "quickscorer" else PLACEMENTS


register(Backend("gpu_traversal", "cuda", build_forest_layout, predict_raw))
register(Backend("gpu_quickscorer", "cuda",
                 lambda e, visits=None: ForestLayout(e, visits, ("quickscorer",)), predict_raw))
register(Backend("gpu_auto", "cuda",
                 lambda e, visits=None: ForestLayout(e, visits, _auto_strategies(e)),
                 predict_raw))
