"""A slow, obviously-correct reference for symmetric (oblivious) growth (``growth="symmetric"``).

Written from the docstrings of ``skltr._cpu.split_symmetric`` and ``skltr._gbdt.growth`` with
plain Python loops over rows, no numba and no histograms: every candidate's child sums are
recomputed from each node's rows. The split noise's hash (SplitMix64) and normal draw
(Box-Muller) are re-implemented here in Python integers. Gradients on a 1/8 grid make every
sum exact, so the engine must agree bit for bit.
"""

from __future__ import annotations

import math

from naive_gbdt import DEFAULTS, naive_partition, naive_tree_arrays, objective

_M64 = (1 << 64) - 1


def mix64(x):
    """SplitMix64's finaliser of ``x + 0x9E3779B97F4A7C15`` (mod 2**64)."""
    z = (x + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def normal(seed, round_, depth, f, b, d):
    """The standard normal draw of candidate (f, b, direction d) of a tree level."""
    key = mix64(mix64(mix64(seed) ^ round_) ^ depth)
    k1 = mix64(mix64(key ^ f) ^ (2 * b + d))
    k2 = mix64(k1)

    def uniform(k):
        return ((k >> 11) + 0.5) * 2.0 ** -53

    return math.sqrt(-2.0 * math.log(uniform(k1))) * math.cos(2.0 * math.pi * uniform(k2))


def sigma_of(random_strength, grad, round_, learning_rate):
    """CatBoost's score noise scale, from every row's gradient."""
    if random_strength == 0:
        return 0.0
    n = len(grad)
    stdev = math.sqrt(math.fsum(float(g) * float(g) for g in grad) / n)  # exact, as skltr
    m = n * math.exp(-round_ * learning_rate)
    return random_strength * stdev * m / (1.0 + m)


def _node_gain(X_binned, grad, hess, rows, f, b, dl, missing_bin, p):
    """``(gain, left rows, right rows)`` of a node at a candidate; gain None when a child
    breaks ``min_samples_leaf`` / ``min_child_weight``."""
    left, right = naive_partition(X_binned, rows, f, b, dl, missing_bin)
    G = sum(float(grad[r]) for r in rows)
    H = sum(float(hess[r]) for r in rows)
    if p["min_samples_leaf_counts"] == "hessian" and H > 0:
        # LightGBM's estimates: per bin of the right child int(H_bin * n / H + 0.5)
        h_bin = {}
        for r in right:
            h_bin[X_binned[r, f]] = h_bin.get(X_binned[r, f], 0.0) + float(hess[r])
        n_right = sum(int(h * (len(rows) / H) + 0.5) for h in h_bin.values())
        n_left = len(rows) - n_right
    else:
        n_left, n_right = len(left), len(right)
    min_n = max(p["min_samples_leaf"], 1)
    GL = sum(float(grad[r]) for r in left)
    HL = sum(float(hess[r]) for r in left)
    GR = sum(float(grad[r]) for r in right)
    HR = sum(float(hess[r]) for r in right)
    if (n_left < min_n or n_right < min_n or HL < p["min_child_weight"]
            or HR < p["min_child_weight"]):
        return None, left, right
    lam, alpha = p["reg_lambda"], p["reg_alpha"]
    return (objective(GL, HL, lam, alpha) + objective(GR, HR, lam, alpha)
            - objective(G, H, lam, alpha)), left, right


def naive_symmetric_grow(X_binned, grad, hess, n_bins, missing_bin, rows=None,
                         feature_mask=None, random_strength=0.0, seed=0, round_=0, **kw):
    """Grow a symmetric tree; the node arrays of ``naive_gbdt.naive_grow``."""
    p = dict(DEFAULTS, **kw)
    n_features = X_binned.shape[1]
    if feature_mask is None:
        feature_mask = [True] * n_features
    rows = list(range(X_binned.shape[0])) if rows is None else [int(r) for r in rows]
    sigma = sigma_of(random_strength, grad, round_, p["learning_rate"])
    # nodes: rows, split (gain, f, b, dl), children, frozen (the node whose value it takes)
    nodes = [dict(rows=rows, split=None, left=-1, right=-1, frozen=None)]
    level = [0] if rows else []
    lam, alpha = p["reg_lambda"], p["reg_alpha"]
    for depth in range(p["max_depth"] if level else 0):
        active = [i for i in level if nodes[i]["frozen"] is None]
        base = 0.0
        for i in active:
            G = sum(float(grad[r]) for r in nodes[i]["rows"])
            H = sum(float(hess[r]) for r in nodes[i]["rows"])
            base += objective(G, H, lam, alpha)
        best = None  # (score, f, b, dl)
        for f in range(n_features):
            if not feature_mask[f] or n_bins[f] <= 1:
                continue
            for b in range(n_bins[f]):
                for d, dl in enumerate((True, False)):
                    total = 0.0
                    for i in active:
                        gain, _, _ = _node_gain(X_binned, grad, hess, nodes[i]["rows"], f, b,
                                                dl, missing_bin, p)
                        if gain is not None:
                            total += gain
                    if not total > p["min_split_gain"]:
                        continue
                    score = total
                    if sigma > 0:
                        score = (math.sqrt(max(base + total, 0.0))
                                 + sigma * normal(seed, round_, depth, f, b, d))
                    if best is None or score > best[0]:
                        best = (score, f, b, dl)
        if best is None:
            break
        _, f, b, dl = best
        children = []
        for i in level:
            gain, left, right = _node_gain(X_binned, grad, hess, nodes[i]["rows"], f, b, dl,
                                           missing_bin, p)
            if nodes[i]["frozen"] is None and gain is None:
                nodes[i]["frozen"] = i
            recorded = max(gain, 0.0) if nodes[i]["frozen"] is None else 0.0
            nodes[i]["split"] = (recorded, f, b, dl)
            for side in (left, right):
                nodes.append(dict(rows=side, split=None, left=-1, right=-1,
                                  frozen=nodes[i]["frozen"]))
                children.append(len(nodes) - 1)
            nodes[i]["left"], nodes[i]["right"] = children[-2], children[-1]
        level = children
    # a frozen node's leaves take its value
    return naive_tree_arrays(nodes, grad, hess, p, value_rows=lambda i: nodes[
        nodes[i]["frozen"] if nodes[i]["frozen"] is not None else i]["rows"])
