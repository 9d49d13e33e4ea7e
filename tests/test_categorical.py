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

import numpy as np
import pytest
import scipy.sparse as sp

from naive_gbdt import naive_categorical_split, naive_histogram
from naive_trees import naive_predict_raw
from skltr import GPUHistGBDTRanker
from skltr._cpu.split_categorical import best_categorical_split
from skltr._engine.binning import MAX_CATEGORY, BinMapper
from skltr._engine.histogram import HIST_PAD_BINS
from skltr._records import CategoricalConstants, split_constants
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


# ---------------------------------------------------------------------------- binning
def test_bins_are_categories_by_decreasing_count():
    rng = np.random.default_rng(0)
    counts = {7: 50, 3: 40, 12: 40, 0: 30, 5: 5, 100: 1}  # 3 and 12 tie: 3 first
    col = np.concatenate([np.full(c, float(v)) for v, c in counts.items()] + [[np.nan] * 9])
    rng.shuffle(col)
    X = np.column_stack([rng.normal(size=col.size), col])
    bm = BinMapper(max_bins=255, categorical=[1]).fit(X)
    np.testing.assert_array_equal(bm.cat_values, [7, 3, 12, 0, 5, 100])
    assert bm.n_bins[1] == 6 and bm.cut_ptr[2] == bm.cut_ptr[1]  # no cuts
    codes = bm.transform(X)[:, 1]
    order = [7, 3, 12, 0, 5, 100]
    expect = [bm.missing_bin if np.isnan(v) else order.index(v) for v in col]
    np.testing.assert_array_equal(codes, expect)
    assert bm.has_missing[1]
    # the numeric column is binned as without the categorical one
    plain = BinMapper(max_bins=255).fit(X[:, :1])
    np.testing.assert_array_equal(bm.transform(X)[:, 0], plain.transform(X[:, :1])[:, 0])


def test_rare_unseen_and_missing_categories_share_the_missing_bin():
    col = np.array([4.0] * 6 + [2.0] * 5 + [9.0] * 4 + [1.0] * 3 + [8.0] * 2 + [np.nan])
    X = col[:, None]
    bm = BinMapper(max_bins=3, categorical=[0]).fit(X)
    np.testing.assert_array_equal(bm.cat_values, [4, 2, 9])
    assert bm.missing_bin == 3
    got = bm.transform(np.array([[4.0], [2.0], [9.0], [1.0], [8.0], [np.nan], [77.0], [0.0]]))
    np.testing.assert_array_equal(got.ravel(), [0, 1, 2, 3, 3, 3, 3, 3])


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


@pytest.mark.parametrize("value,match", [(-1.0, "-1.0"), (2.5, "2.5"),
                                         (float(MAX_CATEGORY), "2147483647")])
def test_bin_mapper_refuses_non_category_values(value, match):
    X = np.array([[0.0], [1.0], [value]])
    with pytest.raises(ValueError, match=match):
        BinMapper(categorical=[0]).fit(X)
    bm = BinMapper(categorical=[0]).fit(np.array([[0.0], [1.0]]))
    with pytest.raises(ValueError, match="whole"):
        bm.transform(X)


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
    (-1.0, "value -1.0"), (2.5, "value 2.5"), (float(2 ** 31 - 1), "2147483647"),
    (float(2 ** 40), "1099511627776")])
def test_bad_categorical_values_are_refused_at_fit_and_predict(cat_data, value, match):
    X, y, qid = cat_data
    model = GPUHistGBDTRanker(categorical_features=[5], **KW).fit(X, y, qid=qid)
    before = model.predict(X)
    bad = X.copy()
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
