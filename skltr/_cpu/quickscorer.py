"""numba QuickScorer kernel over a QuickScorerLayout (see skltr.trees._quickscorer_layout).

Vectorised QuickScorer (vQS, Lucchese et al., SIGIR 2016) with byte-sliced leaf vectors
(RapidScorer, Ye et al., KDD 2018). Documents are scored in groups of ``LANES`` (64) that
move through the node lists together::

    bv[tree, j, d]   byte j of tree ``tree``'s 64-bit leaf vector for lane d (uint8);
                     a row bv[tree, j, :] is 64 bytes, one vector:

                     lane:   0    1    2   ...  63
        tree 0, byte 0    [ b  | b  | b  | ... | b  ]   <- a node clearing leaves 3..9 is
        tree 0, byte 1    [ b  | b  | b  | ... | b  ]      two row updates (bytes 0 and 1):
        ...                                                row &= m where xs > thr
        tree 0, byte 7
        tree 1, byte 0 ...

    xs[d]            the group's values of the list's feature, routing-ready: rounded to the
                     thresholds' dtype; NaN for a lane that takes the node's default
                     direction (its default-right masks are applied once, up front) or is
                     padding past the last document. An ordered comparison with NaN is
                     false: the lane never fires.

A chunk's values are first transposed into ``xt[group, slot, lane]`` (``slot``: the model's
numeric features, ``QuickScorerLayout.used_feature``), with each group's largest value per
feature and whether any lane is NaN or zero (the rare lanes whose routing depends on the
list's missing type: those lists take a per-lane path). The scan of a list stops at the first
threshold that no lane exceeds. Then each tree's exit leaf per lane is its lowest set bit,
and the leaf values (already multiplied by the tree weights, as each sum does it) are added
per lane in tree order, block after block, so float32 sums (XGBoost) are reproduced exactly.

Threads take chunks of ``chunk_docs`` documents from a shared counter (an atomic add), so a
thread slowed by anything else on its core takes fewer chunks instead of holding up the call;
each thread allocates its buffers once. Trees not tabled (more than 64 leaves) are walked
document by document, in their place in the sum. Categorical nodes are routed lane by lane
by the shared rule (``go_left``'s parts) from their features' values transposed per chunk,
and their masks applied to the lanes that go right together; a group whose codes are all
plain (``0 <= x < 2**31``, the same code under any node's flags) looks them up without
branches.
"""

import numpy as np
from numba import njit, prange

from .._dtypes import NodeFlags
from ._intrinsics import fetch_add
from ._simd import (LANES, TREE_BYTES, and_where, default_lanes, exit_leaves, scan_list_ge,
                    scan_list_gt)
from .traversal import (ZERO_THRESHOLD, categorical_left, category_code, finish_output,
                        in_category_set, in_category_set_plain, input_value, leaf_index,
                        plain_code, tree_counts)

_MISSING_NONE = NodeFlags.MISSING_NONE
_MISSING_ZERO = NodeFlags.MISSING_ZERO
# Per (group, feature) flags of the transposed values.
_HAS_NAN = 1
_HAS_ZERO = 2


@njit(cache=True)
def _aligned(raw):
    """The part of ``raw`` from its first 64-byte aligned element: the kernel's rows are then
    whole cache lines (unaligned 64-byte rows measured 15% slower on the LightGBM model)."""
    shift = ((64 - raw.ctypes.data % 64) % 64) // raw.itemsize
    return raw[shift:]


