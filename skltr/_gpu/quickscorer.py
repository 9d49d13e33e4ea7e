"""GPU-QuickScorer (Lettich et al.): QuickScorer's leaf bitvectors in shared memory.

The CPU backend's tables (:mod:`skltr.trees._quickscorer_layout`), cut into blocks of
``QS_TREE_BLOCK`` trees so that a block's leaf bitvectors fit shared memory, are copied to the
GPU once. A thread block scores ``QS_DOCS`` documents, one tree block after the other::

    shared:  bv[d][t]   one uint64 leaf vector per (document, tree of the block), all ones
             con[d][t]  the exit leaf's contribution

    warp w:  lists w, w + n_warps, ...   (a list: the nodes testing one feature, sorted by
             threshold; a document's false nodes are a prefix of it)
             lane l reads entry s + l once, and for each document whose value passes its
             threshold ANDs the node's mask into bv[d][tree] (a shared-memory atomicAnd);
             the warp moves on by 32 entries while every lane fired, so the scan stops at the
             first threshold the largest value does not pass (a ballot: the paper's binary
             search for the prefix's end, without storing positions)
    then:    one thread per (document, tree): exit leaf = lowest set bit, its value (already
             times the tree weight) into con; trees of more than 64 leaves are walked in the
             traversal layout; categorical nodes are routed one by one with go_left
    then:    thread d adds document d's contributions in tree order, block after block

so the sums are the CPU's, in its order: raw scores equal ``TreeEnsemble.predict_raw`` bit
for bit. NaN, zeros under missing type zero and the sentinel take the default direction as on
the CPU (the list's default-right masks, ``dr_*``).

QuickScorer is reported to be covered by patents in some jurisdictions (see the user guide);
the traversal placements of :mod:`skltr._gpu.traversal` are the alternative.
"""

from __future__ import annotations

from dataclasses import dataclass

import cupy
import numpy as np

from ..trees._quickscorer_layout import build_quickscorer_layout
from ._compile import EXACT_FLOAT32, blocks, module
from .tree_walk import DEVICE_SOURCE

__all__ = ["QuickScorerTables", "qs_module", "QS_DOCS", "QS_TREE_BLOCK", "QS_THREADS"]

#: Trees per block: 1,024 trees' bitvectors and contributions are 16 KiB per document.
QS_TREE_BLOCK = 1024
#: Documents per thread block: each entry of the tables read serves this many documents.
#: 2 measured fastest on the H100 (1M rows, 1,000 / 5,000 depth-6 trees: 138 / 719 ms,
#: against 187 / 981 ms with 1 and 185 / 951 ms with 4; benchmarks/results/predict_gpu-*).
QS_DOCS = 2
#: Threads of a block (a warp per list).
QS_THREADS = 256

