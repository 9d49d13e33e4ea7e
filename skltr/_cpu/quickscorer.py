"""numba QuickScorer kernel over a QuickScorerLayout (see skltr.trees._quickscorer_layout).

Vectorised QuickScorer (vQS, Lucchese et al., SIGIR 2016). Threads take chunks of
``chunk_docs`` documents; a chunk is scored in groups of ``LANES`` documents that move through
the node lists together::

    bv[tree, d]   one uint64 leaf vector per (tree of the block, lane d), lanes adjacent:

                  lane:  0    1    2   ...  LANES-1
        tree 0        [ bv | bv | bv | ... | bv ]   <- one node's update is one vector op:
        tree 1        [ bv | bv | bv | ... | bv ]      bv[tree, :] &= mask where xs > thr
        ...

    xs[d]         the group's values of the list's feature, routing-ready: rounded to the
                  thresholds' dtype; NaN for a lane that takes the node's default direction
                  (its default-right masks are applied once, up front) or is padding past the
                  last document. An ordered comparison with NaN is false: the lane never fires.

The scan of a list stops at the first threshold no lane exceeds (one scalar compare against
the group's largest value). Then each tree's exit leaf per lane is its lowest set bit, and the
leaf values (already multiplied by the tree weights, as each sum does it) are added per lane
in tree order, block after block, so float32 sums (XGBoost) are reproduced exactly.

Trees not tabled (more than 64 leaves) and multi-output ensembles take a scalar gather per
document; categorical nodes are routed one by one with the shared ``go_left``.
"""

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from .._dtypes import NodeFlags
from ._simd import LANES, add_exit_leaves, and_if_ge, and_if_gt
from .traversal import ZERO_THRESHOLD, finish_output, go_left, leaf_index, tree_counts

_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_MISSING_NONE = NodeFlags.MISSING_NONE
_MISSING_ZERO = NodeFlags.MISSING_ZERO


