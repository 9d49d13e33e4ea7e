"""numba kernels: exact path-dependent TreeSHAP over the root-to-leaf paths of an ensemble.

Lundberg et al. (2020), Algorithm 2, evaluated path by path as GPUTreeShap does (Mitchell et
al. 2022): the recursion of Algorithm 2 reaches each leaf with the "unique path" of the
features split on above it; here those paths are built once per model
(:func:`build_paths`) and every row walks them all. One path, its features merged::

    path p            elements e = path_ptr[p] .. path_ptr[p+1]   (one per distinct feature)
    elem_feature[e]   feature index
    elem_zero[e]      z: product of cover(child) / cover(node) over the path's nodes on it
    elem_cond_ptr[e]  its nodes cond_node[c] (local to the tree), cond_left[c] (path side)
    path_value[p]     leaf value x tree weight (/ trees of the output when averaged)

For a row, ``o_e`` is 1 when the row follows the path at every node of the element (the
model's own routing: :func:`skltr._cpu.traversal.go_left`) and 0 otherwise. EXTEND over the
``(z, o)`` of the elements gives the permutation weights; element ``e`` then adds
``UNWOUNDSUM(e) * (o_e - z_e) * value`` to its feature. Interactions (Lundberg et al. 2020,
as XGBoost's ``PredictInteractionContributions``): conditioning on feature ``c`` present
(``o_c``) or absent (``z_c``) removes it from the path and scales the rest, so
``phi[c, i] += UNWOUNDSUM_without_c(i) * (o_i - z_i) * value * (o_c - z_c) / 2``.

A node whose cover is 0 (a LambdaMART node holding only queries of equal labels has no
hessian) gives each child the fraction 1/2 instead of 0/0 (:func:`build_paths`); a path with
an element of ``z = o = 0`` adds nothing and is skipped (its weights are all 0).

The contributions kernel (:func:`treeshap_contribs`) reads most paths' values from per-pattern
tables (see "tables" below) and keeps them in cache: a thread's rows go through one block of
trees at a time, in groups of :data:`GROUP` rows. The interactions kernel computes every path
row by row. Both add in model order (trees, paths, elements) with one arithmetic
(:func:`_path_values`), so every form gives the same bits.
"""

import numpy as np
from numba import njit, prange

from ._intrinsics import prefetch
from .traversal import _CATEGORICAL, go_left, input_value, numeric_left


# ----------------------------------------------------------------------------- paths
@njit(cache=True)
def _path_sizes(tree_ptr, left, right):
    """Leaves, total path nodes, the deepest path and the largest tree."""
    n_trees = tree_ptr.shape[0] - 1
    n_leaves = 0
    n_conds = 0
    max_depth = 0
    max_nodes = 0
    depth = np.zeros(tree_ptr[-1], np.int64)
    for t in range(n_trees):
        start = tree_ptr[t]
        size = tree_ptr[t + 1] - start
        max_nodes = max(max_nodes, size)
        # children come after their parent in none of the formats for sure: walk a stack
        stack = np.empty(size, np.int64)
        stack[0] = 0
        top = 1
        depth[start] = 0
        while top > 0:
            top -= 1
            j = stack[top]
            if left[start + j] < 0:
                n_leaves += 1
                n_conds += depth[start + j]
                max_depth = max(max_depth, depth[start + j])
            else:
                for child in (left[start + j], right[start + j]):
                    depth[start + child] = depth[start + j] + 1
                    stack[top] = child
                    top += 1
    return n_leaves, n_conds, max_depth, max_nodes


