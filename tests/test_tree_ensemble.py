"""TreeEnsemble: routing semantics, validation, transforms, persistence.

The numba traversal is compared bit for bit with ``tests/naive_trees.py``, a pure-Python walk
written from the routing rules in the docstring of ``skltr/trees/_ensemble.py``.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from skltr.trees import NodeFlags, TreeEnsemble
from skltr._cpu.traversal import predict_raw_traversal
from skltr._records import node_arrays, routing
from skltr.trees._traversal import (CHUNKS_PER_THREAD, MAX_CHUNK_ROWS, TOP_LEVELS_MIN_ROWS,
                                    _as_kernel_input, chunk_rows, lean_routing, top_levels)
from skltr.trees._traversal import apply as traversal_apply
from skltr.utils import _model_io

from naive_trees import f32, naive_apply, naive_predict_raw
from strategies_trees import ensemble_and_inputs

GOLDEN = Path(__file__).parent / "golden"
NAN, INF = math.nan, math.inf

CAT = NodeFlags.CATEGORICAL
DL = NodeFlags.DEFAULT_LEFT
SET_RIGHT = NodeFlags.CAT_SET_RIGHT
INVALID_DEFAULT = NodeFlags.CAT_INVALID_DEFAULT
TRUNC_FIRST = NodeFlags.CAT_TRUNC_FIRST
M_NONE = NodeFlags.MISSING_NONE << NodeFlags.MISSING_SHIFT
M_ZERO = NodeFlags.MISSING_ZERO << NodeFlags.MISSING_SHIFT
M_NAN = NodeFlags.MISSING_NAN << NodeFlags.MISSING_SHIFT


def test_flag_constants_match_documented_bits():
    # The docstring fixes these bits (bits 0-3 are LightGBM's decision_type); the naive
    # reference spells them out independently.
    assert (CAT, DL, SET_RIGHT, INVALID_DEFAULT, TRUNC_FIRST) == (1, 2, 16, 32, 64)
    assert (M_NONE, M_ZERO, M_NAN) == (0, 4, 8)
    assert list(NodeFlags.missing_type([0, 4, 8, 4 | 3])) == [0, 1, 2, 1]


# ============================================================================ helpers
def stump(flags=0, threshold=0.0, left_value=1.0, right_value=2.0, feature=0, **kw):
    """One split (node 0) with leaves 1 (left) and 2 (right)."""
    kw.setdefault("n_features", feature + 1)
    return TreeEnsemble(
        tree_ptr=[0, 3], feature=[feature, -1, -1], threshold=[threshold, 0, 0],
        left=[1, -1, -1], right=[2, -1, -1], value=[0.0, left_value, right_value],
        flags=[flags, 0, 0], **kw)


def cat_stump(flags, words, **kw):
    """A categorical stump on feature 0: leaf value 1.0 on the left, 2.0 on the right."""
    return stump(flags=CAT | flags, cat_offset=[0, 0, 0], cat_nwords=[len(words), 0, 0],
                 cat_bitsets=np.array(words, dtype=np.uint32), **kw)


def check_against_naive(ens, X, n_jobs=None):
    X = np.asarray(X)
    got = ens.predict_raw(X, n_jobs=n_jobs)
    want = naive_predict_raw(ens, X)
    assert got.dtype == np.dtype(ens.sum_dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return got


def routes(ens, xs):
    """Leaf value reached for each scalar x in ``xs`` (one-feature ensembles)."""
    X = np.array(xs, dtype=np.float64).reshape(-1, 1)
    return list(check_against_naive(ens, X))


# ============================================================================ hand-made cases
def test_lightgbm_missing_none():
    # NONE: NaN becomes 0.0 and is compared like any value; the default bit is irrelevant.
    ens = stump(flags=M_NONE | DL, threshold=0.5)
    xs = [NAN, 0.0, 0.5, np.nextafter(0.5, INF), 1e-36, -INF, INF]
    # NaN->0<=0.5 L; 0 L; 0.5<=0.5 L; next-up R; tiny L; -inf L; +inf R.
    assert routes(ens, xs) == [1, 1, 1, 2, 1, 1, 2]
    # With a negative threshold NaN (=0) goes right although DEFAULT_LEFT is set.
    ens = stump(flags=M_NONE | DL, threshold=-0.5)
    assert routes(ens, [NAN, -0.5, -0.0]) == [2, 1, 2]


def test_lightgbm_missing_zero():
    # ZERO, default right: NaN -> 0 -> |0| <= K -> default (right), though 0 <= 1 would go
    # left. K is LightGBM's kZeroThreshold = 1e-35f = 1.0000000180025095e-35 as a double, so
    # -0.0, +-1e-35, 1e-36 and the next double above 1e-35 count as zero; the next double
    # above K does not.
    K = f32(1e-35)
    ens = stump(flags=M_ZERO, threshold=1.0)
    xs = [NAN, 0.0, -0.0, 1e-35, -1e-35, 1e-36, np.nextafter(1e-35, 1.0), K, -K,
          np.nextafter(K, 1.0), -np.nextafter(K, 1.0), 0.5, 1.0, 1.5]
    assert routes(ens, xs) == [2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 2]
    # Same with default left and a negative threshold: zeros now go left, though 0 > -1.
    ens = stump(flags=M_ZERO | DL, threshold=-1.0)
    assert routes(ens, [NAN, -0.0, 1e-35, 2e-35, -1.0, -2.0]) == [1, 1, 1, 2, 1, 1]


def test_lightgbm_missing_nan():
    # NAN, default left: NaN goes left; 0.0 is an ordinary value (0 > -1 -> right).
    ens = stump(flags=M_NAN | DL, threshold=-1.0)
    assert routes(ens, [NAN, 0.0, -0.0, -1.0, np.nextafter(-1.0, 0.0), -INF, INF]) == [
        1, 2, 2, 1, 2, 1, 2]
    # Default right sends NaN right.
    ens = stump(flags=M_NAN, threshold=-1.0)
    assert routes(ens, [NAN, -5.0]) == [2, 1]


def test_decision_strict_and_non_strict():
    x = [1.0, np.nextafter(1.0, 0.0), np.nextafter(1.0, 2.0)]
    # "<=": equal goes left; "<": equal goes right.
    assert routes(stump(flags=M_NAN, threshold=1.0, decision="<="), x) == [1, 1, 2]
    assert routes(stump(flags=M_NAN, threshold=1.0, decision="<"), x) == [2, 1, 2]


def test_xgboost_float32_input_rounding():
    t = f32(0.1)  # 0.10000000149011612, a float32 threshold
    assert t > 0.1
    below64 = np.nextafter(t, 0.0)   # a float64 just below t: rounds onto t in float32
    below32 = float(np.nextafter(np.float32(t), np.float32(0)))  # 0.09999999403953552
    mid = (t + below32) / 2          # tie between the two float32s: rounds to even = below32
    xs = [0.1, below64, t, below32, mid, np.nextafter(mid, 1.0)]
    ens = stump(flags=M_NAN, threshold=t, decision="<", precision="float32", sum_dtype="float32")
    # 0.1 -> t: t < t false -> right. below64 -> t -> right. t -> right. below32 -> left.
    # The tie rounds to even (below32) -> left; one double above the tie rounds up to t -> right.
    assert routes(ens, xs) == [2, 2, 2, 1, 1, 2]
    # In double precision the same inputs below t go left.
    ens64 = stump(flags=M_NAN, threshold=t, decision="<", precision="float64")
    assert routes(ens64, xs) == [1, 1, 2, 1, 1, 1]
    # Float64 values beyond float32's range round to +-inf and are ordinary values.
    ens_big = stump(flags=M_NAN, threshold=3.0e38, decision="<", precision="float32")
    assert routes(ens_big, [1e39, -1e39, 3.0e38]) == [2, 1, 2]


def test_xgboost_missing_sentinel():
    # missing=-999: the sentinel reads as NaN and follows default_left; a neighbouring value
    # is an ordinary (small) number.
    ens = stump(flags=M_NAN | DL, threshold=-5.0, decision="<", precision="float32",
                missing_value=-999.0)
    assert routes(ens, [-999.0, NAN, np.nextafter(-999.0, 0.0), -6.0, 0.0]) == [1, 1, 1, 1, 2]
    ens = stump(flags=M_NAN, threshold=-5.0, decision="<", precision="float32",
                missing_value=-999.0)
    assert routes(ens, [-999.0, NAN, -1000.0, -6.0, 0.0]) == [2, 2, 1, 1, 2]


def test_xgboost_sentinel_compared_after_float32_rounding():
    # XGBRegressor(missing=-999.0).predict routes nextafter(-999.0, 0) like NaN, and with
    # missing=0.1 routes float32(0.1) = 0.10000000149011612 like NaN.
    ens = stump(flags=M_NAN, threshold=-5.0, decision="<", precision="float32",
                missing_value=-999.0)
    assert routes(ens, [np.nextafter(-999.0, 0.0)]) == [2]  # missing -> default right
    ens = stump(flags=M_NAN | DL, threshold=0.05, decision="<", precision="float32",
                missing_value=0.1)
    assert routes(ens, [f32(0.1)]) == [1]  # missing -> default left


def test_lightgbm_categorical():
    # LightGBM: in-set goes left, NaN right (default right), int(x) < 0 right; cast first, so
    # -0.5 -> category 0 and 2.9 -> 2. Set {0, 2, 33} over two words.
    ens = cat_stump(TRUNC_FIRST, [0b101, 1 << 1])
    xs = [0.0, -0.5, 2.9, 1.0, 33.0, 33.99, 32.0, 64.0, -1.0, NAN, 500.0, 2.0**31 + 5, INF,
          -INF, 2.0**24]
    want = [1, 1, 1, 2, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2]
    assert routes(ens, xs) == want


def test_xgboost_categorical():
    # XGBoost: in-set goes right (CAT_SET_RIGHT); negatives (-0.5 too: no truncation first)
    # and values beyond the set go left; fractions truncate; NaN follows default_left.
    ens = cat_stump(SET_RIGHT, [(1 << 1) | (1 << 3)], decision="<", precision="float32",
                    sum_dtype="float32")
    xs = [1.0, 3.0, 3.7, 2.0, 0.0, -1.0, -0.5, 500.0, 2.0**24, 2.0**31 + 5, NAN]
    assert routes(ens, xs) == [2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 2]
    ens = cat_stump(SET_RIGHT | DL, [(1 << 1) | (1 << 3)], decision="<", precision="float32")
    assert routes(ens, [NAN, 1.0]) == [1, 2]
    # float32 rounding happens before truncation: 3.9999999999 -> 4.0f -> category 4 (left);
    # in double it would be category 3 (right).
    assert routes(ens, [3.9999999999]) == [1]


def test_sklearn_categorical_invalid_default():
    # scikit-learn HGB: in-set left, negative categories are missing -> default direction.
    ens = cat_stump(INVALID_DEFAULT | DL, [(1 << 1) | (1 << 4)])
    xs = [-1.0, -0.5, NAN, 1.0, 4.0, 4.5, 2.0, 0.0, 500.0]
    assert routes(ens, xs) == [1, 1, 1, 1, 1, 1, 2, 2, 2]
    # Default right sends invalid and NaN right.
    ens = cat_stump(INVALID_DEFAULT, [(1 << 1) | (1 << 4)])
    assert routes(ens, [-1.0, NAN, 1.0]) == [2, 2, 1]
    # Without CAT_INVALID_DEFAULT a negative value is simply "not in the set" (right here,
    # since in-set goes left), even with DEFAULT_LEFT set.
    ens = cat_stump(DL, [0xFFFFFFFF])
    assert routes(ens, [-1.0, -0.5, -0.0, 31.0, 32.0, NAN]) == [2, 2, 1, 1, 2, 1]
    # TRUNC_FIRST + INVALID_DEFAULT: -0.5 truncates to 0 (valid); -1.0 is invalid -> default.
    ens = cat_stump(TRUNC_FIRST | INVALID_DEFAULT | DL, [0b10])
    assert routes(ens, [-0.5, -1.0, 1.0]) == [2, 1, 1]


def test_categorical_empty_set_and_missing_bits_ignored():
    # cat_nwords = 0: nothing is in the set. The missing-type bits do not apply to
    # categorical nodes (NaN -> default, 0.0 is category 0).
    ens = cat_stump(M_ZERO | DL, [])
    assert routes(ens, [0.0, 1.0, NAN, -1.0]) == [2, 2, 1, 2]


def test_float32_sum_order_and_dart_weights():
    # XGBoost sums base + t0 + t1 in float32, in tree order: 1 + 1e8 = 1e8 in float32 (ulp 8),
    # then -1e8 gives 0; double summation would give 1.
    kw = dict(tree_ptr=[0, 1, 2], feature=[-1, -1], threshold=[0, 0], left=[-1, -1],
              right=[-1, -1], value=[1e8, -1e8], n_features=1, base_score=[1.0])
    X = np.zeros((1, 1))
    assert check_against_naive(TreeEnsemble(**kw, sum_dtype="float32"), X)[0] == 0.0
    assert check_against_naive(TreeEnsemble(**kw, sum_dtype="float64"), X)[0] == 1.0
    # Dart weights: each contribution is float32(float32(leaf) * float32(weight)).
    ens = TreeEnsemble(tree_ptr=[0, 1, 2], feature=[-1, -1], threshold=[0, 0], left=[-1, -1],
                       right=[-1, -1], value=[0.1, 0.2], tree_weight=[0.3, 1 / 3],
                       n_features=1, base_score=[0.5], sum_dtype="float32")
    o = np.float32
    want = (o(0.5) + o(0.1) * o(0.3)) + o(0.2) * o(1 / 3)
    got = check_against_naive(ens, X)
    assert got.dtype == np.float32 and got[0] == want
    ens64 = TreeEnsemble(**{**ens.__dict__, "sum_dtype": "float64"})
    assert check_against_naive(ens64, X)[0] == (0.5 + 0.1 * 0.3) + 0.2 * (1 / 3)


def test_average_output_and_multiple_outputs():
    # Random-forest mode: each output's tree sum / its number of trees, then + base.
    # Output 0 gets trees 0 and 2 (values 1 and 4 for x=0), output 1 gets tree 1 (value 10),
    # output 2 gets no tree (just its base).
    ens = TreeEnsemble(
        tree_ptr=[0, 3, 4, 5], feature=[0, -1, -1, -1, -1], threshold=[0.5, 0, 0, 0, 0],
        left=[1, -1, -1, -1, -1], right=[2, -1, -1, -1, -1], value=[0, 1.0, 2.0, 10.0, 4.0],
        flags=[M_NAN, 0, 0, 0, 0], n_features=1, n_outputs=3, tree_output=[0, 1, 0],
        base_score=[0.25, -1.0, 7.0], average_output=True)
    got = check_against_naive(ens, [[0.0], [1.0]])
    np.testing.assert_array_equal(got, [[(1 + 4) / 2 + 0.25, 10 - 1.0, 7.0],
                                        [(2 + 4) / 2 + 0.25, 10 - 1.0, 7.0]])
    ens32 = TreeEnsemble(**{**ens.__dict__, "sum_dtype": "float32"})
    got32 = check_against_naive(ens32, [[0.0], [1.0]])
    assert got32.dtype == np.float32 and got32.shape == (2, 3)
    ens_sum = TreeEnsemble(**{**ens.__dict__, "average_output": False})
    np.testing.assert_array_equal(check_against_naive(ens_sum, [[0.0]]), [[5.25, 9.0, 7.0]])


def test_no_trees_and_empty_input():
    ens = TreeEnsemble(tree_ptr=[0], feature=[], threshold=[], left=[], right=[], value=[],
                       n_features=2, n_outputs=2, base_score=[0.5, -0.5])
    np.testing.assert_array_equal(check_against_naive(ens, np.zeros((3, 2))), [[0.5, -0.5]] * 3)
    assert traversal_apply(ens, np.zeros((3, 2))).shape == (3, 0)
    one = stump(threshold=0.0)
    assert one.predict_raw(np.zeros((0, 1))).shape == (0,)
    assert traversal_apply(one, np.zeros((0, 1))).shape == (0, 1)


def test_input_checks_and_integer_input():
    ens = stump(flags=M_NAN, threshold=2.0, n_features=2)
    with pytest.raises(ValueError, match="X has 3 features, but the ensemble was built for 2"):
        ens.predict_raw(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="2-D"):
        ens.predict_raw(np.zeros(2))
    with pytest.raises(ValueError, match="numeric"):
        ens.predict_raw(np.array([["a", "b"]]))
    Xi = np.array([[2, 0], [3, 0]], dtype=np.int64)
    np.testing.assert_array_equal(check_against_naive(ens, Xi), [1.0, 2.0])


def chain_tree(depth, direction_pattern, n_features=2):
    """A deep unbalanced tree: each split's continuing child follows ``direction_pattern``."""
    feature, threshold, left, right, value, flags = [], [], [], [], [], []
    # Build in pre-order: node i splits on feature i % n_features at threshold -i.
    node = 0
    for d in range(depth):
        go_left = direction_pattern[d % len(direction_pattern)] == "L"
        cont, leaf = node + 2, node + 1
        feature.append(d % n_features)
        threshold.append(float(-d) if d % 2 else float(d) / 7)
        left.append(cont if go_left else leaf)
        right.append(leaf if go_left else cont)
        value.append(0.0)
        flags.append([M_NONE, M_ZERO | DL, M_NAN, M_NAN | DL][d % 4])
        feature.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        value.append(float(d + 1))
        flags.append(0)
        node += 2
    feature.append(-1)
    threshold.append(0.0)
    left.append(-1)
    right.append(-1)
    value.append(-1.0)
    flags.append(0)
    return feature, threshold, left, right, value, flags