_SOURCE = r"""
#define FULL_MASK 0xffffffffu
#define QNAN __longlong_as_double(0x7ff8000000000000LL)

__device__ __forceinline__ double qs_value(const XT* x, double missing) {
    // the value as go_left reads it: float32 rounding, then the sentinel stands for NaN
    double v = widen(*x);
    if ((F32_INPUTS || INPUT_F32) && sizeof(XT) == 8) v = f32_round(v);
    if (HAS_SENTINEL && v == missing) v = QNAN;
    return v;
}

extern "C" __global__ void quickscorer(ARGS,
        const i64* __restrict__ block_tree_ptr, const i64* __restrict__ block_list_ptr,
        const i64* __restrict__ block_cat_ptr, int n_blocks,
        const int* __restrict__ list_feature, const int* __restrict__ list_mode,
        const i64* __restrict__ list_node_ptr, const i64* __restrict__ list_dr_ptr,
        const double* __restrict__ node_thr, const unsigned short* __restrict__ node_tree,
        const u64* __restrict__ node_mask, const unsigned short* __restrict__ dr_tree,
        const u64* __restrict__ dr_mask, const i64* __restrict__ cat_node,
        const unsigned short* __restrict__ cat_tree, const u64* __restrict__ cat_mask,
        const u8* __restrict__ tree_is_qs, const i64* __restrict__ leaf_ptr,
        const double* __restrict__ leaf_val, int tree_block) {
    extern __shared__ __align__(16) unsigned char smem[];
    u64* bv = (u64*)smem;                                   // bv[d * tree_block + t]
    const int cs = tree_block + 1;                          // padded: no bank conflicts
    double* con = (double*)(bv + DOCS * tree_block);        // con[d * cs + t]
    const i64 r0 = (i64)blockIdx.x * DOCS;
    const int nd = (int)min((i64)DOCS, n - r0);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    Acc a;
    if ((int)threadIdx.x < nd) acc_init(a, base);
    for (int b = 0; b < n_blocks; ++b) {
        const i64 t0 = block_tree_ptr[b];
        const int nt = (int)(block_tree_ptr[b + 1] - t0);
        for (int k = threadIdx.x; k < DOCS * nt; k += blockDim.x)
            bv[(k / nt) * tree_block + k % nt] = ~0ull;
        __syncthreads();
        for (i64 li = block_list_ptr[b] + warp; li < block_list_ptr[b + 1]; li += n_warps) {
            const int f = list_feature[li], mode = list_mode[li];
            double xs[DOCS];
            double xmax = NEG_INF;
            #pragma unroll
            for (int d = 0; d < DOCS; ++d) {
                double v = QNAN;                            // NaN never passes a threshold
                if (d < nd) {
                    v = qs_value(X + (r0 + d) * n_cols + f, missing);
                    bool dflt = false;
                    if (isnan(v)) {
                        if (HAS_MISSING_NONE && mode == 0) v = 0.0; else dflt = true;
                    } else if (HAS_MISSING_ZERO && mode == 1 && fabs(v) <= ZERO_THRESHOLD) {
                        dflt = true;
                    }
                    if (dflt) {                             // the default way, if right
                        for (i64 i = list_dr_ptr[li] + lane; i < list_dr_ptr[li + 1]; i += 32)
                            atomicAnd(&bv[d * tree_block + dr_tree[i]], dr_mask[i]);
                        v = QNAN;
                    }
                }
                xs[d] = v;
                if (v > xmax) xmax = v;
            }
            const i64 hi = list_node_ptr[li + 1];
            for (i64 s = list_node_ptr[li]; s < hi; s += 32) {
                const i64 i = s + lane;
                const double thr = i < hi ? node_thr[i] : 0.0;
                // a node is false (the row goes right) when thr < x, or thr <= x if strict
                const bool fire = i < hi && (STRICT ? thr <= xmax : thr < xmax);
                if (fire) {
                    const int tr = node_tree[i];
                    const u64 m = node_mask[i];
                    #pragma unroll
                    for (int d = 0; d < DOCS; ++d)
                        if (DOCS == 1 || (STRICT ? thr <= xs[d] : thr < xs[d]))
                            atomicAnd(&bv[d * tree_block + tr], m);
                }
                if (!__all_sync(FULL_MASK, fire)) break;    // sorted: the rest cannot fire
            }
        }
#if !COMPACT
        if (HAS_CAT) {
            const i64 c0 = block_cat_ptr[b];
            const int nc = (int)(block_cat_ptr[b + 1] - c0);
            for (int k = threadIdx.x; k < nd * nc; k += blockDim.x) {
                const int d = k / nc;
                const i64 c = c0 + (k - d * nc);
                const i64 g = cat_node[c];
                const Node node = nodes[g];
                const double xv = widen(X[(r0 + d) * n_cols + node.feature]);
                if (!go_left(xv, node, g, cat_off, cat_nw, bits, missing))
                    atomicAnd(&bv[d * tree_block + cat_tree[c]], cat_mask[c]);
            }
        }
#endif
        __syncthreads();
        for (int k = threadIdx.x; k < nd * nt; k += blockDim.x) {
            const int d = k / nt, t = k - d * nt;
            const i64 gt = t0 + t;
            double c;
            if (tree_is_qs[gt]) {
                c = leaf_val[leaf_ptr[gt] + __ffsll((long long)bv[d * tree_block + t]) - 1];
            } else {
                const i64 s = tree_start[gt];
                c = walk(nodes + s, s, X + (r0 + d) * n_cols, 1, cat_off, cat_nw, bits,
                         missing);
            }
            con[d * cs + t] = c;
        }
        __syncthreads();
        if ((int)threadIdx.x < nd)
            for (int t = 0; t < nt; ++t)
                acc_add(a, NOUT == 1 ? 0 : tree_out[t0 + t], con[threadIdx.x * cs + t]);
        __syncthreads();
    }
    if ((int)threadIdx.x < nd) acc_store(a, base, counts, out + (r0 + threadIdx.x) * NOUT);
}
"""