@njit(cache=True)
def build_paths(tree_ptr, feature, left, right, cover, value, tree_scale, tree_output):
    """Every root-to-leaf path with its features merged (module docstring).

    ``tree_scale[t]`` multiplies tree ``t``'s leaves (its weight, divided by the trees of its
    output when the ensemble averages). Returns ``(tree_path_ptr, path_ptr, path_value,
    path_output, path_zero, path_leaf, elem_feature, elem_zero, elem_cond_ptr, cond_node,
    cond_left, max_elems)``; ``path_zero`` is the product of the path's ``z`` (the leaf's
    probability), ``path_leaf`` its leaf (local to the tree).
    """
    n_trees = tree_ptr.shape[0] - 1
    n_leaves, n_conds, max_depth, max_nodes = _path_sizes(tree_ptr, left, right)
    tree_path_ptr = np.zeros(n_trees + 1, np.int64)
    path_ptr = np.zeros(n_leaves + 1, np.int64)
    path_value = np.zeros(n_leaves, np.float64)
    path_output = np.zeros(n_leaves, np.int32)
    path_zero = np.ones(n_leaves, np.float64)
    path_leaf = np.zeros(n_leaves, np.int32)
    elem_feature = np.zeros(n_conds, np.int32)
    elem_zero = np.ones(n_conds, np.float64)
    elem_cond_ptr = np.zeros(n_conds + 1, np.int64)
    cond_node = np.zeros(n_conds, np.int32)
    cond_left = np.zeros(n_conds, np.uint8)
    parent = np.full(max_nodes, -1, np.int64)
    nodes = np.empty(max_depth + 1, np.int64)  # a path, leaf first
    frac = np.empty(max_depth + 1, np.float64)
    used = np.zeros(max_depth + 1, np.uint8)
    p = 0
    e = 0
    c = 0
    max_elems = 0
    for t in range(n_trees):
        start = tree_ptr[t]
        size = tree_ptr[t + 1] - start
        for j in range(size):
            parent[j] = -1
        for j in range(size):
            if left[start + j] >= 0:
                parent[left[start + j]] = j
                parent[right[start + j]] = j
        for leaf in range(size):
            if left[start + leaf] >= 0:
                continue
            d = 0
            j = leaf
            while parent[j] >= 0:  # nodes[i]: the parent, frac[i]: the branch's fraction
                par = parent[j]
                nodes[d] = par
                cp = cover[start + par]
                frac[d] = cover[start + j] / cp if cp > 0.0 else 0.5
                used[d] = 0
                j = par
                d += 1
            k = 0
            for a in range(d - 1, -1, -1):  # from the root down: features in first use order
                if used[a]:
                    continue
                f = feature[start + nodes[a]]
                z = 1.0
                for b in range(a, -1, -1):
                    if not used[b] and feature[start + nodes[b]] == f:
                        used[b] = 1
                        z *= frac[b]
                        cond_node[c] = nodes[b]
                        child = leaf if b == 0 else nodes[b - 1]
                        cond_left[c] = 1 if left[start + nodes[b]] == child else 0
                        c += 1
                elem_feature[e] = f
                elem_zero[e] = z
                path_zero[p] *= z
                e += 1
                elem_cond_ptr[e] = c
                k += 1
            max_elems = max(max_elems, k)
            path_value[p] = value[start + leaf] * tree_scale[t]
            path_output[p] = tree_output[t]
            path_leaf[p] = leaf
            p += 1
            path_ptr[p] = e
        tree_path_ptr[t + 1] = p
    return (tree_path_ptr, path_ptr, path_value, path_output, path_zero, path_leaf,
            elem_feature[:e], elem_zero[:e], elem_cond_ptr[:e + 1], cond_node, cond_left,
            max_elems)


# ----------------------------------------------------------------------------- one path
@njit(inline="always", cache=True)
def extend(w, z, o, k):
    """Permutation weights ``w[0..k]`` of a path of ``k`` elements (after the dummy root
    element of Algorithm 2), EXTEND applied element by element."""
    w[0] = 1.0
    for d in range(1, k + 1):
        zd = z[d - 1]
        od = o[d - 1]
        w[d] = 0.0
        inv = 1.0 / (d + 1)
        for j in range(d - 1, -1, -1):
            w[j + 1] += od * w[j] * (j + 1) * inv
            w[j] = zd * w[j] * (d - j) * inv


