"""Exact path-dependent TreeSHAP on the GPU: the CPU kernels' path algorithm in CUDA.

The paths are the CPU's (:func:`skltr.trees._shap.shap_paths`, built on the host once per
ensemble and copied to the GPU once per device): one thread per row walks the paths of a
chunk of trees, exactly as :func:`skltr._cpu.treeshap.treeshap_contribs` does (EXTEND over the
path's ``(z, o)``, one unwound sum per present element and one for all the absent ones), in
float64. Routing is ``skltr._cpu.traversal.go_left`` line for line, evaluated once per
internal node of the tree into a per-thread bit set.

Every thread of a warp works on the same path at the same time, so their additions go to the
same feature of consecutive rows: the output is accumulated feature-major
(``acc[(output * (n_features + 1) + feature) * rows + row]``), one coalesced transaction per
warp, and transposed at the end (or, with ``ACCUMULATE = "shared"``, each thread adds into
its own column of a shared-memory accumulator, flushed once per chunk of trees). Rows are
scored ``ROWS_PER_LAUNCH`` at a time (that block's accumulator stays in L2); each launch
spreads the trees over ``grid.y`` chunks so that a GPU gets at least ``TARGET_THREADS``
threads, the chunks adding with ``atomicAdd`` (float64, native since sm_60): sums agree with
the CPU's to rounding (not bit for bit)::

    grid (ceil(rows / THREADS), tree chunks)        thread (x, y): row x, trees of chunk y
        per tree:  hot bits <- go_left at every internal node
        per path:  z, o of its elements -> EXTEND -> unwound sums -> acc[feature, row] +=

Interaction values condition on each element of a path in turn (O(k**3) per path, as the
CPU), into ``acc[((output * F + c) * F + i) * rows + row]``; the diagonal and the expected
value are filled in afterwards with CuPy from the contributions.
"""

from __future__ import annotations

import cupy
import numpy as np

from .._cpu.treeshap import unwind_ratios
from ..trees._shap import check_explainable, register_gpu, shap_paths
from ._compile import EXACT_FLOAT32, blocks, module
from .traversal import device_input
from .tree_walk import ROUTE_SOURCE

#: The routing of every node kind compiled in (the path conditions may meet any).
ALL_NODE_KINDS = {"HAS_CAT": 1, "HAS_MISSING_NONE": 1, "HAS_MISSING_ZERO": 1}

__all__ = ["predict_contribs", "predict_interactions"]

#: Threads of a block (one row each). 128: the per-thread path buffers (3 x (MAX_K + 1)
#: doubles) and the hot bit set live in local memory / registers; more warps per SM hide the
#: latency of the feature reads.
THREADS = 128
#: Rows per launch: 16,384 rows x 137 columns x 8 bytes = 18 MB of accumulator, inside the
#: H100's 50 MB L2, so the read-modify-writes of a launch stay on chip.
ROWS_PER_LAUNCH = 16384
#: Threads a launch aims for (tree chunks = this / rows, at most the number of trees):
#: 132 SMs x 2,048 resident threads.
TARGET_THREADS = 132 * 2048
#: Longest path (distinct features) whose loops are unrolled (registers instead of local
#: memory): XGBoost depth <= 12; LightGBM's deep 255-leaf trees take the dynamic loops.
UNROLL_MAX_K = 12
#: Where ``contribs`` adds up a row's values: ``"global"`` straight into the feature-major
#: accumulator (coalesced read-modify-writes, float64 atomics across tree chunks);
#: ``"shared"`` in each thread's column of a shared-memory accumulator, flushed once per chunk
#: of trees (far fewer global additions, fewer threads per SM); ``"auto"``: shared when
#: ``SHARED_ACC_THREADS`` columns fit in ``SHARED_ACC_BYTES``. Not yet measured on a GPU
#: (``benchmarks/explain.py --device cuda --gpu-acc shared`` times the other): "global" keeps
#: the most threads per SM, and its atomics (one coalesced 256-byte addition per warp and
#: path element) should stay below the arithmetic.
ACCUMULATE = "global"
#: Threads of a shared-accumulator block (its shared memory is outputs x (features + 1) x
#: this x 8 bytes: 35 KiB for 136 features).
SHARED_ACC_THREADS = 32
#: Most shared memory of the shared accumulator (Hopper allows 227 KiB a block).
SHARED_ACC_BYTES = 96 * 1024
#: Rows per launch of the interaction kernel (its accumulator is (features + 1)**2 per row).
INTERACTION_ROWS_PER_LAUNCH = 1024

