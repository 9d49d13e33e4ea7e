"""Categorical features of the GBDT ranker (issue #29).

References: the split kernel (``skltr._cpu.split_categorical``) against the plain-Python
``naive_categorical_split`` (``tests/naive_gbdt.py``, written from LightGBM's rule as the
kernel's docstring states it) on random nodes, gradients on a 1/8 grid so that every sum is
exact; the binning by category against its documented rule; LightGBM's own root split
(the same left category set) and its test NDCG with the same categorical column; the
one-row-at-a-time tree walk of ``tests/naive_trees.py`` for the fitted categorical nodes;
and the one long fit for continued training.
"""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from naive_gbdt import naive_categorical_split, naive_histogram
from naive_trees import naive_predict_raw
from skltr import GPUHistGBDTRanker
from skltr._cpu.histogram_wide import build_wide_histogram, build_wide_histogram_serial
from skltr._cpu.split_categorical import best_categorical_split
from skltr._engine.binning import MAX_CATEGORY, BinMapper
from skltr._engine.histogram import HIST_PAD_BINS
from skltr._records import CategoricalConstants, SplitInfo, split_constants
from skltr.datasets import make_ranking
from skltr.metrics import ndcg_score
from skltr.trees import NodeFlags
from skltr.trees._traversal import predict_raw


# ---------------------------------------------------------------------------- split kernel
MISSING_BIN = 40


def _node(rng, n_rows, n_bins, hessian_counts):
    """A node's binned rows: column 0 numeric (never searched here), the others categorical
    with ``n_bins[f]`` categories of skewed frequencies and distinct effects; NaN rows in the
    missing bin; gradients and hessians on a 1/8 grid."""
    F = len(n_bins)
    X = np.zeros((n_rows, F), np.uint8)
    grad = np.zeros(n_rows, np.float64)
    for f in range(F):
        nb = n_bins[f]
        p = 1.0 / np.arange(1, nb + 1) ** rng.uniform(0.3, 1.5)
        X[:, f] = rng.choice(nb, size=n_rows, p=p / p.sum())
        X[rng.random(n_rows) < 0.08, f] = MISSING_BIN
        effect = rng.normal(0, 1, nb + 1)
        grad += np.where(X[:, f] < nb, effect[np.minimum(X[:, f], nb)], effect[nb])
    grad = np.round((grad + rng.normal(0, 1, n_rows)) * 4) / 8
    hess = rng.integers(1, 9, n_rows) / 8
    if hessian_counts:  # rows that LightGBM's histograms cannot see: zero gradient and hessian
        silent = rng.random(n_rows) < 0.05
        grad[silent] = 0.0
        hess[silent] = 0.0
    return X, grad, hess


def _kernel(X, grad, hess, rows, features, n_bins, mask, p):
    hist = naive_histogram(X, grad, hess, rows, MISSING_BIN + 1 + HIST_PAD_BINS)
    c = split_constants(missing_bin=MISSING_BIN, inv_scale_g=1.0, inv_scale_h=1.0,
                        reg_lambda=p["reg_lambda"], reg_alpha=p["reg_alpha"],
                        min_child_weight=p["min_child_weight"],
                        min_samples_leaf=p["min_samples_leaf"],
                        min_split_gain=p["min_split_gain"], count_shift=0,
                        hessian_counts=p["min_samples_leaf_counts"] == "hessian")
    k = CategoricalConstants(int(p["max_cat_to_onehot"]), int(p["max_cat_threshold"]),
                             float(p["cat_smooth"]), float(p["cat_l2"]),
                             int(p["min_data_per_group"]))
    bits = np.zeros(4, np.uint64)
    G = float(np.sum(grad[rows]))
    H = float(np.sum(hess[rows]))
    f, gain, gl, hl, cl, many = best_categorical_split(
        hist, np.asarray(features, np.int64), np.asarray(n_bins, np.int32), mask, G, H,
        len(rows), -np.inf, np.inf, c, k, bits)
    left = {b for b in range(256) if (int(bits[b >> 6]) >> (b & 63)) & 1}
    return int(f), gain, left, gl, hl, cl, bool(many)


CAT_PARAMS = dict(reg_lambda=0.0, reg_alpha=0.0, min_child_weight=1e-3, min_samples_leaf=1,
                  min_split_gain=0.0, max_cat_to_onehot=4, max_cat_threshold=32,
                  cat_smooth=10.0, cat_l2=10.0, min_data_per_group=100)


@pytest.mark.parametrize("counts", ["rows", "hessian"])
@pytest.mark.parametrize("settings", [
    {},
    {"min_data_per_group": 15, "cat_smooth": 3.0, "min_samples_leaf": 10},
    {"min_data_per_group": 1, "cat_smooth": 0.0, "cat_l2": 0.0, "max_cat_threshold": 3},
    {"min_data_per_group": 30, "reg_lambda": 2.0, "reg_alpha": 0.75, "min_child_weight": 5.0,
     "min_split_gain": 2.0},
    {"max_cat_to_onehot": 64, "min_samples_leaf": 25},  # one-vs-rest for every feature
])
def test_split_kernel_matches_the_naive_rule(counts, settings):
    p = dict(CAT_PARAMS, min_samples_leaf_counts=counts, **settings)
    n_bins = [8, 3, 12, 30, 2]  # feature 0 numeric; 1 and 4 one-vs-rest at the default
    features = [1, 2, 3, 4]
    kinds = set()
    for seed in range(25):
        rng = np.random.default_rng(seed)
        X, grad, hess = _node(rng, 500, n_bins, counts == "hessian")
        rows = np.flatnonzero(rng.random(500) < rng.uniform(0.3, 1.0))  # a child node
        mask = np.ones(len(n_bins), bool)
        if seed % 5 == 4:
            mask[rng.choice(features)] = False
        want = naive_categorical_split(X, grad, hess, rows, features, n_bins, MISSING_BIN,
                                       mask, p)
        f, gain, left, gl, hl, cl, many = _kernel(X, grad, hess, rows, features, n_bins,
                                                  mask, p)
        if want is None:
            assert f == -1, (seed, f, gain, left)
            continue
        w_gain, w_f, w_left, w_many = want
        assert (f, left, many) == (w_f, set(w_left), w_many), (seed, gain, w_gain)
        assert gain == pytest.approx(w_gain, rel=1e-12)
        in_left = np.isin(X[rows, f], list(w_left))
        assert gl == pytest.approx(float(np.sum(grad[rows][in_left])), rel=1e-12, abs=1e-12)
        assert hl == pytest.approx(float(np.sum(hess[rows][in_left])), rel=1e-12, abs=1e-12)
        assert cl == int(in_left.sum())
        assert MISSING_BIN not in left
        kinds.add((f, many))
    # the cases are not vacuous: several features win, and many-vs-many splits happen
    # where the settings allow them
    assert len({f for f, _ in kinds}) >= 2, kinds
    if p["max_cat_to_onehot"] <= 4:
        assert any(many for _, many in kinds), kinds


@pytest.mark.parametrize("settings", [{}, {"max_cat_threshold": 200, "cat_smooth": 1.0,
                                          "min_data_per_group": 5},
                                      {"max_cat_threshold": 8, "cat_l2": 1.0}])
