"""numba kernels: route rows through TreeEnsemble node arrays (the reference backend).

Plain functions over arrays; the node semantics are those documented in
``skltr.trees._ensemble``. ``go_left`` is shared by every CPU backend so that routing is
defined in exactly one place.
"""

import numpy as np
from numba import njit, prange

from .._dtypes import NodeFlags

# NodeFlags' bits as module constants (numba freezes global ints at compile time).
_CATEGORICAL = NodeFlags.CATEGORICAL
_DEFAULT_LEFT = NodeFlags.DEFAULT_LEFT
_CAT_SET_RIGHT = NodeFlags.CAT_SET_RIGHT
_CAT_INVALID_DEFAULT = NodeFlags.CAT_INVALID_DEFAULT
_CAT_TRUNC_FIRST = NodeFlags.CAT_TRUNC_FIRST
_MISSING_NONE = NodeFlags.MISSING_NONE
_MISSING_ZERO = NodeFlags.MISSING_ZERO
_MISSING_SHIFT = NodeFlags.MISSING_SHIFT
# LightGBM's kZeroThreshold is the float literal 1e-35f, i.e. float32(1e-35) as a double.
ZERO_THRESHOLD = 1.0000000180025095e-35


@njit(inline="always", cache=True)
def input_value(x, f32_inputs, missing_value, has_sentinel):
    """``x`` as the routing reads it: rounded to float32 for a float32 model
    (``f32_inputs``), the missing-value sentinel as NaN."""
    if f32_inputs:
        x = np.float64(np.float32(x))
    if has_sentinel and x == missing_value:
        x = np.nan
    return x


@njit(inline="always", cache=True)
def numeric_left(x, fl, thr, strict):
    """Whether ``x`` (:func:`input_value`) goes left at a numeric node of flags ``fl`` and
    threshold ``thr``. It takes no arrays: a kernel that reads a node's fields once for a
    group of rows calls it in its loop over the rows, where the whole of :func:`go_left`,
    inlined, costs numba's reference counting of its category arrays (~40 ns a call, the
    test itself ~1 ns)."""
    default_left = (fl & _DEFAULT_LEFT) != 0
    missing_type = (fl >> _MISSING_SHIFT) & 3
    if np.isnan(x):
        if missing_type == _MISSING_NONE:
            x = 0.0
        else:
            return default_left
    if missing_type == _MISSING_ZERO and abs(x) <= ZERO_THRESHOLD:
        return default_left
    if strict:
        return x < thr
    return x <= thr


#: :func:`category_code` of a value that takes the node's default direction
CAT_DEFAULT = -2
#: :func:`category_code` of a value in no category set
CAT_NONE = -1


@njit(inline="always", cache=True)
def category_code(x, fl):
    """The category that ``x`` (:func:`input_value`) looks up at a categorical node of flags
    ``fl``: its code (>= 0), :data:`CAT_NONE` (in no set: negative without
    ``CAT_INVALID_DEFAULT``, or 2**31 and above) or :data:`CAT_DEFAULT` (NaN, or negative
    with ``CAT_INVALID_DEFAULT``: the node's default direction). Scalars only, so that a
    kernel routing many rows at one node reads the node's arrays once (see
    :func:`numeric_left`)."""
    if np.isnan(x):
        return CAT_DEFAULT
    invalid = np.trunc(x) < 0 if (fl & _CAT_TRUNC_FIRST) else x < 0
    if invalid:
        return CAT_DEFAULT if fl & _CAT_INVALID_DEFAULT else CAT_NONE
    if x < 2147483648.0:
        return np.int64(x)
    return CAT_NONE


@njit(inline="always", cache=True)
def in_category_set(code, cat_bitsets, offset, nwords):
    """Whether :func:`category_code` ``code`` is in the node's set: bit ``code % 32`` of word
    ``code // 32`` of the ``nwords`` words at ``cat_bitsets[offset]`` (beyond them: not)."""
    return code >= 0 and (code >> 5) < nwords and (
        cat_bitsets[offset + (code >> 5)] >> np.uint32(code & 31)) & 1 == 1


