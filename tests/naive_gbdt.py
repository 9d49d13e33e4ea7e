"""Slow, obviously-correct references for the GBDT tree engine (``skltr._gbdt``, ``skltr._cpu``).

Written from ``docs/gbdt_internals.rst`` and the kernels' docstrings, with plain Python loops
over rows and no numba. The split search is brute force over every (feature, bin, missing
direction) with the child sums recomputed from the node's rows, so it shares no arithmetic
shortcut (prefix sums, subtraction trick, right = total - left) with the kernels. Tests feed
it gradients that are multiples of 1/8 (exact in float32 and in every float64 sum), so the
two must agree exactly, not just closely.
"""

from __future__ import annotations

import heapq
import math

import numpy as np


# ---------------------------------------------------------------------------- binning
def naive_bin(x: float, cuts, missing_bin: int) -> int:
    """First b with ``x <= cuts[b]`` (len(cuts) when none); NaN -> missing_bin."""
    if math.isnan(x):
        return missing_bin
    for b, c in enumerate(cuts):
        if x <= c:
            return b
    return len(cuts)


def naive_transform(X, cut_ptr, cut_values, missing_bin):
    X = np.asarray(X, dtype=np.float64)
    out = np.zeros(X.shape, dtype=np.uint8)
    for f in range(X.shape[1]):
        cuts = list(cut_values[cut_ptr[f]:cut_ptr[f + 1]])
        for i in range(X.shape[0]):
            out[i, f] = naive_bin(float(X[i, f]), cuts, missing_bin)
    return out


def naive_feature_cuts(col, max_bins):
    """Upper bin edges of one sampled column, with numpy (BinMapper's documented rule).

    ``k <= max_bins`` distinct finite values: the midpoints of consecutive values (``lo`` for
    adjacent doubles, whose midpoint rounds onto one of them). Otherwise count-balanced bins
    over ``np.unique``'s values and counts: a heavy value (``count * max_bins >= n``) closes
    a bin of its own; a bin of light values closes once it holds ``light_left / bins_left``
    samples as they stood when it opened, or half that when a heavy value comes next; at most
    ``max_bins - 1`` cuts.
    """
    col = np.asarray(col, dtype=np.float64)
    finite = col[np.isfinite(col)]
    distinct, counts = np.unique(finite, return_counts=True)

    def midpoint(lo, hi):
        mid = 0.5 * lo + 0.5 * hi
        return mid if lo <= mid < hi else lo

    if distinct.size <= max_bins:
        return np.array([midpoint(lo, hi) for lo, hi in zip(distinct[:-1], distinct[1:])])
    n = finite.size
    heavy = [int(c) * max_bins >= n for c in counts]
    bins_left = max_bins - sum(heavy)
    light_left = n - sum(int(c) for c, h in zip(counts, heavy) if h)
    target = (light_left, bins_left)  # a bin's size: light_left / bins_left when it opened
    cuts, filled = [], 0
    for j in range(distinct.size - 1):
        filled += int(counts[j])
        if not heavy[j]:
            light_left -= int(counts[j])
        if (heavy[j] or filled * target[1] >= target[0]
                or (heavy[j + 1] and 2 * filled * target[1] >= target[0])):
            cuts.append(midpoint(distinct[j], distinct[j + 1]))
            if len(cuts) == max_bins - 1:
                break
            filled = 0
            if not heavy[j]:
                bins_left -= 1
                target = (light_left, bins_left)
    return np.array(cuts)


# ---------------------------------------------------------------------------- histogram
def naive_histogram(X_binned, grad, hess, rows, n_bins_total):
    """``hist[f, b] = (sum g, sum h, count)`` over ``rows``, as Python floats."""
    n_features = X_binned.shape[1]
    hist = np.zeros((n_features, n_bins_total, 3))
    for r in rows:
        for f in range(n_features):
            b = int(X_binned[r, f])
            hist[f, b, 0] += float(grad[r])
            hist[f, b, 1] += float(hess[r])
            hist[f, b, 2] += 1
    return hist


# ---------------------------------------------------------------------------- split
def thresh_l1(G, alpha):
    if G > alpha:
        return G - alpha
    if G < -alpha:
        return G + alpha
    return 0.0


def objective(G, H, lam, alpha):
    """T(G)^2 / (H + lambda), 0 when H + lambda <= 0."""
    if alpha > 0:
        G = thresh_l1(G, alpha)
    d = H + lam
    return G * G / d if d > 0 else 0.0


