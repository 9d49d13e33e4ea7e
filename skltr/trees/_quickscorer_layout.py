"""QuickScorer tables built from a TreeEnsemble (host NumPy; shared by CPU and GPU backends).

QuickScorer (Lucchese et al., SIGIR 2015) scores a document without walking trees. Leaves of
each tree are numbered left to right and a tree's state is a 64-bit vector of its leaves that
are still reachable (bit i = leaf i). An internal node whose test is *false* for the document
(it goes right) rules out every leaf of its left subtree, one contiguous run of zeros in the
node's mask. All nodes testing one feature are sorted by threshold, so the false nodes of a
document are a prefix of that list: scan it while the threshold is below the value, AND the
masks in, and the exit leaf of each tree is its lowest set bit::

    tree:      n0 (x2 <= 0.5)              leaves l0 l1 l2, numbered left to right
              /             \\
         n1 (x0 <= 3)        l2            mask(n0) = 0b100   (clears l0, l1)
          /     \\                          mask(n1) = 0b110   (clears l0)
        l0       l1
    x = (x0=4, x2=0.1): n1 false -> bits 0b111 & 0b110 = 0b110 -> exit leaf l1

Layout, per block of trees (blockwise QS keeps a block's tables in cache) and per
(feature, missing type) "list":

* ``list_*``: feature, missing type (routing of NaN and zeros differs by type; see
  :mod:`skltr.trees._ensemble`), and a range of node entries (``node_thr``, ``node_tree``,
  ``node_mask``) in ascending threshold order. Nodes sharing a (feature, threshold) pair are
  adjacent. Comparing each node's threshold is cheaper than comparing each *distinct*
  threshold once and then looping over its nodes: on 1,000 trees x 64 leaves the grouped
  scan measured 150-190 us/doc against 54 us/doc for this flat one (one thread, 2026-11-22),
  because the extra indirection costs more than a predictable compare.
* ``dr_*``: per list, the masks to apply when the value takes the node's default direction
  and that direction is right (NaN, or a zero for missing type ZERO).
* ``cat_*``: categorical nodes, evaluated one by one with the shared routing function.
* Trees with more than 64 leaves are not tabled; the kernels traverse them (``tree_is_qs``).
* ``leaf_scaled`` / ``leaf_scaled32``: leaf values already multiplied by the tree weight the
  way each sum does it, so the kernel's gather is one load and one add per tree.

Scalar QuickScorer kernel, one document at a time (2026-11-22, 2-core EPYC, 2 threads,
machine shared so every figure is from one interleaved run; XGBoost rank:ndcg 1000 trees
depth 6 and LightGBM lambdarank 1000 trees x 64 leaves, 20,000 docs x 136 features, medians
in us/doc):

===================================================  =====  =====
variant                                               XGB    LGB
===================================================  =====  =====
before (int32/int64 indices, float64 thr, tb=512)    34.7   50.6
+ unsigned indices (numba skips wraparound), tb=512  17.7   24.1
+ same, tree_block=1000                               16.5   21.9
+ compare in float32 (XGBoost), tree_block=1000       15.8   22.0
library's own predict, same run                       14.5   73.5
===================================================  =====  =====

(The other user's load roughly doubled every figure of that run; unloaded, XGBoost measured
7.2 us/doc, before 18.2, and the pre-scaled-leaf gather alone 18.2 -> 15.4.) Steps in order:
pre-scaled leaves with a fast gather for all-tabled single-output blocks -17%; float32
thresholds ~3%; uint16 tree index -20% and uint64
node / leaf pointers a further -30% (numba adds a negative-index fix-up to every signed index);
doc_block 8/16/32 equal, 64 worse. Tried and dropped: a per-block routing-ready copy of the
features (``xs[feature, doc]``, +30% slower, not understood), the per-list scan in an inlined
helper (+35%), document-major loop order (doc, list) (+4%), masks computed from a packed
(tree, lo, width) word instead of loaded (no gain).

Vectorised QuickScorer (vQS, Lucchese et al. 2016; the kernel in :mod:`skltr._cpu.quickscorer`:
``LANES`` = 16 documents per node update, bitvectors ``bv[tree, lane]``). Measured 2026-11-22
on the 2-core Intel Xeon @2.5GHz (AVX-512, 2 MB L2 per core) while three other engineers'
jobs kept the load average at 5-8, so wall times are 3-10x the unloaded ones and only ratios
within one run mean anything. Each run calls its variants in turn (7-11 repeats, medians;
exactness against the library's own predict asserted first) on the models of
``benchmarks/predict_cpu.py`` (1,000 trees; rows from its data generator), tables unchanged.
Runs: A = 2 threads, 5,000 docs, wall time; B = 1 thread, 3,000 docs, wall time; C = 1 thread,
3,000 docs, process CPU time (takes out the other jobs' scheduling); D = 2 threads, 3,000
docs, wall time, at a quieter moment (14:17 UTC). us/doc:

=============================================================  ===  =====  =====
variant                                                        run   XGB    LGB
=============================================================  ===  =====  =====
scalar QS (the previous kernel, doc_block 16)                   A   152.3  107.0
vQS D=8 (explicit vectors), chunk 64                            A    51.6   46.5
vQS D=16, chunk 64                                              A    47.7   37.4
vQS D=32, chunk 64                                              A    50.7
library's own predict                                           A   146.8  379.8
vQS D=16, chunk 256                                             B    53.8   43.3
library's own predict, one thread                               B   217.4  617.1
vQS D=16 written as a plain per-lane numba loop                 C    81.7   93.3
vQS D=16 with the intrinsics of :mod:`skltr._cpu._simd`         C     9.8    9.6
vQS D=16 (this kernel), chunk 256                               D    13.4   16.9
traversal backend (scalar walk)                                 D   164.6  175.1
library's own predict                                           D    43.0  177.6
=============================================================  ===  =====  =====

So vQS D=16 is 2.9x (LightGBM) and 3.2x (XGBoost) faster than the scalar kernel, and
0.10x / 0.32x the libraries' own predict with two threads in runs A and D (0.07x / 0.25x with
one thread, run B). Notes:

* numba runs LLVM without its SLP vectoriser and fully unrolls a constant 16-trip lane loop
  before the loop vectoriser sees it, so the same algorithm written as a per-lane loop stays
  scalar (``cmov`` + ``and`` per lane in ``inspect_asm``) and is ~9x slower than the explicit
  vector IR of :mod:`skltr._cpu._simd` (one ``vcmppd`` / ``vcmpps`` to a k-mask and masked
  ``vpandq`` per 8 lanes; ``vplzcntq`` for the exit leaves). Holding the lane values in a
  tuple removed the reloads but did not vectorise either.
* D=16 beat D=8 (the per-node scalar work -- threshold load, break test, tree index -- is
  shared by more lanes) and D=32 gave nothing more: a group scans up to its largest value,
  so wider groups scan more of each list (measured on these models: 36% of the entries per
  document for scalar QS, 53% per group for D=8, 58% for D=16, 62% for D=32), and the
  bitvector stores (one per 8 lanes) become the bound.
* tree_block 256 / 512 / 1024 / 2048 and thread chunks of 64 or 256 documents were within
  the noise of this machine for 1,000 trees (one thread, CPU time: 16.2 / 16.4 / 17.7 us
  LightGBM and 13.4 / 15.5 / 16.1 XGBoost for tb 1024 / 512 / 256); the defaults stay
  tree_block=1024 and a 256-document chunk, which reads a block's tables from L3 once per 16
  groups when they do not fit L2 (5,000 trees). tree_block 128 / 256 were clearly slower
  (run C again: XGB 17.4 / 14.0, LGB 18.2 / 14.1 against 11.4 / 10.5 for 1024): the
  per-list set-up (gathering and routing 16 values) is paid once per list and block.
  On 5,000 trees (the 1,000-tree models repeated 5x, one thread, CPU time) chunks of
  64 / 256 / 1,024 documents gave XGB 43.3 / 40.5 / 39.9 and LGB 57.6 / 53.0 / 55.3 us/doc.
* Trees with more than 64 leaves (not tabled; traversed per document inside the kernel).
  LightGBM regression model, num_leaves=255 (every tree has 255 leaves), 100 trees, trained
  on 10,000 rows x 136 features of the benchmark's generator (a 500-tree / 40,000-row
  lambdarank model did not finish training on the loaded machine in time), 3,000 docs,
  wall, medians of 7, 2026-11-22: QuickScorer backend (all trees fall back) 25.6 us/doc,
  traversal backend 24.0, LightGBM's own predict 15.2 with 2 threads; 13.1 / 13.7 / 9.1 with
  one thread. The fallback costs nothing measurable over plain traversal, and
  ``backend="auto"`` already picks traversal for such models. Multi-word bitvectors were
  not implemented: at 255 leaves a tree needs 4 words x 16 lanes (512 bytes) of state and
  about 4x the node entries per tree, so a 1024-tree block's state (512 KB) alone would
  crowd out the tables from L2 -- a smaller block or a top-64-leaf subtree + traversal
  split would be the next thing to measure. Both backends lose to LightGBM here (about
  1.5x); the per-document walk is the place to work on for such models.
* Exit leaves with the hardware gather (``llvm.masked.gather`` -> ``vgatherqpd``) instead of
  16 scalar loads: slower (run C: XGB 9.7 vs 7.9, LGB 10.3 vs 9.5 us/doc); dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._ensemble import NodeFlags

__all__ = ["QuickScorerLayout", "build_quickscorer_layout", "MAX_QS_LEAVES"]

MAX_QS_LEAVES = 64
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass
class QuickScorerLayout:
    """QuickScorer tables; all arrays are host NumPy. See the module docstring."""

    tree_block: int
    block_tree_ptr: np.ndarray   # (n_blocks + 1,) first tree of each block
    block_list_ptr: np.ndarray   # (n_blocks + 1,) lists of each block
    block_cat_ptr: np.ndarray    # (n_blocks + 1,) categorical entries of each block
    block_all_qs: np.ndarray     # (n_blocks,) bool: every tree of the block is tabled
    list_feature: np.ndarray     # (n_lists,) int32
    list_mode: np.ndarray        # (n_lists,) uint8 missing type
    list_node_ptr: np.ndarray    # (n_lists + 1,) uint64, into node_thr / node_tree / node_mask
    list_dr_ptr: np.ndarray      # (n_lists + 1,) uint64, into dr_tree / dr_mask
    node_thr: np.ndarray         # (n_entries,) ascending within a list; float64, or float32
                                 # (rounded towards the test's side) for float32 precision
    node_tree: np.ndarray        # (n_entries,) uint16 (uint32 if tree_block > 65535) tree
                                 # index within its block
    node_mask: np.ndarray        # (n_entries,) uint64
    dr_tree: np.ndarray
    dr_mask: np.ndarray
    cat_node: np.ndarray         # (n_cat,) int64 global node index in the ensemble
    cat_tree: np.ndarray         # (n_cat,) tree index within its block, as node_tree
    cat_mask: np.ndarray         # (n_cat,) uint64
    tree_is_qs: np.ndarray       # (n_trees,) bool
    leaf_ptr: np.ndarray         # (n_trees + 1,) uint64, into leaf_value
    leaf_value: np.ndarray       # leaves of each tabled tree, left to right
    leaf_scaled: np.ndarray      # leaf_value * tree weight (float64 sums)
    leaf_scaled32: np.ndarray    # float32(float32(leaf_value) * float32(weight)) (float32 sums)

    @property
    def nbytes(self) -> int:
        """Total size of the tables in bytes."""
        return int(sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray)))

    @property
    def n_blocks(self) -> int:
        return len(self.block_tree_ptr) - 1


def _tree_tables(ens, t):
    """Left-to-right leaf order and left-subtree leaf range of every internal node of tree t."""
    start, stop = int(ens.tree_ptr[t]), int(ens.tree_ptr[t + 1])
    left, right = ens.left[start:stop], ens.right[start:stop]
    leaves, lo, hi = [], np.zeros(stop - start, np.int64), np.zeros(stop - start, np.int64)
    # Iterative in-order walk that records, per node, the range of leaf numbers below it.
    first = np.zeros(stop - start, np.int64)
    stack = [(0, False)]
    while stack:
        node, done = stack.pop()
        if left[node] < 0:
            first[node] = len(leaves)
            leaves.append(node)
            continue
        if not done:
            stack.append((node, True))
            stack.append((int(right[node]), False))
            stack.append((int(left[node]), False))
        else:
            l_child = int(left[node])
            lo[node] = first[l_child]
            hi[node] = first[int(right[node])]  # left subtree's leaves end where right's begin
            first[node] = first[l_child]
    return start, np.asarray(leaves, dtype=np.int64), lo, hi


def _mask(lo, hi):
    """uint64 with bits lo..hi-1 cleared."""
    width = hi - lo
    run = np.where(width >= 64, _ALL_ONES,
                   (np.uint64(1) << width.astype(np.uint64)) - np.uint64(1))
    return ~(run << lo.astype(np.uint64))


def _float32_thresholds(thr, strict):
    """float32 thresholds that route float32 inputs exactly as the float64 ones.

    ``x < thr`` equals ``x < up(thr)`` and ``x <= thr`` equals ``x <= down(thr)`` for every
    float32 ``x``, where up / down round to the float32 grid towards +inf / -inf (no float32
    lies strictly between them). Rounding is monotone, so sorted lists stay sorted.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        t32 = thr.astype(np.float32)
        if strict:
            fix = t32.astype(np.float64) < thr
            t32[fix] = np.nextafter(t32[fix], np.float32(np.inf))
        else:
            fix = t32.astype(np.float64) > thr
            t32[fix] = np.nextafter(t32[fix], np.float32(-np.inf))
    return t32