@njit(inline="always", cache=True)
def plain_code(x):
    """Whether ``x``'s :func:`category_code` is ``int64(x)`` whatever the node's flags:
    ``0 <= x < 2**31`` (not NaN)."""
    return x >= 0.0 and x < 2147483648.0


@njit(inline="always", cache=True)
def in_category_set_plain(code, cat_bitsets, offset, nwords):
    """:func:`in_category_set` of a code ``>= 0`` and a node of ``nwords >= 1`` words,
    without branches (a word is read whether or not ``code`` is within them), for loops
    that vectorise."""
    w = code >> 5
    word = cat_bitsets[offset + min(w, nwords - 1)]
    return (w < nwords) & ((word >> np.uint32(code & 31)) & 1 == 1)


@njit(inline="always", cache=True)
def categorical_left(code, in_set, fl):
    """Whether a value goes left at a categorical node of flags ``fl``, from its
    :func:`category_code` and whether that code is in the node's set."""
    if code == CAT_DEFAULT:
        return (fl & _DEFAULT_LEFT) != 0
    if fl & _CAT_SET_RIGHT:
        return not in_set
    return in_set


@njit(inline="always", cache=True)
def go_left(x, node, threshold, flags, cat_offset, cat_nwords, cat_bitsets, strict,
            f32_inputs, missing_value, has_sentinel):
    """Whether value ``x`` goes to the left child of ``node``."""
    x = input_value(x, f32_inputs, missing_value, has_sentinel)
    fl = flags[node]
    if fl & _CATEGORICAL:
        code = category_code(x, fl)
        return categorical_left(code, in_category_set(code, cat_bitsets, cat_offset[node],
                                                      cat_nwords[node]), fl)
    return numeric_left(x, fl, threshold[node], strict)


@njit(inline="always", cache=True)
def next_node(X, row, node, child, start, feature, threshold, right, flags, cat_offset,
              cat_nwords, cat_bitsets, strict, f32_inputs, missing_value, has_sentinel):
    """The global index of the child of internal ``node`` (its left child ``child``, local)
    that row ``row`` of ``X`` goes to. Without a branch on the test (an arithmetic select):
    which way a row goes is what a branch predictor cannot guess, and the rows walked after
    it would wait."""
    right_way = not go_left(X[row, feature[node]], node, threshold, flags, cat_offset,
                            cat_nwords, cat_bitsets, strict, f32_inputs, missing_value,
                            has_sentinel)
    return start + child + right_way * (right[node] - child)


@njit(inline="always", cache=True)
def leaf_index(X, row, start, feature, threshold, left, right, flags, cat_offset, cat_nwords,
               cat_bitsets, strict, f32_inputs, missing_value, has_sentinel):
    """Global index of the leaf that row ``row`` of ``X`` reaches in the tree at ``start``."""
    node = start
    child = left[node]
    while child >= 0:
        node = next_node(X, row, node, child, start, feature, threshold, right, flags,
                         cat_offset, cat_nwords, cat_bitsets, strict, f32_inputs,
                         missing_value, has_sentinel)
        child = left[node]
    return node


#: Rows the traversal walks down one tree side by side: their steps do not depend on each
#: other, so the processor overlaps their loads
WALK_ROWS = 8


@njit(inline="always", cache=True)
def group_leaves(X, r0, n, start, feature, threshold, left, right, flags, cat_offset,
                 cat_nwords, cat_bitsets, strict, f32_inputs, missing_value, has_sentinel,
                 nodes):
    """``nodes[:n]`` = the leaves (global indices) that rows ``r0 .. r0 + n - 1`` of ``X``
    reach in the tree at ``start`` (:func:`leaf_index` of each), walked a level at a time
    together."""
    for j in range(n):
        nodes[j] = start
    walking = True
    while walking:
        walking = False
        for j in range(n):
            node = nodes[j]
            child = left[node]
            if child >= 0:
                nodes[j] = next_node(X, r0 + j, node, child, start, feature, threshold, right,
                                     flags, cat_offset, cat_nwords, cat_bitsets, strict,
                                     f32_inputs, missing_value, has_sentinel)
                walking = True


