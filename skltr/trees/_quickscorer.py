"""Host-side entry to the QuickScorer CPU backend."""

from __future__ import annotations

import numpy as np

from .._cpu.quickscorer import predict_raw_quickscorer
from ..utils._threads import numba_threads
from ._traversal import _as_kernel_input, _routing_args

#: Documents per thread block: enough to reuse each feature list across documents while the
#: block's bitvectors (doc_block x tree_block x 8 bytes) stay in L2.
DEFAULT_DOC_BLOCK = 16


def predict_raw(ensemble, layout, X, *, n_jobs=None, doc_block=DEFAULT_DOC_BLOCK):
    """Raw scores of ``ensemble`` on ``X`` through its QuickScorer ``layout``.

    Same output (dtype and shape, bit for bit) as ``TreeEnsemble.predict_raw``.
    """
    X = _as_kernel_input(ensemble, X)
    strict, f32_inputs, missing_value, has_sentinel = _routing_args(ensemble)
    e, L = ensemble, layout
    out = np.empty((X.shape[0], e.n_outputs), dtype=np.float64)
    with numba_threads(n_jobs):
        predict_raw_quickscorer(
            X, int(doc_block),
            L.block_tree_ptr, L.block_list_ptr, L.block_cat_ptr, L.block_all_qs, L.list_feature,
            L.list_mode, L.list_node_ptr, L.list_dr_ptr, L.node_thr, L.node_tree, L.node_mask,
            L.dr_tree, L.dr_mask, L.cat_node, L.cat_tree, L.cat_mask, L.tree_is_qs, L.leaf_ptr,
            L.leaf_scaled, L.leaf_scaled32, L.tree_block,
            e.tree_ptr, e.feature, e.threshold, e.left, e.right, e.value, e.flags, e.cat_offset,
            e.cat_nwords, e.cat_bitsets, e.tree_output, e.tree_weight, e.base_score,
            strict, f32_inputs, e.sum_dtype == "float32", missing_value, has_sentinel,
            e.average_output, out)
    if e.sum_dtype == "float32":
        out = out.astype(np.float32)
    return out[:, 0] if e.n_outputs == 1 else out
