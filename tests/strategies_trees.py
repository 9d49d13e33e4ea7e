"""Hypothesis strategies for random TreeEnsembles and adversarial inputs (shared by tests).

Ensembles cover every routing feature of the contract in ``skltr/trees/_ensemble.py``; inputs
sit on the edges of the ensemble's thresholds (double and float32 neighbours, ties), plus NaN,
infinities, signed zeros, tiny values and categorical oddities.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from naive_trees import f32
from skltr.trees import OUTPUT_TRANSFORMS, NodeFlags, TreeEnsemble

NAN, INF = math.nan, math.inf
CAT = NodeFlags.CATEGORICAL
DL = NodeFlags.DEFAULT_LEFT
SET_RIGHT = NodeFlags.CAT_SET_RIGHT
INVALID_DEFAULT = NodeFlags.CAT_INVALID_DEFAULT
TRUNC_FIRST = NodeFlags.CAT_TRUNC_FIRST

SPECIAL_X = [NAN, INF, -INF, 0.0, -0.0, 1e-35, -1e-35, 1e-36, -1e-36, np.nextafter(1e-35, 1),
             np.nextafter(1e-35, 0), f32(1e-35), -f32(1e-35), 5e-324, 1e-46, 1e300, -1e300,
             3.5e38, -3.5e38, 1.0, -1.0, 0.5]
CAT_X = [-1.0, -0.5, -0.0, 0.5, 2.0, 3.7, 31.0, 31.99, 32.0, 33.0, 63.0, 64.0, 95.0, 96.0,
         500.0, 2.0**24, 2.0**24 + 1, 2.0**31 - 1, 2.0**31, 2.0**31 + 5, 2.0**32 + 1, 2.0**63]
THRESHOLDS = [0.0, 0.5, 1.0, -1.0, 0.1, f32(0.1), 1e-35, -1e-35, 2.5, 3.0, 31.5, 1e10,
              16777217.0, 2.0**-149, -3.0e38, 1.0 / 3]
WORDS = [0, 0xFFFFFFFF, 1, 0x80000000, 0b101, 0x0F0F0F0F]


def edges(t):
    """Inputs on the edges of threshold ``t``: t, double and float32 neighbours, ties."""
    t = float(t)
    with np.errstate(over="ignore"):
        t32 = np.float32(t)
    out = [t, np.nextafter(t, -INF), np.nextafter(t, INF)]
    if np.isfinite(t32):
        up = np.nextafter(t32, np.float32(INF))
        dn = np.nextafter(t32, np.float32(-INF))
        for a in (float(up), float(dn)):
            if math.isfinite(a):
                mid = (float(t32) + a) / 2
                out += [a, float(t32), mid, np.nextafter(mid, INF), np.nextafter(mid, -INF)]
    return [float(v) for v in out]


@st.composite
def trees(draw, n_features, thresholds, allow_cat, words, max_splits):
    """One tree as per-node lists, non-root nodes in a random order."""
    n_splits = draw(st.integers(0, max_splits))
    mode = draw(st.sampled_from(["random", "random", "left_chain", "right_chain", "zigzag"]))
    # Grow: start with a root leaf; split a chosen leaf n_splits times.
    kids = {0: None}  # node -> (left, right) or None for leaves
    leaves, last = [0], 0
    for i in range(n_splits):
        if mode == "random":
            node = leaves[draw(st.integers(0, len(leaves) - 1))]
        else:
            node = last
        leaves.remove(node)
        a, b = len(kids), len(kids) + 1
        kids[node] = (a, b)
        kids[a] = kids[b] = None
        leaves += [a, b]
        last = {"left_chain": a, "right_chain": b, "zigzag": a if i % 2 else b}.get(mode, a)
    n = len(kids)
    # Random local numbering, root stays 0.
    perm = [0] + draw(st.permutations(list(range(1, n))))
    pos = {old: new for new, old in enumerate(perm)}
    cols = {k: [None] * n for k in ("feature", "threshold", "left", "right", "value", "flags",
                                    "cat_offset", "cat_nwords")}
    for old, ch in kids.items():
        i = pos[old]
        if ch is None:
            value = draw(st.one_of(
                st.sampled_from([0.0, -0.0, 0.1, 1 / 3, -2.5, 1e8, -1e8, 1e-30, 3.0e38]),
                st.floats(-1e3, 1e3)))
            row = dict(feature=-1, threshold=0.0, left=-1, right=-1, value=value, flags=0,
                       cat_offset=0, cat_nwords=0)
        else:
            fl = draw(st.sampled_from([0, DL]))
            is_cat = allow_cat and draw(st.integers(0, 3)) == 0
            offset = nwords = 0
            if is_cat:
                fl |= CAT | draw(st.sampled_from([0, SET_RIGHT])) | draw(
                    st.sampled_from([0, INVALID_DEFAULT])) | draw(
                    st.sampled_from([0, TRUNC_FIRST])) | (draw(st.integers(0, 3)) << 2)
                nwords = draw(st.integers(0, 3))
                if nwords and draw(st.booleans()):
                    offset = len(words)
                    words += draw(st.lists(st.one_of(st.sampled_from(WORDS),
                                                     st.integers(0, 2**32 - 1)),
                                           min_size=nwords, max_size=nwords))
                else:  # reuse (part of) the existing words, possibly none
                    nwords = min(nwords, len(words))
                    offset = draw(st.integers(0, len(words) - nwords))
                threshold = draw(st.sampled_from([0.0, 1.0, NAN]))  # ignored on cat nodes
            else:
                fl |= draw(st.integers(0, 2)) << 2
                threshold = draw(st.sampled_from(thresholds))
            row = dict(feature=draw(st.integers(0, n_features - 1)), threshold=threshold,
                       left=pos[ch[0]], right=pos[ch[1]], value=0.0, flags=fl,
                       cat_offset=offset, cat_nwords=nwords)
        for k, v in row.items():
            cols[k][i] = v
    return cols


@st.composite
def ensembles(draw, max_trees=6, max_splits=10):
    n_features = draw(st.integers(1, 4))
    n_outputs = draw(st.integers(1, 3))
    precision = draw(st.sampled_from(["float64", "float32"]))
    thr = st.one_of(st.sampled_from(THRESHOLDS), st.floats(-1e30, 1e30),
                    st.floats(-f32(1e30), f32(1e30), width=32))
    raw_thr = draw(st.lists(thr, min_size=1, max_size=4))
    if precision == "float32" and draw(st.integers(0, 4)):
        raw_thr = [f32(t) for t in raw_thr]  # XGBoost thresholds are float32 values
    allow_cat = draw(st.booleans())
    n_trees = draw(st.integers(0, max_trees))
    words = []
    if allow_cat and draw(st.booleans()):
        words += draw(st.lists(st.sampled_from(WORDS), max_size=3))  # unused or shared words
    tree_cols = [draw(trees(n_features, raw_thr, allow_cat, words, max_splits))
                 for _ in range(n_trees)]
    ptr = np.cumsum([0] + [len(c["feature"]) for c in tree_cols])
    arrays = {k: np.array([v for c in tree_cols for v in c[k]], dtype=np.float64
                          if k in ("threshold", "value") else np.int64)
              for k in ("feature", "threshold", "left", "right", "value", "flags", "cat_offset",
                        "cat_nwords")}
    missing_value = draw(st.sampled_from([NAN, NAN, -999.0, 0.0, 1e-35, INF, raw_thr[0]]))
    if draw(st.booleans()):
        tree_weight = None
    else:
        tree_weight = draw(st.lists(st.sampled_from([1.0, 0.5, 1 / 3, 2.0, 0.1, 0.0, -1.0]),
                                    min_size=n_trees, max_size=n_trees))
    base_score = draw(st.lists(st.one_of(st.sampled_from([0.0, 0.5, f32(0.1), -1.3, 1e8]),
                                         st.floats(-100, 100)),
                               min_size=n_outputs, max_size=n_outputs))
    ens = TreeEnsemble(
        tree_ptr=ptr, **arrays, n_features=n_features,
        cat_bitsets=np.array(words, dtype=np.uint32),
        tree_output=draw(st.lists(st.integers(0, n_outputs - 1), min_size=n_trees,
                                  max_size=n_trees)),
        tree_weight=tree_weight, base_score=base_score, n_outputs=n_outputs,
        decision=draw(st.sampled_from(["<", "<="])), precision=precision,
        sum_dtype=draw(st.sampled_from(["float64", "float32"])), missing_value=missing_value,
        average_output=draw(st.booleans()),
        output_transform=draw(st.sampled_from(OUTPUT_TRANSFORMS if n_outputs > 1 else
                                              ("identity", "sigmoid", "exp"))),
        transform_params=draw(st.sampled_from([{}, {"scale": 2.0}])),
        feature_names=draw(st.sampled_from([None, [f"f{i}" for i in range(n_features)]])),
        source={"library": "hypothesis"})
    return ens, raw_thr


@st.composite
def inputs(draw, ens, thresholds, max_rows=12):
    pool = SPECIAL_X + CAT_X
    for t in thresholds:
        pool += edges(t)
    if not math.isnan(ens.missing_value):
        pool += edges(ens.missing_value)
    pool = sorted(set(pool), key=repr)  # deterministic order; keeps NaN and -0.0
    value = st.one_of(st.sampled_from(pool), st.sampled_from(pool), st.sampled_from(pool),
                      st.floats(), st.integers(-3, 100).map(float))
    n_rows = draw(st.integers(1, max_rows))
    rows = draw(st.lists(st.lists(value, min_size=ens.n_features, max_size=ens.n_features),
                         min_size=n_rows, max_size=n_rows))
    X = np.array(rows, dtype=np.float64).reshape(n_rows, ens.n_features)
    if draw(st.integers(0, 4)) == 0:
        with np.errstate(over="ignore"):
            X = X.astype(np.float32)
    return X


@st.composite
def ensemble_and_inputs(draw, **kw):
    ens, thr = draw(ensembles(**kw))
    return ens, draw(inputs(ens, thr))