@njit(inline="always", cache=True)
def unwound_sum(w, k, zi, oi, ratios):
    """UNWOUNDSUM: the sum of the weights of a path of depth ``k`` without an element of
    fractions ``(zi, oi)``; ``oi`` is 0 or 1. ``ratios`` (:func:`unwind_ratios`) replaces
    the divisions of the textbook loop by products."""
    total = 0.0
    if oi != 0.0:
        nxt = w[k]
        for j in range(k - 1, -1, -1):
            tmp = nxt * ratios[0, k, j]
            total += tmp
            nxt = w[j] - tmp * zi * ratios[1, k, j]
    elif zi != 0.0:
        inv_z = 1.0 / zi
        for j in range(k - 1, -1, -1):
            total += w[j] * inv_z * ratios[2, k, j]
    return total


@njit(inline="always", cache=True)
def unwound_sum_absent(w, k, ratios):
    """``z * UNWOUNDSUM`` of an element with ``o = 0``: the same for every such element of
    the path (the sum is ``(1 / z) * sum_j w[j] (k + 1) / (k - j)``), so an absent element
    adds ``-unwound_sum_absent * value`` whatever its ``z``."""
    total = 0.0
    for j in range(k - 1, -1, -1):
        total += w[j] * ratios[2, k, j]
    return total


@njit(cache=True)
def unwind_ratios(max_k):
    """``[0, k, j] = (k + 1) / (j + 1)``, ``[1, k, j] = (k - j) / (k + 1)``,
    ``[2, k, j] = (k + 1) / (k - j)`` for ``0 <= j < k <= max_k``."""
    r = np.zeros((3, max_k + 1, max_k + 1), np.float64)
    for k in range(max_k + 1):
        for j in range(k):
            r[0, k, j] = (k + 1) / (j + 1)
            r[1, k, j] = (k - j) / (k + 1)
            r[2, k, j] = (k + 1) / (k - j)
    return r


@njit(inline="always", cache=True)
def _tree_directions(X, row, start, size, feature, threshold, left, flags, cat_offset,
                     cat_nwords, cat_bitsets, strict, f32_inputs, missing_value, has_sentinel,
                     hot):
    """``hot[j]``: 1 when the row goes left at internal node ``j`` of the tree."""
    for j in range(size):
        node = start + j
        if left[node] >= 0:
            hot[j] = 1 if go_left(X[row, feature[node]], node, threshold, flags, cat_offset,
                                  cat_nwords, cat_bitsets, strict, f32_inputs, missing_value,
                                  has_sentinel) else 0


@njit(inline="always", cache=True)
def _path_fractions(hot, e0, k, elem_zero, elem_cond_ptr, cond_node, cond_left, z, o):
    """``z``, ``o`` of the path's elements; False when an element has ``z = o = 0``."""
    for i in range(k):
        e = e0 + i
        oi = 1.0
        for ci in range(elem_cond_ptr[e], elem_cond_ptr[e + 1]):
            if hot[cond_node[ci]] != cond_left[ci]:
                oi = 0.0
                break
        zi = elem_zero[e]
        if oi == 0.0 and zi == 0.0:
            return False
        z[i] = zi
        o[i] = oi
    return True


@njit(inline="always", cache=True)
def _path_values(w, z, o, k, v, ratios, vals, off):
    """``vals[off + i]``: the SHAP value of element ``i`` of one extended path of value ``v``.

    The one arithmetic of every CPU form: the row-by-row kernels add these values as they
    come, :func:`fill_tables` stores them per pattern, so a table holds the very bits a row
    would add.
    """
    absent = np.nan
    for i in range(k):
        if o[i] == 0.0:
            if absent != absent:
                absent = -unwound_sum_absent(w, k, ratios) * v
            vals[off + i] = absent
        else:
            vals[off + i] = unwound_sum(w, k, z[i], 1.0, ratios) * (1.0 - z[i]) * v


