"""XGBoost's per-tree node arrays -> the node arrays of a ``TreeEnsemble``, checked.

:func:`_convert_trees` reads every tree of a JSON / UBJSON model document (``left_children``,
``right_children``, ``split_indices``, ``split_conditions``, ``default_left``,
``split_type``, the category lists and ``sum_hessian``), refuses a tree that is not one
(children out of range, cycles, unknown split types, features or categories out of bounds),
renumbers pruned trees and concatenates them. The document around the trees (objective, base
score, dart weights, iteration ranges) is :mod:`skltr.convert._xgboost`'s.
"""

from __future__ import annotations


import numpy as np

from ..trees._ensemble import NodeFlags
from ._checks import as_int, int_array

_SPLIT_NUMERICAL = 0
_SPLIT_CATEGORICAL = 1

#: Ends the messages about a malformed field.
_CORRUPT = "the model is corrupt or was not written by XGBoost"
#: Feature indices are int32 (``skltr._dtypes.NODE_INDEX_DTYPE``).
_MAX_FEATURES = 2**31 - 1
#: XGBoost treats inputs of 2**24 and above as invalid categories, so no category set holds
#: one; the bound also keeps a corrupt category from allocating a huge bitset.
_MAX_CATEGORY = 2**24 - 1
#: Most 32-bit words all category sets of a model may take (128 MiB): far beyond any real
#: model, and a bound on what a corrupt file can make the converter allocate.
_MAX_BITSET_WORDS = 1 << 25
#: The containers a node array may come as: a JSON list or a typed UBJSON array.
_SEQ = (list, np.ndarray)



def _get(mapping, key, what, kind=dict):
    """``mapping[key]``, which must be a ``kind`` (dict or list)."""
    try:
        value = mapping[key]
    except (KeyError, TypeError, IndexError):
        if what.startswith("tree "):  # inside a tree: the model is damaged
            raise ValueError(f"{what} is missing; the model is truncated, corrupt or was "
                             f"not written by XGBoost.") from None
        raise ValueError(
            f"not an XGBoost JSON model: {what} is missing. Save it with "
            f"Booster.save_model('model.json') (or .ubj) or Booster.save_raw('json')."
        ) from None
    if not isinstance(value, kind):
        raise ValueError(f"{what} is a {type(value).__name__}, not a JSON "
                         f"{'object' if kind is dict else 'array'}; {_CORRUPT}.")
    return value


def _str(value, what) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} is {value!r:.60}, not a string; {_CORRUPT}.")
    return value


def _dict_or_empty(mapping, key, what) -> dict:
    value = mapping.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{what} is a {type(value).__name__}, not a JSON object; {_CORRUPT}.")
    return value



_MULTI_OUTPUT_MSG = (
    "this XGBoost model has multi-output trees (multi_strategy='multi_output_tree', leaves "
    "holding a vector); a TreeEnsemble holds one value per leaf. Retrain with "
    "multi_strategy='one_output_per_tree' (the default) to convert it."
)