def naive_leaf_value(G, H, lam, alpha, lr):
    if alpha > 0:
        G = thresh_l1(G, alpha)
    d = H + lam
    return -G / d * lr if d > 0 else 0.0


def naive_best_split(X_binned, grad, hess, rows, n_bins, missing_bin, feature_mask, p):
    """Best (gain, feature, bin, default_left) of the node holding ``rows``, or None.

    Candidates in order (feature, bin, missing left before missing right); the first of
    equal gains wins, and its bin then moves up over the bins that hold no row of the node
    (the same partition; LightGBM's threshold). Without missing rows in the node there is one
    candidate per bin, with missing values sent to the child with more rows (ties right).

    ``p["min_samples_leaf_counts"] == "hessian"``: children's counts are LightGBM's
    estimates, the right child ``sum over its bins of int(H_bin * n / H + 0.5)`` and the left
    ``n`` minus that (``n``, ``H``: the node's rows and hessian sum); rows are seen through
    their hessians only, as in LightGBM: a bin (the missing one included) whose gradient and
    hessian sums are both zero counts as empty, and without missing values the bigger child
    is the one with more estimated rows.
    """
    rows = list(rows)
    G = sum(float(grad[r]) for r in rows)
    H = sum(float(hess[r]) for r in rows)
    parent = objective(G, H, p["reg_lambda"], p["reg_alpha"])
    min_n = max(p["min_samples_leaf"], 1)
    by_hessian = p.get("min_samples_leaf_counts", "rows") == "hessian"
    count_factor = len(rows) / H if H > 0 else 0.0

    def counts(left, right, f):
        if not by_hessian:
            return len(left), len(right)
        h_bin = {}
        for r in right:
            h_bin[X_binned[r, f]] = h_bin.get(X_binned[r, f], 0.0) + float(hess[r])
        n_right = sum(int(h * count_factor + 0.5) for h in h_bin.values())
        return len(rows) - n_right, n_right

    def occupied(f, b):
        in_bin = [r for r in rows if X_binned[r, f] == b]
        if not by_hessian:
            return len(in_bin) > 0
        return (sum(float(grad[r]) for r in in_bin) != 0
                or sum(float(hess[r]) for r in in_bin) != 0)

    best = None
    for f in range(X_binned.shape[1]):
        if not feature_mask[f] or n_bins[f] <= 1:
            continue
        n_missing = occupied(f, missing_bin)
        for b in range(n_bins[f]):
            if n_missing:
                cands = [True, False] if b < n_bins[f] - 1 else [False]
            else:
                cands = [None] if b < n_bins[f] - 1 else []
            for dl in cands:
                def goes_left(r, dl=dl):
                    v = X_binned[r, f]
                    return dl if v == missing_bin else v <= b
                left = [r for r in rows if goes_left(r)]
                right = [r for r in rows if not goes_left(r)]
                n_left, n_right = counts(left, right, f)
                dl_eff = n_left > n_right if dl is None else dl
                if n_left < min_n or n_right < min_n:
                    continue
                GL = sum(float(grad[r]) for r in left)
                HL = sum(float(hess[r]) for r in left)
                GR = sum(float(grad[r]) for r in right)
                HR = sum(float(hess[r]) for r in right)
                if HL < p["min_child_weight"] or HR < p["min_child_weight"]:
                    continue
                gain = (objective(GL, HL, p["reg_lambda"], p["reg_alpha"])
                        + objective(GR, HR, p["reg_lambda"], p["reg_alpha"]) - parent)
                if gain > p["min_split_gain"] and (best is None or gain > best[0]):
                    best = (gain, f, b, dl_eff)
    if best is not None:
        gain, f, b, dl = best
        while b + 1 < n_bins[f] and not occupied(f, b + 1):
            b += 1
        best = (gain, f, b, dl)
    return best