@njit(inline="always", cache=True)
def _add_path(dst, q, w, z, o, k, v, e0, elem_feature, ratios, vals):
    """``dst[q, feature] +=`` the SHAP value of each element of one extended path (value
    ``v``); the contributions kernel adds into a row of ``out``, the interactions kernel into
    its ``phi``. ``vals``: scratch of ``k`` values."""
    _path_values(w, z, o, k, v, ratios, vals, 0)
    for i in range(k):
        dst[q, elem_feature[e0 + i]] += vals[i]


# ----------------------------------------------------------------------------- tables
# A path's values depend on the row only through ``o``, which of its ``k`` elements the row
# agrees with: its "pattern", bit ``i`` for element ``i``. A path of ``k <= TABLE_MAX_K``
# elements gets a table of its ``2**k`` outcomes (``table[table_off[p] + pattern * k + i]``:
# element ``i``'s value; zeros where an element has ``z = o = 0``, which adds nothing, as the
# row-by-row kernel skips the path), computed once per model (Fast TreeSHAP's
# precomputation, Yang 2021), and a row adds ``k`` stored values instead of EXTEND and ``k``
# unwound sums, each O(k^2). The patterns of all of a tree's paths come from one top-down
# pass over its nodes (:func:`_tree_patterns`): the paths below a node share its prefix.
@njit(cache=True)
def pattern_layout(tree_ptr, left, right, tree_path_ptr, path_ptr, elem_cond_ptr, cond_node):
    """``(node_bit, node_order)`` for :func:`_tree_patterns`.

    ``node_bit[node]``: the element index (up to 63) of an internal node's feature on the
    paths through it. Elements are numbered by first use from the root, so the index is fixed
    by the node's ancestors and the same on every path below it. ``node_order``: each tree's
    internal nodes (local), breadth first from the root, then -1: parents before children.
    """
    n_trees = tree_ptr.shape[0] - 1
    node_bit = np.zeros(tree_ptr[-1], np.uint8)
    node_order = np.full(tree_ptr[-1], -1, np.int32)
    for t in range(n_trees):
        start = tree_ptr[t]
        if left[start] >= 0:
            node_order[start] = 0
            head = 0
            tail = 1
            while head < tail:
                j = node_order[start + head]
                head += 1
                for child in (left[start + j], right[start + j]):
                    if left[start + child] >= 0:
                        node_order[start + tail] = child
                        tail += 1
        for p in range(tree_path_ptr[t], tree_path_ptr[t + 1]):
            e0 = path_ptr[p]
            for i in range(path_ptr[p + 1] - e0):
                for c in range(elem_cond_ptr[e0 + i], elem_cond_ptr[e0 + i + 1]):
                    node_bit[start + cond_node[c]] = min(i, 63)
    return node_bit, node_order


@njit(nogil=True, cache=True)
def fill_tables(p0, p1, path_ptr, path_value, elem_zero, table_off, max_elems, table):
    """Fill the pattern tables (module comment above) of paths ``p0 .. p1`` with
    ``table_off >= 0``; ``table`` comes zeroed. The caller runs ranges of paths in threads."""
    z = np.empty(max_elems + 1, np.float64)
    o = np.empty(max_elems + 1, np.float64)
    w = np.empty(max_elems + 2, np.float64)
    ratios = unwind_ratios(max_elems)
    for p in range(p0, p1):
        if table_off[p] < 0:
            continue
        e0 = path_ptr[p]
        k = path_ptr[p + 1] - e0
        for pattern in range(1 << k):
            dead = False
            for i in range(k):
                z[i] = elem_zero[e0 + i]
                o[i] = 1.0 if (pattern >> i) & 1 else 0.0
                dead |= o[i] == 0.0 and z[i] == 0.0
            if not dead:
                extend(w, z, o, k)
                _path_values(w, z, o, k, path_value[p], ratios, table,
                             table_off[p] + pattern * k)


# ----------------------------------------------------------------------------- kernels
#: rows routed and added together (:func:`treeshap_contribs`): the inner loop of the table
#: additions, a compile-time count so the compiler unrolls it
GROUP = 16
#: rows from which a block's tables are prefetched whole: fewer rows read a few lines of each
#: path's table (a path of 6 elements has 48 lines), and the rest would be read for nothing
PREFETCH_ROWS = 64