@cupy.memoize(for_each_device=True)
def qs_module(strict, f32_inputs, input_f32, has_sentinel, sum_f32, average, n_outputs,
              x_dtype, node_kinds, compact, docs=None):
    """The GPU-QuickScorer kernel for one set of routing rules (compiled once, cached)."""
    has_cat, has_missing_none, has_missing_zero = node_kinds
    defines = {"COMPACT": compact, "STRICT": strict, "F32_INPUTS": f32_inputs,
               "INPUT_F32": input_f32, "HAS_SENTINEL": has_sentinel, "HAS_CAT": has_cat,
               "HAS_MISSING_NONE": has_missing_none, "HAS_MISSING_ZERO": has_missing_zero,
               "SUM_F32": sum_f32, "AVERAGE": average, "NOUT": n_outputs,
               "DOCS": QS_DOCS if docs is None else docs}
    xt = "typedef float XT;\n" if x_dtype == "float32" else "typedef double XT;\n"
    return module(xt + EXACT_FLOAT32 + DEVICE_SOURCE + _SOURCE, defines)




@dataclass
class QuickScorerTables:
    """The QuickScorer tables on the GPU (built from the CPU layout), run through a
    :class:`~skltr._gpu.traversal.ForestLayout` (nodes for walks and categorical tests)."""

    arrays: tuple
    tree_block: int
    n_blocks: int
    docs: int
    nbytes: int

    @classmethod
    def build(cls, ensemble, forest, tree_block=None, docs=None):
        qs = build_quickscorer_layout(ensemble, tree_block=tree_block or QS_TREE_BLOCK)
        small = qs.node_tree.dtype  # uint16: at most 65,535 trees a block
        assert small == np.uint16, "QS_TREE_BLOCK must stay below 65,536"
        leaf = qs.leaf_scaled32.astype(np.float64) if forest.routing.sum_f32 else (
            qs.leaf_scaled)
        host = (qs.block_tree_ptr, qs.block_list_ptr, qs.block_cat_ptr, np.int32(qs.n_blocks),
                qs.list_feature.astype(np.int32), qs.list_mode.astype(np.int32),
                qs.list_node_ptr.astype(np.int64), qs.list_dr_ptr.astype(np.int64),
                np.asarray(qs.node_thr, np.float64), qs.node_tree, qs.node_mask,
                qs.dr_tree, qs.dr_mask, forest.new_of_old[qs.cat_node].astype(np.int64),
                qs.cat_tree, qs.cat_mask, qs.tree_is_qs.astype(np.uint8),
                qs.leaf_ptr.astype(np.int64), leaf, np.int32(qs.tree_block))
        arrays = tuple(a if np.isscalar(a) or a.ndim == 0 else cupy.asarray(
            a if a.size else np.zeros(1, a.dtype)) for a in host)
        nbytes = int(sum(a.nbytes for a in arrays if isinstance(a, cupy.ndarray)))
        return cls(arrays, int(qs.tree_block), int(qs.n_blocks), int(docs or QS_DOCS), nbytes)

    def shared_bytes(self):
        return self.docs * (8 * self.tree_block + 8 * (self.tree_block + 1))

    def run(self, forest, X, out):
        """Score ``X`` into ``out`` as ``ForestLayout.run`` does."""
        n = X.shape[0]
        x_dtype = "float32" if X.dtype == cupy.float32 else "float64"
        kern = qs_module(*forest.module_key(x_dtype), self.docs).get_function("quickscorer")
        smem = self.shared_bytes()
        if smem > 48 * 1024:
            kern.max_dynamic_shared_size_bytes = smem
        kern((blocks(n, self.docs),), (QS_THREADS,), forest.args(X, out) + self.arrays,
             shared_mem=smem)