SOURCE = r"""
__device__ __forceinline__ bool go_left(double x, i64 node, const double* thr, const u8* flags,
                                        const i64* cat_off, const int* cat_nw, const u32* bits,
                                        double missing) {
    return route(x, flags[node], thr[node], node, cat_off, cat_nw, bits, missing);
}

struct Forest {
    const i64* tree_ptr; const int* feature; const double* thr; const int* left;
    const u8* flags; const i64* cat_off; const int* cat_nw; const u32* bits;
    const i64* tree_path_ptr; const i64* path_ptr; const double* path_value;
    const int* path_output; const int* elem_feature; const double* elem_zero;
    const i64* elem_cond_ptr; const int* cond_node; const u8* cond_left;
};

__device__ __forceinline__ void tree_hot(const Forest& F, const XT* x, int t, double missing,
                                         u32* hot) {
    const i64 start = F.tree_ptr[t], size = F.tree_ptr[t + 1] - start;
    for (int w = 0; w < HOT_WORDS; ++w) hot[w] = 0u;
    for (i64 j = 0; j < size; ++j) {
        const i64 node = start + j;
        if (F.left[node] >= 0 &&
            go_left(widen(x[F.feature[node]]), node, F.thr, F.flags, F.cat_off, F.cat_nw,
                    F.bits, missing))
            hot[j >> 5] |= 1u << (u32)(j & 31);
    }
}

// With MAX_K <= UNROLL_MAX_K every loop over a path's elements is unrolled to MAX_K
// iterations, guarded by the path's length k: all indices are then compile-time constants and
// z, o, w live in registers (the dynamic loops keep them in local memory). ``ratios`` is the
// CPU's table (skltr._cpu.treeshap.unwind_ratios): [0][k][j] = (k+1)/(j+1),
// [1][k][j] = (k-j)/(k+1), [2][k][j] = (k+1)/(k-j), so the arithmetic is the CPU's.
#if MAX_K <= UNROLL_MAX_K
#define ELEMS _Pragma("unroll") for
#else
#define ELEMS for
#endif
#define R(t, k, j) ratios[((t) * (MAX_K + 1) + (k)) * (MAX_K + 1) + (j)]

__device__ __forceinline__ bool fractions(const Forest& F, const u32* hot, i64 e0, int k,
                                          double* z, double* o) {
    bool ok = true;
    ELEMS (int i = 0; i < MAX_K; ++i) {
        if (i < k) {
            const i64 e = e0 + i;
            double oi = 1.0;
            for (i64 c = F.elem_cond_ptr[e]; c < F.elem_cond_ptr[e + 1]; ++c) {
                const int j = F.cond_node[c];
                const u8 left = (u8)((hot[j >> 5] >> (u32)(j & 31)) & 1u);
                if (left != F.cond_left[c]) { oi = 0.0; break; }
            }
            const double zi = F.elem_zero[e];
            if (oi == 0.0 && zi == 0.0) ok = false;
            z[i] = zi; o[i] = oi;
        }
    }
    return ok;
}

__device__ __forceinline__ void extend(double* w, const double* z, const double* o, int k) {
    w[0] = 1.0;
    ELEMS (int d = 1; d <= MAX_K; ++d) {
        if (d <= k) {
            const double zd = z[d - 1], od = o[d - 1], inv = 1.0 / (d + 1);
            w[d] = 0.0;
            ELEMS (int j = d - 1; j >= 0; --j) {
                w[j + 1] += od * w[j] * (j + 1) * inv;
                w[j] = zd * w[j] * (d - j) * inv;
            }
        }
    }
}

// unwound sum of a present element (o = 1); and z * unwound sum of every absent one (o = 0)
__device__ __forceinline__ double unwound_present(const double* w, int k, double zi,
                                                  const double* ratios) {
    double total = 0.0, nxt = 0.0;
    ELEMS (int j = 0; j <= MAX_K; ++j) if (j == k) nxt = w[j];
    ELEMS (int j = MAX_K - 1; j >= 0; --j) {
        if (j < k) {
            const double tmp = nxt * R(0, k, j);
            total += tmp;
            nxt = w[j] - tmp * zi * R(1, k, j);
        }
    }
    return total;
}

__device__ __forceinline__ double unwound_absent(const double* w, int k, const double* ratios) {
    double total = 0.0;
    ELEMS (int j = MAX_K - 1; j >= 0; --j) if (j < k) total += w[j] * R(2, k, j);
    return total;
}

__device__ __forceinline__ void add(double* acc, i64 idx, double v, bool atomic) {
    if (atomic) atomicAdd(acc + idx, v); else acc[idx] += v;
}

#if SHARED_ACC
// each thread's own column of the block's accumulator: sacc[slot * blockDim.x + thread]
extern __shared__ double sacc[];
#endif

// the Forest's pointers as kernel parameters, in the struct's order
#define FOREST_PARAMS \
    const i64* tree_ptr, const int* feature, const double* thr, const int* left, \
    const u8* flags, const i64* cat_off, const int* cat_nw, const u32* bits, \
    const i64* tree_path_ptr, const i64* path_ptr, const double* path_value, \
    const int* path_output, const int* elem_feature, const double* elem_zero, \
    const i64* elem_cond_ptr, const int* cond_node, const u8* cond_left, \
    const double* ratios
#define FOREST_INIT {tree_ptr, feature, thr, left, flags, cat_off, cat_nw, bits, \
    tree_path_ptr, path_ptr, path_value, path_output, elem_feature, elem_zero, \
    elem_cond_ptr, cond_node, cond_left}

extern "C" __global__ void contribs(const XT* X, i64 n, int nf, FOREST_PARAMS, int n_trees,
                                    int trees_per_chunk, double missing, double* acc,
                                    int atomic) {
    const Forest F = FOREST_INIT;
    const i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const XT* x = X + row * nf;
    const int t0 = blockIdx.y * trees_per_chunk;
    const int t1 = min(n_trees, t0 + trees_per_chunk);
    u32 hot[HOT_WORDS];
    double z[MAX_K + 1], o[MAX_K + 1], w[MAX_K + 2];
#if SHARED_ACC
    const int bd = blockDim.x, tid = threadIdx.x, n_slots = NOUT * (nf + 1);
    for (int s = 0; s < n_slots; ++s) sacc[s * bd + tid] = 0.0;
#define ACC(slot, row, v) sacc[(slot) * bd + tid] += (v)
#else
#define ACC(slot, row, v) add(acc, (slot) * n + (row), (v), atomic)
#endif
    for (int t = t0; t < t1; ++t) {
        const i64 p0 = F.tree_path_ptr[t], p1 = F.tree_path_ptr[t + 1];
        if (F.path_ptr[p1] == F.path_ptr[p0]) continue;   // one leaf: expected value only
        tree_hot(F, x, t, missing, hot);
        for (i64 p = p0; p < p1; ++p) {
            const i64 e0 = F.path_ptr[p];
            const int k = (int)(F.path_ptr[p + 1] - e0);
            if (!fractions(F, hot, e0, k, z, o)) continue;
            extend(w, z, o, k);
            const double v = F.path_value[p];
            const i64 base = (i64)F.path_output[p] * (nf + 1);
            double absent = 0.0;
            bool have_absent = false;
            ELEMS (int i = 0; i < MAX_K; ++i) {
                if (i >= k) continue;
                const i64 slot = base + F.elem_feature[e0 + i];
                if (o[i] == 0.0) {
                    if (!have_absent) {
                        absent = -unwound_absent(w, k, ratios) * v;
                        have_absent = true;
                    }
                    ACC(slot, row, absent);
                } else {
                    ACC(slot, row, unwound_present(w, k, z[i], ratios) * (1.0 - z[i]) * v);
                }
            }
        }
    }
#if SHARED_ACC
    for (int s = 0; s < n_slots; ++s) {        // one addition per slot and chunk of trees
        const double v = sacc[s * bd + tid];
        if (v != 0.0) add(acc, (i64)s * n + row, v, atomic);
    }
#endif
#undef ACC
}

extern "C" __global__ void interactions(const XT* X, i64 n, int nf, FOREST_PARAMS,
                                        int n_trees, int trees_per_chunk, double missing,
                                        double* acc, int atomic) {
    const Forest F = FOREST_INIT;
    const i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const XT* x = X + row * nf;
    const int t0 = blockIdx.y * trees_per_chunk;
    const int t1 = min(n_trees, t0 + trees_per_chunk);
    const i64 nf1 = nf + 1;
    u32 hot[HOT_WORDS];
    double z[MAX_K + 1], o[MAX_K + 1], z2[MAX_K + 1], o2[MAX_K + 1], w2[MAX_K + 2];
    z2[MAX_K] = o2[MAX_K] = 0.0;
    for (int t = t0; t < t1; ++t) {
        const i64 p0 = F.tree_path_ptr[t], p1 = F.tree_path_ptr[t + 1];
        if (F.path_ptr[p1] == F.path_ptr[p0]) continue;
        tree_hot(F, x, t, missing, hot);
        for (i64 p = p0; p < p1; ++p) {
            const i64 e0 = F.path_ptr[p];
            const int k = (int)(F.path_ptr[p + 1] - e0);
            if (!fractions(F, hot, e0, k, z, o)) continue;
            const double v = F.path_value[p];
            const i64 q = F.path_output[p];
            for (int c = 0; c < k; ++c) {       // condition on element c: drop it, scale
                double zc = 0.0, oc = 0.0;
                ELEMS (int i = 0; i < MAX_K; ++i) if (i == c) { zc = z[i]; oc = o[i]; }
                const double scale = 0.5 * (oc - zc) * v;
                if (scale == 0.0) continue;
                // the path without element c: element m is i = m (m < c) or i = m + 1
                ELEMS (int m = 0; m < MAX_K; ++m) {
                    if (m < k - 1) {
                        z2[m] = m < c ? z[m] : z[m + 1];
                        o2[m] = m < c ? o[m] : o[m + 1];
                    }
                }
                extend(w2, z2, o2, k - 1);
                const i64 fc = F.elem_feature[e0 + c];
                double absent = 0.0;
                bool have_absent = false;
                ELEMS (int m = 0; m < MAX_K; ++m) {
                    if (m >= k - 1) continue;
                    const int i = m < c ? m : m + 1;
                    const i64 slot = ((q * nf1 + fc) * nf1 + F.elem_feature[e0 + i]) * n + row;
                    if (o2[m] == 0.0) {
                        if (!have_absent) {
                            absent = -unwound_absent(w2, k - 1, ratios) * scale;
                            have_absent = true;
                        }
                        add(acc, slot, absent, atomic);
                    } else {
                        add(acc, slot,
                            unwound_present(w2, k - 1, z2[m], ratios) * (1.0 - z2[m]) * scale,
                            atomic);
                    }
                }
            }
        }
    }
}
"""


