"""numba QuickScorer kernel over a QuickScorerLayout (see skltr.trees._quickscorer_layout).

Threads take blocks of ``doc_block`` documents. For each block of trees, every document of the
block gets one 64-bit vector per tree (``bv[doc, tree]``); each feature list
is scanned for all documents of the block while its thresholds are hot in cache (the vQS idea),
then exit leaves are read by trailing-zero count. Scores are accumulated per document in tree
order, block after block, so float32 sums (XGBoost) are reproduced exactly; the layout's leaf
values are already multiplied by the tree weights the way the sum does it.
"""

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from .traversal import ZERO_THRESHOLD, go_left, leaf_index

_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_MISSING_NONE = 0
_MISSING_ZERO = 1


@njit(parallel=True, cache=True)
def predict_raw_quickscorer(
        X, doc_block,
        # layout
        block_tree_ptr, block_list_ptr, block_cat_ptr, block_all_qs, list_feature, list_mode,
        list_node_ptr, list_dr_ptr, node_thr, node_tree, node_mask, dr_tree, dr_mask, cat_node,
        cat_tree, cat_mask, tree_is_qs, leaf_ptr, leaf_scaled, leaf_scaled32, tree_block,
        # ensemble (fallback traversal, outputs)
        tree_ptr, feature, threshold, left, right, value, flags, cat_offset, cat_nwords,
        cat_bitsets, tree_output, tree_weight, base_score,
        strict, f32_inputs, sum_f32, missing_value, has_sentinel, average, out):
    n_samples = X.shape[0]
    n_outputs = out.shape[1]
    n_trees = tree_ptr.shape[0] - 1
    n_blocks = block_tree_ptr.shape[0] - 1
    counts = np.zeros(n_outputs, dtype=np.float64)
    for t in range(n_trees):
        counts[tree_output[t]] += 1.0
    n_chunks = (n_samples + doc_block - 1) // doc_block
    for c in prange(n_chunks):
        d0 = c * doc_block
        nd = min(n_samples, d0 + doc_block) - d0
        bv = np.empty((doc_block, tree_block), dtype=np.uint64)
        xcast = np.empty(1, dtype=node_thr.dtype)
        acc64 = np.empty((doc_block, n_outputs), dtype=np.float64)
        acc32 = np.empty((doc_block, n_outputs), dtype=np.float32)
        for d in range(nd):
            for k in range(n_outputs):
                s = 0.0 if average else base_score[k]
                acc64[d, k] = s
                acc32[d, k] = np.float32(s)
        for b in range(n_blocks):
            t0 = block_tree_ptr[b]
            nt = block_tree_ptr[b + 1] - t0
            for d in range(nd):
                for t in range(nt):
                    bv[d, t] = _ALL_ONES
            for li in range(block_list_ptr[b], block_list_ptr[b + 1]):
                f = list_feature[li]
                mode = list_mode[li]
                n_lo = list_node_ptr[li]
                n_hi = list_node_ptr[li + 1]
                for d in range(nd):
                    row = bv[d]
                    x = X[d0 + d, f]
                    if f32_inputs:
                        x = np.float64(np.float32(x))
                    if has_sentinel and x == missing_value:
                        x = np.nan
                    if np.isnan(x):
                        if mode == _MISSING_NONE:
                            x = 0.0
                        else:
                            for i in range(list_dr_ptr[li], list_dr_ptr[li + 1]):
                                row[dr_tree[i]] &= dr_mask[i]
                            continue
                    if mode == _MISSING_ZERO and abs(x) <= ZERO_THRESHOLD:
                        for i in range(list_dr_ptr[li], list_dr_ptr[li + 1]):
                            row[dr_tree[i]] &= dr_mask[i]
                        continue
                    # A node is false (goes right) when x > thr, or x >= thr if strict;
                    # the false nodes are a prefix of the list. Two loops keep the hot loop
                    # free of the strict/non-strict branch.
                    # Compare in the thresholds' dtype (no per-node conversion); exact, as
                    # float32 thresholds come with float32-rounded inputs only.
                    xcast[0] = x
                    xc = xcast[0]
                    if strict:
                        for i in range(n_lo, n_hi):
                            if node_thr[i] > xc:
                                break
                            row[node_tree[i]] &= node_mask[i]
                    else:
                        for i in range(n_lo, n_hi):
                            if node_thr[i] >= xc:
                                break
                            row[node_tree[i]] &= node_mask[i]
            for ci in range(block_cat_ptr[b], block_cat_ptr[b + 1]):
                node = cat_node[ci]
                f = feature[node]
                for d in range(nd):
                    if not go_left(X[d0 + d, f], node, threshold, flags, cat_offset, cat_nwords,
                                   cat_bitsets, strict, f32_inputs, missing_value,
                                   has_sentinel):
                        bv[d, cat_tree[ci]] &= cat_mask[ci]
            if block_all_qs[b] and n_outputs == 1:
                # Fast path: every tree tabled, one output.
                for d in range(nd):
                    if sum_f32:
                        s32 = acc32[d, 0]
                        for t in range(nt):
                            s32 = s32 + leaf_scaled32[leaf_ptr[t0 + t]
                                                      + trailing_zeros(bv[d, t])]
                        acc32[d, 0] = s32
                    else:
                        s64 = acc64[d, 0]
                        for t in range(nt):
                            s64 = s64 + leaf_scaled[leaf_ptr[t0 + t]
                                                    + trailing_zeros(bv[d, t])]
                        acc64[d, 0] = s64
                continue
            for d in range(nd):
                for t in range(nt):
                    gt = t0 + t
                    k = tree_output[gt]
                    if tree_is_qs[gt]:
                        j = leaf_ptr[gt] + trailing_zeros(bv[d, t])
                        if sum_f32:
                            acc32[d, k] = acc32[d, k] + leaf_scaled32[j]
                        else:
                            acc64[d, k] += leaf_scaled[j]
                        continue
                    leaf_val = value[leaf_index(X, d0 + d, tree_ptr[gt], feature, threshold,
                                                left, right, flags, cat_offset, cat_nwords,
                                                cat_bitsets, strict, f32_inputs,
                                                missing_value, has_sentinel)]
                    if sum_f32:
                        acc32[d, k] = acc32[d, k] + np.float32(
                            np.float32(leaf_val) * np.float32(tree_weight[gt]))
                    else:
                        acc64[d, k] += leaf_val * tree_weight[gt]
        for d in range(nd):
            for k in range(n_outputs):
                total = np.float64(acc32[d, k]) if sum_f32 else acc64[d, k]
                if average:
                    if counts[k] > 0:
                        total = total / counts[k]
                    if sum_f32:
                        total = np.float64(np.float32(np.float32(total)
                                                      + np.float32(base_score[k])))
                    else:
                        total = total + base_score[k]
                out[d0 + d, k] = total