def naive_categorical_split(X_binned, grad, hess, rows, features, n_bins, missing_bin,
                            feature_mask, p):
    """Best categorical split of the node holding ``rows``: ``(gain, feature, left bins
    (frozenset), many)``, or None.

    LightGBM's ``FindBestThresholdCategoricalInner`` as ``skltr._cpu.split_categorical``'s
    docstring states it, recomputed from the rows: a feature of ``n_bins[f]`` category bins
    with ``n_bins[f] + 1 <= max_cat_to_onehot`` tries each category against the rest; others
    sort the categories present in the node whose count reaches ``cat_smooth`` by
    ``G / (H + cat_smooth)`` (a stable sort) and try the prefixes of that order, from the
    front and then from the back, at most ``min(max_cat_threshold, (used + 1) // 2)``
    categories, scored with ``reg_lambda + cat_l2`` (the parent with ``reg_lambda``): a
    prefix is skipped while the left side is too small (``min_samples_leaf`` rows,
    ``min_child_weight``), the direction ends once the right side is (or below
    ``min_data_per_group`` rows), and a prefix is a candidate only once the categories added
    since the last candidate hold ``min_data_per_group`` rows. The missing bin always goes
    right. Counts: rows, or with ``p["min_samples_leaf_counts"] == "hessian"`` LightGBM's
    ``int(H_cat * n / H + 0.5)`` per category (the left side's the sum, the right side's ``n``
    minus it), a category present when its gradient or hessian sum is not zero.
    First of equal gains wins: features in order, then categories in order (one-vs-rest), the
    front direction before the back and shorter prefixes first (many-vs-many); a gain must
    beat ``min_split_gain``.
    """
    rows = list(rows)
    n = len(rows)
    G = sum(float(grad[r]) for r in rows)
    H = sum(float(hess[r]) for r in rows)
    lam, alpha = p["reg_lambda"], p["reg_alpha"]
    parent = objective(G, H, lam, alpha)
    min_n = max(p["min_samples_leaf"], 1)
    mcw = p["min_child_weight"]
    by_hessian = p.get("min_samples_leaf_counts", "rows") == "hessian" and H > 0
    best = None

    def consider(gain, f, left, many):
        nonlocal best
        if gain > p["min_split_gain"] and (best is None or gain > best[0]):
            best = (gain, f, frozenset(left), many)

    for f in features:
        nb = int(n_bins[f])
        if not feature_mask[f] or nb <= 1:
            continue
        g_cat, h_cat, rows_cat = [0.0] * nb, [0.0] * nb, [0] * nb
        for r in rows:
            b = int(X_binned[r, f])
            if b < nb:
                g_cat[b] += float(grad[r])
                h_cat[b] += float(hess[r])
                rows_cat[b] += 1

        def present(b):
            if by_hessian:
                return g_cat[b] != 0 or h_cat[b] != 0
            return rows_cat[b] > 0

        def count(b):
            return int(h_cat[b] * (n / H) + 0.5) if by_hessian else rows_cat[b]

        if nb + 1 <= p["max_cat_to_onehot"]:
            for b in range(nb):
                if not present(b):
                    continue
                if count(b) < min_n or n - count(b) < min_n:
                    continue
                if h_cat[b] < mcw or H - h_cat[b] < mcw:
                    continue
                consider(objective(g_cat[b], h_cat[b], lam, alpha)
                         + objective(G - g_cat[b], H - h_cat[b], lam, alpha) - parent,
                         f, [b], False)
            continue
        smooth = p["cat_smooth"]
        used = [b for b in range(nb) if present(b) and count(b) >= smooth]
        def key(b):  # C++ doubles: G / 0 is +-inf (cat_smooth=0); 0 / 0 sorts as 0
            g, d = np.float64(g_cat[b]), np.float64(h_cat[b] + smooth)
            if d == 0.0:
                return 0.0 if g == 0.0 else np.copysign(np.inf, g)
            return g / d

        used = sorted(used, key=key)
        most = min(p["max_cat_threshold"], (len(used) + 1) // 2)
        lam_cat = lam + p["cat_l2"]
        for order in (used, used[::-1]):
            left, n_left, group = [], 0, 0
            for b in order[:most]:
                left.append(b)
                n_left += count(b)
                group += count(b)
                GL = sum(g_cat[x] for x in left)
                HL = sum(h_cat[x] for x in left)
                if n_left < min_n or HL < mcw:
                    continue
                n_right = n - n_left
                if n_right < min_n or n_right < p["min_data_per_group"] or H - HL < mcw:
                    break
                if group < p["min_data_per_group"]:
                    continue
                group = 0
                consider(objective(GL, HL, lam_cat, alpha)
                         + objective(G - GL, H - HL, lam_cat, alpha) - parent, f, left, True)
    return best


# ---------------------------------------------------------------------------- partition
def naive_partition(X_binned, rows, feature, b, default_left, missing_bin):
    def goes_left(r):
        v = X_binned[r, feature]
        return default_left if v == missing_bin else v <= b
    return [r for r in rows if goes_left(r)], [r for r in rows if not goes_left(r)]


# ---------------------------------------------------------------------------- grower
DEFAULTS = dict(max_leaves=31, max_depth=None, growth="leafwise", min_child_weight=1e-3,
                min_samples_leaf=20, min_samples_leaf_counts="rows", reg_lambda=0.0,
                reg_alpha=0.0, min_split_gain=0.0, learning_rate=0.1)


def naive_grow(X_binned, grad, hess, n_bins, missing_bin, rows=None, feature_mask=None, **kw):
    """Grow a tree by the rules of ``skltr._gbdt.growth`` and ``skltr._gbdt.grower_cpu``;
    return node arrays.

    Returns a dict of lists: feature, bin_threshold, default_left, left, right, value, gain,
    count, and ``leaf_of_row`` (a dict row -> leaf id).
    """
    p = dict(DEFAULTS, **kw)
    n_features = X_binned.shape[1]
    if feature_mask is None:
        feature_mask = [True] * n_features
    rows = list(range(X_binned.shape[0])) if rows is None else [int(r) for r in rows]
    nodes = []  # dicts: rows, depth, split, left, right

    def new_node(node_rows, depth):
        nodes.append(dict(rows=node_rows, depth=depth, split=None, left=-1, right=-1))
        return len(nodes) - 1

    def can_split(node, n_leaves):
        return (n_leaves < p["max_leaves"]
                and (p["max_depth"] is None or node["depth"] < p["max_depth"])
                and len(node["rows"]) >= 2 * p["min_samples_leaf"])

    def evaluate(i, n_leaves):
        if can_split(nodes[i], n_leaves):
            nodes[i]["split"] = naive_best_split(X_binned, grad, hess, nodes[i]["rows"],
                                                 n_bins, missing_bin, feature_mask, p)

    def split(i, n_leaves_after):
        _, f, b, dl = nodes[i]["split"]
        lr, rr = naive_partition(X_binned, nodes[i]["rows"], f, b, dl, missing_bin)
        li = new_node(lr, nodes[i]["depth"] + 1)
        ri = new_node(rr, nodes[i]["depth"] + 1)
        nodes[i]["left"], nodes[i]["right"] = li, ri
        evaluate(li, n_leaves_after)
        evaluate(ri, n_leaves_after)
        return li, ri

    new_node(rows, 0)
    evaluate(0, 1)
    n_leaves = 1
    if p["growth"] == "leafwise":
        heap = [(-nodes[0]["split"][0], 0)] if nodes[0]["split"] else []
        while heap and n_leaves < p["max_leaves"]:
            _, i = heapq.heappop(heap)
            n_leaves += 1
            for c in split(i, n_leaves):
                if nodes[c]["split"]:
                    heapq.heappush(heap, (-nodes[c]["split"][0], c))
    else:
        level = [0]
        while level and n_leaves < p["max_leaves"]:
            ready = sorted((i for i in level if nodes[i]["split"]),
                           key=lambda i: (-nodes[i]["split"][0], i))
            nxt = []
            for i in ready:
                if n_leaves >= p["max_leaves"]:
                    break
                n_leaves += 1
                nxt.extend(split(i, n_leaves))
            level = nxt
    return naive_tree_arrays(nodes, grad, hess, p)


def naive_tree_arrays(nodes, grad, hess, p, value_rows=None):
    """The node arrays of a grown naive tree (``nodes``: dicts with ``rows``, ``left``,
    ``right`` and ``split`` = ``(gain, feature, bin, default_left)``) and ``leaf_of_row``;
    a leaf's value from the rows ``value_rows(i)`` (default: its own)."""
    out = {k: [] for k in ("feature", "bin_threshold", "default_left", "left", "right",
                           "value", "gain", "count")}
    leaf_of_row = {}
    for i, nd in enumerate(nodes):
        out["count"].append(len(nd["rows"]))
        out["left"].append(nd["left"])
        out["right"].append(nd["right"])
        if nd["left"] >= 0:
            gain, f, b, dl = nd["split"]
            out["feature"].append(f)
            out["bin_threshold"].append(b)
            out["default_left"].append(dl)
            out["gain"].append(gain)
            out["value"].append(0.0)
        else:
            source = nd["rows"] if value_rows is None else value_rows(i)
            G = sum(float(grad[r]) for r in source)
            H = sum(float(hess[r]) for r in source)
            out["feature"].append(-1)
            out["bin_threshold"].append(-1)
            out["default_left"].append(False)
            out["gain"].append(0.0)
            out["value"].append(naive_leaf_value(G, H, p["reg_lambda"], p["reg_alpha"],
                                                 p["learning_rate"]))
            for r in nd["rows"]:
                leaf_of_row[r] = i
    out["leaf_of_row"] = leaf_of_row
    return out