@njit(inline="always", cache=True)
def _tree_patterns(xg, start, feature, threshold, left, right, flags, cat_offset, cat_nwords,
                   cat_bitsets, strict, node_bit, node_order, hot, pat):
    """A group's rows (``xg``: :func:`_load_group`) in one tree: ``hot[r, j]`` as
    :func:`_tree_directions`, and ``pat[j, r]``: bit ``i`` clear when row ``r`` leaves the
    path to node ``j`` at a node of its element ``i`` -- at a leaf, the pattern of its path,
    each internal node routed once per row. The rows are the inner loop, a node's fields read
    once for them all; a numeric node routes them by
    :func:`~skltr._cpu.traversal.numeric_left`, which the compiled loop runs 30 times faster
    than the whole of ``go_left`` (see there)."""
    for r in range(GROUP):
        pat[0, r] = -1
    for idx in range(node_order.shape[0] - start):
        j = node_order[start + idx]
        if j < 0:
            break
        node = start + j
        f = feature[node]
        lo = left[node]
        hi = right[node]
        clear = ~(np.int64(1) << node_bit[node])
        fl = flags[node]
        thr = threshold[node]
        categorical = (fl & _CATEGORICAL) != 0
        for r in range(GROUP):
            if categorical:  # xg holds input_value's already: no rounding, no sentinel
                gl = go_left(xg[f, r], node, threshold, flags, cat_offset, cat_nwords,
                             cat_bitsets, strict, False, 0.0, False)
            else:
                gl = numeric_left(xg[f, r], fl, thr, strict)
            # masks, not selects: the compiler turns the selects into a branch on the row's
            # direction, mispredicted half the time (3.5x slower)
            g = np.int64(gl)
            hot[r, j] = g
            keep = pat[j, r]
            pat[lo, r] = keep & (clear | -g)
            pat[hi, r] = keep & (clear | (g - 1))


@njit(inline="always", cache=True)
def _add_table_values(acc, pat, leaf, k, off, e0, q, elem_feature, table, base):
    """The group's rows add one path's stored values for their patterns into ``acc[q, f,
    r]``, the rows in the inner loop: each row's additions into one feature are a chain (each
    waits for the last), and the rows' chains are independent."""
    mask = (np.int64(1) << k) - 1
    for r in range(GROUP):
        base[r] = off + (pat[leaf, r] & mask) * k
    for i in range(k):
        f = elem_feature[e0 + i]
        for r in range(GROUP):
            acc[q, f, r] += table[base[r] + i]


@njit(inline="always", cache=True)
def _load_group(X, out, g0, n, f32_inputs, missing_value, has_sentinel, xg, acc):
    """Rows ``g0 .. g0 + n`` transposed for a block of trees: ``xg[f, r]``, their inputs as
    the routing reads them (:func:`~skltr._cpu.traversal.input_value`; a short group repeats
    its last row), and ``acc[q, f, r]``, their SHAP values so far. A node then reads the
    group's values of its feature side by side (2.4x faster routing than from the rows of
    ``X``), and the additions go to the rows' accumulators side by side."""
    for r in range(GROUP):
        row = g0 + min(r, n - 1)
        for f in range(X.shape[1]):
            xg[f, r] = input_value(X[row, f], f32_inputs, missing_value, has_sentinel)
    for r in range(n):
        for q in range(out.shape[1]):
            for f in range(out.shape[2]):
                acc[q, f, r] = out[g0 + r, q, f]


@njit(inline="always", cache=True)
def _store_group(acc, g0, n, out):
    """Back to ``out``: the accumulators of :func:`_load_group`'s rows."""
    for r in range(n):
        for q in range(out.shape[1]):
            for f in range(out.shape[2]):
                out[g0 + r, q, f] = acc[q, f, r]


