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

* ``list_*``: feature (and its slot among ``used_feature``, the features the lists test:
  the CPU kernel transposes those values only), missing type (routing of NaN and zeros
  differs by type; see :mod:`skltr.trees._ensemble`), and a range of node entries
  (``node_thr``, ``node_tree``, ``node_mask``) in ascending threshold order. Nodes sharing a
  (feature, threshold) pair are adjacent. Comparing each node's threshold is cheaper than
  comparing each *distinct* threshold once and then looping over its nodes (the extra
  indirection costs more than a predictable compare; measured in
  ``docs/scoring_internals.rst``).
* ``dr_*``: per list, the masks to apply when the value takes the node's default direction
  and that direction is right (NaN, or a zero for missing type ZERO).
* ``cat_*``: categorical nodes, evaluated one by one with the shared routing function;
  ``cat_feature`` their features (the CPU kernel transposes those values too) and
  ``cat_slot`` each entry's index there.
* Trees with more than 64 leaves are not tabled; the kernels traverse them (``tree_is_qs``).
* ``leaf_scaled`` / ``leaf_scaled32``: leaf values already multiplied by the tree weight the
  way each sum does it, so the kernel's gather is one load and one add per tree.
* ``node_byte`` / ``node_mbytes``: each node's mask as the CPU kernel applies it to byte-sliced
  leaf vectors (:mod:`skltr._cpu._simd`): the first of the two bytes it ANDs and those two
  bytes of the mask (``QS_NODE_BYTE_WIDE`` marks the few nodes whose run spans more).

Why these choices (vectorised lanes, block and chunk sizes, unsigned indices, float32
thresholds, the fallback for trees of more than 64 leaves): ``docs/scoring_internals.rst``,
with the measurements that decided them.

"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._dtypes import QS_NODE_BYTE_WIDE
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
    list_feature: np.ndarray     # (n_lists,) int32
    list_mode: np.ndarray        # (n_lists,) uint8 missing type
    list_slot: np.ndarray        # (n_lists,) int32: list_feature's index in used_feature
    used_feature: np.ndarray     # (n_used,) int32: the features of the lists, ascending
    list_node_ptr: np.ndarray    # (n_lists + 1,) uint64, into node_thr / node_tree / node_mask
    list_dr_ptr: np.ndarray      # (n_lists + 1,) uint64, into dr_tree / dr_mask
    node_thr: np.ndarray         # (n_entries,) ascending within a list; float64, or float32
                                 # (rounded towards the test's side) for float32 precision
    node_tree: np.ndarray        # (n_entries,) uint16 (uint32 if tree_block > 65535) tree
                                 # index within its block
    node_mask: np.ndarray        # (n_entries,) uint64
    node_byte: np.ndarray        # (n_entries,) uint8: first byte of the mask's run (0..6),
                                 # | QS_NODE_BYTE_WIDE when the run spans more than 2 bytes
    node_mbytes: np.ndarray      # (2 * n_entries,) uint8: node i's mask bytes node_byte
                                 # and node_byte + 1 at 2i, 2i + 1
    dr_tree: np.ndarray
    dr_mask: np.ndarray
    dr_byte: np.ndarray          # node_byte / node_mbytes of the dr entries
    dr_mbytes: np.ndarray
    cat_node: np.ndarray         # (n_cat,) int64 global node index in the ensemble
    cat_tree: np.ndarray         # (n_cat,) tree index within its block, as node_tree
    cat_mask: np.ndarray         # (n_cat,) uint64
    cat_byte: np.ndarray         # node_byte / node_mbytes of the categorical entries
    cat_mbytes: np.ndarray
    cat_feature: np.ndarray      # (n_cat_used,) int32: the categorical nodes' features, ascending
    cat_slot: np.ndarray         # (n_cat,) int32: each entry's feature's index in cat_feature
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