def build_quickscorer_layout(ens, *, tree_block: int = 512) -> QuickScorerLayout:
    """Build QuickScorer tables for ``ens`` (a :class:`~skltr.trees.TreeEnsemble`).

    Parameters
    ----------
    ens : TreeEnsemble
    tree_block : int, default=512
        Trees per block; a block's bitvectors and tables are meant to stay in cache.

    Returns
    -------
    QuickScorerLayout
    """
    if tree_block < 1:
        raise ValueError(f"tree_block must be >= 1; got {tree_block}.")
    n_trees = ens.n_trees
    n_leaves = ens.n_leaves()
    tree_is_qs = n_leaves <= MAX_QS_LEAVES
    leaf_ptr = np.zeros(n_trees + 1, np.int64)
    np.cumsum(np.where(tree_is_qs, n_leaves, 0), out=leaf_ptr[1:])
    leaf_value = np.zeros(int(leaf_ptr[-1]), np.float64)
    # Per internal node of tabled trees: (block, feature, mode, threshold, local tree, mask,
    # default-right?, categorical?, global node).
    cols = {k: [] for k in ("block", "feature", "mode", "thr", "tree", "mask", "dright",
                            "cat", "gnode")}
    for t in np.flatnonzero(tree_is_qs):
        start, leaves, lo, hi = _tree_tables(ens, int(t))
        leaf_value[leaf_ptr[t]:leaf_ptr[t + 1]] = ens.value[start + leaves]
        internal = np.flatnonzero(ens.left[start:int(ens.tree_ptr[t + 1])] >= 0)
        g = start + internal
        flags = ens.flags[g]
        cols["block"].append(np.full(internal.size, t // tree_block, np.int64))
        cols["feature"].append(ens.feature[g].astype(np.int64))
        cols["mode"].append(NodeFlags.missing_type(flags).astype(np.int64))
        cols["thr"].append(ens.threshold[g])
        cols["tree"].append(np.full(internal.size, t % tree_block, np.int64))
        cols["mask"].append(_mask(lo[internal], hi[internal]))
        cols["dright"].append((flags & NodeFlags.DEFAULT_LEFT) == 0)
        cols["cat"].append((flags & NodeFlags.CATEGORICAL) != 0)
        cols["gnode"].append(g.astype(np.int64))
    empty = {"mask": np.uint64, "thr": np.float64, "dright": bool, "cat": bool}
    c = {k: (np.concatenate(v) if v else np.zeros(0, empty.get(k, np.int64)))
         for k, v in cols.items()}
    n_blocks = max(1, -(-n_trees // tree_block))
    block_tree_ptr = np.minimum(np.arange(n_blocks + 1, dtype=np.int64) * tree_block, n_trees)

    cat = c["cat"]
    cat_order = np.lexsort((c["gnode"][cat], c["block"][cat]))
    cat_block = c["block"][cat][cat_order]
    block_cat_ptr = np.searchsorted(cat_block, np.arange(n_blocks + 1), side="left")

    num = ~cat
    b, f, m, thr = c["block"][num], c["feature"][num], c["mode"][num], c["thr"][num]
    order = np.lexsort((c["gnode"][num], thr, m, f, b))
    b, f, m, thr = b[order], f[order], m[order], thr[order]
    tree, mask, dright = c["tree"][num][order], c["mask"][num][order], c["dright"][num][order]
    n = b.size
    new_list = np.ones(n, bool)
    new_list[1:] = (b[1:] != b[:-1]) | (f[1:] != f[:-1]) | (m[1:] != m[:-1])
    list_start = np.flatnonzero(new_list)
    block_list_ptr = np.searchsorted(b[list_start], np.arange(n_blocks + 1), side="left")
    # Default-right entries, grouped by the same lists (stable: list order is kept).
    list_id = np.cumsum(new_list) - 1
    dr = dright & (m[:] != NodeFlags.MISSING_NONE)
    dr_list = list_id[dr]
    list_dr_ptr = np.searchsorted(dr_list, np.arange(list_start.size + 1), side="left")
    if ens.precision == "float32":
        node_thr = _float32_thresholds(thr.astype(np.float64), ens.decision == "<")
    else:
        node_thr = thr.astype(np.float64)
    # Unsigned indices: numba then skips its negative-index wraparound in the hot loop (measured
    # 1.9x on the scan; see the module docstring).
    tree_dtype = np.uint16 if tree_block <= np.iinfo(np.uint16).max else np.uint32
    block_all_qs = np.array([bool(tree_is_qs[block_tree_ptr[i]:block_tree_ptr[i + 1]].all())
                             for i in range(n_blocks)], dtype=bool)
    weight = np.repeat(np.asarray(ens.tree_weight, np.float64), np.diff(leaf_ptr))
    with np.errstate(over="ignore", invalid="ignore"):  # float32 overflow is the sum's too
        leaf_scaled32 = leaf_value.astype(np.float32) * weight.astype(np.float32)
    return QuickScorerLayout(
        tree_block=int(tree_block),
        block_tree_ptr=block_tree_ptr,
        block_list_ptr=block_list_ptr.astype(np.int64),
        block_cat_ptr=block_cat_ptr.astype(np.int64),
        block_all_qs=block_all_qs,
        list_feature=f[list_start].astype(np.int32),
        list_mode=m[list_start].astype(np.uint8),
        list_node_ptr=np.append(list_start, n).astype(np.uint64),
        list_dr_ptr=list_dr_ptr.astype(np.uint64),
        node_thr=node_thr,
        node_tree=tree.astype(tree_dtype),
        node_mask=mask.astype(np.uint64),
        dr_tree=tree[dr].astype(tree_dtype),
        dr_mask=mask[dr].astype(np.uint64),
        cat_node=c["gnode"][cat][cat_order].astype(np.int64),
        cat_tree=c["tree"][cat][cat_order].astype(tree_dtype),
        cat_mask=c["mask"][cat][cat_order].astype(np.uint64),
        tree_is_qs=tree_is_qs,
        leaf_ptr=leaf_ptr.astype(np.uint64),
        leaf_value=leaf_value,
        leaf_scaled=leaf_value * weight,
        leaf_scaled32=leaf_scaled32,
    )