@njit(inline="always", cache=True)
def _group_tree(acc, t, tree_ptr, feature, threshold, left, right, flags, cat_offset,
                cat_nwords, cat_bitsets, strict, tree_path_ptr, path_ptr, path_value,
                path_output, path_leaf, elem_feature, elem_zero, elem_cond_ptr, cond_node,
                cond_left, node_bit, node_order, table_off, table, xg, n, scratch):
    """The group's rows (``xg``, ``n`` of them real) add tree ``t``'s SHAP values into
    ``acc``: a path with a table its stored values for each row's pattern, any other path
    computed row by row as the interactions kernel does."""
    hot, pat, base, z, o, w, vals, ratios = scratch
    p0 = tree_path_ptr[t]
    p1 = tree_path_ptr[t + 1]
    if path_ptr[p1] == path_ptr[p0]:
        return  # a one-leaf tree: only the expected value
    _tree_patterns(xg, tree_ptr[t], feature, threshold, left, right, flags, cat_offset,
                   cat_nwords, cat_bitsets, strict, node_bit, node_order, hot, pat)
    for p in range(p0, p1):
        e0 = path_ptr[p]
        k = path_ptr[p + 1] - e0
        q = path_output[p]
        if table_off[p] >= 0:
            _add_table_values(acc, pat, path_leaf[p], k, table_off[p], e0, q, elem_feature,
                              table, base)
            continue
        for r in range(n):
            if _path_fractions(hot[r], e0, k, elem_zero, elem_cond_ptr, cond_node, cond_left,
                               z, o):
                extend(w, z, o, k)
                _path_values(w, z, o, k, path_value[p], ratios, vals, 0)
                for i in range(k):
                    acc[q, elem_feature[e0 + i], r] += vals[i]


@njit(nogil=True, cache=True)
def treeshap_contribs(X, r0, r1, tree_ptr, feature, threshold, left, flags, cat_offset,
                      cat_nwords, cat_bitsets, strict, f32_inputs, missing_value, has_sentinel,
                      tree_path_ptr, path_ptr, path_value, path_output, elem_feature, elem_zero,
                      elem_cond_ptr, cond_node, cond_left, max_elems, max_nodes, right,
                      path_leaf, node_bit, node_order, table_off, table, block_ptr,
                      block_table, out):
    """Add every path's SHAP values to rows ``r0 .. r1`` of ``out`` (n_samples, n_outputs,
    n_features + 1).

    A path with a table adds its stored values for the row's pattern, the others are computed
    row by row. The rows go through one block of trees (``block_ptr``) at a time, the blocks
    sized so their tables stay in a core's cache while the rows read them (read row after
    row over every tree, the tables of 1,000 depth-6 trees, ~100 MB, came from memory at each
    path); a block's tables are prefetched first (a sequential read: the rows would miss on
    them one path at a time; from :data:`PREFETCH_ROWS` rows), then the rows go through it in
    groups of :data:`GROUP`. Each row still adds its trees, paths and elements in model
    order: the values are the row-by-row kernel's, bit for bit.

    One thread's share of the rows: the caller runs chunks of rows in threads (the GIL is
    released). A ``prange`` over the chunks would compile this body a second time as the
    parallel loop's, doubling the compile time.
    """
    size = max(max_nodes, 1)
    scratch = (np.zeros((GROUP, size), np.uint8),
               np.zeros((size, GROUP), np.int64), np.zeros(GROUP, np.int64),
               np.empty(max_elems + 1, np.float64), np.empty(max_elems + 1, np.float64),
               np.empty(max_elems + 2, np.float64), np.empty(max_elems + 1, np.float64),
               unwind_ratios(max_elems))
    xg = np.zeros((X.shape[1], GROUP), np.float64)
    acc = np.zeros((out.shape[1], out.shape[2], GROUP), np.float64)
    for b in range(block_ptr.shape[0] - 1):
        if r1 - r0 >= PREFETCH_ROWS:
            for i in range(block_table[b], block_table[b + 1], 8):
                prefetch(table, i)
        for g0 in range(r0, r1, GROUP):
            n = min(GROUP, r1 - g0)
            _load_group(X, out, g0, n, f32_inputs, missing_value, has_sentinel, xg, acc)
            for t in range(block_ptr[b], block_ptr[b + 1]):
                _group_tree(acc, t, tree_ptr, feature, threshold, left, right, flags,
                            cat_offset, cat_nwords, cat_bitsets, strict, tree_path_ptr,
                            path_ptr, path_value, path_output, path_leaf, elem_feature,
                            elem_zero, elem_cond_ptr, cond_node, cond_left, node_bit,
                            node_order, table_off, table, xg, n, scratch)
            _store_group(acc, g0, n, out)