def test_split_kernel_on_a_wide_feature_matches_the_naive_rule(settings):
    # 1,500 categories (a wide feature, one long histogram row): the kernel sorts only the
    # two ends of the categories' order, which must be the full stable sort's; keys tie
    # (gradients and hessians on a coarse grid), so the ties' order is checked too
    p = dict(CAT_PARAMS, min_samples_leaf_counts="rows", **settings)
    K = 1500
    for seed in range(4):
        rng = np.random.default_rng(seed)
        n = 30000
        prob = 1.0 / np.arange(1, K + 1) ** 0.8
        X = rng.choice(K, size=(n, 1), p=prob / prob.sum()).astype(np.uint16)
        X[rng.random(n) < 0.05, 0] = K  # missing
        effect = np.round(rng.normal(0, 1, K + 1) * 2) / 2
        grad = np.round((effect[X[:, 0]] + rng.normal(0, 1, n)) * 2) / 4
        hess = rng.integers(1, 3, n) / 2
        rows = np.flatnonzero(rng.random(n) < 0.7)
        hist = np.zeros((1, K + 1, 3))
        for ch, v in enumerate((grad[rows], hess[rows], np.ones(rows.size))):
            np.add.at(hist[0, :, ch], X[rows, 0], v)
        c = split_constants(missing_bin=K, inv_scale_g=1.0, inv_scale_h=1.0,
                            reg_lambda=p["reg_lambda"], reg_alpha=p["reg_alpha"],
                            min_child_weight=p["min_child_weight"],
                            min_samples_leaf=p["min_samples_leaf"],
                            min_split_gain=p["min_split_gain"], count_shift=0,
                            hessian_counts=False)
        k = CategoricalConstants(int(p["max_cat_to_onehot"]), int(p["max_cat_threshold"]),
                                 float(p["cat_smooth"]), float(p["cat_l2"]),
                                 int(p["min_data_per_group"]))
        bits = np.zeros((K + 64) // 64, np.uint64)
        f, gain, gl, hl, cl, many = best_categorical_split(
            hist, np.zeros(1, np.int64), np.array([K], np.int32), np.ones(1, bool),
            float(grad[rows].sum()), float(hess[rows].sum()), rows.size, -np.inf, np.inf,
            c, k, bits)
        want = naive_categorical_split(X, grad, hess, rows, [0], [K], K, np.ones(1, bool), p)
        assert want is not None and want[3]  # many-vs-many
        left = {b for b in range(K + 1) if (int(bits[b >> 6]) >> (b & 63)) & 1}
        assert (int(f), left, bool(many)) == (0, set(want[2]), True), seed
        assert gain == pytest.approx(want[0], rel=1e-12)


def test_batched_search_is_the_one_node_search():
    # CategoricalSearch over a batch (the GPU grower's host decision): per node the same
    # split as the CPU grower's one-node call, byte and wide features together; every node's
    # mask row is its own
    from skltr._engine.wide_categorical import WideCategorical
    from skltr._gbdt.categorical import CategoricalParams, CategoricalSearch
    from skltr._gbdt.growth import Node

    rng = np.random.default_rng(11)
    nf, W = 6, 20
    n_bins = np.array([19, 7, 3, 1, 12, 1], np.int32)  # 3 and 5 wide
    wide = WideCategorical.layout(nf, [3, 5], [300, 45], W)
    params = CategoricalParams(features=(1, 2, 3, 4, 5), max_cat_to_onehot=4,
                               max_cat_threshold=16, cat_smooth=2.0, cat_l2=1.0,
                               min_data_per_group=5)
    m = 9
    hists = np.zeros((m, nf + wide.hist_rows, W, 2), np.int64)
    shift = 30
    for i in range(m):
        for f in (1, 2, 4):
            cnt = rng.integers(0, 40, n_bins[f])
            hists[i, f, :n_bins[f], 0] = rng.integers(-500, 500, n_bins[f]) * (cnt > 0)
            hists[i, f, :n_bins[f], 1] = (cnt << shift) + rng.integers(1, 300, n_bins[f]) * cnt
        for w in range(2):
            flat = wide.view(hists[i], w)[0]
            K = wide.n_bins[w]
            cnt = rng.integers(0, 30, K) * (rng.random(K) < 0.6)
            flat[:K, 0] = rng.integers(-500, 500, K) * (cnt > 0)
            flat[:K, 1] = (cnt << shift) + rng.integers(1, 300, K) * cnt
    counts = hists[:, 1, :, 1].sum(axis=1) >> shift
    nodes = [Node(0, 1, int(hists[i, 1, :, 0].sum()),
                  int(hists[i, 1, :, 1].sum() & ((1 << shift) - 1)), int(counts[i]), 1)
             for i in range(m)]
    c = split_constants(missing_bin=W - 1, inv_scale_g=0.01, inv_scale_h=0.01, reg_lambda=1.0,
                        reg_alpha=0.0, min_child_weight=1e-3, min_samples_leaf=3,
                        min_split_gain=0.0, count_shift=shift, hessian_counts=False)
    masks = rng.random((3, nf)) < 0.8
    mask_row = rng.integers(0, 3, m)
    search = CategoricalSearch(params, nf, n_bins, wide, local=False)
    none = [None] * m
    batch = search.best(none, nodes, hists, masks, mask_row, c)
    one = [search.best([None], [nodes[i]], hists[i:i + 1], masks[mask_row[i]][None],
                       np.zeros(1, np.int64), c)[0] for i in range(m)]
    assert sum(b is not None for b in batch) >= 5
    assert any(b is not None and b.feature in (3, 5) for b in batch)
    for b, o in zip(batch, one):
        assert (b is None) == (o is None)
        if b is not None:
            assert b[:7] == o[:7] and b.cat_l2 == o.cat_l2
            np.testing.assert_array_equal(b.cat_left, o.cat_left)
    # the GPU grower's copy: the categorical rows only, in gather_rows order
    local = CategoricalSearch(params, nf, n_bins, wide, local=True)
    got = local.best(none, nodes, np.ascontiguousarray(hists[:, local.gather_rows]), masks,
                     mask_row, c)
    for b, o in zip(got, one):
        assert (b is None) == (o is None)
        if b is not None:
            assert b[:7] == o[:7]
            np.testing.assert_array_equal(b.cat_left, o.cat_left)


@pytest.mark.parametrize("do", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("seed", range(6))
def test_fused_child_search_is_the_one_node_search(do, seed):
    # the CPU grower's fused search of a split's two children (numeric and categorical
    # features as tasks of one parallel loop, the larger child subtracted from the parent,
    # wide rows included) gives each child the split of the one-node searches: the numeric
    # scan, then CategoricalSearch's better-of rule
    from skltr._cpu.split import find_best_splits_serial
    from skltr._cpu.split_children import find_child_splits
    from skltr._engine.wide_categorical import WideCategorical
    from skltr._gbdt.categorical import CategoricalParams, CategoricalSearch
    from skltr._gbdt.growth import Node
    from skltr._records import split_work

    rng = np.random.default_rng(seed)
    nf, W, shift, n = 6, 24, 30, 3000
    n_bins = np.array([22, 7, 3, 1, 12, 1], np.int32)  # 0 numeric; 3 and 5 wide
    wide = WideCategorical.layout(nf, [3, 5], [300, 45], W)
    params = CategoricalParams(features=(1, 2, 3, 4, 5), max_cat_to_onehot=4,
                               max_cat_threshold=16, cat_smooth=2.0, cat_l2=1.0,
                               min_data_per_group=5)
    codes = np.stack([rng.integers(0, k, n) for k in (22, 7, 3, 300, 12, 45)], axis=1)
    codes[rng.random((n, nf)) < 0.05] = -1  # missing
    effect = [rng.normal(0, 1, k) * rng.uniform(0.2, 2) for k in (22, 7, 3, 300, 12, 45)]
    effect[0] = np.linspace(-2, 2, 22) * rng.uniform(0, 2)  # numeric: an ordered effect
    g = sum(np.where(codes[:, f] >= 0, effect[f][codes[:, f]], 0.5) for f in range(nf))
    g = np.round((g + rng.normal(0, 1, n)) * 40).astype(np.int64)
    h = rng.integers(1, 50, n).astype(np.int64)

    def hist_of(rows):
        out = np.zeros((nf + wide.hist_rows, W, 2), np.int64)
        for f in range(nf):
            w = wide.index(f)
            flat = out[f] if w < 0 else wide.view(out, w)[0]
            code = codes[rows, f]
            code = np.where(code < 0, W - 1 if w < 0 else wide.n_bins[w], code)
            if w >= 0:  # the byte column of a wide feature: every row missing
                out[f, W - 1] += (g[rows].sum(), (rows.size << shift) + h[rows].sum())
            np.add.at(flat[:, 0], code, g[rows])
            np.add.at(flat[:, 1], code, (np.int64(1) << shift) + h[rows])
        return out

    small_rows = np.sort(rng.choice(n, 1100, replace=False))
    large_rows = np.setdiff1d(np.arange(n), small_rows)
    small, parent = hist_of(small_rows), hist_of(np.arange(n))
    nodes = [Node(0, r.size, int(g[r].sum()), int(h[r].sum()), r.size, 1)
             for r in (small_rows, large_rows)]
    c = split_constants(missing_bin=W - 1, inv_scale_g=0.01, inv_scale_h=0.01,
                        reg_lambda=1.0, reg_alpha=0.0, min_child_weight=1e-3,
                        min_samples_leaf=3, min_split_gain=0.0, count_shift=shift,
                        hessian_counts=False)
    mask = rng.random(nf) < 0.85
    numeric = mask & ~params.mask(nf)
    search = CategoricalSearch(params, nf, n_bins, wide, local=False)
    tasks = search.tasks(mask, np.int64)
    large = parent.copy()
    got = find_child_splits(
        small, large, n_bins, numeric, np.zeros(nf, np.int8),
        *[(nd.sum_g, nd.sum_h, nd.count, nd.lo, nd.hi) for nd in nodes], c,
        split_work(nf, np.int64), split_work(nf, np.int64), *do, np.empty((1, small.size)),
        1, tasks, search.k)
    if do[1]:  # the larger child's histogram, its wide rows too
        np.testing.assert_array_equal(large, hist_of(large_rows))
    found = []
    for k, (node, rows) in enumerate(zip(nodes, (small_rows, large_rows))):
        if not do[k]:
            continue
        hist = hist_of(rows)
        res = SplitInfo(*find_best_splits_serial(
            hist[:nf], n_bins, numeric, np.zeros(nf, np.int8), node.sum_g, node.sum_h,
            node.count, node.lo, node.hi, c, split_work(nf, np.int64)))
        want = search.best([res], [node], hist[None], mask[None], np.zeros(1, np.int64), c)[0]
        entry = got[2 + k]
        have = SplitInfo(*got[k]) if entry < 0 else search.split_of(tasks, entry)
        assert have[:7] == want[:7] and have.cat_l2 == want.cat_l2
        if want.cat_left is None:
            assert have.cat_left is None
        else:
            np.testing.assert_array_equal(have.cat_left, want.cat_left)
        found.append(want.feature)
    assert found and all(f >= 0 for f in found)


@pytest.mark.parametrize("counts", ["hessian", "rows"])
def test_a_category_of_gradients_without_hessian_sorts_first_or_last_under_cat_smooth_0(
        counts):
    # cat_smooth=0 (allowed, as LightGBM's): a category whose rows have gradients but zero
    # hessians has the key G / 0, IEEE's +-inf as in LightGBM's double arithmetic (numba's
    # division raised ZeroDivisionError here); the split is the naive rule's (numpy floats)
    rng = np.random.default_rng(3)
    n_bins = [8, 3, 12, 30, 2]
    p = dict(CAT_PARAMS, min_samples_leaf_counts=counts, cat_smooth=0.0,
             min_data_per_group=5)
    X, grad, hess = _node(rng, 500, n_bins, counts == "hessian")
    for f, b, sign in ((3, 4, -1.0), (3, 7, 1.0), (3, 9, 0.0)):
        at = X[:, f] == b  # category 9: rows of no gradient and no hessian (key 0, not NaN)
        grad[at] = sign * 0.5
        hess[at] = 0.0
    rows = np.arange(500)
    mask = np.array([False, False, False, True, False])
    with np.errstate(divide="ignore"):
        want = naive_categorical_split(X, grad, hess, rows, [1, 2, 3, 4], n_bins, MISSING_BIN,
                                       mask, p)
    f, gain, left, *_, many = _kernel(X, grad, hess, rows, [1, 2, 3, 4], n_bins, mask, p)
    assert want is not None and want[3] and many
    assert (f, left) == (want[1], set(want[2]))
    assert 4 in left or 7 in left  # an infinite key sits at an end of the order
    assert gain == pytest.approx(want[0], rel=1e-12)


@pytest.mark.parametrize("used,n", [(33, 17), (149, 32), (300, 32), (257, 64), (5000, 32),
                                    (9000, 1), (2000, 200)])
@pytest.mark.parametrize("ties", [False, True])
def test_ends_of_the_category_order_are_the_stable_sorts(used, n, ties):
    # many categories keep only the n entries of either end of the stable order (one
    # selection pass): the same entries in the same order as np.argsort's mergesort
    from skltr._cpu.split_categorical import _order_ends

    rng = np.random.default_rng(used + n)
    keys = rng.normal(size=used)
    if ties:  # few distinct keys, and signed zeros (equal under <)
        keys = np.round(keys * 2) / 2
        keys[rng.random(used) < 0.1] = -0.0
    order = rng.permutation(4 * used)[:used].astype(np.int64)
    up, down = np.empty(n, np.int64), np.empty(n, np.int64)
    _order_ends(keys, order, n, up, down)
    rank = order[np.argsort(keys, kind="mergesort")]
    np.testing.assert_array_equal(up, rank[:n])
    np.testing.assert_array_equal(down, rank[::-1][:n])


def test_split_kernel_one_vs_rest_and_many_vs_many_on_one_feature():
    # the same feature switches rule at max_cat_to_onehot = n_bins + 1
    rng = np.random.default_rng(7)
    n_bins = [2, 6]
    p = dict(CAT_PARAMS, min_samples_leaf_counts="rows", min_data_per_group=5, cat_smooth=2.0)
    X, grad, hess = _node(rng, 400, n_bins, False)
    rows = np.arange(400)
    mask = np.ones(2, bool)
    for onehot, many in ((7, False), (6, True)):
        q = dict(p, max_cat_to_onehot=onehot)
        want = naive_categorical_split(X, grad, hess, rows, [1], n_bins, MISSING_BIN, mask, q)
        got = _kernel(X, grad, hess, rows, [1], n_bins, mask, q)
        assert want is not None and want[3] is many
        assert (got[0], got[2], got[6]) == (want[1], set(want[2]), want[3])
        assert got[1] == pytest.approx(want[0], rel=1e-12)
        if not many:
            assert len(got[2]) == 1


def _packed(hist, layout, shift=40):
    """The float histogram (1/8 grid) in a quantised layout of ``skltr._engine.histogram``:
    units of 1/8, two words (count above bit ``shift`` of the hessian) or one word."""
    g = np.round(hist[..., 0] * 8).astype(np.int64)
    h = np.round(hist[..., 1] * 8).astype(np.int64)
    n = hist[..., 2].astype(np.int64)
    if layout == "two":
        return np.ascontiguousarray(np.stack([g, h + (n << shift)], axis=-1))
    return np.ascontiguousarray((g * 2 ** 32 + h)[..., None])


@pytest.mark.parametrize("layout,counts", [("two", "rows"), ("two", "hessian"),
                                           ("one", "hessian")])
def test_split_kernel_on_quantised_layouts_matches_the_naive_rule(layout, counts):
    p = dict(CAT_PARAMS, min_samples_leaf_counts=counts, min_data_per_group=15,
             cat_smooth=3.0, min_samples_leaf=10)
    n_bins = [8, 3, 12, 30, 2]
    features = np.array([1, 2, 3, 4], np.int64)
    c = split_constants(missing_bin=MISSING_BIN, inv_scale_g=1 / 8, inv_scale_h=1 / 8,
                        reg_lambda=0.0, reg_alpha=0.0, min_child_weight=1e-3,
                        min_samples_leaf=10, min_split_gain=0.0,
                        count_shift=40 if layout == "two" else 0,
                        hessian_counts=counts == "hessian")
    k = CategoricalConstants(4, 32, 3.0, 10.0, 15)
    many = set()
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        X, grad, hess = _node(rng, 500, n_bins, counts == "hessian")
        rows = np.flatnonzero(rng.random(500) < rng.uniform(0.3, 1.0))
        mask = np.ones(len(n_bins), bool)
        want = naive_categorical_split(X, grad, hess, rows, list(features), n_bins,
                                       MISSING_BIN, mask, p)
        hist = _packed(naive_histogram(X, grad, hess, rows, MISSING_BIN + 1 + HIST_PAD_BINS),
                       layout)
        bits = np.zeros(4, np.uint64)
        f, gain, gl, hl, cl, is_many = best_categorical_split(
            hist, features, np.asarray(n_bins, np.int32), mask,
            np.int64(round(float(np.sum(grad[rows])) * 8)),
            np.int64(round(float(np.sum(hess[rows])) * 8)), len(rows), -np.inf, np.inf, c, k,
            bits)
        left = {b for b in range(256) if (int(bits[b >> 6]) >> (b & 63)) & 1}
        if want is None:
            assert f == -1
            continue
        assert (f, left, bool(is_many)) == (want[1], set(want[2]), want[3]), seed
        assert gain == pytest.approx(want[0], rel=1e-12)
        in_left = np.isin(X[rows, f], list(want[2]))
        assert gl == round(float(np.sum(grad[rows][in_left])) * 8)
        assert hl == round(float(np.sum(hess[rows][in_left])) * 8)
        if layout == "two":
            assert cl == int(in_left.sum())
        many.add(bool(is_many))
    assert many == {True, False}


# ---------------------------------------------------------------------------- binning
def test_bins_are_categories_by_decreasing_count():
    rng = np.random.default_rng(0)
    counts = {7: 50, 3: 40, 12: 40, 0: 30, 5: 5, 100: 1}  # 3 and 12 tie: 3 first
    col = np.concatenate([np.full(c, float(v)) for v, c in counts.items()] + [[np.nan] * 9])
    rng.shuffle(col)
    X = np.column_stack([rng.normal(size=col.size), col])
    bm = BinMapper(max_bins=255, categorical=[1]).fit(X)
    # 100, seen once, ends the list (LightGBM's min_data_in_bin: a category of fewer than 3
    # sample rows after the first two) and shares the missing bin
    np.testing.assert_array_equal(bm.cat_values, [7, 3, 12, 0, 5])
    assert bm.n_bins[1] == 5 and bm.cut_ptr[2] == bm.cut_ptr[1]  # no cuts
    assert bm.wide.size == 0
    codes = bm.transform(X)[:, 1]
    order = [7, 3, 12, 0, 5]
    expect = [order.index(v) if v in order else bm.missing_bin for v in col]
    np.testing.assert_array_equal(codes, expect)
    assert bm.has_missing[1]
    # the numeric column is binned as without the categorical one
    plain = BinMapper(max_bins=255).fit(X[:, :1])
    np.testing.assert_array_equal(bm.transform(X)[:, 0], plain.transform(X[:, :1])[:, 0])


def test_rare_unseen_and_missing_categories_share_the_missing_bin():
    col = np.array([4.0] * 6 + [2.0] * 5 + [9.0] * 4 + [1.0] * 3 + [8.0] * 2 + [np.nan])
    X = col[:, None]
    bm = BinMapper(max_bins=4, categorical=[0]).fit(X)
    # 4, 2, 9, 1 hold 18 of 20 rows (< 99%), then 8 has fewer than 3 rows: it ends the list
    np.testing.assert_array_equal(bm.cat_values, [4, 2, 9, 1])
    assert bm.missing_bin == 4 and bm.wide.size == 0
    probe = np.array([[4.0], [2.0], [9.0], [1.0], [8.0], [np.nan], [77.0], [0.0]])
    np.testing.assert_array_equal(bm.transform(probe).ravel(), [0, 1, 2, 3, 4, 4, 4, 4])
    # with 3 bins the same categories no longer fit a byte: the feature is wide, its byte
    # column all missing, its uint16 codes the categories' places, missing code 4
    bm = BinMapper(max_bins=3, categorical=[0]).fit(X)
    np.testing.assert_array_equal(bm.cat_values, [4, 2, 9, 1])
    np.testing.assert_array_equal(bm.wide, [0])
    np.testing.assert_array_equal(bm.wide_n_bins, [4])
    assert bm.n_bins[0] == 1
    np.testing.assert_array_equal(bm.transform(probe).ravel(), [3] * 8)
    wide = bm.transform_wide(probe)
    assert wide.dtype == np.uint16
    np.testing.assert_array_equal(wide.ravel(), [0, 1, 2, 3, 4, 4, 4, 4])


def naive_kept_categories(values, max_bins):
    """LightGBM's ``BinMapper::FindBin`` categorical loop (``bin.cpp``), transcribed: the
    categories given codes, in code order."""
    has_nan = bool(np.isnan(values).any())
    values = values[~np.isnan(values)].astype(np.int64)
    distinct, counts = np.unique(values, return_counts=True)
    pairs = sorted(zip(counts.tolist(), distinct.tolist()), key=lambda p: -p[0])  # stable
    total = values.size
    cut_cnt = int(np.float32(total) * np.float32(0.99) + np.float32(0.5))
    distinct_cnt = len(pairs) + has_nan
    max_bin = min(distinct_cnt, max_bins)
    kept, used, num_bin = [], 0, 1
    for cnt, cat in pairs:
        if not (used < cut_cnt or num_bin < max_bin):
            break
        if cnt < 3 and len(kept) > 1:
            break
        kept.append(cat)
        used += cnt
        num_bin += 1
    return kept


@pytest.mark.parametrize("seed", range(6))
def test_kept_categories_are_lightgbms(seed):
    # the categories that get codes, against a transcription of LightGBM's loop and against
    # LightGBM's own bin count, on Zipf columns with and without NaN, below and above 255
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(seed)
    n_levels = [20, 300, 3000, 40, 1000, 5000][seed]
    n = [500, 4000, 20000, 300, 8000, 30000][seed]
    col = np.minimum(rng.zipf(1.3 + 0.1 * seed, n), n_levels).astype(np.float64) - 1
    col = rng.permutation(n_levels)[col.astype(np.int64)].astype(np.float64)
    if seed % 2:
        col[rng.random(n) < 0.05] = np.nan
    X = np.column_stack([rng.normal(size=n), col])
    bm = BinMapper(max_bins=255, categorical=[1], subsample=None).fit(X)
    kept = naive_kept_categories(col, 255)
    np.testing.assert_array_equal(bm.cat_values, kept)
    assert (bm.wide.size == 1) == (len(kept) > 255)
    ds = lgb.Dataset(X, np.zeros(n), categorical_feature=[1],
                     params={"max_bin": 255, "verbose": -1, "bin_construct_sample_cnt": n,
                             "min_data_in_leaf": 1, "feature_pre_filter": False}).construct()
    # LightGBM's bins: its categories and the "other" bin (every NaN / dropped category)
    assert ds.feature_num_bin(1) == len(kept) + 1


def test_sparse_categorical_column_bins_as_dense():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    X[rng.random((300, 3)) < 0.5] = 0.0
    X[:, 1] = np.where(rng.random(300) < 0.6, 0.0, rng.integers(1, 9, 300))
    X[::17, 1] = np.nan
    dense = BinMapper(max_bins=16, categorical=[1]).fit(X)
    for fmt in (sp.csr_matrix, sp.csc_matrix):
        sparse = BinMapper(max_bins=16, categorical=[1]).fit(fmt(X))
        np.testing.assert_array_equal(sparse.cat_values, dense.cat_values)
        np.testing.assert_array_equal(sparse.transform(fmt(X)), dense.transform(X))
    assert dense.cat_values[0] == 0.0  # the absent zeros are the most frequent category


@pytest.mark.parametrize("value,match", [(-1.0, "value -1.0"), (2.5, "value 2.5"),
                                         (float(MAX_CATEGORY), "value 2147483647.0")])
def test_bin_mapper_refuses_non_category_values(value, match):
    X = np.array([[0.0], [1.0], [value]])
    with pytest.raises(ValueError, match=match):
        BinMapper(categorical=[0]).fit(X)
    bm = BinMapper(categorical=[0]).fit(np.array([[0.0], [1.0]]))
    with pytest.raises(ValueError, match=match):
        bm.transform(X)
    # the largest category is accepted (an unseen one: the missing bin)
    assert bm.transform(np.array([[MAX_CATEGORY - 1.0]]))[0, 0] == bm.missing_bin


# ---------------------------------------------------------------------------- the ranker
@pytest.fixture(scope="module")
def cat_data():
    X, y, qid = make_ranking(n_queries=60, docs_per_query=20, n_features=5, n_informative=4,
                             categorical_levels=(12,), random_state=4)
    X[::13, 5] = np.nan
    X[::7, 1] = np.nan
    return X, y, qid


KW = dict(n_estimators=8, random_state=0, min_samples_leaf=5, min_data_per_group=10,
          cat_smooth=2.0, n_jobs=2)


def _assert_same_trees(a, b):
    for name in ("tree_ptr", "feature", "threshold", "left", "right", "value", "flags",
                 "cat_offset", "cat_nwords", "cat_bitsets", "base_score"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("value,match", [
    (-1.0, "value -1.0"), (2.5, "value 2.5"), (float(2 ** 31 - 1), "value 2147483647.0"),
    (float(2 ** 40), "value 1099511627776.0")])
def test_bad_categorical_values_are_refused_at_fit_and_predict(cat_data, value, match):
    X, y, qid = cat_data
    model = GPUHistGBDTRanker(categorical_features=[5], **KW).fit(X, y, qid=qid)
    before = model.predict(X)
    bad = X.astype(np.float64)  # (2**31 - 1 is not a float32)
    bad[3, 5] = value
    with pytest.raises(ValueError, match=match) as err:
        model.fit(bad, y, qid=qid)
    assert "categorical feature 5" in str(err.value)
    np.testing.assert_array_equal(model.predict(X), before)  # the failed fit changed nothing
    with pytest.raises(ValueError, match=match):
        model.predict(bad)
    # read as a number (not categorical) the column takes any finite value
    GPUHistGBDTRanker(categorical_features=None, **KW).fit(bad, y, qid=qid).predict(bad)


@pytest.mark.parametrize("spec,extra,match", [
    ([6], {}, "index 6 is out of range"),
    ([-1], {}, "index -1 is out of range"),
    ([True, False], {}, "boolean mask must have one entry per feature .6."),
    (["f5", "nope"], {}, r"names \['nope'\]"),
    (["f5"], {"_array": True}, "X has no column names"),
    ([5, 5], {}, "more than once"),
    ([2, 5], {"monotone_constraints": [0, 0, 1, 0, 0, 0]}, "feature 2 is categorical"),
    ([1, 1.5], {}, "not a mix"),
    ("auto", {}, None),
])
def test_bad_categorical_features_are_refused(cat_data, spec, extra, match):
    pd = pytest.importorskip("pandas")
    X, y, qid = cat_data
    extra = dict(extra)
    as_array = extra.pop("_array", False)
    inp = X if as_array or not any(isinstance(s, str) for s in np.ravel(spec)) else \
        pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    model = GPUHistGBDTRanker(**KW).fit(X, y, qid=qid)
    before = model.predict(X)
    model.set_params(categorical_features=spec, **extra)
    with pytest.raises(ValueError, match=match):
        model.fit(inp, y, qid=qid)
    np.testing.assert_array_equal(model.predict(X), before)


def test_every_form_of_categorical_features_gives_the_same_model(cat_data):
    pd = pytest.importorskip("pandas")
    X, y, qid = cat_data
    by_index = GPUHistGBDTRanker(categorical_features=[5], **KW).fit(X, y, qid=qid)
    assert by_index.is_categorical_.tolist() == [False] * 5 + [True]
    e = by_index.ensemble_
    assert np.any(e.flags & NodeFlags.CATEGORICAL)  # the feature is used, as categories
    assert np.all(e.feature[(e.flags & NodeFlags.CATEGORICAL) > 0] == 5)
    mask = GPUHistGBDTRanker(categorical_features=[False] * 5 + [True], **KW).fit(
        X, y, qid=qid)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    named = GPUHistGBDTRanker(categorical_features=["f5"], **KW).fit(df, y, qid=qid)
    assert mask.ensemble_.equals(by_index.ensemble_)
    _assert_same_trees(named.ensemble_, by_index.ensemble_)  # (the names differ)
    ordinal = GPUHistGBDTRanker(categorical_features=None, **KW).fit(X, y, qid=qid)
    assert ordinal.is_categorical_ is None
    assert not np.any(ordinal.ensemble_.flags & NodeFlags.CATEGORICAL)


# ---------------------------------------------------------------------------- LightGBM
def _root_set(ensemble):
    """The category codes the root of the first tree sends left."""
    e = ensemble
    assert e.flags[0] & NodeFlags.CATEGORICAL and not e.flags[0] & NodeFlags.DEFAULT_LEFT
    words = e.cat_bitsets[e.cat_offset[0]:e.cat_offset[0] + e.cat_nwords[0]]
    return {32 * w + b for w, word in enumerate(words) for b in range(32)
            if (int(word) >> b) & 1}


def _lgb_root_set(booster):
    root = booster.dump_model()["tree_info"][0]["tree_structure"]
    assert root["decision_type"] == "==" and root["split_feature"] == 0, root
    return {int(v) for v in str(root["threshold"]).split("||")}


def _regression_problem(seed, n_cat, nan=False):
    """A categorical column (odd codes 3, 5, ..., 60 to 200 rows each: LightGBM bins every
    category, as skltr does) with a strong effect per category."""
    rng = np.random.default_rng(seed)
    cats = rng.permutation(np.arange(3, 3 + 2 * n_cat, 2))
    codes = rng.permutation(np.repeat(cats, rng.integers(60, 200, n_cat))).astype(np.float64)
    effect = dict(zip(cats, rng.normal(0, 3, n_cat)))
    y = np.array([effect[c] for c in codes]) + rng.normal(0, 0.5, codes.size)
    if nan:
        codes[rng.random(codes.size) < 0.05] = np.nan
    X = np.column_stack([codes, rng.normal(size=codes.size)])
    return X, y, np.arange(codes.size) // 10


CAT_LGB = {
    "many-default": (20, dict(max_cat_threshold=32, cat_smooth=10.0, cat_l2=10.0,
                              min_data_per_group=100)),
    "many-small": (20, dict(max_cat_threshold=32, cat_smooth=1.0, cat_l2=1.0,
                            min_data_per_group=5)),
    "many-capped": (20, dict(max_cat_threshold=4, cat_smooth=5.0, cat_l2=3.0,
                             min_data_per_group=150)),
    "one-vs-rest": (3, dict(max_cat_threshold=32, cat_smooth=10.0, cat_l2=10.0,
                            min_data_per_group=100)),
    "one-vs-rest-8": (8, dict(max_cat_to_onehot=9)),
    # wide categorical features (more categories than bins: uint16 codes, extra histogram
    # rows): over 255 categories at the default bins; 20 over two rows of 16-bin
    # histograms; 3 one-vs-rest with 2 bins
    "wide-400": (400, {}),
    "wide-rows": (20, dict(max_bins=16, cat_smooth=1.0, min_data_per_group=5)),
    "wide-one-vs-rest": (3, dict(max_bins=2)),
}


@pytest.mark.parametrize("counts", ["rows", "hessian"])
@pytest.mark.parametrize("case", list(CAT_LGB))
def test_root_split_is_lightgbms(case, counts):
    # one tree, two leaves, learning rate 1: the root's left category set is LightGBM's (the
    # regression objective starts both from the mean label), and so are the two outputs
    # (up to LightGBM's float32 gradients)
    lgb = pytest.importorskip("lightgbm")
    n_cat, kw = CAT_LGB[case]
    for seed in range(3):
        X, y, qid = _regression_problem(seed, n_cat, nan=seed == 2)
        model = GPUHistGBDTRanker(
            objective="regression", n_estimators=1, learning_rate=1.0, max_leaves=2,
            min_samples_leaf=1, min_samples_leaf_counts=counts, hist_mode="float",
            categorical_features=[0], random_state=0, **kw).fit(X, y, qid=qid)
        lgb_kw = {("max_bin" if k == "max_bins" else k): v for k, v in kw.items()}
        booster = lgb.train({"objective": "regression", "num_leaves": 2, "min_data_in_leaf": 1,
                             "learning_rate": 1.0, "boost_from_average": True, "verbose": -1,
                             "num_threads": 1, **lgb_kw},
                            lgb.Dataset(X, y, categorical_feature=[0]), 1)
        if case.startswith("wide"):
            assert model.n_features_in_ == 2 and _is_wide(X, 0, kw.get("max_bins", 255))
        assert _root_set(model.ensemble_) == _lgb_root_set(booster), (seed, case)
        if case.startswith("one"):
            assert len(_root_set(model.ensemble_)) == 1
        np.testing.assert_allclose(model.predict(X), booster.predict(X), rtol=0, atol=1e-6)


def test_small_trees_are_lightgbms():
    # several trees of six leaves on two categorical columns (15 categories, many-vs-many;
    # 3, one-vs-rest) and a numeric one of few distinct values (binned alike by both):
    # LightGBM's predictions, so the same trees, children of many-vs-many splits included
    lgb = pytest.importorskip("lightgbm")
    kw = dict(max_cat_to_onehot=4, max_cat_threshold=32, cat_smooth=10.0, cat_l2=10.0,
              min_data_per_group=50)
    for seed in range(2):
        rng = np.random.default_rng(seed)
        n = 3000
        c1 = rng.integers(0, 15, n).astype(float)
        c2 = rng.integers(0, 3, n).astype(float)
        x = np.round(rng.normal(size=n) * 3)
        y = (rng.normal(0, 2, 15)[c1.astype(int)] + rng.normal(0, 1, 3)[c2.astype(int)] + x
             + rng.normal(0, 0.3, n))
        c1[rng.random(n) < 0.03] = np.nan
        X = np.column_stack([c1, x, c2])
        model = GPUHistGBDTRanker(
            objective="regression", n_estimators=3, learning_rate=0.5, max_leaves=6,
            min_samples_leaf=20, min_samples_leaf_counts="rows", hist_mode="float",
            categorical_features=[0, 2], random_state=0, **kw).fit(X, y, qid=np.arange(n) // 10)
        booster = lgb.train({"objective": "regression", "num_leaves": 6, "min_data_in_leaf": 20,
                             "learning_rate": 0.5, "verbose": -1, "num_threads": 1, **kw},
                            lgb.Dataset(X, y, categorical_feature=[0, 2]), 3)
        assert np.any(model.ensemble_.flags & NodeFlags.CATEGORICAL)
        np.testing.assert_allclose(model.predict(X), booster.predict(X), rtol=0, atol=1e-6)


def test_lambdarank_ndcg_with_a_categorical_column_is_lightgbms():
    # make_ranking's categorical column (50 Zipf-like categories, codes not in effect order)
    # is its last; 4 seeds (test NDCG@10 of 50 queries is noisy)
    lgb = pytest.importorskip("lightgbm")
    ours, ordinal, theirs = [], [], []
    for seed in range(4):
        X, y, qid = make_ranking(n_queries=200, docs_per_query=20, n_features=10,
                                 n_informative=5, categorical_levels=(50,), random_state=seed)
        last = X.shape[1] - 1
        tr, te = qid < 150, qid >= 150
        for out, cats in ((ours, [last]), (ordinal, None)):
            model = GPUHistGBDTRanker(n_estimators=50, max_leaves=31, min_samples_leaf=20,
                                      random_state=0, categorical_features=cats, n_jobs=2).fit(
                X[tr], y[tr], qid=qid[tr])
            out.append(ndcg_score(y[te], model.predict(X[te]), qid=qid[te], k=10))
        booster = lgb.train({"objective": "lambdarank", "verbose": -1, "num_leaves": 31,
                             "learning_rate": 0.1, "min_data_in_leaf": 20, "num_threads": 2},
                            lgb.Dataset(X[tr], y[tr], group=np.bincount(qid[tr]),
                                        categorical_feature=[last]), 50)
        theirs.append(ndcg_score(y[te], booster.predict(X[te]), qid=qid[te], k=10))
    assert abs(np.mean(ours) - np.mean(theirs)) <= 0.02, (ours, theirs)
    assert np.mean(ours) >= np.mean(ordinal) - 0.005, (ours, ordinal)


# ---------------------------------------------------------------------------- pandas
SHOPS = ["north", "south", "east", "west", "mall", "kiosk", "web", "phone", "fair", "market"]


@pytest.fixture(scope="module")
def frame_data():
    pd = pytest.importorskip("pandas")
    X, y, qid = make_ranking(n_queries=50, docs_per_query=20, n_features=4, n_informative=3,
                             categorical_levels=(len(SHOPS),), random_state=5)
    codes = X[:, -1].astype(np.float64)
    codes[::11] = np.nan
    shop = pd.Categorical.from_codes(np.where(np.isnan(codes), -1, codes).astype(int),
                                     categories=SHOPS)
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "shop": shop, "c": X[:, 2]})
    # the codes path: the same values as category codes (NaN: missing), feature 2 categorical
    arr = np.column_stack([X[:, 0], X[:, 1], codes, X[:, 2]])
    return df, arr, y, qid


FKW = dict(n_estimators=10, random_state=0, min_samples_leaf=5, min_data_per_group=10,
           cat_smooth=2.0, n_jobs=2)


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_pandas_category_column_is_categorical_and_matched_by_name(frame_data, tmp_path):
    pd = pytest.importorskip("pandas")
    df, arr, y, qid = frame_data
    model = GPUHistGBDTRanker(**FKW).fit(df, y, qid=qid)  # categorical_features="from_dtype"
    assert model.is_categorical_.tolist() == [False, False, True, False]
    codes_model = GPUHistGBDTRanker(categorical_features=[2], **FKW).fit(arr, y, qid=qid)
    _assert_same_trees(model.ensemble_, codes_model.ensemble_)
    assert np.any(model.ensemble_.flags & NodeFlags.CATEGORICAL)
    want = codes_model.predict(arr)
    np.testing.assert_array_equal(model.predict(df), want)
    # categories in another order, a plain string column, an unknown category (missing)
    values = df["shop"].astype(object).to_numpy().copy()
    values[5] = "moon"
    expect = want.copy()
    probe = arr.copy()
    probe[5, 2] = np.nan
    expect[5] = codes_model.predict(probe[5:6])[0]
    for column in (pd.Categorical(values, categories=SHOPS[::-1] + ["moon"]),
                   pd.Series(values, dtype=object)):
        other = df.copy()
        other["shop"] = column
        np.testing.assert_array_equal(model.predict(other), expect)
    # eval sets given as DataFrames are coded against the fit's categories
    te = qid >= 40
    ev_model = GPUHistGBDTRanker(**FKW).fit(df, y, qid=qid, eval_set=[(df[te], y[te], qid[te])])
    ev_codes = GPUHistGBDTRanker(categorical_features=[2], **FKW).fit(
        arr, y, qid=qid, eval_set=[(arr[te], y[te], qid[te])])
    assert ev_model.evals_result_ == ev_codes.evals_result_
    assert len(next(iter(ev_model.evals_result_["valid_0"].values()))) == 10
    # persistence: pickle, and the JSON model
    back = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(back.predict(df), want)
    model.save_model(tmp_path / "m.json")
    loaded = GPUHistGBDTRanker.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(arr), want)
    assert loaded.is_categorical_.tolist() == [False, False, True, False]
    np.testing.assert_array_equal(loaded.predict(df), want)
    with pytest.raises(ValueError, match="value -1"):
        bad = arr.copy()
        bad[0, 2] = -1.0
        loaded.predict(bad)


def _is_wide(X, f, max_bins):
    return BinMapper(max_bins=max_bins, categorical=[f]).fit(X).wide.tolist() == [f]


@pytest.mark.parametrize("layout", ["float", "two", "one"])
@pytest.mark.parametrize("use_rows", [False, True])
def test_wide_histogram_kernels_match_numpy(layout, use_rows):
    # the wide features' histogram rows: one record per (row, wide feature), at the
    # feature's offset plus its code; float on one thread, integers in row chunks too
    rng = np.random.default_rng(3)
    n, n_bins = 3000, np.array([700, 40], np.int32)
    X = np.column_stack([rng.integers(0, b + 1, n) for b in n_bins]).astype(np.uint16)
    rows = np.sort(rng.choice(n, 1700, replace=False)).astype(np.uint32)
    start, end = 100, 1500
    W = 259
    n_rows = -(-(n_bins + 1) // W)
    offsets = np.concatenate([[0], np.cumsum(n_rows)[:-1]]) * W
    if layout == "float":
        g, h, ch = rng.normal(size=n).astype(np.float32), rng.random(n).astype(np.float32), 3
    elif layout == "two":
        g, h, ch = rng.integers(-99, 99, n).astype(np.int32), rng.integers(0, 99, n), 2
    else:
        g = h = rng.integers(-2 ** 40, 2 ** 40, n)
        ch = 1
    dtype = np.float64 if layout == "float" else np.int64
    sel = rows[start:end] if use_rows else np.arange(start, end)
    want = np.zeros((int(n_rows.sum()) * W, ch), dtype)
    for w in range(2):
        idx = offsets[w] + X[sel, w].astype(np.int64)
        np.add.at(want[:, 0], idx, g[sel].astype(dtype))
        if ch > 1:
            np.add.at(want[:, 1], idx, h[sel].astype(dtype))
        if ch == 3:
            np.add.at(want[:, 2], idx, 1)
    out = np.full((int(n_rows.sum()), W, ch), 7, dtype)  # overwritten
    build_wide_histogram_serial(X, g, h, rows, start, end, use_rows, out, offsets)
    np.testing.assert_allclose(out.reshape(-1, ch), want, rtol=1e-12)
    if layout != "float":
        out[...] = 7
        scratch = np.full((2, out.size), 5, dtype)
        build_wide_histogram(X, g, h, rows, start, end, use_rows, out, offsets, scratch, 3)
        np.testing.assert_array_equal(out.reshape(-1, ch), want)


def _codes_of(words):
    return {i * 64 + b for i, w in enumerate(words) for b in range(64) if (int(w) >> b) & 1}


@pytest.mark.parametrize("layout", ["float", "two", "one"])
@pytest.mark.parametrize("zero_all", [False, True])
def test_a_small_nodes_wide_task_reads_only_the_codes_it_holds(layout, zero_all):
    # the compiled grower's in-region wide task (skltr._cpu.histogram_wide.build_wide_feature
    # and what reads it): a child's records of the codes its rows hold, the others left as
    # they were (not zeroed: zero_all False) and never read; the larger child subtracted at
    # the smaller one's codes; the scan over a node's codes finds the split of a scan over
    # every bin and narrows the codes to the nonempty ones; whole_codes makes rows whole
    from skltr._cpu.histogram_wide import (build_wide_feature, subtract_codes,
                                           whole_codes)
    from skltr._cpu.split import _node_constants
    from skltr._cpu.split_categorical import _feature_split

    rng = np.random.default_rng(5)
    n, K, W, nf = 4000, 900, 256, 2  # K codes and the missing one: 4 histogram rows
    prob = 1.0 / np.arange(1, K + 2)
    X = rng.choice(K + 1, size=(n, 1), p=prob / prob.sum()).astype(np.uint16)
    X[rng.random(n) < 0.05, 0] = K  # missing
    n_rows = -(-(K + 1) // W)
    offsets = np.zeros(1, np.int64)
    if layout == "float":
        g, h, ch = rng.integers(-400, 400, n) / 4.0, rng.integers(1, 4, n) / 4.0, 3  # exact
    elif layout == "two":
        g, h, ch = rng.integers(-99, 99, n), rng.integers(1, 99, n) + (1 << 20), 2
    else:
        g = h = rng.integers(-2 ** 20, 2 ** 20, n) * 2 ** 32 + rng.integers(1, 2 ** 20, n)
        ch = 1
    dtype = np.float64 if layout == "float" else np.int64
    parent_rows = np.sort(rng.choice(n, 2500, replace=False)).astype(np.uint32)
    small_rows = np.sort(rng.choice(parent_rows, 300, replace=False)).astype(np.uint32)
    large_rows = np.setdiff1d(parent_rows, small_rows)

    def dense(rows):
        out = np.zeros((nf + n_rows, W, ch), dtype)
        flat = out[nf:].reshape(-1, ch)
        np.add.at(flat[:, 0], X[rows, 0], g[rows].astype(dtype))
        if ch > 1:
            np.add.at(flat[:, 1], X[rows, 0], h[rows].astype(dtype))
        if ch == 3:
            np.add.at(flat[:, 2], X[rows, 0], 1)
        return out

    words = (K + 1 + 63) // 64
    small = np.full((nf + n_rows, W, ch), 7, dtype)
    small_codes = np.zeros(words, np.uint64)
    build_wide_feature(X, g, h, small_rows, 0, small_rows.size, small, nf, offsets, 0, K + 1,
                       small_codes, 10 ** 9 if zero_all else 0)
    held = set(X[small_rows, 0].tolist())
    assert _codes_of(small_codes) == held
    want = dense(small_rows)[nf:].reshape(-1, ch)
    got = small[nf:].reshape(-1, ch)
    idx = np.array(sorted(held))
    np.testing.assert_array_equal(got[idx], want[idx])
    others = np.setdiff1d(np.arange(K + 1), idx)
    assert np.all(got[others] == (0 if zero_all else 7))
    # the parent: built whole, or only its codes (garbage elsewhere)
    parent = dense(parent_rows)
    parent_codes = np.zeros(words, np.uint64)
    build_wide_feature(X, g, h, parent_rows, 0, parent_rows.size, parent, nf, offsets, 0,
                       K + 1, parent_codes, 0)
    parent_flat = parent[nf:].reshape(-1, ch)
    parent_flat[np.setdiff1d(np.arange(K + 1), list(_codes_of(parent_codes)))] = 5
    view = (1, n_rows * W, ch)
    dropped = min(held)  # as a scan drops a code of a zero record: the subtraction adds it
    parent_codes[dropped >> 6] &= ~np.uint64(1 << (dropped & 63))
    held_by_parent = _codes_of(parent_codes)
    subtract_codes(parent[nf:].reshape(view), small[nf:].reshape(view), small_codes,
                   parent_codes)
    assert _codes_of(parent_codes) == held_by_parent | held
    large_want = dense(large_rows)[nf:].reshape(-1, ch)
    at = np.array(sorted(_codes_of(parent_codes)))
    np.testing.assert_array_equal(parent_flat[at], large_want[at])
    # the larger child's scan over its parent's codes = a scan of its whole rows
    c = split_constants(missing_bin=K, inv_scale_g=1.0, inv_scale_h=1.0, reg_lambda=0.0,
                        reg_alpha=0.0, min_child_weight=1e-3, min_samples_leaf=1,
                        min_split_gain=0.0, count_shift=20 if ch == 2 else 0,
                        hessian_counts=ch == 1)
    k = CategoricalConstants(4, 32, 2.0, 10.0, 5)
    if ch == 1:
        sg, sh = g[large_rows] >> 32, g[large_rows] & 0xFFFFFFFF
    else:
        sg, sh = g[large_rows], h[large_rows] & ((1 << 20) - 1) if ch == 2 else h[large_rows]
    sums = (sg.sum().astype(dtype), sh.sum().astype(dtype), large_rows.size, -np.inf, np.inf)
    consts = _node_constants(*sums[:3], c, -np.inf, np.inf)
    whole = dense(large_rows)[nf:].reshape(view)
    bits, bits_codes = np.zeros(words, np.uint64), np.zeros(words, np.uint64)
    want = _feature_split(whole, 0, K, *sums, c, k, *consts, bits)
    codes = parent_codes.copy()
    got = _feature_split(parent[nf:].reshape(view), 0, K, *sums, c, k, *consts, bits_codes,
                         codes)
    assert want[0] > -np.inf and got == want
    np.testing.assert_array_equal(bits_codes, bits)
    assert _codes_of(codes) == set(X[large_rows, 0].tolist()) | {K}  # narrowed; missing kept
    # whole_codes: the records outside the codes zeroed, then every code held
    whole_codes(parent, nf, offsets, np.array([K + 1]), codes.reshape(1, -1))
    np.testing.assert_array_equal(parent[nf:].reshape(-1, ch)[:K + 1], large_want[:K + 1])
    assert _codes_of(codes) == set(range(K + 1))


@pytest.mark.parametrize("hessian_counts", [False, True])
def test_a_scan_keeps_the_codes_whose_records_are_not_zero(hessian_counts):
    # _present_bins narrows a node's codes to records that are not all zeros, not to the
    # scan's nonempty bins: a record of rows without gradients or hessians is empty to a
    # scan by hessians but holds their count, which a full subtraction reads
    from skltr._cpu.split_categorical import _present_bins

    shift, K = 20, 130
    hist = np.zeros((1, K + 1, 2), np.int64)
    hist[0, 5] = (0, 3 << shift)              # rows, no gradient or hessian
    hist[0, 9] = (4, (2 << shift) + 40)       # rows with both
    hist[0, 70] = (-6, (12 << shift) + 900)   # rows with both, count >= cat_smooth
    hist[0, K] = (1, (1 << shift) + 3)        # the missing code: kept, never read
    present = np.array([(1 << 5) | (1 << 7) | (1 << 9), (1 << 6) | (1 << 7),
                        1 << (K - 128)], np.uint64)
    c = split_constants(missing_bin=K, inv_scale_g=1.0, inv_scale_h=1.0, reg_lambda=0.0,
                        reg_alpha=0.0, min_child_weight=1e-3, min_samples_leaf=1,
                        min_split_gain=0.0, count_shift=shift, hessian_counts=hessian_counts)
    k = CategoricalConstants(4, 32, 10.0, 10.0, 5)
    order = np.zeros(K + 1, np.int64)
    used = _present_bins(hist, 0, K, c, k, 1.0 if hessian_counts else 0.0, present, order)
    assert _codes_of(present) == {5, 9, 70, K}  # 7 and 71: zero records, dropped
    # used: a count of cat_smooth (10) or more -- hessians 40 and 900 estimated, or rows
    assert order[:used].tolist() == ([9, 70] if hessian_counts else [70])


def test_wide_feature_over_255_categories_fits_and_scores_its_rare_ones():
    # a column of 700 categories (each 4-12 rows): those of the first 99% of rows get a
    # code (LightGBM's rule), splits use categories beyond the 255 most frequent, and the
    # model walks as the naive routing; eval scores (binned) are predict's (raw)
    rng = np.random.default_rng(5)
    n_cat = 700
    cats = rng.permutation(n_cat)
    codes = rng.permutation(np.repeat(cats, rng.integers(4, 13, n_cat))).astype(np.float64)
    effect = rng.normal(0, 1, n_cat)
    n = codes.size
    X = np.column_stack([rng.normal(size=(n, 3)), codes])
    score = effect[codes.astype(np.int64)] + 0.3 * X[:, 0]
    y = np.digitize(score, np.quantile(score, [0.5, 0.75, 0.9])).astype(np.float64)
    qid = np.arange(n) // 20
    bm = BinMapper(categorical=[3]).fit(X)
    assert bm.wide.tolist() == [3]
    assert 600 < bm.wide_n_bins[0] == len(naive_kept_categories(X[:, 3], 255))
    kw = dict(n_estimators=6, max_leaves=15, min_samples_leaf=5, min_data_per_group=5,
              cat_smooth=1.0, max_cat_threshold=64, categorical_features=[3],
              random_state=0, n_jobs=2, eval_at=5)
    te = qid % 5 == 0
    model = GPUHistGBDTRanker(**kw).fit(X[~te], y[~te], qid=qid[~te],
                                        eval_set=[(X[te], y[te], qid[te])])
    e = model.ensemble_
    cat_nodes = np.flatnonzero(e.flags & NodeFlags.CATEGORICAL)
    assert cat_nodes.size >= 5
    counts = dict(zip(*np.unique(X[~te, 3], return_counts=True)))
    top255 = set(sorted(counts, key=lambda c: (-counts[c], c))[:255])
    in_sets = set()
    for node in cat_nodes:
        words = e.cat_bitsets[e.cat_offset[node]:e.cat_offset[node] + e.cat_nwords[node]]
        in_sets |= {32 * w + b for w, word in enumerate(words) for b in range(32)
                    if (int(word) >> b) & 1}
    assert in_sets - top255, "no split used a category beyond the 255 most frequent"
    P = X[te].copy()
    P[::9, 3] = np.nan
    P[1::9, 3] = 5000.0  # unseen
    np.testing.assert_array_equal(model.predict(P), naive_predict_raw(e, P).ravel())
    # the eval set's per-round metric came from the binned scores
    got = model.evals_result_["valid_0"]["ndcg@5"][-1]
    assert got == pytest.approx(ndcg_score(y[te], model.predict(X[te]), qid=qid[te], k=5),
                                abs=1e-12)


# ---------------------------------------------------------------------------- the model
def test_same_random_state_same_model_and_walks_as_the_naive_routing(cat_data):
    X, y, qid = cat_data
    kw = dict(KW, subsample=0.8, colsample_bytree=0.8, n_estimators=12)
    a = GPUHistGBDTRanker(categorical_features=[5], **kw).fit(X, y, qid=qid)
    b = GPUHistGBDTRanker(categorical_features=[5], **kw).fit(X, y, qid=qid)
    assert a.ensemble_.equals(b.ensemble_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    # probes: NaN, unseen and rare categories, large codes (beyond the bitsets' words)
    rng = np.random.default_rng(0)
    P = X[rng.integers(0, X.shape[0], 200)].astype(np.float64)
    P[::5, 5] = np.nan
    P[1::5, 5] = rng.choice([12.0, 31.0, 32.0, 64.0, 1000.0, 2.0 ** 31 - 2], size=40)
    P[2::7, 1] = np.nan
    e = a.ensemble_
    assert np.sum(e.flags & NodeFlags.CATEGORICAL) >= 3
    want = naive_predict_raw(e, P)
    np.testing.assert_array_equal(a.predict(P), want)  # QuickScorer
    np.testing.assert_array_equal(predict_raw(e, P).ravel(), want.ravel())
    # NaN and unseen categories take the same branch (right) at every categorical node
    nan_rows, unseen = P.copy(), P.copy()
    nan_rows[:, 5] = np.nan
    unseen[:, 5] = 999.0
    np.testing.assert_array_equal(a.predict(nan_rows), a.predict(unseen))


@pytest.mark.parametrize("settings", [{}, {"hist_mode": "float", "objective": "rank_xendcg"},
                                      {"growth": "depthwise", "max_depth": 3},
                                      {"max_bins": 4, "subsample": 0.7},
                                      {"max_bins": 4, "hist_mode": "float"}])
def test_continuing_a_categorical_model_equals_the_long_fit(cat_data, settings):
    # equal ensembles: the continued fit starts from predict's scores (raw values through
    # the TreeEnsemble), the long one from the binned scores (the grower's partition, and
    # with a subsample the binned scoring of the other rows), so the two routings agree;
    # max_bins 4 makes the 12-category column wide
    X, y, qid = cat_data
    kw = dict(KW, categorical_features=[5], **settings)
    assert _is_wide(X, 5, settings.get("max_bins", 255)) == ("max_bins" in settings)
    long = GPUHistGBDTRanker(**{**kw, "n_estimators": 10}).fit(X, y, qid=qid)
    start = GPUHistGBDTRanker(**{**kw, "n_estimators": 5}).fit(X, y, qid=qid)
    more = GPUHistGBDTRanker(**{**kw, "n_estimators": 5}).fit(X, y, qid=qid, init_model=start)
    assert np.any(long.ensemble_.flags & NodeFlags.CATEGORICAL)
    assert more.ensemble_.equals(long.ensemble_)
    np.testing.assert_array_equal(more.predict(X), long.predict(X))
    warm = GPUHistGBDTRanker(warm_start=True, **{**kw, "n_estimators": 5}).fit(X, y, qid=qid)
    warm.set_params(n_estimators=10).fit(X, y, qid=qid)
    assert warm.ensemble_.equals(long.ensemble_)


def test_sparse_input_rare_categories_and_degenerate_columns(cat_data):
    X, y, qid = cat_data
    X = X.astype(np.float64)
    dense = GPUHistGBDTRanker(categorical_features=[5], **KW).fit(X, y, qid=qid)
    for fmt in (sp.csr_matrix, sp.csc_matrix):
        sparse = GPUHistGBDTRanker(categorical_features=[5], **KW).fit(fmt(X), y, qid=qid)
        assert sparse.ensemble_.equals(dense.ensemble_)
        np.testing.assert_array_equal(sparse.predict(fmt(X)), dense.predict(X))
    # categories LightGBM's rule leaves out share the missing bin with NaN, so they take
    # NaN's branch at every node; with max_bins 4 those kept do not fit a byte (a wide
    # feature), which sparse input also reads as the dense
    X = X.copy()
    X[:2, 5], X[2, 5] = 20.0, 21.0  # two rare categories (2 rows and 1)
    few = GPUHistGBDTRanker(categorical_features=[5], max_bins=4, **KW).fit(X, y, qid=qid)
    few_sparse = GPUHistGBDTRanker(categorical_features=[5], max_bins=4,
                                   **KW).fit(sp.csr_matrix(X), y, qid=qid)
    assert few_sparse.ensemble_.equals(few.ensemble_)
    codes = np.unique(X[~np.isnan(X[:, 5]), 5])
    kept = np.array(naive_kept_categories(X[:, 5], 4))
    assert 4 < kept.size < codes.size
    e = few.ensemble_
    in_sets = set()
    for node in np.flatnonzero(e.flags & NodeFlags.CATEGORICAL):
        words = e.cat_bitsets[e.cat_offset[node]:e.cat_offset[node] + e.cat_nwords[node]]
        in_sets |= {32 * w + b for w, word in enumerate(words) for b in range(32)
                    if (int(word) >> b) & 1}
    assert in_sets and in_sets <= set(kept.astype(int).tolist())
    rare = np.setdiff1d(codes, kept)
    R = np.repeat(X[:3], rare.size + 1, axis=0)
    R[:, 5] = np.tile(np.append(rare, np.nan), 3)
    scores = few.predict(R).reshape(3, -1)
    np.testing.assert_array_equal(scores, np.repeat(scores[:, -1:], rare.size + 1, axis=1))
    # a categorical column of one category (or none) is never split
    for value in (3.0, np.nan):
        Z = X.copy()
        Z[:, 5] = value
        model = GPUHistGBDTRanker(categorical_features=[5], **KW).fit(Z, y, qid=qid)
        assert not np.any(model.ensemble_.feature == 5)


def test_unknown_category_at_predict_raises_no_pandas_deprecation(frame_data):
    # pandas 3 deprecates pd.Categorical(values, categories=...) with values outside the
    # categories (Pandas4Warning, a DeprecationWarning: it will raise), which coding a
    # DataFrame with a category unseen at fit must not rely on
    import warnings

    pd = pytest.importorskip("pandas")
    df, arr, y, qid = frame_data
    model = GPUHistGBDTRanker(**FKW).fit(df, y, qid=qid)
    other = df.copy()
    values = other["shop"].astype(object).to_numpy().copy()
    values[:3] = "moon"
    expect_rows = arr.copy()
    expect_rows[:3, 2] = np.nan
    want = GPUHistGBDTRanker(categorical_features=[2], **FKW).fit(arr, y, qid=qid).predict(
        expect_rows)
    for column in (pd.Categorical(values), pd.Series(values, dtype=object)):
        other["shop"] = column
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            np.testing.assert_array_equal(model.predict(other), want)


@pytest.mark.parametrize("how", ["init_model", "warm_start"])
def test_continuing_on_a_frame_with_reordered_categories(frame_data, how):
    df, arr, y, qid = frame_data
    reordered = df.copy()
    reordered["shop"] = reordered["shop"].cat.reorder_categories(SHOPS[::-1])
    long = GPUHistGBDTRanker(**FKW).fit(df, y, qid=qid)
    kw = {**FKW, "n_estimators": 5}
    if how == "init_model":
        start = GPUHistGBDTRanker(**kw).fit(df, y, qid=qid)
        more = GPUHistGBDTRanker(**kw).fit(reordered, y, qid=qid, init_model=start)
    else:
        more = GPUHistGBDTRanker(warm_start=True, **kw).fit(df, y, qid=qid)
        more.set_params(n_estimators=10).fit(reordered, y, qid=qid)
    # the same rows and the same categories: the long fit's model and its scores
    np.testing.assert_array_equal(more.predict(df), long.predict(df))
    np.testing.assert_array_equal(more.predict(reordered), long.predict(df))


def test_exports_and_contributions_of_a_categorical_model(cat_data, tmp_path):
    X, y, qid = cat_data
    model = GPUHistGBDTRanker(categorical_features=[5], **KW).fit(X, y, qid=qid)
    P = X[:120].astype(np.float64)
    P[1::5, 5] = 999.0  # unseen
    P[2::5, 5] = 40.0   # beyond the bitsets' first word
    P[3::5, 5] = np.nan
    want = model.predict(P)
    contribs = model.predict_contribs(P)
    np.testing.assert_allclose(contribs.sum(axis=1), want, rtol=0, atol=1e-12)
    assert np.any(contribs[:, 5] != 0)
    lgb = pytest.importorskip("lightgbm")
    model.to_lightgbm(tmp_path / "m.txt")
    booster = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    np.testing.assert_array_equal(booster.predict(P), want)


def test_categorical_features_under_other_constraints(cat_data):
    X, y, qid = cat_data
    # interaction sets: a branch through the categorical feature only uses its set's features
    sets = [[0, 5], [1, 2, 3, 4]]
    model = GPUHistGBDTRanker(categorical_features=[5], interaction_constraints=sets,
                              **KW).fit(X, y, qid=qid)
    e = model.ensemble_
    assert np.any(e.flags & NodeFlags.CATEGORICAL)

    def walk(lo, node, used):
        g = lo + node
        if e.left[g] < 0:
            assert any(used <= set(s) for s in sets), used
            return
        walk(lo, e.left[g], used | {int(e.feature[g])})
        walk(lo, e.right[g], used | {int(e.feature[g])})

    for t in range(e.n_trees):
        walk(e.tree_ptr[t], 0, set())
    # monotone on a numeric feature next to a categorical one: still monotone along it
    for method in ("basic", "intermediate"):
        mono = GPUHistGBDTRanker(categorical_features=[5], monotone_constraints=[1, 0, 0, 0, 0, 0],
                                 monotone_constraints_method=method, **KW).fit(X, y, qid=qid)
        assert np.any(mono.ensemble_.flags & NodeFlags.CATEGORICAL)
        rng = np.random.default_rng(1)
        grid = np.linspace(np.nanmin(X[:, 0]) - 1, np.nanmax(X[:, 0]) + 1, 60)
        for row in X[rng.integers(0, X.shape[0], 30)]:
            R = np.repeat(row[None].astype(np.float64), grid.size, 0)
            R[:, 0] = grid
            assert np.all(np.diff(mono.predict(R)) >= 0), method


@pytest.mark.parametrize("max_bins", [255, 4])
def test_dask_fit_with_categorical_is_the_local_model(cat_data, max_bins):
    distributed = pytest.importorskip("distributed")
    from skltr.dask import DaskGPUHistGBDTRanker

    X, y, qid = cat_data
    kw = dict(KW, n_jobs=1, categorical_features=[5], max_bins=max_bins)
    assert _is_wide(X, 5, max_bins) == (max_bins == 4)
    local = GPUHistGBDTRanker(**kw).fit(X, y, qid=qid)
    bad = X.copy()
    bad[-3, 5] = 2.5
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dist = DaskGPUHistGBDTRanker(client=client, **kw).fit(X, y, qid=qid)
        with pytest.raises(ValueError, match="value 2.5"):
            DaskGPUHistGBDTRanker(client=client, **kw).fit(bad, y, qid=qid)
    assert dist.ensemble_.equals(local.ensemble_)
    assert dist.is_categorical_.tolist() == local.is_categorical_.tolist()


def test_sparse_category_codes_warn_as_lightgbm_does():
    # ids rather than codes: every categorical split would store a bitset up to the largest
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=400), rng.choice([3.0, 70.0, 2_000_000.0], 400)]
    with pytest.warns(UserWarning, match="codes up to 2000000.*Renumber"):
        BinMapper(categorical=[1]).fit(X)
    X[:, 1] = rng.integers(0, 300, 400)  # dense codes: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BinMapper(categorical=[1]).fit(X)


def test_dask_fits_pandas_and_dask_frames_with_category_columns(frame_data):
    # the Dask ranker codes category columns as the local one does: a pandas frame, a dask
    # frame partition by partition (known categories), predictions on dask frames
    distributed = pytest.importorskip("distributed")
    dd = pytest.importorskip("dask.dataframe")
    from skltr.dask import DaskGPUHistGBDTRanker

    df, arr, y, qid = frame_data
    kw = {**FKW, "n_jobs": 1}
    local = GPUHistGBDTRanker(**kw).fit(df, y, qid=qid)
    ddf = dd.from_pandas(df, npartitions=3)
    unknown = dd.from_pandas(df.assign(shop=df["shop"].astype(str)), npartitions=3)
    unknown["shop"] = unknown["shop"].astype("category")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for X in (df, ddf):
            dist = DaskGPUHistGBDTRanker(client=client, **kw).fit(
                X, y, qid=qid, eval_set=[(X, y, qid)])
            assert dist.ensemble_.equals(local.ensemble_)
            assert dist.is_categorical_.tolist() == [False, False, True, False]
            np.testing.assert_array_equal(np.asarray(dist.predict(ddf).compute()),
                                          local.predict(df))
        with pytest.raises(ValueError, match="categorize"):
            DaskGPUHistGBDTRanker(client=client, **kw).fit(unknown, y, qid=qid)


def test_a_text_category_column_left_out_is_refused_with_its_name(frame_data):
    df, arr, y, qid = frame_data
    for spec in (None, [0]):
        with pytest.raises(ValueError, match="'shop' is a pandas category column.*"
                                             "categorical_features"):
            GPUHistGBDTRanker(**{**FKW, "categorical_features": spec}).fit(df, y, qid=qid)
    # numeric categories are read as their values, as scikit-learn does
    numeric = df.assign(shop=df["shop"].cat.codes.astype("category"))
    GPUHistGBDTRanker(**{**FKW, "categorical_features": None}).fit(numeric, y, qid=qid)


@pytest.mark.parametrize("n_threads", [2, 16])
def test_wide_histogram_chunks_pay_for_their_region(n_threads):
    # the chunk count is the cost model's best by brute force (one thread unless a parallel
    # build, region start included, is cheaper): a small node's wide rows on one thread
    from skltr._cpu.histogram_wide import wide_chunks

    update, region, out_bytes = 15, 50_000, 8448
    for n_rows in (0, 100, 1127, 5000, 20_000, 200_000):
        serial = update * n_rows

        def cost(k):
            return serial if k == 1 else serial / k + k * out_bytes + region

        got = wide_chunks(n_threads, n_rows, 1, out_bytes, update, region)
        assert 1 <= got <= n_threads
        assert cost(got) <= cost(1)
        if got > 1:  # no fewer chunks (1 included) would be cheaper
            assert all(cost(got) <= cost(k) * 1.2 for k in range(1, n_threads + 1))
    assert wide_chunks(n_threads, 1127, 1, out_bytes, update, region) == 1
    assert wide_chunks(n_threads, 200_000, 1, out_bytes, update, region) > 1