def _convert_trees(trees, first_index: int) -> dict:
    """Per-node arrays of all ``trees`` concatenated (see the module docstring)."""
    sizes = np.empty(len(trees), dtype=np.int64)
    lefts, rights, feats, conds, dlefts, stypes = [], [], [], [], [], []
    covers = []  # sum_hessian per node (TreeSHAP's cover); None where a tree lacks it
    cat_nodes = []  # (global node, categories)
    offset = 0
    for i, tree in enumerate(trees):
        t = first_index + i
        if not isinstance(tree, dict):
            raise ValueError(f"tree {t} is a {type(tree).__name__}, not a JSON object; "
                             f"{_CORRUPT}.")
        tp = _dict_or_empty(tree, "tree_param", f"tree {t}: tree_param")
        if as_int(tp.get("size_leaf_vector", 1), f"tree {t}: size_leaf_vector", lo=0,
                  corrupt=_CORRUPT) > 1:
            raise ValueError(_MULTI_OUTPUT_MSG)
        # Per tree only what needs the tree (types, sizes); value ranges are checked once on
        # the concatenated arrays below, which keeps a 1000-tree model fast to load.
        left = _node_array(tree, "left_children", t, None, "iu")
        n = left.size
        if n == 0:
            raise ValueError(f"tree {t} has no nodes; {_CORRUPT}.")
        right = _node_array(tree, "right_children", t, n, "iu")
        if "num_nodes" in tp:
            as_int(tp["num_nodes"], f"tree {t}: num_nodes", lo=n, hi=n,
                   corrupt=f"the tree has {n} nodes; {_CORRUPT}")
        arrays = [_node_array(tree, "split_indices", t, n, "iu"),
                  _node_array(tree, "split_conditions", t, n, "iuf"),
                  _node_array(tree, "default_left", t, n, "biu"),
                  (_node_array(tree, "split_type", t, n, "iu") if "split_type" in tree
                   else np.zeros(n, dtype=np.int64))]
        hess = (_node_array(tree, "sum_hessian", t, n, "iuf") if "sum_hessian" in tree
                else None)  # TreeSHAP's cover
        order = None
        if as_int(tp.get("num_deleted", 0), f"tree {t}: num_deleted", lo=0,
                  corrupt=_CORRUPT) > 0:
            _check_children(left, right, np.full(n, n), np.zeros(1, dtype=np.int64), t)
            left, right, order = _compact(left, right, t)
            arrays = [a[order] for a in arrays]
            hess = None if hess is None else hess[order]
        covers.append(hess)
        lefts.append(left)
        rights.append(right)
        feats.append(arrays[0])
        conds.append(arrays[1])
        dlefts.append(arrays[2])
        stypes.append(arrays[3])
        if len(tree.get("categories_nodes", [])):
            for node, cats in _category_lists(tree, t, n, order):
                cat_nodes.append((offset + node, cats))
        sizes[i] = left.size
        offset += left.size

    tree_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_nodes = int(tree_ptr[-1])
    cat0 = lambda parts, dt: (np.concatenate(parts).astype(dt) if parts  # noqa: E731
                              else np.zeros(0, dtype=dt))
    left = cat0(lefts, np.int64)
    right = cat0(rights, np.int64)
    feature = cat0(feats, np.int64)
    cond = cat0(conds, np.float64)
    default_left = cat0(dlefts, np.int64)
    split_type = cat0(stypes, np.int64)
    _check_children(left, right, np.repeat(sizes, sizes), tree_ptr, first_index)
    bad = (split_type != _SPLIT_NUMERICAL) & (split_type != _SPLIT_CATEGORICAL) & (left >= 0)
    if np.any(bad):
        node = int(np.flatnonzero(bad)[0])
        t, local = _locate(tree_ptr, node, first_index)
        raise ValueError(
            f"tree {t}, node {local} has split_type {int(split_type[node])}; "
            f"skltr represents numerical (0) and categorical (1) XGBoost splits only."
        )
    if np.any((default_left != 0) & (default_left != 1)):
        node = int(np.flatnonzero((default_left != 0) & (default_left != 1))[0])
        t, local = _locate(tree_ptr, node, first_index)
        raise ValueError(f"tree {t}, node {local}: default_left is "
                         f"{int(default_left[node])}, not 0 or 1; {_CORRUPT}.")
    default_left = default_left.astype(bool)

    leaf = left < 0
    internal = ~leaf
    categorical = internal & (split_type == _SPLIT_CATEGORICAL)
    numeric = internal & ~categorical
    # float32 thresholds and leaves, as XGBoost holds them (the JSON prints float32 values).
    with np.errstate(over="ignore"):  # beyond float32: inf, refused below
        cond32 = cond.astype(np.float32).astype(np.float64)
    bad_feature = internal & ((feature < 0) | (feature >= _MAX_FEATURES))
    if np.any(bad_feature):
        node = int(np.flatnonzero(bad_feature)[0])
        t, local = _locate(tree_ptr, node, first_index)
        raise ValueError(f"tree {t}, node {local} splits on feature {int(feature[node])}, "
                         f"outside [0, 2**31 - 1); {_CORRUPT}.")
    if np.any(numeric & ~np.isfinite(cond32)):
        t, node = _locate(tree_ptr, int(np.flatnonzero(numeric & ~np.isfinite(cond32))[0]),
                          first_index)
        raise ValueError(f"tree {t}, node {node} has a non-finite threshold.")
    if np.any(leaf & ~np.isfinite(cond32)):
        node = int(np.flatnonzero(leaf & ~np.isfinite(cond32))[0])
        t, local = _locate(tree_ptr, node, first_index)
        raise ValueError(f"tree {t}, node {local} has the leaf value {cond[node]!r}, not a "
                         f"finite float32; {_CORRUPT}.")

    flags = np.zeros(n_nodes, dtype=np.uint8)
    flags[internal & default_left] |= NodeFlags.DEFAULT_LEFT
    flags[numeric] |= NodeFlags.MISSING_NAN << NodeFlags.MISSING_SHIFT
    flags[categorical] |= NodeFlags.CATEGORICAL | NodeFlags.CAT_SET_RIGHT

    cat_offset = np.zeros(n_nodes, dtype=np.int64)
    cat_nwords = np.zeros(n_nodes, dtype=np.int32)
    words = []
    n_words = 0
    seen = np.zeros(n_nodes, dtype=bool)
    for node, cats in cat_nodes:
        if not categorical[node]:
            t, local = _locate(tree_ptr, node, first_index)
            raise ValueError(f"tree {t}, node {local} lists categories but is not a "
                             f"categorical split; the file is corrupt.")
        nw = int(cats.max()) // 32 + 1 if cats.size else 0
        if n_words + nw > _MAX_BITSET_WORDS:
            raise ValueError(f"the category sets need more than {_MAX_BITSET_WORDS} words of "
                             f"bitset; {_CORRUPT}.")
        bits = np.zeros(nw, dtype=np.uint32)
        if cats.size:
            np.bitwise_or.at(bits, cats // 32, (np.uint32(1) << (cats % 32).astype(np.uint32)))
        words.append(bits)
        cat_offset[node] = n_words
        cat_nwords[node] = nw
        n_words += nw
        seen[node] = True
    if np.any(categorical & ~seen):
        t, local = _locate(tree_ptr, int(np.flatnonzero(categorical & ~seen)[0]),
                           first_index)
        raise ValueError(f"tree {t}, node {local} is categorical but has no category list; "
                         f"the file is corrupt.")

    return {
        "tree_ptr": tree_ptr,
        "feature": np.where(internal, feature, -1),
        "threshold": np.where(numeric, cond32, 0.0),
        "left": left,
        "right": right,
        "value": np.where(leaf, cond32, 0.0),
        "flags": flags,
        "cat_offset": cat_offset,
        "cat_nwords": cat_nwords,
        "cat_bitsets": (np.concatenate(words) if words else np.zeros(0, dtype=np.uint32)),
        "cover": _covers(covers),
        "max_feature": int(feature[internal].max()) if np.any(internal) else -1,
        "max_feature_at": (_locate(tree_ptr, int(np.flatnonzero(internal)[
            np.argmax(feature[internal])]), first_index) if np.any(internal) else None),
    }


def _covers(covers):
    """The trees' ``sum_hessian`` as one cover array, or None when a tree lacks it or holds a
    value that is not a finite number >= 0 (a model without cover statistics)."""
    if not covers or any(c is None for c in covers):
        return None
    cover = np.concatenate(covers)
    return cover if np.all(np.isfinite(cover) & (cover >= 0)) else None


def _node_array(tree, key, t, size, kinds) -> np.ndarray:
    """Node array ``key`` of tree ``t``: a flat list (or typed UBJSON array) of ``size``
    numbers of the dtype kinds ``kinds`` (``"iu"``: integers, ``"iuf"``: any number,
    ``"biu"``: booleans or integers), as int64 or float64."""
    value = _get(tree, key, f"tree {t}: {key}", kind=_SEQ)
    arr = np.asarray(value) if isinstance(value, np.ndarray) else None
    if arr is None:
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError, OverflowError):
            arr = None
    if arr is None or arr.ndim != 1 or (arr.size and arr.dtype.kind not in kinds):
        what = "numbers" if "f" in kinds else "integers"
        raise ValueError(f"tree {t}: {key} is not a flat list of {what}; {_CORRUPT}.")
    if size is not None and arr.size != size:
        raise ValueError(f"tree {t}: {key} has {arr.size} entries for the tree's {size} nodes; "
                         f"{_CORRUPT}.")
    if arr.dtype.kind == "u" and arr.size and arr.max() > 2**62:
        raise ValueError(f"tree {t}: {key} holds {int(arr.max())}; {_CORRUPT}.")
    return arr.astype(np.float64 if "f" in kinds else np.int64, copy=False)


