"""Histogram, split, partition, binned-predict kernels and TreeGrower against tests/naive_gbdt.py.

Gradients and hessians are multiples of 1/8 (exact in float32 and in any float64 sum), so
the kernels must match the brute-force references exactly whatever their summation order.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_gbdt import (naive_best_split, naive_grow, naive_histogram, naive_leaf_value,
                        naive_partition)
from skltr._cpu.histogram import build_histogram, build_histogram_serial, subtract_histograms
from skltr._cpu.partition import partition_rows, partition_rows_serial
from skltr._cpu.split import find_best_splits, find_best_splits_serial
from skltr._records import split_constants, split_work
from skltr._engine.binning import BinMapper
from skltr._engine.communicator import LocalCommunicator
from skltr._engine.binned_tree import binned_trees_to_ensemble
from skltr._engine.histogram import HistogramPool
from skltr._gbdt.grower_cpu import TreeGrower
from skltr._gbdt.quantisation import quantisation_exponent

PARAMS = dict(reg_lambda=0.0, reg_alpha=0.0, min_child_weight=1e-3, min_samples_leaf=1,
              min_split_gain=0.0)


def dyadic_problem(rng, n, n_features, max_bins, nan_frac=0.1, n_bins=None):
    """Binned matrix, per-feature n_bins, and gradients/hessians on a 1/8 grid."""
    if n_bins is None:
        n_bins = rng.integers(1, max_bins + 1, size=n_features).astype(np.int32)
    X = np.empty((n, n_features), dtype=np.uint8)
    for f in range(n_features):
        X[:, f] = rng.integers(0, n_bins[f], size=n)
        X[rng.random(n) < nan_frac, f] = max_bins
    grad = (rng.integers(-16, 17, size=n) / 8).astype(np.float32)
    hess = (rng.integers(0, 9, size=n) / 8).astype(np.float32)
    return X, np.asarray(n_bins, dtype=np.int32), grad, hess


def kernel_split(hist, n_bins, mask, rows, grad, hess, missing_bin, p, serial=False):
    G = float(np.sum(grad[rows], dtype=np.float64))
    H = float(np.sum(hess[rows], dtype=np.float64))
    F = hist.shape[0]
    fn = find_best_splits_serial if serial else find_best_splits
    c = split_constants(missing_bin=missing_bin, inv_scale_g=1.0, inv_scale_h=1.0,
                        reg_lambda=p["reg_lambda"], reg_alpha=p["reg_alpha"],
                        min_child_weight=p["min_child_weight"],
                        min_samples_leaf=p["min_samples_leaf"],
                        min_split_gain=p["min_split_gain"], count_shift=0,
                        hessian_counts=p.get("min_samples_leaf_counts", "rows") == "hessian")
    f, gain, b, dl, gl, hl, cl = fn(hist, n_bins, mask, np.zeros(F, np.int8), G, H, len(rows),
                                    -np.inf, np.inf, c, split_work(F, np.float64))
    return None if f < 0 else (gain, f, b, dl)


# ---------------------------------------------------------------------------- histogram
@pytest.mark.parametrize("tasks", [(1, 1), (2, 1), (1, 2), (3, 3), (1, 7), "serial"])
@pytest.mark.parametrize("use_rows", [False, True])
def test_histogram_matches_naive(tasks, use_rows):
    rng = np.random.default_rng(0)
    X, n_bins, grad, hess = dyadic_problem(rng, 5000, 7, 7)
    rows = np.sort(rng.choice(5000, 3000, replace=False)).astype(np.uint32)
    rows = rows if use_rows else np.arange(5000, dtype=np.uint32)
    start, end = (10, 2900) if use_rows else (0, 5000)

    def build(g, h, out):
        if tasks == "serial":
            build_histogram_serial(X, g, h, rows, start, end, use_rows, out)
        else:
            scratch = np.full((3, out.size), 77, out.dtype)
            build_histogram(X, g, h, rows, start, end, use_rows, out, scratch, *tasks)
        return out

    out = build(grad, hess, np.full((7, 8, 3), np.nan))
    np.testing.assert_array_equal(out, naive_histogram(X, grad, hess, rows[start:end], 8))
    # quantised: int32 gradients, int64 sums
    qg, qh = (grad * 8).astype(np.int32), (hess * 8).astype(np.int32)
    qout = build(qg, qh, np.full((7, 8, 3), 99, np.int64))
    np.testing.assert_array_equal(qout, naive_histogram(X, qg, qh, rows[start:end], 8))


@pytest.mark.parametrize("tasks", [(1, 2), (2, 1), "serial"])
def test_packed_quantised_histogram_and_split(tasks):
    """2-channel histogram with the count packed above bit K of the hessian channel."""
    rng = np.random.default_rng(10)
    X, n_bins, grad, hess = dyadic_problem(rng, 3000, 5, 6, nan_frac=0.2)
    rows = np.sort(rng.choice(3000, 2000, replace=False)).astype(np.uint32)
    K = 40
    qg = (grad * 8).astype(np.int32)
    packed = (hess * 8).astype(np.int64) + (np.int64(1) << K)
    out = np.full((5, 9, 2), -1, np.int64)
    if tasks == "serial":
        build_histogram_serial(X, qg, packed, rows, 0, 2000, True, out)
    else:
        build_histogram(X, qg, packed, rows, 0, 2000, True, out, np.empty((2, out.size), np.int64),
                        *tasks)
    ref = naive_histogram(X, qg, (hess * 8).astype(np.int64), rows, 9)
    np.testing.assert_array_equal(out[:, :, 0], ref[:, :, 0])
    np.testing.assert_array_equal(out[:, :, 1] & ((1 << K) - 1), ref[:, :, 1])
    np.testing.assert_array_equal(out[:, :, 1] >> K, ref[:, :, 2])
    # the split kernel decodes it to the float split of the same data
    F = 5
    work = split_work(F, np.int64)
    for p in (PARAMS, dict(PARAMS, min_samples_leaf=300, reg_lambda=1.0, reg_alpha=0.5)):
        c = split_constants(missing_bin=6, inv_scale_g=1 / 8, inv_scale_h=1 / 8,
                            reg_lambda=p["reg_lambda"], reg_alpha=p["reg_alpha"],
                            min_child_weight=p["min_child_weight"],
                            min_samples_leaf=p["min_samples_leaf"],
                            min_split_gain=p["min_split_gain"], count_shift=K,
                            hessian_counts=False)
        got = find_best_splits(out, n_bins, np.ones(F, bool), np.zeros(F, np.int8),
                               np.int64(qg[rows].sum()),
                               np.int64((hess[rows] * 8).astype(np.int64).sum()), 2000,
                               -np.inf, np.inf, c, work)
        want = naive_best_split(X, grad, hess, rows, n_bins, 6, [True] * F, p)
        assert (got[1], got[0], got[2], got[3]) == want


def test_quantised_rejects_negative_hessians():
    X = np.zeros((4, 1), np.uint8)
    g = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="hessians >= 0"):
        TreeGrower(X, g, g - 1, n_bins=[1], missing_bin=2, has_missing=[False],
                   hist_mode="quantised").grow()


def test_subtract_histograms():
    rng = np.random.default_rng(1)
    X, n_bins, grad, hess = dyadic_problem(rng, 300, 3, 5)
    rows = np.arange(300, dtype=np.uint32)
    parent = naive_histogram(X, grad, hess, rows, 6)
    child = naive_histogram(X, grad, hess, rows[:120], 6)
    out = np.empty_like(parent)
    subtract_histograms(parent, child, out)
    np.testing.assert_array_equal(out, naive_histogram(X, grad, hess, rows[120:], 6))
    subtract_histograms(parent, child, parent)  # in place, as the grower does
    np.testing.assert_array_equal(parent, out)


def test_single_row_and_empty_node_histograms():
    X = np.array([[2, 0]], dtype=np.uint8)
    grad, hess = np.array([0.5], np.float32), np.array([1.0], np.float32)
    out = np.empty((2, 4, 3))
    build_histogram(X, grad, hess, np.zeros(1, np.uint32), 0, 1, True, out,
                    np.empty((1, 24)), 2, 2)
    np.testing.assert_array_equal(out, naive_histogram(X, grad, hess, [0], 4))
    build_histogram(X, grad, hess, np.zeros(1, np.uint32), 0, 0, True, out,
                    np.empty((1, 24)), 2, 1)
    np.testing.assert_array_equal(out, 0)
    build_histogram_serial(X, grad, hess, np.zeros(1, np.uint32), 0, 0, True, out)
    np.testing.assert_array_equal(out, 0)


# ---------------------------------------------------------------------------- split
def test_split_hand_made_ties_pick_lowest_feature_then_bin():
    # two identical features, symmetric gradients: bins 0|1 and 1|2 give the same gain
    X = np.array([[0, 0], [1, 1], [2, 2], [3, 3]], dtype=np.uint8)
    grad = np.array([-1, 1, 1, -1], np.float32)
    hess = np.ones(4, np.float32)
    n_bins = np.array([4, 4], np.int32)
    rows = np.arange(4)
    hist = naive_histogram(X, grad, hess, rows, 5)
    got = kernel_split(hist, n_bins, np.ones(2, bool), rows, grad, hess, 4, PARAMS)
    want = naive_best_split(X, grad, hess, rows, n_bins, 4, [True, True], PARAMS)
    assert got == want and got[1] == 0 and got[2] == 0
    # the feature mask hides feature 0
    mask = np.array([False, True])
    got = kernel_split(hist, n_bins, mask, rows, grad, hess, 4, PARAMS)
    assert got == naive_best_split(X, grad, hess, rows, n_bins, 4, mask, PARAMS)
    assert got[1] == 1


def test_split_missing_direction_and_nan_only_split():
    # missing rows carry all the signal: the best split is "missing versus the rest"
    X = np.array([[0], [1], [2], [9], [9]], dtype=np.uint8)
    grad = np.array([1, 1, 1, -2, -2], np.float32)
    hess = np.ones(5, np.float32)
    n_bins = np.array([3], np.int32)
    rows = np.arange(5)
    hist = naive_histogram(X, grad, hess, rows, 10)
    got = kernel_split(hist, n_bins, np.ones(1, bool), rows, grad, hess, 9, PARAMS)
    assert got == naive_best_split(X, grad, hess, rows, n_bins, 9, [True], PARAMS)
    assert got[2:] == (2, False)


def test_split_without_missing_rows_sends_missing_to_the_bigger_child():
    X = np.array([[0], [1], [1], [1]], dtype=np.uint8)
    grad = np.array([-3, 1, 1, 1], np.float32)
    hess = np.ones(4, np.float32)
    hist = naive_histogram(X, grad, hess, range(4), 3)
    got = kernel_split(hist, np.array([2], np.int32), np.ones(1, bool), np.arange(4), grad,
                       hess, 2, PARAMS)
    assert got[2:] == (0, False)  # 1 row left, 3 right: missing follows the right child


@pytest.mark.parametrize("params", [
    dict(min_samples_leaf=3), dict(min_child_weight=2.0), dict(reg_lambda=1.0),
    dict(reg_alpha=0.5), dict(reg_alpha=2.0, reg_lambda=0.5), dict(min_split_gain=1.0),
    dict(min_samples_leaf=50),
])
def test_split_constraints_match_naive(params):
    p = dict(PARAMS, **params)
    rng = np.random.default_rng(3)
    for _ in range(20):
        X, n_bins, grad, hess = dyadic_problem(rng, 40, 3, 6, nan_frac=0.2)
        rows = np.sort(rng.choice(40, 30, replace=False))
        hist = naive_histogram(X, grad, hess, rows, 7)
        mask = rng.random(3) < 0.8
        want = naive_best_split(X, grad, hess, rows, n_bins, 6, mask, p)
        assert kernel_split(hist, n_bins, mask, rows, grad, hess, 6, p) == want
        assert kernel_split(hist, n_bins, mask, rows, grad, hess, 6, p, serial=True) == want


# ---------------------------------------------------------------------------- partition
@pytest.mark.parametrize("n_chunks", [1, 2, 4, 7, "serial"])
@pytest.mark.parametrize("default_left", [False, True])
def test_partition_is_stable_and_matches_naive(n_chunks, default_left):
    rng = np.random.default_rng(4)
    X, _, _, _ = dyadic_problem(rng, 20000, 2, 5, n_bins=np.array([5, 5]))
    col = np.ascontiguousarray(X[:, 1])
    rows = rng.permutation(20000).astype(np.uint32)
    before = rows.copy()
    for start, end in [(100, 19000), (5, 5), (7, 8), (0, 20000)]:
        rows[:] = before
        tmp = np.empty_like(rows)
        if n_chunks == "serial":
            n_left = partition_rows_serial(col, rows, start, end, 2, default_left, 5, None, tmp)
        else:
            n_left = partition_rows(col, rows, start, end, 2, default_left, 5, None, tmp, n_chunks)
        lw, rw = naive_partition(X, before[start:end], 1, 2, default_left, 5)
        assert n_left == len(lw)
        np.testing.assert_array_equal(rows[start:start + n_left], lw)
        np.testing.assert_array_equal(rows[start + n_left:end], rw)
        np.testing.assert_array_equal(rows[:start], before[:start])
        np.testing.assert_array_equal(rows[end:], before[end:])


# ---------------------------------------------------------------------------- grower
def grow(X, n_bins, grad, hess, missing_bin, **kw):
    return TreeGrower(X, grad, hess, n_bins=n_bins, missing_bin=missing_bin,
                      has_missing=np.ones(X.shape[1], bool), **kw).grow()


def assert_same_tree(tree, ref, rows=None):
    for name in ("feature", "bin_threshold", "default_left", "left", "right", "value",
                 "gain", "count"):
        np.testing.assert_array_equal(getattr(tree, name), np.array(ref[name]), err_msg=name)
    row_ids = np.arange(tree.leaf_of_row.size) if rows is None else rows
    np.testing.assert_array_equal(tree.leaf_of_row, [ref["leaf_of_row"][r] for r in row_ids])


GROW_CASES = [
    dict(max_leaves=8, min_samples_leaf=1),
    dict(max_leaves=5, min_samples_leaf=4, reg_lambda=1.0),
    dict(max_leaves=31, min_samples_leaf=2, reg_alpha=0.75, min_child_weight=1.0),
    dict(max_leaves=31, max_depth=2, min_samples_leaf=1),
    dict(max_leaves=6, growth="depthwise", max_depth=3, min_samples_leaf=1),
    dict(max_leaves=31, growth="depthwise", max_depth=4, min_samples_leaf=3,
         min_split_gain=0.5),
    dict(max_leaves=2, min_samples_leaf=1, learning_rate=1.0),
    # LightGBM's hessian-estimated counts (hessians of 0..1 in eighths: estimates differ
    # from the row counts)
    dict(max_leaves=31, min_samples_leaf=3, min_samples_leaf_counts="hessian"),
    dict(max_leaves=8, min_samples_leaf=1, min_samples_leaf_counts="hessian"),
    dict(max_leaves=31, growth="depthwise", max_depth=4, min_samples_leaf=5,
         min_samples_leaf_counts="hessian", reg_lambda=1.0),
]


def assert_grower_matches(reference, kw, hist_mode, seed, **grow_kw):
    """The engine's tree against ``reference(X, grad, hess, n_bins, 6, ...)`` on four dyadic
    problems: every row or a row sample, every feature or a feature mask."""
    rng = np.random.default_rng(seed)
    for trial in range(4):
        X, n_bins, grad, hess = dyadic_problem(rng, 60, 3, 6, nan_frac=0.15)
        rows = None if trial % 2 == 0 else np.sort(rng.choice(60, 45, replace=False))
        mask = None if trial < 3 else np.array([True, False, True])
        tree = grow(X, n_bins, grad, hess, 6, rows=rows, feature_mask=mask,
                    hist_mode=hist_mode, **grow_kw, **kw)
        ref = reference(X, grad, hess, n_bins, 6, rows=rows, feature_mask=mask, **kw)
        assert_same_tree(tree, ref, rows)


@pytest.mark.parametrize("kw", GROW_CASES)
@pytest.mark.parametrize("hist_mode", ["float", "quantised"])
def test_grower_matches_naive(kw, hist_mode):
    assert_grower_matches(naive_grow, kw, hist_mode, seed=5)


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 50),
       growth=st.sampled_from(["leafwise", "depthwise"]), max_leaves=st.integers(2, 12),
       max_depth=st.sampled_from([None, 1, 3]), min_samples_leaf=st.integers(1, 6),
       reg_lambda=st.sampled_from([0.0, 0.5]), reg_alpha=st.sampled_from([0.0, 0.25]),
       hist_mode=st.sampled_from(["float", "quantised"]))
def test_grower_random_matches_naive(seed, n, growth, max_leaves, max_depth, min_samples_leaf,
                                     reg_lambda, reg_alpha, hist_mode):
    rng = np.random.default_rng(seed)
    X, n_bins, grad, hess = dyadic_problem(rng, n, 2, 4, nan_frac=rng.random() * 0.5)
    kw = dict(growth=growth, max_leaves=max_leaves, max_depth=max_depth,
              min_samples_leaf=min_samples_leaf, reg_lambda=reg_lambda, reg_alpha=reg_alpha)
    tree = grow(X, n_bins, grad, hess, 4, hist_mode=hist_mode, **kw)
    assert_same_tree(tree, naive_grow(X, grad, hess, n_bins, 4, **kw))


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 80),
       max_leaves=st.integers(2, 24), max_depth=st.sampled_from([None, 2, 4]),
       min_samples_leaf=st.integers(1, 5), batch=st.sampled_from([2, 3, 7, 1000]),
       hist_mode=st.sampled_from(["float", "quantised"]))
def test_speculative_leafwise_batches_grow_the_one_at_a_time_tree(
        seed, n, max_leaves, max_depth, min_samples_leaf, batch, hist_mode):
    # expanding several leaves at once (the GPU's batches) must not change the tree: same
    # node ids, splits and values, and every row in the leaf of the one-at-a-time tree
    rng = np.random.default_rng(seed)
    X, n_bins, grad, hess = dyadic_problem(rng, n, 3, 5, nan_frac=rng.random() * 0.3)
    kw = dict(growth="leafwise", max_leaves=max_leaves, max_depth=max_depth,
              min_samples_leaf=min_samples_leaf, hist_mode=hist_mode)
    rows = np.sort(rng.choice(n, max(1, n // 2), replace=False)) if seed % 2 else None
    grower = TreeGrower(X, grad, hess, n_bins=n_bins, missing_bin=5,
                        has_missing=np.ones(3, bool), rows=rows, **kw)
    grower.leafwise_batch = batch
    tree = grower.grow()
    assert_same_tree(tree, naive_grow(X, grad, hess, n_bins, 5, rows=rows, **kw), rows)


def test_grower_edge_cases_single_leaf():
    # one row; all rows in one bin; constant features; too few rows for min_samples_leaf
    cases = [
        (np.array([[1]], np.uint8), np.array([2], np.int32), dict(min_samples_leaf=1)),
        (np.zeros((30, 2), np.uint8), np.array([3, 1], np.int32), dict(min_samples_leaf=1)),
        (np.tile(np.arange(2, dtype=np.uint8), 15)[:, None], np.array([1], np.int32),
         dict(min_samples_leaf=1)),
        (np.tile(np.arange(4, dtype=np.uint8), 10)[:, None], np.array([4], np.int32),
         dict(min_samples_leaf=21)),
    ]
    for X, n_bins, kw in cases:
        X = np.ascontiguousarray(X)
        grad = (np.arange(X.shape[0]) % 5 - 2).astype(np.float32) / 8
        hess = np.ones(X.shape[0], np.float32)
        tree = grow(X, n_bins, grad, hess, 4, learning_rate=1.0, **kw)
        assert tree.n_nodes == 1 and tree.n_leaves == 1
        assert tree.value[0] == naive_leaf_value(float(grad.sum()), float(X.shape[0]), 0, 0, 1)
        np.testing.assert_array_equal(tree.leaf_of_row, 0)


def test_min_samples_leaf_exact_edge():
    X = np.repeat(np.arange(4, dtype=np.uint8), 5)[:, None].copy()
    grad = np.repeat(np.array([-1, -1, 1, 1], np.float32), 5)
    hess = np.ones(20, np.float32)
    tree = grow(X, np.array([4], np.int32), grad, hess, 4, min_samples_leaf=10)
    assert tree.n_leaves == 2 and tree.bin_threshold[0] == 1
    tree = grow(X, np.array([4], np.int32), grad, hess, 4, min_samples_leaf=11)
    assert tree.n_leaves == 1


def test_min_samples_leaf_hessian_counts_lightgbm_rule():
    # 20 rows in bins 0..3, 5 each; hessians 0.25 in bins 0-1 and 1.75 in bins 2-3, so
    # H = 20 and count_factor = 1: bins estimate int(1.25 + 0.5) = 1, 1, int(8.75 + 0.5) = 9,
    # 9 rows. "bin <= 0" has 5 rows left but an estimated right child of 1 + 9 + 9 = 19
    # and so 20 - 19 = 1 estimated row left.
    X = np.repeat(np.arange(4, dtype=np.uint8), 5)[:, None].copy()
    grad = np.repeat(np.array([-4, 1, 1, 1], np.float32), 5)
    hess = np.repeat(np.array([0.25, 0.25, 1.75, 1.75], np.float32), 5)
    n_bins = np.array([4], np.int32)
    rows = grow(X, n_bins, grad, hess, 4, min_samples_leaf=5, max_leaves=2)
    assert rows.n_leaves == 2 and rows.bin_threshold[0] == 0
    est = grow(X, n_bins, grad, hess, 4, min_samples_leaf=5, max_leaves=2,
               min_samples_leaf_counts="hessian")
    # bin <= 0 has 1 estimated row on the left: refused; bin <= 1 has 20 - 18 = 2: refused;
    # bin <= 2: right = round(8.75) = 9, left 11: allowed
    assert est.n_leaves == 2 and est.bin_threshold[0] == 2
    assert vars_of(est)["count"][1] == 15  # children keep their real row counts
    ref = naive_grow(X, grad, hess, n_bins, 4, min_samples_leaf=5, max_leaves=2,
                     min_samples_leaf_counts="hessian")
    assert_same_tree(est, ref)


def test_threshold_moves_up_over_bins_empty_in_the_node():
    # Rows only in bins 0 and 3: "bin <= 0", "<= 1" and "<= 2" split them alike; the highest
    # (LightGBM's) is kept, so values between the two children's ranges go left.
    X = np.repeat(np.array([0, 3], np.uint8), 10)[:, None].copy()
    grad = np.repeat(np.array([-1, 1], np.float32), 10)
    hess = np.ones(20, np.float32)
    tree = grow(X, np.array([5], np.int32), grad, hess, 5, min_samples_leaf=1, max_leaves=2)
    assert tree.bin_threshold[0] == 2
    assert_same_tree(tree, naive_grow(X, grad, hess, np.array([5], np.int32), 5,
                                      min_samples_leaf=1, max_leaves=2))


def test_quantised_equals_float_and_is_thread_independent():
    rng = np.random.default_rng(6)
    n = 6000
    X, n_bins, grad, hess = dyadic_problem(rng, n, 5, 15, nan_frac=0.05)
    kw = dict(max_leaves=15, min_samples_leaf=20)
    trees = {(m, t): grow(X, n_bins, grad, hess, 15, hist_mode=m, n_threads=t, **kw)
             for m in ("float", "quantised") for t in (1, 2)}
    for key, tree in trees.items():
        assert_same_tree(tree, vars_of(trees[("float", 1)]))
    # Arbitrary float gradients: float sums depend on the thread count, quantised ones not.
    grad = rng.normal(size=n).astype(np.float32)
    hess = rng.uniform(0.01, 1, size=n).astype(np.float32)
    q1 = grow(X, n_bins, grad, hess, 15, hist_mode="quantised", n_threads=1, **kw)
    q2 = grow(X, n_bins, grad, hess, 15, hist_mode="quantised", n_threads=2, **kw)
    assert_same_tree(q2, vars_of(q1))
    f1 = grow(X, n_bins, grad, hess, 15, hist_mode="float", n_threads=2, **kw)
    f2 = grow(X, n_bins, grad, hess, 15, hist_mode="float", n_threads=2, **kw)
    assert_same_tree(f2, vars_of(f1))  # deterministic for a fixed thread count
    # quantised trees are float trees up to the 2**-30 relative rounding of gradients
    np.testing.assert_array_equal(q1.feature, f1.feature)
    np.testing.assert_allclose(q1.value, f1.value, rtol=1e-6, atol=1e-9)


def force_parallel_kernels(monkeypatch):
    """Send every node through the parallel kernels, with one feature per block."""
    import skltr._engine.histogram as histogram_mod
    import skltr._gbdt.grower_cpu as grower_mod

    for name in ("HIST_PARALLEL_MIN_ROWS", "PARTITION_PARALLEL_MIN_ROWS",
                 "SPLIT_PARALLEL_MIN_ROWS"):
        monkeypatch.setattr(grower_mod, name, 0)
    monkeypatch.setattr(histogram_mod, "MIN_FEATURES_PER_BLOCK", 1)


def vars_of(tree):
    d = {k: getattr(tree, k) for k in ("feature", "bin_threshold", "default_left", "left",
                                       "right", "value", "gain", "count")}
    d["leaf_of_row"] = dict(enumerate(tree.leaf_of_row))
    return d


def test_quantisation_exponent_bounds():
    for m, n in [(1.0, 1), (3.7, 500_000), (1e-20, 10), (1e20, 10**9), (0.5, 2**32)]:
        k = quantisation_exponent(m, n)
        limit = min(2.0**30, 2.0**62 / n)
        assert m * 2.0**k <= limit < m * 2.0**(k + 1)
    assert quantisation_exponent(0.0, 10) == 0


@pytest.mark.parametrize("compiled", [False, True])
def test_pool_is_reused_and_communicator_is_called(monkeypatch, compiled):
    import skltr._gbdt.grower_cpu as grower_mod

    monkeypatch.setattr(grower_mod, "COMPILED_LEAFWISE", compiled)

    class Counting(LocalCommunicator):
        calls = 0

        def allreduce_sum(self, arr):
            Counting.calls += 1
            return arr

    rng = np.random.default_rng(7)
    X, n_bins, grad, hess = dyadic_problem(rng, 500, 3, 6)
    g1 = TreeGrower(X, grad, hess, n_bins=n_bins, missing_bin=6, has_missing=np.ones(3, bool),
                    n_threads=2, communicator=Counting(), min_samples_leaf=5)
    t1 = g1.grow()
    pool = g1.pool
    assert isinstance(pool, HistogramPool)
    if compiled:
        # row count + root sums; one worker's histograms are its own (no all-reduce)
        assert Counting.calls == 2
        slots = pool.slots(1)
    else:
        # row count + root sums + root histogram + at most one histogram per further split
        assert 3 <= Counting.calls <= 3 + t1.n_leaves - 2
        n_free = len(pool._free)
    t2 = grow(X, n_bins, grad, hess, 6, pool=pool, n_threads=2, min_samples_leaf=5)
    if compiled:
        assert pool.slots(1) is slots  # the same slots, none allocated anew
    else:
        assert len(pool._free) == n_free  # every buffer returned, none allocated anew
    assert_same_tree(t2, vars_of(t1))


def test_grower_asserts_its_invariants():
    # hyper-parameters are validated once, by the estimator; the engine asserts
    X = np.zeros((4, 1), np.uint8)
    g = np.zeros(4, np.float32)
    for kw in [dict(growth="best"), dict(hist_mode="int"), dict(max_leaves=1),
               dict(min_samples_leaf=0), dict(reg_lambda=-1.0), dict(rows=[5])]:
        with pytest.raises(AssertionError):
            TreeGrower(X, g, g, n_bins=[1], missing_bin=2, has_missing=[False], **kw)
    with pytest.raises(AssertionError, match="uint8"):
        TreeGrower(X.astype(np.int64), g, g, n_bins=[1], missing_bin=2, has_missing=[False])


# ---------------------------------------------------------------------------- conversion
@pytest.mark.parametrize("growth", ["leafwise", "depthwise"])
def test_tree_ensemble_routes_raw_rows_like_the_binned_tree(growth):
    rng = np.random.default_rng(8)
    n = 400
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 4, size=n).astype(float),
                         rng.exponential(size=n), np.full(n, 2.0)])
    X[rng.random(n) < 0.1, 0] = np.nan  # feature 0 has training NaN; 1-3 have none
    bm = BinMapper(max_bins=16, random_state=0).fit(X)
    Xb = bm.transform(X)
    grad = (rng.integers(-16, 17, size=n) / 8).astype(np.float32)
    hess = np.ones(n, np.float32)
    trees = [TreeGrower(Xb, grad * s, hess, n_bins=bm.n_bins, missing_bin=bm.missing_bin,
                        has_missing=bm.has_missing, max_leaves=12, max_depth=5,
                        growth=growth, min_samples_leaf=3).grow() for s in (1, -1)]
    ens = binned_trees_to_ensemble(trees, bm)
    # training rows, rows exactly on every cut value, NaN everywhere, +-inf
    cuts_rows = []
    for f in range(4):
        for c in bm.cut_values[bm.cut_ptr[f]:bm.cut_ptr[f + 1]]:
            row = X[rng.integers(n)].copy()
            row[f] = c
            cuts_rows.append(row)
    nan_rows = X[:50].copy()
    nan_rows[rng.random(nan_rows.shape) < 0.5] = np.nan
    Xall = np.vstack([X, np.array(cuts_rows), nan_rows])
    binned = np.zeros(Xall.shape[0])
    for t in trees:
        t.add_to_scores(bm.transform(Xall), binned)
    np.testing.assert_array_equal(ens.predict_raw(Xall), binned)
    # the training scores from leaf_of_row equal the binned prediction on those rows
    train = np.zeros(n)
    for t in trees:
        t.add_to_training_scores(train)
    np.testing.assert_array_equal(train, binned[:n])


def test_missing_only_split_converts_to_largest_double():
    X = np.array([[0.0], [1.0], [2.0], [np.nan], [np.nan]])
    bm = BinMapper(max_bins=4).fit(X)
    grad = np.array([1, 1, 1, -2, -2], np.float32)
    tree = TreeGrower(bm.transform(X), grad, np.ones(5, np.float32), n_bins=bm.n_bins,
                      missing_bin=bm.missing_bin, has_missing=bm.has_missing, max_leaves=2,
                      min_samples_leaf=1).grow()
    assert tree.bin_threshold[0] == 2 and not tree.default_left[0]
    ens = binned_trees_to_ensemble([tree], bm)
    assert ens.threshold[0] == np.finfo(np.float64).max
    scores = np.zeros(5)
    tree.add_to_scores(bm.transform(X), scores)
    np.testing.assert_array_equal(ens.predict_raw(X), scores)


@pytest.mark.parametrize("hist_mode", ["float", "quantised"])
def test_parallel_paths_match_naive(monkeypatch, hist_mode):
    """Every node through the parallel kernels (thresholds lowered to 0)."""
    force_parallel_kernels(monkeypatch)
    rng = np.random.default_rng(9)
    for trial in range(3):
        X, n_bins, grad, hess = dyadic_problem(rng, 80, 3, 6, nan_frac=0.2)
        rows = None if trial == 0 else np.sort(rng.choice(80, 70, replace=False))
        kw = dict(max_leaves=10, min_samples_leaf=2, growth=("leafwise", "depthwise")[trial % 2],
                  max_depth=4)
        tree = grow(X, n_bins, grad, hess, 6, rows=rows, hist_mode=hist_mode, n_threads=2, **kw)
        assert_same_tree(tree, naive_grow(X, grad, hess, n_bins, 6, rows=rows, **kw), rows)


def test_histogram_tasks():
    from skltr._engine.histogram import histogram_tasks

    assert histogram_tasks(2, 136) == (1, 2)
    assert histogram_tasks(16, 136) == (2, 8)
    assert histogram_tasks(4, 10) == (4, 1)
    assert histogram_tasks(1, 136) == (1, 1)


def test_integer_histogram_tasks():
    from skltr._engine.histogram import integer_histogram_tasks

    # row chunks first, as many as keep 2,048 rows each; the threads left over split the
    # features
    assert integer_histogram_tasks(16, 30, 512) == (1, 16)
    assert integer_histogram_tasks(16, 30, 8192) == (4, 4)
    assert integer_histogram_tasks(16, 30, 10**6) == (16, 1)
    assert integer_histogram_tasks(16, 136, 2048) == (1, 16)
    assert integer_histogram_tasks(16, 136, 6144) == (3, 5)
    assert integer_histogram_tasks(16, 136, 10**6) == (16, 1)
    assert integer_histogram_tasks(12, 136, 10**6) == (12, 1)
    assert integer_histogram_tasks(16, 8, 2048) == (1, 8)
    assert integer_histogram_tasks(2, 30, 4095) == (1, 2)
    assert integer_histogram_tasks(2, 30, 4096) == (2, 1)
    assert integer_histogram_tasks(2, 136, 10**6) == (2, 1)
    assert integer_histogram_tasks(2, 1, 100) == (1, 1)
    assert integer_histogram_tasks(1, 136, 10**6) == (1, 1)


@pytest.mark.parametrize("counts", ["rows", "hessian"])  # two-word and one-word layouts
def test_integer_histograms_same_tree_in_any_tasks(monkeypatch, counts):
    """Integer sums do not depend on how a node's histogram is split into tasks: every node
    in row chunks, every node in feature blocks, and the default per-node choice grow the
    same tree."""
    import skltr._engine.histogram as histogram_mod

    rng = np.random.default_rng(21)
    X, n_bins, _, _ = dyadic_problem(rng, 9000, 5, 15, nan_frac=0.05)
    grad = rng.normal(size=9000).astype(np.float32)
    hess = rng.uniform(0.01, 1, size=9000).astype(np.float32)
    kw = dict(max_leaves=31, min_samples_leaf=20, hist_mode="quantised", n_threads=2,
              min_samples_leaf_counts=counts)
    trees = []
    for least in (None, 1, 10**9):
        if least is not None:
            monkeypatch.setattr(histogram_mod, "MIN_CHUNK_ROWS", least)
        trees.append(grow(X, n_bins, grad, hess, 15, **kw))
    for tree in trees[1:]:
        assert_same_tree(tree, vars_of(trees[0]))


def test_unsorted_and_empty_rows():
    rng = np.random.default_rng(11)
    X, n_bins, grad, hess = dyadic_problem(rng, 200, 3, 6)
    rows = rng.permutation(200)[:150]  # unsorted: leaf_of_row follows the caller's order
    tree = grow(X, n_bins, grad, hess, 6, rows=rows, min_samples_leaf=5, max_leaves=8)
    ref = naive_grow(X, grad, hess, n_bins, 6, rows=np.sort(rows), min_samples_leaf=5,
                     max_leaves=8)
    assert_same_tree(tree, ref, rows)
    scores = np.zeros(200)
    tree.add_to_training_scores(scores)
    np.testing.assert_array_equal(scores[rows], tree.value[tree.leaf_of_row])
    assert np.all(scores[np.setdiff1d(np.arange(200), rows)] == 0)
    empty = grow(X, n_bins, grad, hess, 6, rows=np.array([], dtype=np.int64))
    assert empty.n_nodes == 1 and empty.value[0] == 0 and empty.leaf_of_row.size == 0


def test_quantised_packing_bounds():
    """Packed hessian + count never carries: check the exponent chosen for a large n."""

    for n in (1, 1000, 494_000, 10**7, 2**31):
        K = 63 - max(n.bit_length(), 1)
        for hmax in (1e-6, 0.25, 1.0, 1e6):
            k = quantisation_exponent(hmax, n, total_bits=K - 1)
            q = round(hmax * 2.0**k)
            assert n * q < 2**K and (n << K) + n * q < 2**63


def test_float_mode_is_thread_independent_with_feature_blocks(monkeypatch):
    """With one row chunk (threads <= blocks of features) float sums keep their order."""
    import skltr._engine.histogram as histogram_mod
    import skltr._gbdt.grower_cpu as grower_mod

    monkeypatch.setattr(histogram_mod, "MIN_FEATURES_PER_BLOCK", 1)
    monkeypatch.setattr(grower_mod, "PARTITION_PARALLEL_MIN_ROWS", 1000)
    rng = np.random.default_rng(12)
    X, n_bins, _, _ = dyadic_problem(rng, 6000, 5, 15, nan_frac=0.05)
    grad = rng.normal(size=6000).astype(np.float32)
    hess = rng.uniform(0.01, 1, size=6000).astype(np.float32)
    kw = dict(max_leaves=15, min_samples_leaf=20)
    one = grow(X, n_bins, grad, hess, 15, n_threads=1, **kw)
    two = grow(X, n_bins, grad, hess, 15, n_threads=2, **kw)
    assert_same_tree(two, vars_of(one))


@pytest.mark.parametrize("n_chunks", [1, 3])
def test_quantise_gradients_kernel(n_chunks):
    from skltr._cpu.quantise import quantise_gradients

    rng = np.random.default_rng(13)
    grad = rng.normal(size=1001).astype(np.float32)
    grad[:4] = [0.5, 1.5, -2.5, 0.0]  # halves: round to even, as numpy.rint
    hess = rng.uniform(0, 2, size=1001).astype(np.float32)
    qg, qh = np.empty(1001, np.int32), np.empty(1001, np.int64)
    quantise_gradients(grad, hess, 1.0, 2.0**20, 40, qg, qh, n_chunks)
    np.testing.assert_array_equal(qg, np.rint(grad.astype(np.float64)).astype(np.int32))
    np.testing.assert_array_equal(
        qh, np.rint(hess.astype(np.float64) * 2.0**20).astype(np.int64) + (1 << 40))


# ------------------------------------------------------------- one-word (gh64) bins
@pytest.mark.parametrize("tasks", [(1, 2), (2, 1), "serial"])
def test_one_word_histogram_matches_naive(tasks):
    """g in the high 32 bits, h in the low 32 of one int64: sums never carry across."""
    from skltr._cpu.quantise import quantise_gradients_gh64

    rng = np.random.default_rng(14)
    X, n_bins, grad, hess = dyadic_problem(rng, 3000, 5, 6, nan_frac=0.2)
    rows = np.sort(rng.choice(3000, 2000, replace=False)).astype(np.uint32)
    gh = np.empty(3000, np.int64)
    quantise_gradients_gh64(grad, hess, 8.0, 8.0, gh, 2)
    out = np.full((5, 9, 1), -1, np.int64)
    if tasks == "serial":
        build_histogram_serial(X, gh, gh, rows, 0, 2000, True, out)
    else:
        build_histogram(X, gh, gh, rows, 0, 2000, True, out, np.empty((2, out.size), np.int64),
                        *tasks)
    ref = naive_histogram(X, (grad * 8).astype(np.int64), (hess * 8).astype(np.int64), rows, 9)
    np.testing.assert_array_equal(out[:, :, 0] >> 32, ref[:, :, 0])
    np.testing.assert_array_equal(out[:, :, 0] & 0xFFFFFFFF, ref[:, :, 1])


def test_quantise_gradients_gh64_kernel():
    from skltr._cpu.quantise import quantise_gradients_gh64

    rng = np.random.default_rng(15)
    grad = rng.normal(size=1001).astype(np.float32)
    hess = rng.uniform(0, 2, size=1001).astype(np.float32)
    out = np.empty(1001, np.int64)
    total = quantise_gradients_gh64(grad, hess, 2.0**10, 2.0**12, out, 3)
    qg = np.rint(grad.astype(np.float64) * 2**10).astype(np.int64)
    qh = np.rint(hess.astype(np.float64) * 2**12).astype(np.int64)
    np.testing.assert_array_equal(out >> 32, qg)
    np.testing.assert_array_equal(out & 0xFFFFFFFF, qh)
    # sums unpack to the sums of the fields (no carry between them); the kernel's own sum
    assert total == out.sum()
    assert (total >> 32, total & 0xFFFFFFFF) == (qg.sum(), qh.sum())


@pytest.mark.parametrize("n_chunks", [1, 2, 5])
def test_gh_accumulators_hold_the_exact_sums_of_magnitudes(n_chunks):
    # the scales' statistics: the exact sums of |g| and |h| (math.fsum rounds the exact sum
    # once, as accumulated_value does), of a row sample too, and the negative hessians
    import math

    from skltr._cpu.quantise import N_ACCUMULATORS, accumulated_value, gh_accumulators

    rng = np.random.default_rng(17)
    n = 5000
    grad = rng.standard_cauchy(n).astype(np.float32)
    hess = rng.uniform(0, 3, n).astype(np.float32)
    grad[:4] = [1e-40, -3e-42, -0.0, 3e38]  # subnormals, a negative zero, the largest
    hess[:2] = [-0.0, 2e-45]  # -0.0 is no negative hessian
    rows = np.sort(rng.choice(n, 3000, replace=False)).astype(np.uint32)
    for r in (None, rows):
        acc = np.zeros(N_ACCUMULATORS, np.int64)
        gh_accumulators(grad, hess, np.empty(0, np.uint32) if r is None else r,
                        r is not None, n_chunks, acc)
        sel = slice(None) if r is None else r
        assert accumulated_value(acc[:256]) == math.fsum(np.abs(grad[sel].astype(float)))
        assert accumulated_value(acc[256:512]) == math.fsum(np.abs(hess[sel].astype(float)))
        assert acc[512] == 0
    hess[[7, 9]] = [-1e-3, -np.float32(np.nan)]  # a negative NaN counts, as on the GPU
    acc = np.zeros(N_ACCUMULATORS, np.int64)
    gh_accumulators(grad, hess, np.empty(0, np.uint32), False, n_chunks, acc)
    assert acc[512] == 2


@pytest.mark.parametrize("parallel", [False, True])
def test_one_word_and_two_word_bins_grow_the_same_trees(monkeypatch, parallel):
    """Hessian counts: one-word bins (the default up to GH64_MAX_ROWS) == two-word bins."""
    import skltr._gbdt.quantisation as quantisation

    if parallel:
        force_parallel_kernels(monkeypatch)
    rng = np.random.default_rng(16)
    for trial in range(3):
        X, n_bins, grad, hess = dyadic_problem(rng, 400, 4, 9, nan_frac=0.1)
        rows = None if trial == 0 else np.sort(rng.choice(400, 300, replace=False))
        kw = dict(max_leaves=12, min_samples_leaf=4, min_samples_leaf_counts="hessian",
                  hist_mode="quantised", rows=rows, n_threads=2 if parallel else 1)
        one = grow(X, n_bins, grad, hess, 9, **kw)
        monkeypatch.setattr(quantisation, "GH64_MAX_ROWS", 0)
        two = grow(X, n_bins, grad, hess, 9, **kw)
        monkeypatch.setattr(quantisation, "GH64_MAX_ROWS", 2**21)
        assert_same_tree(one, vars_of(two))
        assert_same_tree(one, naive_grow(X, grad, hess, n_bins, 9, **{
            k: v for k, v in kw.items() if k not in ("hist_mode", "n_threads")}), rows)


def test_hessian_counts_treat_zero_gradient_bins_as_empty():
    # Bin 1 holds rows whose gradients and hessians are all zero (a query with equal
    # labels under lambdarank): seen through hessians, as LightGBM sees it, it is empty, so
    # the threshold moves up over it; counting rows, it is not.
    X = np.repeat(np.array([0, 1, 2], np.uint8), 10)[:, None].copy()
    grad = np.repeat(np.array([-1, 0, 1], np.float32), 10)
    hess = np.repeat(np.array([1, 0, 1], np.float32), 10)
    n_bins = np.array([3], np.int32)
    kw = dict(min_samples_leaf=1, max_leaves=2)
    rows_tree = grow(X, n_bins, grad, hess, 3, **kw)
    assert rows_tree.bin_threshold[0] == 0
    for mode in ("float", "quantised"):
        est = grow(X, n_bins, grad, hess, 3, hist_mode=mode, min_samples_leaf_counts="hessian",
                   **kw)
        assert est.bin_threshold[0] == 1
        assert list(est.count[1:]) == [20, 10]  # real row counts, from the partition
        assert_same_tree(est, naive_grow(X, grad, hess, n_bins, 3,
                                         min_samples_leaf_counts="hessian", **kw))


def test_hessian_counts_left_default_counts_invisible_missing_rows():
    # The missing bin holds rows whose gradients and hessians are zero (a query with equal
    # labels): seen through hessians the node has no missing rows, so missing values follow
    # the bigger child -- here the left one -- and the left child's row count must include
    # them (the GPU grower cuts its partition buffer at that count).
    missing_bin = 3
    X = np.repeat(np.array([0, 1, missing_bin], np.uint8), [15, 10, 5])[:, None].copy()
    grad = np.repeat(np.array([-1, 1, 0], np.float32), [15, 10, 5])
    hess = np.repeat(np.array([1, 1, 0], np.float32), [15, 10, 5])
    n_bins = np.array([2], np.int32)
    kw = dict(min_samples_leaf=1, max_leaves=2, min_samples_leaf_counts="hessian")
    for mode in ("float", "quantised"):
        tree = grow(X, n_bins, grad, hess, missing_bin, hist_mode=mode, **kw)
        assert tree.default_left[0]
        assert list(tree.count[1:]) == [20, 10]
        assert_same_tree(tree, naive_grow(X, grad, hess, n_bins, missing_bin, **kw))


@pytest.mark.parametrize("n_spans", [1, 2, 3, 7])
def test_leaf_of_rows(n_spans):
    from skltr._cpu.partition import leaf_of_rows

    # ranges out of order within a leaf still write each of their rows once
    rows = np.array([5, 0, 3, 1, 4, 2], np.uint32)
    out = np.full(7, -1, np.int32)
    leaf_of_rows(rows, np.array([0, 2, 5]), np.array([2, 5, 6]), np.array([3, 7, 9], np.int32),
                 out, n_spans)
    np.testing.assert_array_equal(out, [3, 7, 9, 7, 7, 3, -1])
    # a partition buffer: each leaf's rows increasing (a sample of the rows), leaves in any
    # order; and the same buffer with each leaf's rows shuffled
    rng = np.random.default_rng(n_spans)
    n = 1000
    used = np.sort(rng.choice(n, 700, replace=False))
    leaf_of = rng.integers(0, 9, used.size)
    buf = used[np.argsort(leaf_of, kind="stable")].astype(np.uint32)
    counts = np.bincount(leaf_of, minlength=9)
    ends = np.cumsum(counts)
    starts = ends - counts
    ids = rng.permutation(9).astype(np.int32)
    expect = np.full(n, -1, np.int32)
    expect[used] = ids[leaf_of]
    shuffled = buf.copy()
    for a, b in zip(starts, ends):
        shuffled[a:b] = rng.permutation(shuffled[a:b])
    for b in (buf, shuffled):
        out = np.full(n, -1, np.int32)
        order = rng.permutation(9)  # the leaves' ranges given in any order
        leaf_of_rows(b, starts[order], ends[order], ids[order], out, n_spans)
        np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("n_chunks,n_blocks", [(1, 0), (3, 0), (1, 1), (1, 3), (1, 6),
                                               (1, 20)])
@pytest.mark.parametrize("do", [(True, True), (True, False), (False, True)])
def test_find_child_splits(n_chunks, n_blocks, do):
    # one region: reduce the small child's row chunks (or, build_child_splits, build its
    # histogram in feature blocks), subtract it from the parent, scan both -- the same as
    # build_histogram (and its reduction), subtract_histograms, find_best_splits
    from skltr._cpu.split_children import build_child_splits, find_child_splits

    rng = np.random.default_rng(3)
    X, n_bins, grad, hess = dyadic_problem(rng, 3000, 20, 15)
    rows = np.sort(rng.choice(3000, 2000, replace=False)).astype(np.uint32)
    small_rows = rows[:700]
    shape = (20, 16 + 3, 3)
    parent = np.empty(shape)
    build_histogram_serial(X, grad, hess, rows, 0, rows.size, True, parent)
    small = np.empty(shape)
    scratch = np.empty((max(n_chunks - 1, 1), small.size))
    build_histogram(X, grad, hess, small_rows, 0, small_rows.size, True, small, scratch,
                    n_chunks, 2, False)
    reduced = np.empty(shape)
    build_histogram(X, grad, hess, small_rows, 0, small_rows.size, True, reduced,
                    np.empty_like(scratch), n_chunks, 2)
    large = parent.copy()
    sums = []
    for r in (small_rows, rows[700:]):
        sums.append((float(np.sum(grad[r], dtype=np.float64)),
                     float(np.sum(hess[r], dtype=np.float64)), r.size, -np.inf, np.inf))
    c = split_constants(missing_bin=15, inv_scale_g=1.0, inv_scale_h=1.0, min_samples_leaf=1,
                        reg_lambda=0.0, reg_alpha=0.0, min_child_weight=1e-3,
                        min_split_gain=0.0, count_shift=0, hessian_counts=False)
    mask = np.ones(20, bool)
    works = split_work(20, np.float64), split_work(20, np.float64)
    if n_blocks:  # built by the kernel itself
        small[...] = 7.0
        got = build_child_splits(X, np.ascontiguousarray(X.T), grad, hess, small_rows, 0,
                                 small_rows.size, n_blocks, small, large, n_bins, mask,
                                 np.zeros(20, np.int8), sums[0], sums[1], c, *works, *do,
                                 None, None, None, False, 0)
    else:
        got = find_child_splits(small, large, n_bins, mask, np.zeros(20, np.int8), sums[0],
                                sums[1], c, *works, *do, scratch, n_chunks, None, None)
    np.testing.assert_array_equal(small, reduced)
    want_large = parent - reduced
    for k, (hist, s) in enumerate(((reduced, sums[0]), (want_large, sums[1]))):
        if do[k]:
            want = find_best_splits_serial(hist, n_bins, mask, np.zeros(20, np.int8), *s, c,
                                           split_work(20, np.float64))
            assert tuple(got[k]) == tuple(want)
    assert got[2:] == (-1, -1)  # no categorical task
    if do[1]:
        np.testing.assert_array_equal(large, want_large)


# ---------------------------------------------------------------------------- compiled growth
def _mixed_ranking_data(seed):
    """Ranking data with numeric columns (NaNs), a byte categorical column (12 levels) and a
    wide one (700 levels, beyond a byte of bins)."""
    from skltr.datasets import make_ranking

    rng = np.random.default_rng(seed)
    X, y, qid = make_ranking(n_queries=80, docs_per_query=25, n_features=6, n_informative=4,
                             categorical_levels=(12,), random_state=seed)
    wide = rng.integers(0, 700, X.shape[0]).astype(np.float64)
    y = np.clip(y + (wide % 3 == 0), 0, 4)  # the wide column matters
    X = np.column_stack([X, wide])
    X[::11, 1] = np.nan
    X[::13, 6] = np.nan
    return X, y, qid


COMPILED_CASES = [
    dict(),
    dict(hist_mode="float"),
    dict(min_samples_leaf_counts="rows"),  # two-word bins (counts in the histogram)
    dict(n_jobs=1, max_leaves=63, min_samples_leaf=3),
    dict(max_leaves=63, min_samples_leaf=2, max_depth=5, subsample=0.7,
         colsample_bytree=0.6),
    dict(categorical_features=[6, 7], max_cat_to_onehot=16, cat_l2=3.0),  # one-vs-rest
    dict(categorical_features=[6, 7], min_data_per_group=5, cat_smooth=1.0,
         max_cat_threshold=16, hist_mode="float", n_jobs=1),
    dict(categorical_features=[6, 7], min_data_per_group=5, cat_smooth=1.0,
         min_samples_leaf_counts="rows", max_leaves=63, min_samples_leaf=3),
]


@pytest.mark.parametrize("kw", COMPILED_CASES + [
    # a small node's wide rows built apart from its split search's region, not in it
    dict(categorical_features=[6, 7], min_data_per_group=5, cat_smooth=1.0,
         wide_tasks="apart"),
    # ... in it, a wide feature's task after a feature block's on 2 threads, with float
    # sums (in row order, as built apart) and with two wide features
    dict(categorical_features=[6, 7], min_data_per_group=5, cat_smooth=1.0,
         hist_mode="float", wide_tasks="fit"),
    dict(categorical_features=[6, 7, 8], min_data_per_group=5, cat_smooth=1.0,
         min_samples_leaf_counts="rows", wide_tasks="fit", second_wide=True),
    # ... and each wide feature a task of its own
    dict(categorical_features=[6, 7, 8], min_data_per_group=5, cat_smooth=1.0,
         wide_tasks="own", second_wide=True)])
def test_compiled_leafwise_growth_is_the_drivers(monkeypatch, kw):
    """The whole-tree numba grower (skltr._cpu.grow_leafwise) grows the growth driver's
    trees bit for bit: layouts, threads, subsamples, column samples, depth limits, byte
    and wide categorical features."""
    import skltr._gbdt.grower_cpu as grower_mod
    from skltr import GPUHistGBDTRanker

    kw = dict(kw)
    monkeypatch.setattr(grower_mod, "WIDE_TASKS", kw.pop("wide_tasks", "fit"))
    X, y, qid = _mixed_ranking_data(3)
    if kw.pop("second_wide", False):  # another wide column (400 levels) that matters
        extra = np.random.default_rng(4).integers(0, 400, X.shape[0]).astype(np.float64)
        y = np.clip(y + (extra % 5 == 0), 0, 4)
        X = np.column_stack([X, extra])
    params = dict(n_estimators=6, random_state=0, min_samples_leaf=5, n_jobs=2)
    params.update(kw)
    models = {}
    for compiled in (False, True):
        monkeypatch.setattr(grower_mod, "COMPILED_LEAFWISE", compiled)
        models[compiled] = GPUHistGBDTRanker(**params).fit(X, y, qid=qid)
    np.testing.assert_array_equal(models[True].feature_importance("gain"),
                                  models[False].feature_importance("gain"))
    a, b = models[False].ensemble_, models[True].ensemble_
    assert a.n_nodes > 6 * 7  # trees of several splits
    if "categorical_features" in kw:
        assert np.any(a.cat_nwords > 4), "no split on the wide feature"
    for name in ("tree_ptr", "feature", "threshold", "left", "right", "value", "flags",
                 "cat_offset", "cat_nwords", "cat_bitsets", "base_score", "cover"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name), err_msg=name)


@pytest.mark.parametrize("blocks,n_wide,threads,rule,want", [
    (16, 1, 16, 0, (True, True)),    # a block a thread: the wide task after the last's
    (15, 1, 16, 0, (True, False)),   # a thread left for it
    (2, 2, 2, 0, (True, True)),
    (2, 3, 2, 0, (False, False)),    # more wide tasks than blocks: apart
    (4, 0, 2, 0, (True, False)),     # no wide features
    (16, 1, 16, 1, (False, False)),  # "apart"
    (2, 3, 2, 2, (True, False)),     # "own"
])
def test_wide_tasks_fit_the_threads(blocks, n_wide, threads, rule, want):
    # where a small node's wide rows are built (skltr._cpu.grow_leafwise._wide_tasks)
    from skltr._cpu.grow_leafwise import GrowCase, _wide_tasks

    case = GrowCase(*([0] * len(GrowCase._fields)))._replace(n_threads=threads,
                                                             wide_tasks=rule)
    assert _wide_tasks(blocks, n_wide, case) == want


@pytest.mark.parametrize("n_features,n_blocks,n_light,weight,want", [
    (31, 16, 1, 5, [3] + [2] * 14 + [0]),  # the wide task alone on its thread
    (31, 8, 1, 5, [5, 5, 5, 4, 4, 4, 4, 0]),
    (31, 4, 1, 5, [9, 9, 9, 4]),
    (31, 2, 1, 5, [18, 13]),
    (31, 2, 0, 5, [16, 15]),                # no wide task: even
    (31, 2, 2, 5, [16, 15]),                # every block runs one: even
    (5, 4, 1, 0, [2, 1, 1, 1]),
    (3, 3, 1, 1, [2, 1, 0]),
])
def test_feature_blocks_leave_room_for_a_wide_task(n_features, n_blocks, n_light, weight,
                                                   want):
    # build_child_splits' blocks: in order, every feature once, the last n_light blocks
    # (each runs a wide feature's task too) lighter by the task's weight in features
    from skltr._cpu.split_children import block_start

    starts = [block_start(i, n_features, n_blocks, n_light, weight)
              for i in range(n_blocks + 1)]
    assert starts[0] == 0 and starts[-1] == n_features
    assert np.diff(starts).tolist() == want


def test_compiled_growth_touches_only_the_histograms_it_holds(monkeypatch):
    """The compiled grower's slot array has room for every leaf, but a tree writes only as
    many slots as the driver's pool holds histograms (the rest takes no memory)."""
    import skltr._gbdt.grower_cpu as grower_mod

    rng = np.random.default_rng(8)
    X, n_bins, _, _ = dyadic_problem(rng, 6000, 6, 15, nan_frac=0.05)
    grad = rng.normal(size=6000).astype(np.float32)
    hess = rng.uniform(0.1, 1, size=6000).astype(np.float32)
    kw = dict(max_leaves=63, min_samples_leaf=10, hist_mode="quantised", n_threads=2)
    monkeypatch.setattr(grower_mod, "COMPILED_LEAFWISE", False)
    driver = TreeGrower(X, grad, hess, n_bins=n_bins, missing_bin=15,
                        has_missing=np.ones(6, bool), **kw)
    ref = driver.grow()
    held = len(driver.pool._free)  # every histogram the driver's tree made, given back
    monkeypatch.setattr(grower_mod, "COMPILED_LEAFWISE", True)
    grower = TreeGrower(X, grad, hess, n_bins=n_bins, missing_bin=15,
                        has_missing=np.ones(6, bool), pool=driver.pool, **kw)
    slots = driver.pool.slots(63)
    slots[...] = -7
    tree = grower.grow()
    assert grower.pool is driver.pool and driver.pool.slots(63) is slots
    touched = int(np.sum(np.any(slots.reshape(slots.shape[0], -1) != -7, axis=1)))
    assert ref.n_leaves == tree.n_leaves > 40 and 10 < touched <= held < 63
    assert_same_tree(tree, vars_of(ref))


def test_compiled_growth_falls_back_to_the_driver_without_address_space(monkeypatch):
    # a system that refuses the slot array's address space (strict overcommit) gets the
    # driver's tree, histograms allocated one at a time
    rng = np.random.default_rng(9)
    X, n_bins, grad, hess = dyadic_problem(rng, 3000, 4, 15)
    ref = grow(X, n_bins, grad, hess, 15, max_leaves=31, min_samples_leaf=5, n_threads=2)

    def refuse(self, n_slots):
        raise MemoryError("no address space")

    monkeypatch.setattr(HistogramPool, "slots", refuse)
    tree = grow(X, n_bins, grad, hess, 15, max_leaves=31, min_samples_leaf=5, n_threads=2)
    assert tree.n_leaves > 10
    assert_same_tree(tree, vars_of(ref))
