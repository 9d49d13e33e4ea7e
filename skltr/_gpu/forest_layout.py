"""The GPU traversal kernels' node layout of a ``TreeEnsemble`` (host NumPy, built once).

Every tree's nodes in depth-first preorder, the *hot* child of each node (the one more rows
took, when visit counts are given; else the left child) placed right after it and the other
child at a stored offset, in 16-byte records::

    Node { double v;      // threshold, or a leaf's contribution (value x tree weight, rounded
                          //   as the CPU kernel rounds it: float32 products for float32 sums)
           int feature;   // -1 at a leaf
           int meta; }    // bits 0-6: NodeFlags; bit 7: the hot child is the right one;
                          //   bits 8-31: offset of the other (cold) child

so that the common path of a walk reads consecutive records (Tahoe's visit-frequency order,
Xie et al.). Categorical sets stay in side arrays indexed by the node's new position. Forests
routed and summed in float32 without categorical splits (XGBoost's) take an 8-byte record
instead: the threshold as an order-preserving integer key of its float32 bits, and feature,
hot side, default direction, missing type and cold-child offset packed in one word, so that a
node costs half the cache traffic and routing is integer compares (:func:`_compact_nodes`).

Reordering children changes where nodes are stored, never how a row is routed or the order in
which trees are summed: scores are identical with and without visit counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .._dtypes import NodeFlags

__all__ = ["ForestArrays", "forest_arrays", "HOT_RIGHT"]

#: ``meta`` bit of the 16-byte record: the node stored next is the right child.
HOT_RIGHT = 1 << 7


@dataclass(frozen=True)
class ForestArrays:
    """Host arrays of the layout (see the module docstring).

    ``nodes``: the records as a structured array; ``compact``: the 8-byte records;
    ``node_kinds``: (categorical, missing-type-none, missing-type-zero) splits present, the
    routing branches the kernels compile in; ``new_of_old``: layout index of each ensemble
    node; ``cat_off`` / ``cat_nw``: category sets by layout index; ``tree_ptr``: first node of
    each tree (the order keeps every tree's size)."""

    nodes: np.ndarray
    compact: bool
    node_kinds: tuple
    new_of_old: np.ndarray
    cat_off: np.ndarray
    cat_nw: np.ndarray
    bits: np.ndarray
    tree_ptr: np.ndarray


@njit(cache=True)
def _preorder(tree_ptr, left, right, hot_right):
    """Old global index of every node in depth-first preorder, each node's hot child (the
    right one where ``hot_right``) first."""
    perm = np.empty(tree_ptr[-1], np.int64)
    stack = np.empty(max(1, np.max(np.diff(tree_ptr)) if tree_ptr.size > 1 else 1), np.int64)
    pos = 0
    for t in range(tree_ptr.size - 1):
        start = tree_ptr[t]
        if tree_ptr[t + 1] == start:
            continue
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            perm[pos] = start + node
            pos += 1
            if left[start + node] >= 0:
                hot, cold = left[start + node], right[start + node]
                if hot_right[start + node]:
                    hot, cold = cold, hot
                stack[top] = cold
                stack[top + 1] = hot
                top += 2
    return perm[:pos]


def forest_arrays(ensemble, routing, visits=None) -> ForestArrays:
    """The layout of ``ensemble`` (``routing``: its :class:`~skltr._records.Routing`);
    ``visits``: rows through each node (ensemble order) to order children by, or None."""
    e, r = ensemble, routing
    tree_ptr = np.asarray(e.tree_ptr, np.int64)
    left, right = np.asarray(e.left, np.int64), np.asarray(e.right, np.int64)
    sizes = np.diff(tree_ptr)
    tree_of_old = np.repeat(np.arange(sizes.size), sizes)
    hot_right = np.zeros(left.size, bool)
    if visits is not None:
        split = np.flatnonzero(left >= 0)
        base = tree_ptr[tree_of_old[split]]
        hot_right[split] = visits[base + right[split]] > visits[base + left[split]]
    perm = _preorder(tree_ptr, left, right, hot_right)
    n_nodes = perm.size
    new_of_old = np.empty(max(int(tree_ptr[-1]), 1), np.int64)
    new_of_old[perm] = np.arange(n_nodes)
    leaf = left[perm] < 0
    feature = np.where(leaf, -1, np.asarray(e.feature)[perm]).astype(np.int32)
    weight = np.asarray(e.tree_weight, np.float64)[tree_of_old[perm]]
    value = np.asarray(e.value, np.float64)[perm]
    if r.sum_f32:  # as the CPU kernel: float32(float32(value) * float32(weight))
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is the sum's too
            contrib = (value.astype(np.float32) * weight.astype(np.float32)).astype(
                np.float64)
    else:
        contrib = value * weight
    v = np.where(leaf, contrib, np.asarray(e.threshold, np.float64)[perm])
    start_old = tree_ptr[tree_of_old[perm]]
    hot = hot_right[perm]
    cold_old = np.where(hot, left[perm], right[perm])
    cold_new = new_of_old[start_old + np.maximum(cold_old, 0)]
    offset = np.where(leaf, 0, cold_new - np.arange(n_nodes))
    if offset.max(initial=0) >= 2**23:
        raise ValueError("a tree has more than 2**23 nodes: too large for the GPU layout.")
    flags = np.asarray(e.flags, np.int64)[perm]
    meta = (flags | np.where(hot, HOT_RIGHT, 0) | (offset << 8)).astype(np.int32)
    # the routing branches this forest needs: the others are compiled out
    split = ~leaf
    cat = split & ((flags & NodeFlags.CATEGORICAL) != 0)
    kind = NodeFlags.missing_type(flags)
    node_kinds = (int(cat.any()), int((split & ~cat & (kind == NodeFlags.MISSING_NONE)).any()),
                  int((split & ~cat & (kind == NodeFlags.MISSING_ZERO)).any()))
    compact = _compact_ok(r, v, leaf, feature, offset, node_kinds)
    if compact:
        rec = _compact_nodes(v, leaf, feature, flags, hot, offset)
    else:
        rec = np.empty(max(n_nodes, 1), dtype=[("v", "<f8"), ("feature", "<i4"),
                                               ("meta", "<i4")])
        rec["v"][:n_nodes], rec["feature"][:n_nodes], rec["meta"][:n_nodes] = (
            v, feature, meta)
    has_cat = e.cat_offset is not None and e.cat_nwords is not None
    bits = e.cat_bitsets if has_cat and e.cat_bitsets is not None else None
    return ForestArrays(
        nodes=rec, compact=compact, node_kinds=node_kinds, new_of_old=new_of_old,
        cat_off=(np.asarray(e.cat_offset, np.int32)[perm] if has_cat
                 else np.zeros(1, np.int32)),
        cat_nw=(np.asarray(e.cat_nwords, np.int32)[perm] if has_cat
                else np.zeros(1, np.int32)),
        bits=(np.asarray(bits, np.uint32) if bits is not None and len(bits)
              else np.zeros(1, np.uint32)),
        tree_ptr=tree_ptr)


def _compact_ok(r, v, leaf, feature, offset, node_kinds):
    """Whether the 8-byte layout reproduces the ensemble: float32 routing and float32 sums,
    no categorical node, every threshold a float32, features and offsets that fit."""
    t = v[~leaf]
    with np.errstate(over="ignore"):
        f32 = bool(np.all(t.astype(np.float32).astype(np.float64) == t))
    return bool(r.f32_inputs and r.sum_f32 and not node_kinds[0] and f32
                and feature.max(initial=0) < 0x7FFF and offset.max(initial=0) < 2**13)


def _compact_nodes(v, leaf, feature, flags, hot, offset):
    """The 8-byte records: ``key`` (an internal node's threshold as an order-preserving key of
    its float32 bits, -0.0 as 0.0; a leaf's contribution as float32 bits) and ``packed``
    (bits 0-14 feature or 0x7fff at a leaf, bit 15 hot side right, bit 16 default left,
    bits 17-18 missing type, bits 19-31 cold-child offset)."""
    bits = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = np.where(bits == 0x80000000, 0, bits)
    key = np.where(b & 0x80000000, ~b & 0xFFFFFFFF, b | 0x80000000)
    key = np.where(leaf, bits, key)
    dl = (flags & NodeFlags.DEFAULT_LEFT) != 0
    packed = (np.where(leaf, 0x7FFF, feature).astype(np.uint64)
              | (hot.astype(np.uint64) << 15) | (dl.astype(np.uint64) << 16)
              | (NodeFlags.missing_type(flags).astype(np.uint64) << 17)
              | (offset.astype(np.uint64) << 19))
    rec = np.empty(max(v.size, 1), dtype=[("key", "<u4"), ("packed", "<u4")])
    rec["key"][:v.size], rec["packed"][:v.size] = key, packed
    return rec


def tree_chunks(sizes, budget, node_bytes):
    """Chunks of consecutive whole trees of at most ``budget`` bytes of nodes: (first tree of
    each chunk then n_trees, int32; the largest chunk's bytes)."""
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
    return np.asarray(starts, np.int32), max(largest * node_bytes, 16)