@njit(cache=True, error_model="numpy")
def _transpose(X, c0, cn, used_feature, f32_inputs, missing_value, has_sentinel, xt, top,
               special):
    """Routing-ready values of documents ``c0 .. c0 + cn - 1``, transposed into
    ``xt[group, slot, lane]``, with each (group, slot)'s largest value (``top``; NaN never
    wins) and whether a lane is NaN or zero (``special``). Each (document, feature) is read
    and rounded once.

    Branch-free (selects): a third of the benchmark's values are zeros, and branches on them
    tripled this loop's time; a slot's lanes in turn keep its flags and largest value in
    registers. A function of its own: inlined into the chunk's loop nest it ran 2x slower.
    """
    n_slots = used_feature.shape[0]
    for g in range((cn + LANES - 1) // LANES):
        nd = min(LANES, cn - g * LANES)
        for s in range(n_slots):
            f = used_feature[s]
            gs = g * n_slots + s
            m = -np.inf
            flag = 0
            for d in range(LANES):
                valid = d < nd
                x = X[c0 + g * LANES + (d if valid else 0), f]
                if f32_inputs:
                    x = np.float64(np.float32(x))
                # padding lanes are NaN: they never fire
                x = np.nan if (has_sentinel and x == missing_value) or not valid else x
                flag |= (_HAS_NAN if np.isnan(x) and valid else 0) | (
                    _HAS_ZERO if abs(x) <= ZERO_THRESHOLD else 0)
                # Exact: float32 thresholds come with float32-rounded inputs only.
                xt[gs * LANES + d] = x
                m = x if x > m else m
            top[gs] = m
            special[gs] = flag


@njit(cache=True, error_model="numpy")
def _transpose_categorical(X, c0, cn, cat_feature, f32_inputs, missing_value, has_sentinel,
                           xc, codes, special):
    """The categorical nodes' features' values of documents ``c0 .. c0 + cn - 1`` as the
    routing reads them (:func:`~skltr._cpu.traversal.input_value`), transposed into
    ``xc[group, slot, lane]`` (``slot``: the index in ``cat_feature``; padding lanes NaN),
    their codes into ``codes`` (padding lanes 0), and per (group, slot) in ``special``
    whether a lane's code depends on the node (:func:`~skltr._cpu.traversal.plain_code`)."""
    n_slots = cat_feature.shape[0]
    for g in range((cn + LANES - 1) // LANES):
        nd = min(LANES, cn - g * LANES)
        for s in range(n_slots):
            f = cat_feature[s]
            base = (g * n_slots + s) * LANES
            flag = False
            for d in range(LANES):
                x = np.nan
                code = 0
                if d < nd:
                    x = input_value(X[c0 + g * LANES + d, f], f32_inputs, missing_value,
                                    has_sentinel)
                    plain = plain_code(x)
                    flag |= not plain
                    code = np.int64(x) if plain else 0
                xc[base + d] = x
                codes[base + d] = code
            special[g * n_slots + s] = flag


@njit(cache=True, error_model="numpy")
def _score_chunks(next_chunk, n_chunks, counts, X, chunk_docs, qs, ens, route, out):
    """One thread's work: allocate its buffers, then score chunks of ``chunk_docs``
    documents taken from the shared counter ``next_chunk[0]`` until all ``n_chunks`` are
    taken. (One function: a chunk function of its own, called from here, took 2.5 s more to
    compile cold, LLVM optimising it again where it is inlined.)"""
    # the records unpacked once: the loops below read plain arrays and scalars
    (block_tree_ptr, block_list_ptr, block_cat_ptr, list_feature, list_mode, list_slot,
     used_feature, list_node_ptr, list_dr_ptr, node_thr, node_tree, node_mask, node_byte,
     node_mbytes, dr_tree, dr_mask, dr_byte, dr_mbytes, cat_node, cat_tree, cat_mask,
     cat_byte, cat_mbytes, cat_feature, cat_slot, tree_is_qs, leaf_ptr, leaf_scaled,
     leaf_scaled32, tree_block) = qs
    (tree_ptr, feature, threshold, left, right, value, flags, cat_offset, cat_nwords,
     cat_bitsets, tree_output, tree_weight, base_score) = ens
    strict, f32_inputs, missing_value, has_sentinel, sum_f32, average = route
    n_samples = X.shape[0]
    n_slots = used_feature.shape[0]
    n_cat_slots = cat_feature.shape[0]
    n_outputs = out.shape[1]
    n_blocks = block_tree_ptr.shape[0] - 1
    # The thread's buffers, 64-byte aligned where the vector code reads them.
    bv = _aligned(np.empty(tree_block * TREE_BYTES + 64, dtype=np.uint8))
    xt = _aligned(np.empty(chunk_docs * n_slots + 64, dtype=node_thr.dtype))
    top = np.empty(chunk_docs // LANES * n_slots, dtype=node_thr.dtype)
    special = np.empty(chunk_docs // LANES * n_slots, dtype=np.uint8)
    xc = np.empty(chunk_docs * n_cat_slots, dtype=np.float64)
    codes = np.empty(chunk_docs * n_cat_slots, dtype=np.int64)
    cat_special = np.empty(chunk_docs // LANES * n_cat_slots, dtype=np.bool_)
    xfix = _aligned(np.empty(LANES + 64, dtype=node_thr.dtype))
    fix_top = np.empty(1, dtype=node_thr.dtype)
    acc64 = np.empty((chunk_docs, n_outputs), dtype=np.float64)
    acc32 = np.empty((chunk_docs, n_outputs), dtype=np.float32)
    leaf = np.empty(LANES, dtype=np.uint8)
    lanes = np.empty(LANES, dtype=np.uint8)
    while True:
        c = fetch_add(next_chunk, 0, 1)
        if c >= n_chunks:
            return
        c0 = c * chunk_docs
        cn = min(n_samples, c0 + chunk_docs) - c0
        n_groups = (cn + LANES - 1) // LANES
        for d in range(cn):
            for k in range(n_outputs):
                s = 0.0 if average else base_score[k]
                acc64[d, k] = s
                acc32[d, k] = np.float32(s)
        _transpose(X, c0, cn, used_feature, f32_inputs, missing_value, has_sentinel, xt, top,
                   special)
        _transpose_categorical(X, c0, cn, cat_feature, f32_inputs, missing_value,
                               has_sentinel, xc, codes, cat_special)
        for b in range(n_blocks):
            t0 = block_tree_ptr[b]
            nt = block_tree_ptr[b + 1] - t0
            # Groups of the chunk, one after the other, while the block's tables stay in cache.
            for g in range(n_groups):
                g0 = g * LANES
                nd = min(LANES, cn - g0)
                bv[: nt * TREE_BYTES] = 255
                for li in range(block_list_ptr[b], block_list_ptr[b + 1]):
                    gs = g * n_slots + list_slot[li]
                    mode = list_mode[li]
                    xs, xoff, xm = xt, gs * LANES, top[gs]
                    sp = special[gs]
                    if (sp & _HAS_NAN) != 0 or (mode == _MISSING_ZERO and sp != 0):
                        # Lanes whose routing depends on the list's missing type.
                        default_lanes(bv, xt, xoff, mode, xfix, dr_tree, dr_byte, dr_mbytes,
                                      dr_mask, list_dr_ptr[li], list_dr_ptr[li + 1])
                        xs, xoff = xfix, 0
                        if mode == _MISSING_NONE:  # NaN lanes read as 0.0
                            fix_top[0] = max(xm, 0.0)
                            xm = fix_top[0]
                    if strict:
                        scan_list_ge(bv, xs, xoff, node_thr, node_tree, node_byte, node_mbytes,
                                     node_mask, list_node_ptr[li], list_node_ptr[li + 1], xm)
                    else:
                        scan_list_gt(bv, xs, xoff, node_thr, node_tree, node_byte, node_mbytes,
                                     node_mask, list_node_ptr[li], list_node_ptr[li + 1], xm)
                for ci in range(block_cat_ptr[b], block_cat_ptr[b + 1]):
                    # categorical sets: each lane routed by the shared rule from the
                    # transposed values, the node's fields read once (not go_left per lane
                    # on the rows of X, with its arrays' reference counts), then the node's
                    # mask applied to the lanes that go right, together. Groups whose codes
                    # do not depend on the node's flags (no NaN, negative or huge values)
                    # look the codes up without branches. Padding lanes go either way:
                    # nothing reads them.
                    node = cat_node[ci]
                    fl = flags[node]
                    offset = cat_offset[node]
                    nwords = cat_nwords[node]
                    gs = g * n_cat_slots + cat_slot[ci]
                    xoff = gs * LANES
                    if cat_special[gs] or nwords == 0:
                        for d in range(LANES):
                            code = category_code(xc[xoff + d], fl)
                            lanes[d] = not categorical_left(
                                code, in_category_set(code, cat_bitsets, offset, nwords), fl)
                    else:
                        for d in range(LANES):
                            code = codes[xoff + d]
                            lanes[d] = not categorical_left(
                                code, in_category_set_plain(code, cat_bitsets, offset, nwords),
                                fl)
                    and_where(bv, lanes, cat_tree, cat_byte, cat_mbytes, cat_mask, ci)
                # Leaf values per tree, then per document in tree order: exit leaves of all
                # lanes at once (one call site of that vector code for every output and sum
                # type: it is much of this function's compile time), their values added lane
                # by lane; trees not tabled walked document by document.
                for t in range(nt):
                    gt = t0 + t
                    k = tree_output[gt]
                    if tree_is_qs[gt]:
                        exit_leaves(bv, t * TREE_BYTES, leaf)
                        base = leaf_ptr[gt]
                        if sum_f32:
                            for d in range(nd):
                                acc32[g0 + d, k] += leaf_scaled32[base + np.uint64(leaf[d])]
                        else:
                            for d in range(nd):
                                acc64[g0 + d, k] += leaf_scaled[base + np.uint64(leaf[d])]
                        continue
                    for d in range(nd):
                        leaf_val = value[leaf_index(X, c0 + g0 + d, tree_ptr[gt], feature,
                                                    threshold, left, right, flags, cat_offset,
                                                    cat_nwords, cat_bitsets, strict, f32_inputs,
                                                    missing_value, has_sentinel)]
                        if sum_f32:
                            acc32[g0 + d, k] = acc32[g0 + d, k] + np.float32(
                                np.float32(leaf_val) * np.float32(tree_weight[gt]))
                        else:
                            acc64[g0 + d, k] += leaf_val * tree_weight[gt]
        for d in range(cn):
            for k in range(n_outputs):
                total = np.float64(acc32[d, k]) if sum_f32 else acc64[d, k]
                out[c0 + d, k] = finish_output(total, counts[k], base_score[k], sum_f32, average)


@njit(parallel=True, cache=True)
def predict_raw_quickscorer(X, chunk_docs, n_workers, next_chunk, qs, ens, route, out):
    """Fill ``out`` (n_samples, n_outputs) float64 with raw scores; see the module docstring.

    ``qs``: the ``QSTables`` of the layout; ``ens``: ``NodeArrays`` (fallback traversal,
    outputs); ``route``: ``Routing`` (``skltr._records``). ``chunk_docs`` (documents per
    chunk) must be a positive multiple of ``LANES``; ``n_workers``: the threads to run (at
    most numba's thread count); ``next_chunk``: a (1,) int64 array holding 0, their shared
    work counter.
    """
    n_samples = X.shape[0]
    counts = tree_counts(ens.tree_output, out.shape[1])
    n_chunks = (n_samples + chunk_docs - 1) // chunk_docs
    # One iteration per thread (numba splits a prange statically); the chunks are shared
    # out dynamically inside. The parfor's body is one call: a parfor compiles several times
    # faster with a small body.
    for w in prange(n_workers):
        _score_chunks(next_chunk, n_chunks, counts, X, chunk_docs, qs, ens, route, out)