@njit(parallel=True, cache=True)
def treeshap_interactions(X, tree_ptr, feature, threshold, left, flags, cat_offset,
                          cat_nwords, cat_bitsets, strict, f32_inputs, missing_value,
                          has_sentinel, tree_path_ptr, path_ptr, path_value, path_output,
                          elem_feature, elem_zero, elem_cond_ptr, cond_node, cond_left,
                          max_elems, max_nodes, bias, out):
    """Fill ``out`` (n_samples, n_outputs, n_features + 1, n_features + 1), zeroed, with
    SHAP interaction values; ``bias`` (n_outputs,) is each output's expected value."""
    n_samples = X.shape[0]
    n_trees = tree_ptr.shape[0] - 1
    n_outputs = out.shape[1]
    nf = out.shape[2] - 1
    chunk = 4
    n_chunks = (n_samples + chunk - 1) // chunk
    for ch in prange(n_chunks):
        hot = np.zeros(max(max_nodes, 1), np.uint8)
        z = np.empty(max_elems + 1, np.float64)
        o = np.empty(max_elems + 1, np.float64)
        w = np.empty(max_elems + 2, np.float64)
        z2 = np.empty(max_elems + 1, np.float64)
        o2 = np.empty(max_elems + 1, np.float64)
        w2 = np.empty(max_elems + 2, np.float64)
        vals = np.empty(max_elems + 1, np.float64)
        phi = np.zeros((n_outputs, nf + 1), np.float64)
        ratios = unwind_ratios(max_elems)
        for row in range(ch * chunk, min(n_samples, (ch + 1) * chunk)):
            phi[:, :] = 0.0
            for t in range(n_trees):
                p0 = tree_path_ptr[t]
                p1 = tree_path_ptr[t + 1]
                if path_ptr[p1] == path_ptr[p0]:
                    continue
                start = tree_ptr[t]
                _tree_directions(X, row, start, tree_ptr[t + 1] - start, feature, threshold,
                                 left, flags, cat_offset, cat_nwords, cat_bitsets, strict,
                                 f32_inputs, missing_value, has_sentinel, hot)
                for p in range(p0, p1):
                    e0 = path_ptr[p]
                    k = path_ptr[p + 1] - e0
                    if not _path_fractions(hot, e0, k, elem_zero, elem_cond_ptr, cond_node,
                                           cond_left, z, o):
                        continue
                    extend(w, z, o, k)
                    v = path_value[p]
                    q = path_output[p]
                    _add_path(phi, q, w, z, o, k, v, e0, elem_feature, ratios, vals)
                    for c in range(k):  # condition on element c: drop it, scale the rest
                        scale = 0.5 * (o[c] - z[c]) * v
                        if scale == 0.0:
                            continue
                        m = 0
                        for i in range(k):
                            if i != c:
                                z2[m] = z[i]
                                o2[m] = o[i]
                                m += 1
                        extend(w2, z2, o2, k - 1)
                        _path_values(w2, z2, o2, k - 1, scale, ratios, vals, 0)
                        fc = elem_feature[e0 + c]
                        m = 0
                        for i in range(k):
                            if i != c:
                                out[row, q, fc, elem_feature[e0 + i]] += vals[m]
                                m += 1
            for q in range(n_outputs):
                for f in range(nf):
                    off = 0.0
                    for g in range(nf):
                        if g != f:
                            off += out[row, q, f, g]
                    out[row, q, f, f] = phi[q, f] - off
                out[row, q, nf, nf] = bias[q]
