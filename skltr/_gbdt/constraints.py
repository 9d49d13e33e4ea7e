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

LightGBM's ``intermediate`` method (leaf-wise growth) cuts a new leaf's bounds at its
sibling's output instead, and after each split tightens the bounds of the leaves that border
the two new ones across constrained splits (:class:`IntermediateUpdate`), whose splits are
then searched again: less constraining, the same guarantee.

**Interaction** (``TreeParams.interaction``: feature sets): a branch only splits on features
that all belong to one set (LightGBM's rule: any two features of a branch share a set). A
node may split on the union of the sets that contain every feature used above it; a feature
in no set is a set of its own (used alone). ``allowed`` masks are computed here and ANDed
with the tree's column sample.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ROOT_BOUNDS", "child_bounds", "child_outputs", "IntermediateUpdate",
           "allowed_features", "clamp_leaf_values", "resolve"]

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


def child_outputs(params, node, scales):
    """The outputs of ``node``'s two children (its ``split``), clamped to its bounds, as
    the split search scored them."""
    split = node.split
    gl, hl = float(split.left_g), float(split.left_h)
    gr, hr = float(node.sum_g - split.left_g), float(node.sum_h - split.left_h)
    return tuple(_output(g * scales.inv_g, h * scales.inv_h, params.reg_lambda,
                         params.reg_alpha, node.lo, node.hi) for g, h in ((gl, hl), (gr, hr)))


def child_bounds(params, node, scales):
    """``((lo, hi) of the left child, (lo, hi) of the right child)`` of ``node`` (its
    ``split`` set, its own bounds ``node.lo`` / ``node.hi``): cut at the mid-point of the
    children's outputs (``basic``) or at the other child's output (``intermediate``)."""
    lo, hi = node.lo, node.hi
    mono = params.monotone
    direction = 0 if mono is None else mono[node.split.feature]
    if direction == 0:
        return (lo, hi), (lo, hi)
    wl, wr = child_outputs(params, node, scales)
    if params.monotone_method == "intermediate":
        cut_left, cut_right = wr, wl  # LightGBM's UpdateConstraintsWithOutputs
    else:
        cut_left = cut_right = (wl + wr) / 2.0
    if direction > 0:
        return (lo, min(hi, cut_left)), (max(lo, cut_right), hi)
    return (max(lo, cut_left), hi), (lo, min(hi, cut_right))


class IntermediateUpdate:
    """LightGBM's ``intermediate`` method, after a leaf-wise split: the leaves of the tree
    that border the two new leaves across splits on constrained features get their bounds
    tightened by the new outputs; :meth:`leaves_to_update` returns those whose bounds
    changed (their best splits must be searched again). The walk is LightGBM's
    ``GoUpToFindLeavesToUpdate`` / ``GoDownToFindLeavesToUpdate``: up from the split node,
    and down the other side of each constrained ancestor, keeping to the leaves contiguous
    with the new ones (bin thresholds of the same features on the way up).

    ``driver``: the :class:`~skltr._gbdt.growth.GrowthDriver` (its ``nodes``, ``children``,
    ``parent``); a node is internal when its children are in the tree.
    """

    def __init__(self, driver, params, scales):
        self.d, self.params, self.scales = driver, params, scales

    def _mono(self, i):
        mono = self.params.monotone
        return mono[self.d.nodes[i].split.feature]

    def _in_monotone_subtree(self, i):
        while i >= 0:
            if self.d.children[i] is not None and self._mono(i) != 0:
                return True
            i = self.d.parent[i]
        return False

    def leaves_to_update(self, split_id, is_open):
        """The leaves whose bounds the split of ``split_id`` tightened (``is_open(i)``:
        whether leaf ``i`` still has a split to take, LightGBM's ``gain != kMinScore``)."""
        self.changed, self.is_open = [], is_open
        if not self._in_monotone_subtree(split_id):
            return []
        node = self.d.nodes[split_id]
        self.outputs = child_outputs(self.params, node, self.scales)
        self.feature, self.threshold = node.split.feature, node.split.bin
        up_features, up_thresholds, up_right = [], [], []
        child = split_id
        parent = self.d.parent[child]
        while parent >= 0:
            p = self.d.nodes[parent].split
            is_right = self.d.children[parent][1] == child
            if not any(f == p.feature and r == is_right
                       for f, r in zip(up_features, up_right)):
                direction = self._mono(parent)
                if direction != 0:
                    left_is_here = self.d.children[parent][0] == child
                    update_max = left_is_here if direction < 0 else not left_is_here
                    other = self.d.children[parent][1 if left_is_here else 0]
                    self._down(other, up_features, up_thresholds, up_right, update_max,
                               True, True)
                up_right.append(is_right)
                up_thresholds.append(p.bin)
                up_features.append(p.feature)
            child, parent = parent, self.d.parent[parent]
        return self.changed

    def _down(self, i, up_features, up_thresholds, up_right, update_max, use_left, use_right):
        d = self.d
        if d.children[i] is None:  # a leaf
            if not self.is_open(i):
                return
            wl, wr = self.outputs
            if use_left and use_right:
                low, high = min(wl, wr), max(wl, wr)
            else:
                low = high = wr if use_right else wl
            node = d.nodes[i]
            if update_max:
                if low < node.hi:
                    node.hi = low
                    self.changed.append(i)
            elif high > node.lo:
                node.lo = high
                self.changed.append(i)
            return
        split = d.nodes[i].split
        keep_left = keep_right = True
        for f, t, r in zip(up_features, up_thresholds, up_right):
            # bins of a categorical split have no order: both sides may border
            if f == split.feature and split.cat_left is None and t >= 0:
                if split.bin >= t and not r:
                    keep_right = False
                if split.bin <= t and r:
                    keep_left = False
        left_for_right = right_for_left = True
        if split.feature == self.feature and split.cat_left is None and self.threshold >= 0:
            if split.bin >= self.threshold:
                left_for_right = False
            if split.bin <= self.threshold:
                right_for_left = False
        left, right = d.children[i]
        if keep_left:
            self._down(left, up_features, up_thresholds, up_right, update_max, use_left,
                       right_for_left and use_right)
        if keep_right:
            self._down(right, up_features, up_thresholds, up_right, update_max,
                       left_for_right and use_left, use_right)


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
    """``((monotone, method), interaction)`` for :class:`~skltr._gbdt.params.TreeParams` from the
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
                if not isinstance(feature, str):
                    raise ValueError(f"{param}: a dict maps column names to directions "
                                     f"(scikit-learn's and XGBoost's form); got the key "
                                     f"{feature!r}. Give positions as a list with one "
                                     f"direction per feature.")
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
        if method == "advanced":
            raise ValueError("monotone_constraints_method='advanced' is not implemented; "
                             "'basic' (LightGBM's default, XGBoost's method) and "
                             "'intermediate' are.")
        if method == "intermediate" and hp.get("growth", "leafwise") != "leafwise":
            raise ValueError("monotone_constraints_method='intermediate' needs "
                             "growth='leafwise' (it updates the other leaves' bounds after "
                             "each split, one leaf at a time, as LightGBM); use 'basic' with "
                             "growth='depthwise'.")
        monotone = (tuple(int(d) for d in directions) if any(directions) else None,
                    method)
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
    return monotone or (None, "basic"), sets