def _check_children(left, right, tree_size, tree_ptr, first_index) -> None:
    """Children of every node are -1 (a leaf: both) or a node of the same tree
    (``tree_size``: the size of each node's tree). Acyclicity is TreeEnsemble.validate's."""
    for name, child in (("left", left), ("right", right)):
        bad = (child < -1) | (child >= tree_size)
        if np.any(bad):
            node = int(np.flatnonzero(bad)[0])
            t, local = _locate(tree_ptr, node, first_index)
            raise ValueError(f"tree {t}, node {local}: {name} child "
                             f"{int(child[node])} is outside the tree's {int(tree_size[node])} "
                             f"nodes; {_CORRUPT}.")
    one = (left < 0) != (right < 0)
    if np.any(one):
        t, local = _locate(tree_ptr, int(np.flatnonzero(one)[0]), first_index)
        raise ValueError(f"tree {t}, node {local} has exactly one child; "
                         f"{_CORRUPT}.")


def _locate(tree_ptr, global_node: int, first_index: int = 0):
    """(tree, local node) of a node of the trees ``first_index, ...`` that ``tree_ptr``
    spans."""
    t = int(np.searchsorted(tree_ptr, global_node, side="right") - 1)
    return first_index + t, global_node - int(tree_ptr[t])


def _compact(left, right, t):
    """Renumber the nodes reachable from the root (pruned trees keep deleted nodes).
    Children are known to lie in the tree; a node reached twice (a cycle or a shared child)
    is refused, which also bounds the walk by the tree's size."""
    order = []
    seen = np.zeros(left.size, dtype=bool)
    stack = [0]
    while stack:
        node = stack.pop()
        if seen[node]:
            raise ValueError(f"tree {t}, node {node} is reached twice from the root (its "
                             f"child links form a cycle or share a node); {_CORRUPT}.")
        seen[node] = True
        order.append(node)
        if left[node] >= 0:
            stack.append(int(right[node]))
            stack.append(int(left[node]))
    order = np.asarray(order, dtype=np.int64)
    new_id = np.full(left.size, -1, dtype=np.int64)
    new_id[order] = np.arange(order.size)
    new_left = np.where(left[order] >= 0, new_id[np.maximum(left[order], 0)], -1)
    new_right = np.where(right[order] >= 0, new_id[np.maximum(right[order], 0)], -1)
    return new_left, new_right, order


