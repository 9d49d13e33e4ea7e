"""Monotone and interaction constraints of a tree (issue #29), decided by the growth driver.

**Monotone** (``TreeParams.monotone``: per feature -1, 0 or +1), LightGBM's ``basic`` method
(``monotone_constraints_method="basic"``), also XGBoost's: every node carries bounds
``[lo, hi]`` on its output (the leaf value before shrinkage, ``-T(G) / (H + lambda)``). The
split search clamps both children's outputs to the node's bounds, refuses a split on a
constrained feature whose outputs go the wrong way, and scores a clamped child at its clamped
output (``skltr._cpu.split``). A split on a constrained feature then cuts the bounds at the
mid-point of the two outputs: for +1 the left child's ``hi`` and the right child's ``lo``
(the other way for -1); other splits pass the bounds down. Leaf values are clamped to their
bounds. Every leaf right of a +1 split is then at least every leaf left of it, so the tree,
and the sum of trees, only rises with the feature.

**Interaction** (``TreeParams.interaction``: feature sets): a branch only splits on features
that all belong to one set (LightGBM's rule: any two features of a branch share a set). A
node may split on the union of the sets that contain every feature used above it; a feature
in no set is a set of its own (used alone). ``allowed`` masks are computed here and ANDed
with the tree's column sample.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ROOT_BOUNDS", "child_bounds", "allowed_features", "clamp_leaf_values"]

#: the root's output bounds: none
ROOT_BOUNDS = (-math.inf, math.inf)


def _output(G, H, reg_lambda, reg_alpha, lo, hi):
    # skltr._cpu.split.bounded_output, the same operations in the same order
    d = H + reg_lambda
    w = 0.0
    if d > 0.0:
        if reg_alpha > 0.0:
            G = G - reg_alpha if G > reg_alpha else (G + reg_alpha if G < -reg_alpha else 0.0)
        w = -G / d
    if w < lo:
        return lo
    if w > hi:
        return hi
    return w


def child_bounds(params, node, scales):
    """``((lo, hi) of the left child, (lo, hi) of the right child)`` of ``node`` (its
    ``split`` set, its own bounds ``node.lo`` / ``node.hi``)."""
    lo, hi = node.lo, node.hi
    mono = params.monotone
    split = node.split
    direction = 0 if mono is None else mono[split.feature]
    if direction == 0:
        return (lo, hi), (lo, hi)
    inv_g, inv_h = scales.inv_g, scales.inv_h
    gl, hl = float(split.left_g), float(split.left_h)
    gr, hr = float(node.sum_g - split.left_g), float(node.sum_h - split.left_h)
    wl = _output(gl * inv_g, hl * inv_h, params.reg_lambda, params.reg_alpha, lo, hi)
    wr = _output(gr * inv_g, hr * inv_h, params.reg_lambda, params.reg_alpha, lo, hi)
    mid = (wl + wr) / 2.0
    if direction > 0:
        return (lo, min(hi, mid)), (max(lo, mid), hi)
    return (max(lo, mid), hi), (lo, min(hi, mid))


def allowed_features(params, n_features, used):
    """The features a node may split on (bool mask) when the features ``used`` (a set) were
    split on above it; None without interaction constraints."""
    sets = params.interaction
    if sets is None:
        return None
    mask = np.zeros(n_features, bool)
    listed = np.zeros(n_features, bool)
    for group in sets:
        group = list(group)
        listed[group] = True
        if used.issubset(group):
            mask[group] = True
    alone = ~listed  # a feature in no set is a set of its own
    if not used:
        mask |= alone
    elif len(used) == 1 and alone[next(iter(used))]:
        mask[next(iter(used))] = True
    return mask


def clamp_leaf_values(value, sum_g, hess_sum, is_leaf, lo, hi, inv_g, params):
    """``value`` (the leaves' shrunk values) with every leaf whose output its bounds clamp
    set to ``bound * learning_rate``; unclamped leaves keep their bits."""
    out = value.copy()
    for i in np.flatnonzero(is_leaf):
        w0 = _output(sum_g[i] * inv_g, hess_sum[i], params.reg_lambda, params.reg_alpha,
                     -math.inf, math.inf)
        w = _output(sum_g[i] * inv_g, hess_sum[i], params.reg_lambda, params.reg_alpha,
                    lo[i], hi[i])
        if w != w0:
            out[i] = w * params.learning_rate
    return out


def resolve(hp, n_features, feature_names=None):
    """``(monotone, interaction)`` for :class:`~skltr._gbdt.params.TreeParams` from the
    estimator's ``monotone_constraints`` / ``interaction_constraints`` (features by index or,
    when X had column names, by name), checked against the fit's features; None where unset.
    """
    names = None if feature_names is None else [str(n) for n in feature_names]

    def index(feature, param):
        if isinstance(feature, str):
            if names is None or feature not in names:
                where = ("X has no column names (pass a DataFrame, or give indices)"
                         if names is None else f"X's columns are {names[:8]}...")
                raise ValueError(f"{param} names feature {feature!r}, which is not a column "
                                 f"of X: {where}.")
            return names.index(feature)
        if isinstance(feature, (bool, np.bool_)) or not isinstance(feature,
                                                                   (int, np.integer)):
            raise ValueError(f"{param}: a feature is given as an index (int) or a column name "
                             f"(str); got {feature!r}.")
        if not 0 <= int(feature) < n_features:
            raise ValueError(f"{param} names feature index {int(feature)}, but X has "
                             f"{n_features} features (indices 0 .. {n_features - 1}).")
        return int(feature)

    monotone = hp.get("monotone_constraints")
    if monotone is not None:
        param = "monotone_constraints"
        if isinstance(monotone, dict):
            directions = [0] * n_features
            for feature, d in monotone.items():
                directions[index(feature, param)] = d
        else:
            directions = list(np.asarray(monotone).ravel()) if not isinstance(
                monotone, (list, tuple)) else list(monotone)
            if len(directions) != n_features:
                raise ValueError(f"{param} has {len(directions)} entries, but X has "
                                 f"{n_features} features: give one of -1, 0, 1 per feature, "
                                 f"or a dict {{feature: direction}} of the constrained ones.")
        bad = [d for d in directions if isinstance(d, (bool, np.bool_))
               or not isinstance(d, (int, np.integer)) or int(d) not in (-1, 0, 1)]
        if bad:
            raise ValueError(f"{param}: every direction is -1 (decreasing), 0 (free) or 1 "
                             f"(increasing); got {bad[0]!r}.")
        method = hp.get("monotone_constraints_method", "basic")
        if method != "basic":
            raise ValueError(f"monotone_constraints_method={method!r} is not implemented; "
                             f"'basic' (LightGBM's default, XGBoost's method) is.")
        monotone = tuple(int(d) for d in directions) if any(directions) else None
    sets = hp.get("interaction_constraints")
    if sets is not None:
        param = "interaction_constraints"
        if isinstance(sets, (str, bytes)) or not hasattr(sets, "__iter__"):
            raise ValueError(f"{param} is a list of feature lists, e.g. [[0, 1], [2, 3, 4]] "
                             f"(XGBoost's form); got {sets!r}.")
        groups = []
        for group in sets:
            if isinstance(group, (str, bytes)) or not hasattr(group, "__iter__"):
                raise ValueError(f"{param} is a list of feature lists, e.g. [[0, 1], [2, 3]]; "
                                 f"an entry is {group!r}.")
            members = tuple(sorted({index(f, param) for f in group}))
            if not members:
                raise ValueError(f"{param} holds an empty feature list.")
            groups.append(members)
        if not groups:
            raise ValueError(f"{param}=[] allows no feature; pass None for no constraint.")
        sets = tuple(groups)
    return monotone, sets