def test_deep_unbalanced_trees_and_many_leaves():
    parts = [chain_tree(40, "L"), chain_tree(31, "RLR"), chain_tree(70, "LR")]
    ptr = np.cumsum([0] + [len(p[0]) for p in parts])
    cols = [np.concatenate([p[i] for p in parts]) for i in range(6)]
    ens = TreeEnsemble(tree_ptr=ptr, feature=cols[0], threshold=cols[1], left=cols[2],
                       right=cols[3], value=cols[4], flags=cols[5], n_features=2)
    assert ens.max_depth() == 70 and list(ens.n_leaves()) == [41, 32, 71]
    rng = np.random.default_rng(0)
    pool = np.array([NAN, 0.0, -0.0, 1e-36, 5.0, -5.0, -40.0, 3.0, 1 / 7, 2 / 7])
    X = rng.choice(np.concatenate([pool, -np.arange(70.0), np.arange(70.0) / 7]), size=(300, 2))
    check_against_naive(ens, X)
    np.testing.assert_array_equal(traversal_apply(ens, X), naive_apply(ens, X))


# ============================================================================ hypothesis
@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(ensemble_and_inputs())
def test_predict_raw_and_apply_match_naive(case):
    ens, X = case
    check_against_naive(ens, X)
    np.testing.assert_array_equal(traversal_apply(ens, X), naive_apply(ens, X))


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(ensemble_and_inputs(max_trees=8))
def test_traversal_chunks_do_not_change_results(case):
    """The traversal walks each tree for a chunk of rows at a time: any chunk size, a
    partial last chunk included, the lean walk and its heap-ordered top levels give every
    row the reference's bits."""
    ens, X = case
    Xbig = np.tile(X, (150 // X.shape[0] + 1, 1))[:151]
    r = routing(ens)
    # without NaN, chunks of a model with no categorical or ZERO-type node take the lean walk
    for Xin in (Xbig, np.nan_to_num(Xbig, nan=1.5)):
        expected = naive_predict_raw(ens, Xin)
        lean = lean_routing(ens)
        # the lean walk's first levels in heap order: none, fewer than, as many as and more
        # than the trees' depths (leaves above the last level pass rows down)
        for chunk, lean_run, depth in ((1, False, 0), (7, lean, 0), (64, lean, 1),
                                       (1000, lean, 3), (64, lean, 8)):
            out = np.empty((Xin.shape[0], ens.n_outputs))
            predict_raw_traversal(_as_kernel_input(ens, Xin), *node_arrays(ens), r.strict,
                                  r.f32_inputs, r.sum_f32, r.missing_value, r.has_sentinel,
                                  r.average, out, chunk, lean_run, *top_levels(ens, depth))
            got = out.astype(np.float32) if ens.sum_dtype == "float32" else out
            np.testing.assert_array_equal(got[:, 0] if ens.n_outputs == 1 else got, expected)


def test_lean_walk_matches_naive_on_numeric_trees():
    """A model of numeric nodes with no ZERO missing type is walked by comparisons alone in
    chunks without NaN (strict and not, float32 inputs, infinities, a sentinel that is
    never met), and by the full rule in chunks with one."""
    parts = [chain_tree(40, "L"), chain_tree(31, "RLR"), chain_tree(70, "LR")]
    ptr = np.cumsum([0] + [len(p[0]) for p in parts])
    cols = [np.concatenate([p[i] for p in parts]) for i in range(6)]
    rng = np.random.default_rng(1)
    pool = np.array([0.0, -0.0, 1e-36, 5.0, -5.0, -40.0, 3.0, 1 / 7, 2 / 7, np.inf, -np.inf])
    X = rng.choice(np.concatenate([pool, -np.arange(70.0), np.arange(70.0) / 7]), size=(300, 2))
    X = np.tile(X, (8, 1))  # enough rows for the heap-ordered top levels
    X[2000:, 0] = NAN
    for decision, precision, missing in (("<=", "float64", NAN), ("<", "float32", -999.0)):
        flags = [(int(f) & ~int(NodeFlags.MISSING_MASK))
                 | (int(NodeFlags.MISSING_NAN) << NodeFlags.MISSING_SHIFT)
                 if left >= 0 else f for f, left in zip(cols[5], cols[2])]
        ens = TreeEnsemble(tree_ptr=ptr, feature=cols[0], threshold=cols[1], left=cols[2],
                           right=cols[3], value=cols[4], flags=flags, n_features=2,
                           decision=decision, precision=precision, missing_value=missing)
        assert lean_routing(ens) and X.shape[0] >= TOP_LEVELS_MIN_ROWS
        check_against_naive(ens, X)


def test_traversal_chunk_rows_bounds():
    assert chunk_rows(50_000, 2, 50, 8, l2_bytes=1 << 20) == MAX_CHUNK_ROWS
    assert chunk_rows(50_000, 2, 500, 8, l2_bytes=1 << 20) == (1 << 19) // 4_000
    assert chunk_rows(4_000, 16, 50, 8, l2_bytes=1 << 20) == 4_000 // (16 * CHUNKS_PER_THREAD)
    assert chunk_rows(10, 2, 50, 8) == 16 and chunk_rows(0, 1, 0, 8) == 16


@settings(deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(ensemble_and_inputs(max_trees=8))
def test_depths_match_a_walk_of_each_tree(case):
    """``depths`` (a level of every tree at a time) against a node-by-node walk."""
    ens, _ = case
    want = np.zeros(ens.n_nodes, dtype=np.int32)
    for t in range(ens.n_trees):
        start, stack = ens.tree_ptr[t], [0]
        while stack:
            node = stack.pop()
            for child in (ens.left[start + node], ens.right[start + node]):
                if child >= 0:
                    want[start + child] = want[start + node] + 1
                    stack.append(child)
    np.testing.assert_array_equal(ens.depths(), want)


@settings(deadline=None, max_examples=10, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(ensemble_and_inputs(max_trees=8))
def test_n_jobs_does_not_change_results(case):
    ens, X = case
    # Several 256-row chunks so that both threads get work.
    Xbig = np.tile(X, (700 // X.shape[0] + 1, 1))
    one = ens.predict_raw(Xbig, n_jobs=1)
    two = ens.predict_raw(Xbig, n_jobs=2)
    assert one.dtype == two.dtype
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, ens.predict_raw(Xbig, n_jobs=-1))
    np.testing.assert_array_equal(traversal_apply(ens, Xbig, n_jobs=1),
                                  traversal_apply(ens, Xbig, n_jobs=2))
    n = X.shape[0]
    np.testing.assert_array_equal(one[:n], naive_predict_raw(ens, X))


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(ensemble_and_inputs())
def test_save_load_and_pickle_round_trip(tmp_path_factory, case):
    ens, X = case
    path = tmp_path_factory.mktemp("rt") / "model.json"
    ens.save(path)
    for back in (TreeEnsemble.load(path), pickle.loads(pickle.dumps(ens))):
        assert back.equals(ens) and ens.equals(back)
        assert back.source == ens.source
        assert back.feature_names == ens.feature_names
        assert repr(back.missing_value) == repr(ens.missing_value)
        a, b = ens.predict_raw(X), back.predict_raw(X)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ens.predict(X), back.predict(X))


# ============================================================================ validate()
def _valid_kwargs():
    # tree 0: 0 -> (1, 2), 2 -> (3, 4); tree 1: a categorical stump; tree 2: one leaf.
    return dict(
        tree_ptr=[0, 5, 8, 9],
        feature=[0, -1, 1, -1, -1, 1, -1, -1, -1],
        threshold=[0.5, 0, 1.5, 0, 0, 0, 0, 0, 0],
        left=[1, -1, 3, -1, -1, 1, -1, -1, -1],
        right=[2, -1, 4, -1, -1, 2, -1, -1, -1],
        value=[0, 1.0, 0, 2.0, 3.0, 0, 4.0, 5.0, 6.0],
        flags=[0, 0, 0, 0, 0, CAT, 0, 0, 0],
        cat_offset=[0] * 9, cat_nwords=[0, 0, 0, 0, 0, 2, 0, 0, 0],
        cat_bitsets=np.array([1, 2], dtype=np.uint32),
        n_features=2, n_outputs=2, tree_output=[0, 1, 0], base_score=[0.0, 0.0])


def _with(**changes):
    kw = copy.deepcopy(_valid_kwargs())
    for name, change in changes.items():
        if callable(change):
            kw[name] = change(list(kw[name]))
        else:
            kw[name] = change
    return kw


def _set(i, v):
    def f(arr):
        arr[i] = v
        return arr
    return f


def test_valid_kwargs_are_valid():
    ens = TreeEnsemble(**_valid_kwargs())
    assert ens.n_trees == 3 and ens.n_nodes == 9
    assert list(ens.n_leaves()) == [3, 2, 1] and ens.max_depth() == 2


# A cycle that the "one parent per node" count cannot see: tree 0 becomes
# 0 -> (1, 2); 3 -> (4, 5); 4 -> (3, 6): every non-root node has exactly one parent, but 3 and
# 4 form a loop unreachable from the root.
_CYCLE = dict(tree_ptr=[0, 7], feature=[0, -1, -1, 0, 0, -1, -1], threshold=[0.0] * 7,
              left=[1, -1, -1, 4, 3, -1, -1], right=[2, -1, -1, 5, 6, -1, -1],
              value=[0.0] * 7, n_features=1)

BAD = {
    "cycle": (_CYCLE, r"tree 0, node 3 lies on a cycle"),
    "child is the root": (_with(left=_set(2, 0), right=_set(2, 4)),
                          r"tree 0, node 0 the root is some node's child"),
    "orphan": (_with(tree_ptr=[0, 6, 9, 10], feature=lambda a: a[:5] + [-1] + a[5:],
                     threshold=lambda a: a[:5] + [0] + a[5:], left=lambda a: a[:5] + [-1] + a[5:],
                     right=lambda a: a[:5] + [-1] + a[5:], value=lambda a: a[:5] + [7] + a[5:],
                     flags=lambda a: a[:5] + [0] + a[5:], cat_offset=lambda a: a[:5] + [0] + a[5:],
                     cat_nwords=lambda a: a[:5] + [0] + a[5:]),
               r"tree 0, node 5 is not reachable from the root"),
    "shared child": (_with(right=_set(0, 1)), r"tree 0, node 1 is the child of several nodes"),
    "one child": (_with(right=_set(2, -1)), r"tree 0, node 2 has exactly one child"),
    "child out of range": (_with(right=_set(5, 3)), r"tree 1, node 0 right child 3 is outside"),
    "negative-looking leaf child": (_with(left=_set(5, 5)), r"tree 1, node 0 left child 5"),
    "feature out of range": (_with(feature=_set(2, 2)), r"tree 0, node 2 splits on feature 2"),
    "negative feature": (_with(feature=_set(0, -1)), r"tree 0, node 0 splits on feature -1"),
    "non-finite leaf": (_with(value=_set(3, NAN)), r"leaf values must be finite"),
    "infinite leaf": (_with(value=_set(8, -INF)), r"leaf values must be finite"),
    "non-finite threshold": (_with(threshold=_set(2, INF)),
                             r"tree 0, node 2 has a non-finite threshold"),
    "tree_ptr not from 0": (_with(tree_ptr=[1, 5, 8, 9]), r"tree_ptr must start at 0"),
    "empty tree": (_with(tree_ptr=[0, 5, 5, 8, 9], tree_output=[0, 0, 1, 0]),
                   r"tree_ptr must start at 0 and increase strictly"),
    "tree_ptr too long": (_with(tree_ptr=[0, 5, 8, 10]), r"feature has shape \(9,\); expected"),
    "tree_ptr 2-D": (_with(tree_ptr=[[0, 5, 8, 9]]), r"tree_ptr must be 1-D"),
    "base_score shape": (_with(base_score=[0.0]), r"base_score must have n_outputs=2 entries"),
    "base_score 2-D": (_with(base_score=[[0.0, 0.0]]), r"base_score must have n_outputs=2"),
    "tree_output too big": (_with(tree_output=[0, 2, 0]), r"tree_output values must lie in"),
    "tree_output negative": (_with(tree_output=[0, -1, 0]), r"tree_output values must lie in"),
    "tree_output length": (_with(tree_output=[0, 1]), r"tree_output must have one entry"),
    "tree_weight length": (_with(tree_weight=[1.0]), r"tree_weight must have one entry"),
    "category set beyond bitsets": (_with(cat_nwords=_set(5, 3)),
                                    r"tree 1, node 0 has a category set outside cat_bitsets"),
    "category offset negative": (_with(cat_offset=_set(5, -1)), r"category set outside"),
    "unknown output_transform": (_with(output_transform="softplus"),
                                 r"output_transform='softplus'; expected one of"),
    "unknown decision": (_with(decision="<<"), r"decision='<<'"),
    "unknown precision": (_with(precision="float16"), r"precision='float16'"),
    "unknown sum_dtype": (_with(sum_dtype="int"), r"sum_dtype='int'"),
    "n_features": (_with(n_features=0, feature=[-1] * 9), r"n_features must be >= 1"),
    "feature_names length": (_with(feature_names=["a"]), r"feature_names has 1 names for 2"),
    "node array length": (_with(value=lambda a: a[:-1]), r"value has shape \(8,\)"),
    "missing type 3": (_with(flags=_set(0, 3 << 2)), r"tree 0, node 0 has missing type 3"),
    "softmax with one output": (_with(n_outputs=1, base_score=[0.0], tree_output=[0, 0, 0],
                                      output_transform="softmax"),
                                r"output_transform='softmax' needs n_outputs > 1"),
    "unknown frame_rule": (_with(frame_rule="polars"), r"frame_rule='polars'"),
    "categories length": (_with(categories=[None]), r"one entry per feature \(2\)"),
    "categories type": (_with(categories=[None, {"type": "float64", "values": [1]}]),
                        r"categories\[1\] must be None or"),
    "categories values": (_with(categories=[{"type": "int64", "values": ["a"]}, None]),
                          r"categories\[0\] holds values that are not all int"),
    "pandas_categorical": (_with(pandas_categorical=["a", "b"]),
                           r"pandas_categorical must be a list of lists"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_validate_rejects(name):
    kw, msg = BAD[name]
    with pytest.raises(ValueError, match=msg):
        TreeEnsemble(**copy.deepcopy(kw))


def test_validate_catches_later_mutation():
    ens = TreeEnsemble(**_valid_kwargs())
    ens.left[2] = 0
    with pytest.raises(ValueError, match="root is some node's child"):
        ens.validate()


def test_non_finite_threshold_message_names_the_numeric_node():
    # A categorical node may carry any threshold (it is unused); the error must name the
    # numeric node at fault, not an earlier categorical one.
    kw = _with(tree_ptr=[0, 5, 8, 11], feature=lambda a: a[:8] + [0, -1, -1],
               threshold=lambda a: a[:5] + [NAN, 0, 0, INF, 0, 0],
               left=lambda a: a[:8] + [1, -1, -1], right=lambda a: a[:8] + [2, -1, -1],
               value=lambda a: a[:8] + [0, 1, 2], flags=lambda a: a[:8] + [0, 0, 0],
               cat_offset=lambda a: a[:8] + [0, 0, 0], cat_nwords=lambda a: a[:8] + [0, 0, 0])
    with pytest.raises(ValueError, match=r"tree 2, node 0 has a non-finite threshold"):
        TreeEnsemble(**kw)


# ============================================================================ transforms
def _exp(v):
    try:
        return math.exp(v)
    except OverflowError:
        return INF


RAW = [0.0, -0.0, 1e-300, 0.3, -0.3, 1.0, -1.0, 2.5, 17.3, -17.3, 36.7, -36.7, 40.0, 709.0,
       -709.0, 710.0, -710.0, 745.2, -746.0, 1e8, -1e8, 0.1, 1 / 3, f32(0.1)]


def _leaves_ensemble(values, n_outputs=1, **kw):
    """Trees of one leaf each: tree i (of output i % n_outputs) adds values[i]."""
    n = len(values)
    return TreeEnsemble(tree_ptr=np.arange(n + 1), feature=[-1] * n, threshold=[0.0] * n,
                        left=[-1] * n, right=[-1] * n, value=values, n_features=1,
                        n_outputs=n_outputs, tree_output=[i % n_outputs for i in range(n)],
                        **kw)


@pytest.mark.parametrize("scale", [1.0, 2.0, 0.37])
def test_sigmoid_transform_exact(scale):
    for v in RAW:
        ens = _leaves_ensemble([v], output_transform="sigmoid", transform_params={"scale": scale})
        got = ens.predict(np.zeros((1, 1)))
        assert got.dtype == np.float64
        assert got[0] == 1.0 / (1.0 + _exp(-scale * v)), v
    # Default scale is 1.
    ens = _leaves_ensemble([0.3], output_transform="sigmoid")
    assert ens.predict(np.zeros((1, 1)))[0] == 1.0 / (1.0 + math.exp(-0.3))


def test_sigmoid_on_float32_sums():
    # The float32 raw score is widened to double before the (double) sigmoid.
    ens = _leaves_ensemble([0.1, 0.2], output_transform="sigmoid", sum_dtype="float32",
                           base_score=[0.5])
    raw = ens.predict_raw(np.zeros((1, 1)))
    assert raw.dtype == np.float32
    r = float(raw[0])
    assert r == float(np.float32(np.float32(0.5) + np.float32(0.1)) + np.float32(0.2))
    assert ens.predict(np.zeros((1, 1)))[0] == 1.0 / (1.0 + math.exp(-r))


def test_exp_transform_exact():
    for v in RAW:
        if v > 709.7:
            continue  # overflows: checked below
        ens = _leaves_ensemble([v], output_transform="exp")
        assert ens.predict(np.zeros((1, 1)))[0] == math.exp(v), v
    ens = _leaves_ensemble([710.0], output_transform="exp")
    assert ens.predict(np.zeros((1, 1)))[0] == INF


@pytest.mark.parametrize("n_outputs", [2, 3, 5])
def test_softmax_transform_exact(n_outputs):
    rng = np.random.default_rng(n_outputs)
    values = list(rng.choice(RAW[:14], size=4 * n_outputs)) + list(
        rng.normal(size=2 * n_outputs))
    ens = _leaves_ensemble(values, n_outputs=n_outputs, output_transform="softmax",
                           base_score=rng.normal(size=n_outputs))
    X = np.zeros((2, 1))
    raw = ens.predict_raw(X)
    got = ens.predict(X)
    assert got.shape == (2, n_outputs) and got.dtype == np.float64
    for i in range(2):
        r = [float(v) for v in raw[i]]
        m = max(r)
        e = [math.exp(v - m) for v in r]
        total = 0.0
        for v in e:
            total += v
        assert list(got[i]) == [v / total for v in e]


def test_identity_transform_returns_raw():
    ens = _leaves_ensemble([0.1, 0.2], sum_dtype="float32")
    X = np.zeros((3, 1))
    np.testing.assert_array_equal(ens.predict(X), ens.predict_raw(X))
    assert ens.predict(X).dtype == np.float32


# ============================================================================ persistence
def _rich_ensemble(missing_value=NAN):
    ens = TreeEnsemble(**_with(feature_names=["alpha", "beta"], missing_value=missing_value,
                               flags=_set(5, CAT | SET_RIGHT | DL),
                               cat_bitsets=np.array([0xDEADBEEF, 0x80000001], dtype=np.uint32),
                               transform_params={"scale": 0.5}, output_transform="softmax",
                               source={"library": "test", "version": "0"}))
    return ens


@pytest.mark.parametrize("missing_value", [NAN, -999.0, 0.0, -0.0, INF, 1e-35, 0.1])
def test_save_load_round_trip(tmp_path, missing_value):
    ens = _rich_ensemble(missing_value)
    path = tmp_path / "m.json"
    ens.save(path)
    back = TreeEnsemble.load(path)
    assert back.equals(ens)
    assert repr(back.missing_value) == repr(float(missing_value))
    assert back.feature_names == ["alpha", "beta"]
    np.testing.assert_array_equal(back.cat_bitsets, [0xDEADBEEF, 0x80000001])
    assert back.cat_bitsets.dtype == np.uint32
    for name in TreeEnsemble._ARRAYS:
        a, b = getattr(ens, name), getattr(back, name)
        assert a.dtype == b.dtype and a.flags.writeable and b.flags.writeable
    X = np.array([[0.4, 0.0], [0.6, 1.0], [0.6, 2.0], [NAN, 31.0], [missing_value, 32.0],
                  [0.6, missing_value]])
    np.testing.assert_array_equal(back.predict_raw(X), ens.predict_raw(X))
    np.testing.assert_array_equal(back.predict_raw(X), naive_predict_raw(back, X))
    # The file is plain JSON with the documented header.
    doc = json.loads(path.read_text())
    assert doc["format"] == "skltr-model" and doc["kind"] == "TreeEnsemble"
    assert doc["schema_version"] == "1.3"


def test_equals_detects_differences():
    a = _rich_ensemble()
    assert a.equals(_rich_ensemble()) and not a.equals("x")
    b = _rich_ensemble()
    b.value[1] = np.nextafter(b.value[1], 2.0)
    assert not a.equals(b)
    assert not a.equals(_rich_ensemble(-999.0))
    c = _rich_ensemble()
    c.feature_names = ["alpha", "gamma"]
    assert not a.equals(c)


def _doc(ens):
    return json.loads(json.dumps(ens.to_document()))


def test_load_unknown_major_version(tmp_path):
    doc = _doc(_rich_ensemble())
    doc["schema_version"] = "2.0"
    p = tmp_path / "m.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"schema version 2\.0.*reads schema 1\.x"):
        TreeEnsemble.load(p)
    doc["schema_version"] = "0.9"
    with pytest.raises(ValueError, match=r"schema version 0\.9.*reads schema 1\.x"):
        TreeEnsemble.from_document(doc)
    doc["schema_version"] = "one"
    with pytest.raises(ValueError, match="invalid schema_version"):
        TreeEnsemble.from_document(doc)


def test_load_newer_minor_version_warns_and_ignores_unknown_fields():
    ens = _rich_ensemble()
    doc = _doc(ens)
    doc["schema_version"] = "1.7"
    doc["meta"]["a_future_field"] = {"x": 1}
    doc["arrays"]["a_future_array"] = _model_io.encode_array(np.arange(3))
    with pytest.warns(UserWarning, match=r"schema 1\.7, newer than"):
        back = TreeEnsemble.from_document(doc)
    assert back.equals(ens)
    # The same minor version does not warn.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TreeEnsemble.from_document(_doc(ens))


def test_load_truncated_or_corrupt_array():
    doc = _doc(_rich_ensemble())
    entry = doc["arrays"]["threshold"]
    raw = _model_io.base64.b64decode(entry["data"])
    entry["data"] = _model_io.base64.b64encode(raw[:-8]).decode()
    with pytest.raises(ValueError, match="truncated or corrupt"):
        TreeEnsemble.from_document(doc)
    doc = _doc(_rich_ensemble())
    doc["arrays"]["value"]["data"] = doc["arrays"]["value"]["data"][:-3]  # broken base64
    with pytest.raises(ValueError, match="malformed array entry"):
        TreeEnsemble.from_document(doc)
    doc = _doc(_rich_ensemble())
    doc["arrays"]["value"]["dtype"] = "<U4"
    with pytest.raises(ValueError, match="unsupported dtype"):
        TreeEnsemble.from_document(doc)
    doc = _doc(_rich_ensemble())
    del doc["arrays"]["left"]["shape"]
    with pytest.raises(ValueError, match="malformed array entry"):
        TreeEnsemble.from_document(doc)


def test_load_truncated_file(tmp_path):
    p = tmp_path / "m.json"
    _rich_ensemble().save(p)
    text = p.read_text()
    p.write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match="not valid JSON"):
        TreeEnsemble.load(p)


def test_load_document_missing_required_array():
    doc = _doc(_rich_ensemble())
    del doc["arrays"]["tree_ptr"]
    with pytest.raises(ValueError, match="tree_ptr"):
        TreeEnsemble.from_document(doc)


def test_failed_save_keeps_the_existing_file(tmp_path):
    # A value JSON cannot hold must raise before the file is opened, not leave half a model.
    p = tmp_path / "m.json"
    ens = _rich_ensemble()
    ens.save(p)
    before = p.read_bytes()
    for bad in ({"pad": "x" * 100_000, "v": np.float32(1)}, {"pad": "x" * 100_000, "v": NAN}):
        ens.source = bad
        with pytest.raises((TypeError, ValueError)):
            ens.save(p)
        assert p.read_bytes() == before
    assert TreeEnsemble.load(p).equals(_rich_ensemble())


def test_load_non_skltr_json(tmp_path):
    p = tmp_path / "xgb.json"
    p.write_text(json.dumps({"learner": {"gradient_booster": {}}, "version": [3, 2, 0]}))
    with pytest.raises(ValueError, match=r"not a skltr model document.*from_xgboost"):
        TreeEnsemble.load(p)
    p.write_text("[1, 2, 3]")
    with pytest.raises(ValueError, match="not a skltr model document"):
        TreeEnsemble.load(p)
    doc = _doc(_rich_ensemble())
    doc["kind"] = "Binner"
    with pytest.raises(ValueError, match="holds a 'Binner', not a 'TreeEnsemble'"):
        TreeEnsemble.from_document(doc)


def test_pickle_round_trip():
    ens = _rich_ensemble(-999.0)
    back = pickle.loads(pickle.dumps(ens, protocol=pickle.HIGHEST_PROTOCOL))
    assert back.equals(ens) and back.source == ens.source
    X = np.array([[0.4, 0.0], [0.6, 1.0], [-999.0, 2.0], [0.6, -999.0]])
    np.testing.assert_array_equal(back.predict(X), ens.predict(X))


# ============================================================================ golden files
# Written once by tests/golden/make_golden.py with skltr 0.1 (schema 1.0). Never regenerate:
# these files prove that later versions still read what version 1 wrote.
GOLDEN_SPECS = {
    # LightGBM-like: two classes, softmax, "<=", double, missing types, categorical TRUNC_FIRST.
    "lightgbm": dict(
        tree_ptr=[0, 5, 8, 9, 12],
        feature=[0, -1, 2, -1, -1, 1, -1, -1, -1, 0, -1, -1],
        threshold=[0.5, 0, 0, 0, 0, -1.5, 0, 0, 0, 2.0, 0, 0],
        left=[1, -1, 3, -1, -1, 1, -1, -1, -1, 1, -1, -1],
        right=[2, -1, 4, -1, -1, 2, -1, -1, -1, 2, -1, -1],
        value=[0, 0.25, 0, -0.5, 0.125, 0, 0.75, -0.375, 0.0625, 0, -0.1, 0.2],
        flags=[M_NAN | DL, 0, CAT | TRUNC_FIRST, 0, 0, M_ZERO, 0, 0, 0, M_NONE, 0, 0],
        cat_offset=[0] * 12, cat_nwords=[0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        cat_bitsets=[0b1011, 1 << 3], tree_output=[0, 1, 0, 1], tree_weight=[1.0] * 4,
        base_score=[0.0, 0.0], n_features=3, n_outputs=2, decision="<=", precision="float64",
        sum_dtype="float64", missing_value=NAN, average_output=False,
        output_transform="softmax", transform_params={}, feature_names=["a", "b", "c"],
        source={"library": "lightgbm-like", "note": "golden v1"}),
    # XGBoost-like: "<", float32 inputs and sums, missing=-999, dart weights, in-set right.
    "xgboost": dict(
        tree_ptr=[0, 5, 8, 9],
        feature=[0, -1, 1, -1, -1, 1, -1, -1, -1],
        threshold=[f32(0.1), 0, 0, 0, 0, 3.0, 0, 0, 0],
        left=[1, -1, 3, -1, -1, 1, -1, -1, -1],
        right=[2, -1, 4, -1, -1, 2, -1, -1, -1],
        value=[0, 0.3, 0, -0.7, 0.9, 0, 0.11, -0.22, 0.333],
        flags=[M_NAN | DL, 0, CAT | SET_RIGHT | DL, 0, 0, M_NAN, 0, 0, 0],
        cat_offset=[0] * 9, cat_nwords=[0, 0, 1, 0, 0, 0, 0, 0, 0],
        cat_bitsets=[0b10110], tree_output=[0, 0, 0], tree_weight=[1.0, 0.5, 0.25],
        base_score=[0.5], n_features=2, n_outputs=1, decision="<", precision="float32",
        sum_dtype="float32", missing_value=-999.0, average_output=False,
        output_transform="sigmoid", transform_params={"scale": 1.0},
        feature_names=["x0", "x1"], source={"library": "xgboost-like"}),
    # Random-forest / scikit-learn-like: averaged trees, base added after, exp transform,
    # invalid categories -> default, an empty category set.
    "forest": dict(
        tree_ptr=[0, 3, 6],
        feature=[1, -1, -1, 0, -1, -1],
        threshold=[0, 0, 0, 10.0, 0, 0],
        left=[2, -1, -1, 1, -1, -1],
        right=[1, -1, -1, 2, -1, -1],
        value=[0, 1.5, -2.5, 0, 4.0, 8.0],
        flags=[CAT | INVALID_DEFAULT | DL, 0, 0, M_NAN, 0, 0],
        cat_offset=[1, 0, 0, 0, 0, 0], cat_nwords=[1, 0, 0, 0, 0, 0],
        cat_bitsets=[0xFFFFFFFF, 0b1001], tree_output=[0, 0], tree_weight=[1.0, 1.0],
        base_score=[1.25], n_features=2, n_outputs=1, decision="<=", precision="float64",
        sum_dtype="float64", missing_value=NAN, average_output=True,
        output_transform="exp", transform_params={}, feature_names=None, source={}),
}

GOLDEN_X = np.array([
    [0.5, -1.5, 0.0],
    [np.nextafter(0.5, 1.0), 0.0, -0.5],
    [NAN, NAN, 35.0],
    [0.1, 3.0, 2.0],
    [-999.0, -999.0, 3.7],
    [2.0, 1e-36, NAN],
    [10.0, -1.0, -1.0],
    [11.0, 3.9, 500.0],
    [INF, -INF, 1.0],
])

# Raw and transformed predictions of the golden models on GOLDEN_X, recorded when the files
# were written (repr of the float values) and checked by hand against the routing rules, e.g.
# lightgbm row 1: tree 0 sends 0.5+ulp right, then -0.5 truncates to category 0 (in the set
# {0, 1, 3, 35}) -> -0.5; + tree 2's 0.0625 = -0.4375. xgboost row 3: float32(0.1) is not
# < float32(0.1) -> right; category 3 is not in {1, 2, 4} -> left (-0.7); 3.0 < 3.0 is false
# -> -0.22 * 0.5; + 0.333 * 0.25; + base 0.5 -> -0.22675 in float32. forest row 0: -1.5 is an
# invalid category -> default left (-2.5); 0.5 <= 10 -> 4.0; mean 0.75 + base 1.25 = 2.0.
GOLDEN_RAW = {
    "lightgbm": [[0.3125, 0.65], [-0.4375, -0.475], [0.3125, -0.475], [0.3125, -0.475],
                 [0.3125, 0.65], [0.1875, -0.475], [0.1875, -0.175], [0.1875, -0.175],
                 [-0.4375, 0.95]],
    # float32 values (exactly representable), written as their doubles.
    "xgboost": [-0.061749979853630066, -0.061749979853630066, 0.7732499837875366,
                -0.22675000131130219, 0.7732499837875366, -0.061749979853630066,
                -0.061749979853630066, -0.22675000131130219, -0.061749979853630066],
    "forest": [2.0, 2.0, 4.0, 2.0, 2.0, 2.0, 2.0, 4.0, 4.0],
}
GOLDEN_PRED = {
    "lightgbm": [[0.41641688448272474, 0.5835831155172753],
                 [0.5093739015216607, 0.49062609847833927],
                 [0.6872942801972042, 0.31270571980279593],
                 [0.6872942801972042, 0.31270571980279593],
                 [0.41641688448272474, 0.5835831155172753],
                 [0.6598217549720575, 0.3401782450279426],
                 [0.5896454785627312, 0.41035452143726875],
                 [0.5896454785627312, 0.41035452143726875],
                 [0.19980716754843067, 0.8001928324515694]],
    "xgboost": [0.48456740850810537, 0.48456740850810537, 0.6842235108069924,
                0.4435541423081075, 0.6842235108069924, 0.48456740850810537,
                0.48456740850810537, 0.4435541423081075, 0.48456740850810537],
    "forest": [7.38905609893065, 7.38905609893065, 54.598150033144236, 7.38905609893065,
               7.38905609893065, 7.38905609893065, 7.38905609893065, 54.598150033144236,
               54.598150033144236],
}

_ARRAY_DTYPES = dict(tree_ptr=np.int64, feature=np.int32, threshold=np.float64, left=np.int32,
                     right=np.int32, value=np.float64, flags=np.uint8, cat_offset=np.int64,
                     cat_nwords=np.int32, cat_bitsets=np.uint32, tree_output=np.int32,
                     tree_weight=np.float64, base_score=np.float64)


@pytest.mark.parametrize("name", list(GOLDEN_SPECS))
def test_golden_file_loads(name):
    path = GOLDEN / f"tree_ensemble_v1_{name}.json"
    spec = GOLDEN_SPECS[name]
    ens = TreeEnsemble.load(path)
    for key, want in spec.items():
        got = getattr(ens, key)
        if key in _ARRAY_DTYPES:
            assert got.dtype == _ARRAY_DTYPES[key], key
            np.testing.assert_array_equal(got, np.asarray(want, dtype=_ARRAY_DTYPES[key]),
                                          err_msg=key)
        elif key == "missing_value":
            assert repr(got) == repr(float(want))
        else:
            assert got == want, key
    X = GOLDEN_X[:, : ens.n_features]
    raw = ens.predict_raw(X)
    np.testing.assert_array_equal(raw, naive_predict_raw(ens, X))
    np.testing.assert_array_equal(raw, np.asarray(GOLDEN_RAW[name], dtype=ens.sum_dtype))
    np.testing.assert_array_equal(ens.predict(X), np.asarray(GOLDEN_PRED[name]))
    # The file is what version 1 wrote, byte for byte in its header.
    doc = json.loads(path.read_text())
    assert doc["format"] == "skltr-model" and doc["schema_version"] == "1.0"
    assert doc["kind"] == "TreeEnsemble"
    # fields added in schema 1.2 take their defaults
    assert (ens.frame_rule, ens.categories, ens.pandas_categorical) == ("numpy", None, None)


def test_frame_fields_round_trip_and_frame_input(tmp_path):
    """Schema 1.2's frame_rule, categories and pandas_categorical survive save / load, and a
    DataFrame is read by them: XGBoost's re-coding by value, LightGBM's positional lists."""
    pd = pytest.importorskip("pandas")
    def two_stumps(cat_flags, **kw):
        # tree 0: colour in {1} ? ; tree 1: num <= 0.5 ?
        return TreeEnsemble(tree_ptr=[0, 3, 6], feature=[1, -1, -1, 0, -1, -1],
                            threshold=[0, 0, 0, 0.5, 0, 0], left=[1, -1, -1, 1, -1, -1],
                            right=[2, -1, -1, 2, -1, -1], value=[0, 1.0, 2.0, 0, 4.0, 8.0],
                            flags=[cat_flags, 0, 0, 0, 0, 0], cat_offset=[0] * 6,
                            cat_nwords=[1, 0, 0, 0, 0, 0], cat_bitsets=[0b10], n_features=2,
                            feature_names=["num", "colour"], **kw)

    xgb_like = two_stumps(NodeFlags.CATEGORICAL | NodeFlags.CAT_SET_RIGHT, decision="<",
                          precision="float32", sum_dtype="float32", input_rule="float32",
                          frame_rule="xgboost",
                          categories=[None, {"type": "str", "values": ["red", "green", "blue"]}])
    lgb_like = two_stumps(NodeFlags.CATEGORICAL | NodeFlags.CAT_TRUNC_FIRST,
                          input_rule="float32_unless_float", frame_rule="lightgbm",
                          pandas_categorical=[[10, 20, 30]])
    for ens in (xgb_like, lgb_like):
        ens.save(tmp_path / "m.json")
        back = TreeEnsemble.load(tmp_path / "m.json")
        assert back.equals(ens)
        assert (back.frame_rule, back.categories, back.pandas_categorical) == (
            ens.frame_rule, ens.categories, ens.pandas_categorical)
        assert json.loads((tmp_path / "m.json").read_text())["schema_version"] == "1.3"
    # XGBoost: "green" is code 1 whatever order the frame lists its categories in
    df = pd.DataFrame({"num": [0.0, 0.0, 0.0],
                       "colour": pd.Categorical(["green", "blue", None],
                                                categories=["blue", "green", "red"])})
    codes = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, np.nan]])
    np.testing.assert_array_equal(xgb_like.predict_raw(df), xgb_like.predict_raw(codes))
    np.testing.assert_array_equal(xgb_like.predict_raw(df), [6.0, 5.0, 6.0])  # NaN: right
    with pytest.raises(ValueError, match="not among the training categories"):
        xgb_like.predict_raw(df.assign(colour=pd.Categorical(["pink", "red", "red"])))
    with pytest.raises(ValueError, match="trained on it as a category column"):
        xgb_like.predict_raw(df.assign(colour=[1.0, 2.0, 0.0]))
    with pytest.raises(ValueError, match="column names must match"):
        xgb_like.predict_raw(df.rename(columns={"num": "number"}))
    # LightGBM: the frame's one category column takes pandas_categorical[0]; 40 is unseen
    df = pd.DataFrame({"num": [0.0, 0.0, 0.0], "colour": pd.Categorical([30, 40, 10])})
    np.testing.assert_array_equal(lgb_like.predict_raw(df),
                                  lgb_like.predict_raw(np.array([[0, 2], [0, np.nan], [0, 0]])))
    np.testing.assert_array_equal(lgb_like.predict_raw(df), [6.0, 6.0, 6.0])
    one = pd.DataFrame({"num": [0.0], "colour": pd.Categorical([20])})
    np.testing.assert_array_equal(lgb_like.predict_raw(one), [5.0])
    with pytest.raises(ValueError, match="0 category columns but the LightGBM model was "
                                         "trained on 1"):
        lgb_like.predict_raw(df.assign(colour=[2.0, 1.0, 0.0]))