@njit(inline="always", cache=True)
def plain_right(x, threshold, strict):
    """Whether a value ``x`` that is not NaN goes right at a numeric node whose missing type
    is not ZERO: :func:`numeric_left`'s comparison alone, without a branch."""
    return (x > threshold) | (strict & (x == threshold))


@njit(inline="always", cache=True)
def group_leaves_plain(xr, i0, n, start, feature, threshold, left, right, strict, nodes):
    """:func:`group_leaves` of rows ``i0 .. i0 + n - 1`` of ``xr`` (values already as the
    routing reads them, none NaN) in a tree of numeric nodes none of whose missing type is
    ZERO, from the nodes ``nodes[:n]`` (global) down: every test is then the comparison
    alone (:func:`numeric_left` without its missing-value rules), ``x > threshold`` going
    right (``>=`` for strict trees)."""
    walking = True
    while walking:
        walking = False
        for j in range(n):
            node = nodes[j]
            child = left[node]
            if child >= 0:
                right_way = plain_right(xr[i0 + j, feature[node]], threshold[node], strict)
                nodes[j] = start + child + right_way * (right[node] - child)
                walking = True


@njit(inline="always", cache=True)
def group_top_levels(xr, i0, n, t, top_feature, top_threshold, top_exit, depth, strict,
                     nodes):
    """``nodes[:n]`` = the nodes that rows ``i0 .. i0 + n - 1`` of ``xr`` reach after the
    first ``depth`` levels of tree ``t``, from its top levels laid out in heap order
    (``skltr.trees._traversal.top_levels``: slot ``s``'s children are ``2 s + 1`` and
    ``2 s + 2``, a leaf above the last level passes every row left with a NaN threshold):
    no child arrays read and no test for leaves, a level of all the rows at a time. The
    comparisons of :func:`group_leaves_plain`, so the same rows and values only."""
    for j in range(n):
        nodes[j] = 0
    for _ in range(depth):
        for j in range(n):
            s = nodes[j]
            nodes[j] = 2 * s + 1 + plain_right(xr[i0 + j, top_feature[t, s]],
                                               top_threshold[t, s], strict)
    first = (1 << depth) - 1
    for j in range(n):
        nodes[j] = top_exit[t, nodes[j] - first]


@njit(inline="always", cache=True)
def finish_output(total, count, base, sum_f32, average):
    """One output's raw score from its sum of tree values. Averaged outputs: divided by
    their ``count`` trees, then the base score added (in float32 when ``sum_f32``); other
    sums started from the base score and are returned as they are."""
    if average:
        if count > 0:
            total = total / count
        if sum_f32:
            return np.float64(np.float32(np.float32(total) + np.float32(base)))
        return total + base
    return total


@njit(cache=True)
def tree_counts(tree_output, n_outputs):
    """Trees per output (float64), for averaged outputs.

    Outside the parallel kernels: in a ``parallel=True`` function ``np.zeros`` is itself a
    parfor, with its own compiled body.
    """
    counts = np.zeros(n_outputs, dtype=np.float64)
    for t in range(tree_output.shape[0]):
        counts[tree_output[t]] += 1.0
    return counts