@njit(cache=True, error_model="numpy")
def _score_chunk(c, counts, X, chunk_docs, qs, ens, route, out):
    """Score chunk ``c`` (documents ``c * chunk_docs`` onwards) of
    :func:`predict_raw_quickscorer` into ``out``; same arguments, plus ``counts`` (trees per
    output)."""
    # the records unpacked once: the loops below read plain arrays and scalars
    (block_tree_ptr, block_list_ptr, block_cat_ptr, block_all_qs, list_feature, list_mode,
     list_node_ptr, list_dr_ptr, node_thr, node_tree, node_mask, dr_tree, dr_mask, cat_node,
     cat_tree, cat_mask, tree_is_qs, leaf_ptr, leaf_scaled, leaf_scaled32, tree_block) = qs
    (tree_ptr, feature, threshold, left, right, value, flags, cat_offset, cat_nwords,
     cat_bitsets, tree_output, tree_weight, base_score) = ens
    strict, f32_inputs, missing_value, has_sentinel, sum_f32, average = route
    n_samples = X.shape[0]
    n_outputs = out.shape[1]
    n_blocks = block_tree_ptr.shape[0] - 1
    c0 = c * chunk_docs
    cn = min(n_samples, c0 + chunk_docs) - c0
    bv = np.empty((tree_block, LANES), dtype=np.uint64)
    xs = np.empty(LANES, dtype=node_thr.dtype)
    xmax = np.empty(1, dtype=node_thr.dtype)
    # Per-document sums of the chunk, and one group's sums as vectors for the fast gather.
    acc64 = np.empty((chunk_docs, n_outputs), dtype=np.float64)
    acc32 = np.empty((chunk_docs, n_outputs), dtype=np.float32)
    lane64 = np.empty(LANES, dtype=np.float64)
    lane32 = np.empty(LANES, dtype=np.float32)
    for d in range(cn):
        for k in range(n_outputs):
            s = 0.0 if average else base_score[k]
            acc64[d, k] = s
            acc32[d, k] = np.float32(s)
    for b in range(n_blocks):
        t0 = np.uint64(block_tree_ptr[b])
        nt = np.uint64(block_tree_ptr[b + 1]) - t0
        # Groups of the chunk, one after the other, while the block's tables stay in cache.
        for g0 in range(0, cn, LANES):
            nd = min(LANES, cn - g0)
            for t in range(nt):
                for d in range(LANES):
                    bv[t, d] = _ALL_ONES
            for li in range(block_list_ptr[b], block_list_ptr[b + 1]):
                f = list_feature[li]
                mode = list_mode[li]
                top = -np.inf
                for d in range(LANES):
                    x = np.nan  # padding lanes never fire
                    if d < nd:
                        x = X[c0 + g0 + d, f]
                        if f32_inputs:
                            x = np.float64(np.float32(x))
                        if has_sentinel and x == missing_value:
                            x = np.nan
                        default = False
                        if np.isnan(x):
                            if mode == _MISSING_NONE:
                                x = 0.0
                            else:
                                default = True
                        elif mode == _MISSING_ZERO and abs(x) <= ZERO_THRESHOLD:
                            default = True
                        if default:
                            for i in range(list_dr_ptr[li], list_dr_ptr[li + 1]):
                                bv[dr_tree[i], d] &= dr_mask[i]
                            x = np.nan
                    # Exact: float32 thresholds come with float32-rounded inputs only.
                    xs[d] = x
                    if x > top:  # false for NaN
                        top = x
                xmax[0] = top
                xm = xmax[0]
                n_lo = list_node_ptr[li]
                n_hi = list_node_ptr[li + 1]
                # A node is false (goes right) when x > thr, or x >= thr if strict; for
                # each lane the false nodes are a prefix of the list, so the group's scan
                # ends at the first threshold that the largest value does not pass.
                if strict:
                    for i in range(n_lo, n_hi):
                        thr = node_thr[i]
                        if thr > xm:
                            break
                        and_if_ge(bv, node_tree[i], xs, thr, node_mask[i])
                else:
                    for i in range(n_lo, n_hi):
                        thr = node_thr[i]
                        if thr >= xm:
                            break
                        and_if_gt(bv, node_tree[i], xs, thr, node_mask[i])
            for ci in range(block_cat_ptr[b], block_cat_ptr[b + 1]):
                node = cat_node[ci]
                f = feature[node]
                for d in range(nd):
                    if not go_left(X[c0 + g0 + d, f], node, threshold, flags, cat_offset,
                                   cat_nwords, cat_bitsets, strict, f32_inputs,
                                   missing_value, has_sentinel):
                        bv[cat_tree[ci], d] &= cat_mask[ci]
            if block_all_qs[b] and n_outputs == 1:
                # Fast path: every tree tabled, one output; all lanes at once (padding
                # lanes read leaf 0 and are dropped).
                if sum_f32:
                    for d in range(LANES):
                        lane32[d] = acc32[g0 + d, 0] if d < nd else np.float32(0.0)
                    for t in range(nt):
                        add_exit_leaves(bv, t, leaf_ptr[t0 + t], leaf_scaled32, lane32)
                    for d in range(nd):
                        acc32[g0 + d, 0] = lane32[d]
                else:
                    for d in range(LANES):
                        lane64[d] = acc64[g0 + d, 0] if d < nd else 0.0
                    for t in range(nt):
                        add_exit_leaves(bv, t, leaf_ptr[t0 + t], leaf_scaled, lane64)
                    for d in range(nd):
                        acc64[g0 + d, 0] = lane64[d]
                continue
            for d in range(nd):
                dd = g0 + d
                for t in range(nt):
                    gt = t0 + t
                    k = tree_output[gt]
                    if tree_is_qs[gt]:
                        j = leaf_ptr[gt] + trailing_zeros(bv[t, d])
                        if sum_f32:
                            acc32[dd, k] = acc32[dd, k] + leaf_scaled32[j]
                        else:
                            acc64[dd, k] += leaf_scaled[j]
                        continue
                    leaf_val = value[leaf_index(X, c0 + dd, tree_ptr[gt], feature,
                                                threshold, left, right, flags, cat_offset,
                                                cat_nwords, cat_bitsets, strict, f32_inputs,
                                                missing_value, has_sentinel)]
                    if sum_f32:
                        acc32[dd, k] = acc32[dd, k] + np.float32(
                            np.float32(leaf_val) * np.float32(tree_weight[gt]))
                    else:
                        acc64[dd, k] += leaf_val * tree_weight[gt]
    for d in range(cn):
        for k in range(n_outputs):
            total = np.float64(acc32[d, k]) if sum_f32 else acc64[d, k]
            out[c0 + d, k] = finish_output(total, counts[k], base_score[k], sum_f32, average)


@njit(parallel=True, cache=True)
def predict_raw_quickscorer(X, chunk_docs, qs, ens, route, out):
    """Fill ``out`` (n_samples, n_outputs) float64 with raw scores; see the module docstring.

    ``qs``: the ``QSTables`` of the layout; ``ens``: ``NodeArrays`` (fallback traversal,
    outputs); ``route``: ``Routing`` (``skltr._records``). ``chunk_docs`` (documents per
    thread chunk) must be a positive multiple of ``LANES``.
    """
    n_samples = X.shape[0]
    counts = tree_counts(ens.tree_output, out.shape[1])
    n_chunks = (n_samples + chunk_docs - 1) // chunk_docs
    # The parfor's body is one call: a parfor compiles several times faster with a small
    # body, and the index is cast so that the chunk function compiles once (int64), not
    # again for the parfor's unsigned index.
    for c in prange(n_chunks):
        _score_chunk(np.int64(c), counts, X, chunk_docs, qs, ens, route, out)