def _byte_slices(lo, hi, mask):
    """``node_byte`` and ``node_mbytes`` of nodes whose masks clear leaves ``lo .. hi - 1``: the
    two bytes from ``min(lo // 8, 6)`` (a run in byte 7 alone takes bytes 6-7, byte 6's mask
    being 0xFF), flagged wide when the run ends past them."""
    first = np.minimum(lo // 8, 6)
    wide = (hi - 1) // 8 > first + 1
    shift = (8 * first).astype(np.uint64)
    mbytes = np.empty((mask.size, 2), np.uint8)
    mbytes[:, 0] = (mask >> shift) & np.uint64(0xFF)
    mbytes[:, 1] = (mask >> (shift + np.uint64(8))) & np.uint64(0xFF)
    byte = first.astype(np.uint8) | np.where(wide, QS_NODE_BYTE_WIDE, 0).astype(np.uint8)
    return byte, mbytes.reshape(-1)


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
    cols = {k: [] for k in ("block", "feature", "mode", "thr", "tree", "mask", "lo", "hi",
                            "dright", "cat", "gnode")}
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
        cols["lo"].append(lo[internal])
        cols["hi"].append(hi[internal])
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
    cat_byte, cat_mbytes = _byte_slices(c["lo"][cat][cat_order], c["hi"][cat][cat_order],
                                        c["mask"][cat][cat_order])
    block_cat_ptr = np.searchsorted(cat_block, np.arange(n_blocks + 1), side="left")
    cat_features = c["feature"][cat][cat_order]
    cat_feature = np.unique(cat_features).astype(np.int32)

    num = ~cat
    b, f, m, thr = c["block"][num], c["feature"][num], c["mode"][num], c["thr"][num]
    order = np.lexsort((c["gnode"][num], thr, m, f, b))
    b, f, m, thr = b[order], f[order], m[order], thr[order]
    tree, mask, dright = c["tree"][num][order], c["mask"][num][order], c["dright"][num][order]
    node_byte, node_mbytes = _byte_slices(c["lo"][num][order], c["hi"][num][order], mask)
    n = b.size
    new_list = np.ones(n, bool)
    new_list[1:] = (b[1:] != b[:-1]) | (f[1:] != f[:-1]) | (m[1:] != m[:-1])
    list_start = np.flatnonzero(new_list)
    used_feature = np.unique(f[list_start]).astype(np.int32)
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
    # 1.9x on the scan: docs/scoring_internals.rst).
    tree_dtype = np.uint16 if tree_block <= np.iinfo(np.uint16).max else np.uint32
    weight = np.repeat(np.asarray(ens.tree_weight, np.float64), np.diff(leaf_ptr))
    with np.errstate(over="ignore", invalid="ignore"):  # float32 overflow is the sum's too
        leaf_scaled32 = leaf_value.astype(np.float32) * weight.astype(np.float32)
    return QuickScorerLayout(
        tree_block=int(tree_block),
        block_tree_ptr=block_tree_ptr,
        block_list_ptr=block_list_ptr.astype(np.int64),
        block_cat_ptr=block_cat_ptr.astype(np.int64),
        list_feature=f[list_start].astype(np.int32),
        list_slot=np.searchsorted(used_feature, f[list_start]).astype(np.int32),
        used_feature=used_feature,
        list_mode=m[list_start].astype(np.uint8),
        list_node_ptr=np.append(list_start, n).astype(np.uint64),
        list_dr_ptr=list_dr_ptr.astype(np.uint64),
        node_thr=node_thr,
        node_tree=tree.astype(tree_dtype),
        node_mask=mask.astype(np.uint64),
        node_byte=node_byte,
        node_mbytes=node_mbytes,
        dr_tree=tree[dr].astype(tree_dtype),
        dr_mask=mask[dr].astype(np.uint64),
        dr_byte=node_byte[dr],
        dr_mbytes=node_mbytes.reshape(-1, 2)[dr].reshape(-1),
        cat_node=c["gnode"][cat][cat_order].astype(np.int64),
        cat_tree=c["tree"][cat][cat_order].astype(tree_dtype),
        cat_mask=c["mask"][cat][cat_order].astype(np.uint64),
        cat_byte=cat_byte,
        cat_mbytes=cat_mbytes,
        cat_feature=cat_feature,
        cat_slot=np.searchsorted(cat_feature, cat_features).astype(np.int32),
        tree_is_qs=tree_is_qs,
        leaf_ptr=leaf_ptr.astype(np.uint64),
        leaf_value=leaf_value,
        leaf_scaled=leaf_value * weight,
        leaf_scaled32=leaf_scaled32,
    )