# The two traversal kernels keep positional arrays (over 16 parameters; the host passes
# ``*NodeArrays`` and the ``Routing`` fields): the same kernel taking the records measured
# 10% slower on XGBoost models, and 2x with a per-chunk function (an array taken out of a
# record inside the hot loop costs reference counting). See docs/devguide.rst, numba.
@njit(parallel=True, cache=True)
def predict_raw_traversal(X, tree_ptr, feature, threshold, left, right, value, flags,
                          cat_offset, cat_nwords, cat_bitsets, tree_output, tree_weight,
                          base_score, strict, f32_inputs, sum_f32, missing_value, has_sentinel,
                          average, out, chunk, lean, top_feature, top_threshold, top_exit):
    """Fill ``out`` (n_samples, n_outputs) float64 with raw scores, trees summed in order.

    ``sum_f32`` reproduces float32 accumulators (XGBoost): every partial sum is rounded to
    float32 and the result is exactly representable in float32. ``chunk``: rows a thread
    takes at a time, each tree walked for all of them (the host's
    ``skltr.trees._traversal.chunk_rows``). ``lean``: no categorical node and no missing
    type ZERO in the model, so that a chunk whose values (rounded as the routing reads them)
    hold no NaN is walked by :func:`group_leaves_plain`, its first levels by
    :func:`group_top_levels` from ``top_*`` (``skltr.trees._traversal.top_levels``; 0 levels
    when ``top_exit`` has one column).
    """
    n_samples = X.shape[0]
    n_outputs = out.shape[1]
    n_trees = tree_ptr.shape[0] - 1
    counts = tree_counts(tree_output, n_outputs)  # not np.zeros here: see tree_counts
    n_chunks = (n_samples + chunk - 1) // chunk
    depth = 0  # top_exit has 2**depth columns
    while (2 << depth) <= top_exit.shape[1]:
        depth += 1
    for c in prange(n_chunks):
        r0 = c * chunk
        nr = min(n_samples, r0 + chunk) - r0
        acc64 = np.empty((chunk, n_outputs), dtype=np.float64)
        acc32 = np.empty((chunk, n_outputs), dtype=np.float32)
        nodes = np.empty(WALK_ROWS, dtype=np.int64)
        xr = np.empty((chunk if lean else 0, X.shape[1]), dtype=np.float64)
        plain = lean
        if lean:
            for i in range(nr):
                for f in range(X.shape[1]):
                    x = input_value(X[r0 + i, f], f32_inputs, missing_value, has_sentinel)
                    xr[i, f] = x
                    plain &= not np.isnan(x)
        for i in range(nr):
            for k in range(n_outputs):
                start_val = 0.0 if average else base_score[k]
                acc64[i, k] = start_val
                acc32[i, k] = np.float32(start_val)
        # tree by tree over the chunk's rows: a tree's nodes stay in cache for all of them
        # (row by row over all trees read every tree's nodes from memory again for each row);
        # each row still sums its trees in order, so the scores are the same bits
        for t in range(n_trees):
            k = tree_output[t]
            start = tree_ptr[t]
            for i0 in range(0, nr, WALK_ROWS):
                n = min(WALK_ROWS, nr - i0)
                if plain:
                    group_top_levels(xr, i0, n, t, top_feature, top_threshold, top_exit, depth,
                                     strict, nodes)
                    group_leaves_plain(xr, i0, n, start, feature, threshold, left, right,
                                       strict, nodes)
                else:
                    group_leaves(X, r0 + i0, n, start, feature, threshold, left, right, flags,
                                 cat_offset, cat_nwords, cat_bitsets, strict, f32_inputs,
                                 missing_value, has_sentinel, nodes)
                for j in range(n):
                    i = i0 + j
                    if sum_f32:
                        acc32[i, k] = acc32[i, k] + np.float32(
                            np.float32(value[nodes[j]]) * np.float32(tree_weight[t]))
                    else:
                        acc64[i, k] += value[nodes[j]] * tree_weight[t]
        for i in range(nr):
            for k in range(n_outputs):
                total = np.float64(acc32[i, k]) if sum_f32 else acc64[i, k]
                out[r0 + i, k] = finish_output(total, counts[k], base_score[k], sum_f32,
                                               average)


@njit(parallel=True, cache=True)
def apply_leaf_traversal(X, tree_ptr, feature, threshold, left, right, flags, cat_offset,
                         cat_nwords, cat_bitsets, strict, f32_inputs, missing_value,
                         has_sentinel, out):
    """Fill ``out`` (n_samples, n_trees) int32 with the local leaf index reached per tree."""
    n_samples = X.shape[0]
    n_trees = tree_ptr.shape[0] - 1
    for row in prange(n_samples):
        for t in range(n_trees):
            leaf = leaf_index(X, row, tree_ptr[t], feature, threshold, left, right, flags,
                              cat_offset, cat_nwords, cat_bitsets, strict, f32_inputs,
                              missing_value, has_sentinel)
            out[row, t] = leaf - tree_ptr[t]