@cupy.memoize(for_each_device=True)
def _module(strict, f32_inputs, input_f32, has_sentinel, x_dtype, max_k, hot_words,
            shared_acc, n_outputs):
    defines = {"STRICT": strict, "F32_INPUTS": f32_inputs, "INPUT_F32": input_f32,
               "HAS_SENTINEL": has_sentinel, **ALL_NODE_KINDS, "MAX_K": max(max_k, 1),
               "HOT_WORDS": max(hot_words, 1), "UNROLL_MAX_K": UNROLL_MAX_K,
               "SHARED_ACC": shared_acc, "NOUT": n_outputs}
    xt = "typedef float XT;\n" if x_dtype == "float32" else "typedef double XT;\n"
    return module(xt + EXACT_FLOAT32 + ROUTE_SOURCE + SOURCE, defines)


class _DeviceForest:
    """The ensemble's node arrays and paths on the current GPU, in the order of the kernels'
    ``FOREST_PARAMS``."""

    def __init__(self, ensemble):
        from .._records import routing  # noqa: PLC0415

        e = ensemble
        self.paths = p = shap_paths(e)
        self.routing = routing(e)
        self.input_f32 = int(e.input_rule == "float32")
        i32, i64 = np.int32, np.int64
        host = [(e.tree_ptr, i64), (e.feature, i32), (e.threshold, np.float64), (e.left, i32),
                (e.flags, np.uint8), (e.cat_offset, i64), (e.cat_nwords, i32),
                (e.cat_bitsets, np.uint32), (p.tree_path_ptr, i64), (p.path_ptr, i64),
                (p.path_value, np.float64), (p.path_output, i32), (p.elem_feature, i32),
                (p.elem_zero, np.float64), (p.elem_cond_ptr, i64), (p.cond_node, i32),
                (p.cond_left, np.uint8)]
        # at least one element each: a zero-size CuPy array has a null pointer
        self.arrays = [cupy.asarray(np.ascontiguousarray(a, dtype=dt) if np.size(a) else
                                    np.zeros(1, dt)) for a, dt in host]
        self.arrays.append(cupy.asarray(unwind_ratios(max(int(p.max_elems), 1))))
        self.n_trees = int(e.n_trees)
        self.n_outputs = int(e.n_outputs)
        self.n_features = int(e.n_features)
        self.max_k = int(p.max_elems)
        self.hot_words = -(-int(p.max_nodes) // 32)
        self.bias = cupy.asarray(p.bias)

    def kernel(self, name, x_dtype, shared_acc):
        r = self.routing
        return _module(int(r.strict), int(r.f32_inputs), self.input_f32, int(r.has_sentinel),
                       x_dtype, self.max_k, self.hot_words, int(shared_acc),
                       self.n_outputs).get_function(name)


_FORESTS: dict = {}


def _forest(ensemble) -> _DeviceForest:
    """The :class:`_DeviceForest` of ``ensemble`` on the current device (kept while the
    ensemble's paths are the cached ones)."""
    key = (id(ensemble), cupy.cuda.Device().id)
    hit = _FORESTS.get(key)
    if hit is None or hit.paths is not shap_paths(ensemble):
        hit = _FORESTS[key] = _DeviceForest(ensemble)
        if len(_FORESTS) > 8:  # a few models at a time: drop the oldest
            _FORESTS.pop(next(iter(_FORESTS)))
    return hit


def shared_accumulator(forest, name) -> bool:
    """Whether ``name`` accumulates in shared memory (see :data:`ACCUMULATE`)."""
    fits = (forest.n_outputs * (forest.n_features + 1) * SHARED_ACC_THREADS * 8
            <= SHARED_ACC_BYTES)
    return name == "contribs" and (ACCUMULATE == "shared" or (ACCUMULATE == "auto" and fits))


def _launch(forest, name, Xd, acc, n_rows):
    shared = shared_accumulator(forest, name)
    threads = SHARED_ACC_THREADS if shared else THREADS
    n_trees = max(forest.n_trees, 1)
    chunks = int(min(n_trees, max(1, TARGET_THREADS // max(n_rows, 1))))
    per_chunk = -(-n_trees // chunks)
    chunks = -(-n_trees // per_chunk)
    x_dtype = "float32" if Xd.dtype == cupy.float32 else "float64"
    r = forest.routing
    smem = forest.n_outputs * (forest.n_features + 1) * threads * 8 if shared else 0
    kernel = forest.kernel(name, x_dtype, shared)
    if smem > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = smem
    kernel((blocks(n_rows, threads), chunks), (threads,),
           (Xd, np.int64(n_rows), np.int32(Xd.shape[1]), *forest.arrays,
            np.int32(forest.n_trees), np.int32(per_chunk), np.float64(r.missing_value), acc,
            np.int32(chunks > 1)), shared_mem=smem)


def _prepare(ensemble, X):
    check_explainable(ensemble)
    Xd = device_input(ensemble, X)
    if Xd.shape[1] != ensemble.n_features:
        raise ValueError(f"X has {Xd.shape[1]} features, but the model expects "
                         f"{ensemble.n_features}.")
    return Xd


def _contribs_device(ensemble, Xd):
    """(n, n_outputs, n_features + 1) float64 on the GPU, the expected value included."""
    f = _forest(ensemble)
    n, nf1, nout = Xd.shape[0], ensemble.n_features + 1, ensemble.n_outputs
    out = cupy.empty((n, nout, nf1), cupy.float64)
    for r0 in range(0, n, ROWS_PER_LAUNCH):
        rows = Xd[r0:r0 + ROWS_PER_LAUNCH]
        m = rows.shape[0]
        acc = cupy.zeros((nout * nf1, m), cupy.float64)
        _launch(f, "contribs", cupy.ascontiguousarray(rows), acc, m)
        out[r0:r0 + m] = acc.T.reshape(m, nout, nf1)
    out[:, :, -1] += f.bias
    return out


def _finish(ensemble, out, on_device):
    out = out[:, 0] if ensemble.n_outputs == 1 else out
    return out if on_device else out.get()


def predict_contribs(ensemble, X, *, device_index=0):
    """``TreeEnsemble.predict_contribs(X, device="cuda:N")``: a CuPy array for CuPy input,
    else NumPy."""
    return _explain(_contribs_device, ensemble, X, device_index)


def predict_interactions(ensemble, X, *, device_index=0):
    """``TreeEnsemble.predict_interactions(X, device="cuda:N")``: a CuPy array for CuPy
    input, else NumPy."""
    return _explain(_interactions_device, ensemble, X, device_index)


def _explain(compute, ensemble, X, device_index):
    """``compute(ensemble, Xd)`` on GPU ``device_index``: sparse ``X`` in row blocks, the
    result on the device of ``X``."""
    on_device = isinstance(X, cupy.ndarray)
    with cupy.cuda.Device(int(device_index)):
        from ..trees._sparse_input import is_sparse, map_row_chunks  # noqa: PLC0415

        if is_sparse(X):
            return map_row_chunks(ensemble, X, lambda rows: _explain(
                compute, ensemble, rows, device_index))
        return _finish(ensemble, compute(ensemble, _prepare(ensemble, X)), on_device)


def _interactions_device(ensemble, Xd):
    """Interaction values of device rows ``Xd`` (n, n_outputs, nf + 1, nf + 1)."""
    f = _forest(ensemble)
    n, nf, nout = Xd.shape[0], ensemble.n_features, ensemble.n_outputs
    nf1 = nf + 1
    phi = _contribs_device(ensemble, Xd)
    out = cupy.empty((n, nout, nf1, nf1), cupy.float64)
    for r0 in range(0, n, INTERACTION_ROWS_PER_LAUNCH):
        rows = cupy.ascontiguousarray(Xd[r0:r0 + INTERACTION_ROWS_PER_LAUNCH])
        m = rows.shape[0]
        acc = cupy.zeros((nout * nf1 * nf1, m), cupy.float64)
        _launch(f, "interactions", rows, acc, m)
        out[r0:r0 + m] = acc.T.reshape(m, nout, nf1, nf1)
    # the diagonal: main effects = contribution - the row's interactions (kernel left 0)
    idx = cupy.arange(nf)
    off = out[:, :, :nf, :nf].sum(axis=3)
    out[:, :, idx, idx] = phi[:, :, :nf] - off
    out[:, :, nf, nf] = phi[:, :, nf]
    return out


register_gpu(predict_contribs, predict_interactions)