def _category_lists(tree, t, n, order):
    """``(local node, categories)`` of the categorical nodes of XGBoost tree ``t`` (``n``
    nodes; ``order``: the kept nodes of a pruned tree, or None), every list checked."""
    what = f"tree {t}: categories"
    nodes = int_array(_get(tree, "categories_nodes", f"{what}_nodes", kind=_SEQ),
                      f"{what}_nodes", lo=0, hi=n - 1, corrupt=_CORRUPT)
    cats = int_array(_get(tree, "categories", what, kind=_SEQ), what, lo=0, hi=_MAX_CATEGORY,
                     corrupt=f"XGBoost's categories are below 2**24; {_CORRUPT}")
    segs = int_array(_get(tree, "categories_segments", f"{what}_segments", kind=_SEQ),
                     f"{what}_segments", size=nodes.size, lo=0, hi=cats.size, corrupt=_CORRUPT)
    lens = int_array(_get(tree, "categories_sizes", f"{what}_sizes", kind=_SEQ),
                     f"{what}_sizes", size=nodes.size, lo=0, hi=cats.size, corrupt=_CORRUPT)
    if np.any(segs + lens > cats.size):
        k = int(np.flatnonzero(segs + lens > cats.size)[0])
        raise ValueError(f"tree {t}, node {int(nodes[k])}: its categories run past the "
                         f"{cats.size} entries of 'categories'; {_CORRUPT}.")
    if np.unique(nodes).size != nodes.size:
        raise ValueError(f"tree {t} lists the categories of a node twice; {_CORRUPT}.")
    if order is not None:
        new_id = np.full(n, -1, dtype=np.int64)
        new_id[order] = np.arange(order.size)
        nodes = new_id[nodes]
        if np.any(nodes < 0):
            raise ValueError(f"tree {t} lists categories of a deleted node; {_CORRUPT}.")
    return [(int(node), cats[seg:seg + size]) for node, seg, size in zip(nodes, segs, lens)]
