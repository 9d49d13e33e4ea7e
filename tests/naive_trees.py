"""Slow, obviously-correct reference for ``TreeEnsemble`` prediction.

Written from the routing semantics in the module docstring of ``skltr.trees._ensemble``, one
sentence at a time, with plain Python floats and no numba. It reads the ensemble's public
arrays only; flag bits are spelled out here rather than imported so that a wrong constant in
the package cannot hide in both places.
"""

from __future__ import annotations

import math

import numpy as np

# Bits of TreeEnsemble.flags, as the docstring defines them.
CATEGORICAL = 1 << 0
DEFAULT_LEFT = 1 << 1
CAT_SET_RIGHT = 1 << 4
CAT_INVALID_DEFAULT = 1 << 5
CAT_TRUNC_FIRST = 1 << 6
MISSING_NONE, MISSING_ZERO, MISSING_NAN = 0, 1, 2
ZERO_THRESHOLD = float(np.float32(1e-35))  # LightGBM kZeroThreshold = 1e-35f


def f32(v: float) -> float:
    """Round a Python float to the nearest float32 (overflow gives +-inf), as a Python float."""
    with np.errstate(over="ignore"):
        return float(np.float32(v))


def _trunc(x: float) -> float:
    """trunc(x) as a float; +-inf stay infinite (math.trunc would raise)."""
    return x if math.isinf(x) else float(math.trunc(x))


def naive_go_left(ens, node: int, x: float) -> bool:
    """Whether input value ``x`` goes to the left child of global node ``node``."""
    x = float(x)
    mv = float(ens.missing_value)
    # 1. precision="float32": round the input to float32 first.
    if ens.precision == "float32":
        x = f32(x)
        mv = f32(mv)
    # 2. The missing_value sentinel (when not NaN) reads as NaN, compared after rounding.
    if not math.isnan(mv) and x == mv:
        x = math.nan
    fl = int(ens.flags[node])
    default_left = bool(fl & DEFAULT_LEFT)

    if fl & CATEGORICAL:
        # 3. Categorical node: NaN follows the default direction.
        if math.isnan(x):
            return default_left
        c = _trunc(x)
        invalid = (c < 0) if (fl & CAT_TRUNC_FIRST) else (x < 0)
        if invalid:
            if fl & CAT_INVALID_DEFAULT:
                return default_left
            in_set = False
        else:
            # Category c = trunc(x): bit c % 32 of word cat_offset + c // 32, if that word is
            # among the node's cat_nwords words.
            nwords = int(ens.cat_nwords[node])
            if math.isinf(c) or c // 32 >= nwords:
                in_set = False
            else:
                ci = int(c)
                word = int(ens.cat_bitsets[int(ens.cat_offset[node]) + ci // 32])
                in_set = (word >> (ci % 32)) & 1 == 1
        # In-set values go left, or right with CAT_SET_RIGHT.
        return (not in_set) if (fl & CAT_SET_RIGHT) else in_set

    # 4. Numeric node.
    missing_type = (fl >> 2) & 3
    if missing_type == MISSING_NONE:
        if math.isnan(x):
            x = 0.0
    elif missing_type == MISSING_ZERO:
        if math.isnan(x):
            x = 0.0
        if abs(x) <= ZERO_THRESHOLD:
            return default_left
    elif missing_type == MISSING_NAN:
        if math.isnan(x):
            return default_left
    else:
        raise AssertionError(f"undefined missing type {missing_type} at node {node}")
    thr = float(ens.threshold[node])
    if ens.decision == "<":
        return x < thr
    if ens.decision == "<=":
        return x <= thr
    raise AssertionError(f"unknown decision {ens.decision!r}")


def naive_leaf(ens, tree: int, row) -> int:
    """Local index of the leaf that ``row`` (a sequence of floats) reaches in ``tree``."""
    start = int(ens.tree_ptr[tree])
    node = 0
    steps = 0
    while int(ens.left[start + node]) >= 0:
        g = start + node
        x = row[int(ens.feature[g])]
        node = int(ens.left[g]) if naive_go_left(ens, g, x) else int(ens.right[g])
        steps += 1
        if steps > ens.n_nodes:
            raise AssertionError("walk longer than the tree: cycle")
    return node


def naive_apply(ens, X) -> np.ndarray:
    """Local leaf indices, shape (n_samples, n_trees), int32."""
    X = np.asarray(X)
    out = np.zeros((X.shape[0], ens.n_trees), dtype=np.int32)
    for i in range(X.shape[0]):
        row = [float(v) for v in X[i]]
        for t in range(ens.n_trees):
            out[i, t] = naive_leaf(ens, t, row)
    return out


def naive_predict_raw(ens, X) -> np.ndarray:
    """Raw scores, shape (n,) for one output else (n, n_outputs), of dtype ``sum_dtype``."""
    X = np.asarray(X)
    K = int(ens.n_outputs)
    sum32 = ens.sum_dtype == "float32"
    counts = [0] * K
    for t in range(ens.n_trees):
        counts[int(ens.tree_output[t])] += 1
    rows = []
    for i in range(X.shape[0]):
        row = [float(v) for v in X[i]]
        base = [float(b) for b in ens.base_score]
        # Each output starts from base_score (or from 0 in average mode: the base is added
        # after dividing the tree sum by the number of trees).
        acc = [0.0 if ens.average_output else (f32(b) if sum32 else b) for b in base]
        for t in range(ens.n_trees):
            leaf = float(ens.value[int(ens.tree_ptr[t]) + naive_leaf(ens, t, row)])
            w = float(ens.tree_weight[t])
            k = int(ens.tree_output[t])
            if sum32:
                # float32(float32(leaf) * float32(weight)), added in float32.
                contrib = f32(f32(leaf) * f32(w))
                acc[k] = f32(acc[k] + contrib)
            else:
                acc[k] = acc[k] + leaf * w
        if ens.average_output:
            for k in range(K):
                total = acc[k]
                if counts[k] > 0:
                    total = f32(total / counts[k]) if sum32 else total / counts[k]
                acc[k] = f32(total + f32(base[k])) if sum32 else total + base[k]
        rows.append(acc)
    out = np.array(rows, dtype=np.float32 if sum32 else np.float64).reshape(X.shape[0], K)
    return out[:, 0] if K == 1 else out
