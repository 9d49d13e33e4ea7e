"""TreeSHAP (``TreeEnsemble.predict_contribs`` / ``predict_interactions``, the estimators'
methods and ``skltr.explain``): exact against XGBoost's ``pred_contribs`` /
``pred_interactions``, LightGBM's ``pred_contrib`` and ``shap.TreeExplainer`` on those
libraries' own models (1e-5 relative: they compute in float32), against brute-force Shapley
values (tests/naive_shap.py) on adversarial ensembles and skltr's own fitted rankers, rows
summing to ``predict_raw``, and clear errors on bad input.

The bodies take ``device`` (``run_x(device)``); tests/test_explain_gpu.py runs them on CUDA.
"""

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_shap import naive_contribs, naive_interactions
from strategies_trees import ensemble_and_inputs, ensembles, inputs

from skltr.trees import TreeEnsemble

NAN = np.nan


def _rel_close(got, want, rtol=1e-5, what=""):
    """``|got - want| <= rtol * (largest |want| of the row + 1)``: float32 peers round each
    term, so the error scales with the row's magnitude, not with each entry's."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = np.abs(want).reshape(want.shape[0], -1).max(axis=1) + 1.0
    err = np.abs(got - want).reshape(want.shape[0], -1).max(axis=1)
    assert np.all(err <= rtol * scale), f"{what}: max rel err {np.max(err / scale):.3g}"
    return float(np.max(err / scale))


def _as_3d(a, n_outputs):
    return a[:, None] if n_outputs == 1 else a


@st.composite
def _covered(draw):
    """An adversarial ensemble with random covers (zeros included, children not summing to
    their parent) and inputs of every routing edge."""
    ens, X = draw(ensemble_and_inputs(max_trees=4, max_splits=6))
    cover = draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.5, 10.0, 1e-3]),
                          min_size=ens.n_nodes, max_size=ens.n_nodes))
    ens.cover = np.asarray(cover, dtype=np.float64)
    return ens, X


@st.composite
def _covered_rows(draw):
    """As :func:`_covered`, deeper trees and up to 40 rows: groups of the CPU kernel's
    16 rows, and a short last one."""
    ens, thresholds = draw(ensembles(max_trees=4, max_splits=12))
    X = draw(inputs(ens, thresholds, max_rows=40))
    cover = draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.5, 10.0, 1e-3]),
                          min_size=ens.n_nodes, max_size=ens.n_nodes))
    ens.cover = np.asarray(cover, dtype=np.float64)
    return ens, X


@contextmanager
def _cpu_tables(**values):
    """The CPU's pattern-table settings of ``skltr.trees._shap`` set for the block (the
    tables are cached per ensemble and settings)."""
    from skltr.trees import _shap

    old = {k: getattr(_shap, k) for k in values}
    for k, v in values.items():
        setattr(_shap, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(_shap, k, v)


# ----------------------------------------------------------------------------- bodies
def _largest_fraction(ens):
    """The largest child-to-parent cover ratio, at least 1. Real covers give fractions <= 1
    (up to the rounding of float hessian sums); the adversarial ones reach 1e4, and the
    unwound sums' rounding error grows in proportion (hypothesis found 2e-8 of the scale at
    a ratio of 1000)."""
    tree = np.repeat(np.arange(ens.n_trees), np.diff(ens.tree_ptr))
    parent = np.flatnonzero((ens.left >= 0) & (ens.cover > 0))
    ratios = [ens.cover[ens.tree_ptr[tree[parent]] + side[parent]] / ens.cover[parent]
              for side in (ens.left, ens.right)]
    return max([1.0] + [float(r.max()) for r in ratios if r.size])


def run_naive_adversarial(ens, X, device):
    got = _as_3d(ens.predict_contribs(X, device=device), ens.n_outputs)
    want = naive_contribs(ens, X)
    scale = (np.abs(want).max() + 1.0) * _largest_fraction(ens)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * scale)
    inter = ens.predict_interactions(X, device=device)
    inter = inter[:, None] if ens.n_outputs == 1 else inter
    np.testing.assert_allclose(inter, naive_interactions(ens, X), rtol=0, atol=1e-9 * scale)
    # additivity: a row sums to the raw score; an interaction row to the contribution
    raw = ens.predict_raw(X).reshape(X.shape[0], ens.n_outputs).astype(np.float64)
    # float32 sums round every partial sum (and the average): allow an ulp per term
    terms = np.abs(ens.base_score).max() + np.abs(ens.value).sum() * (
        np.abs(ens.tree_weight).max() if ens.n_trees else 0.0)
    tol = 1e-9 * scale + (4 * terms * 2.0 ** -23 if ens.sum_dtype == "float32" else 0.0)
    finite = np.isfinite(raw)
    if not finite.all():  # the model's own float32 sum overflows (leaves near 3e38): no
        with pytest.raises(ValueError, match="beyond the"):  # finite score to add up to
            ens.check_score_range()
    assert np.all(np.abs(got.sum(axis=2) - raw)[finite] <= tol)
    np.testing.assert_allclose(inter.sum(axis=3), got, rtol=0, atol=1e-9 * scale)


def run_xgboost(device):
    xgb = pytest.importorskip("xgboost")
    from skltr.convert import to_tree_ensemble

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    X[rng.random(X.shape) < 0.15] = NAN
    X[:5, 2] = -999.0
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) ** 2 + rng.normal(size=400) * 0.1
    worst = {}
    cases = [
        ({"max_depth": 6, "eta": 0.3, "base_score": 0.7}, {}, y),
        ({"max_depth": 4, "booster": "dart", "rate_drop": 0.3, "eta": 0.5}, {}, y),
        ({"max_depth": 3, "objective": "binary:logistic"}, {}, (y > 1).astype(float)),
        ({"max_depth": 3, "objective": "multi:softprob", "num_class": 3}, {},
         np.digitize(y, [0.0, 2.0]).astype(float)),
        ({"max_depth": 5}, {"missing": -999.0}, y),
        ({"max_depth": 6, "objective": "rank:ndcg"}, {}, np.digitize(y, [0.0, 1.0, 3.0])),
    ]
    qid = np.repeat(np.arange(20), 20)
    for params, dm_kw, label in cases:
        train_kw = {"qid": qid} if params.get("objective") == "rank:ndcg" else {}
        booster = xgb.train({**params, "seed": 0},
                            xgb.DMatrix(X, label, **dm_kw, **train_kw), 15)
        ens = to_tree_ensemble(booster)
        if "missing" in dm_kw:
            from skltr.convert import from_xgboost

            ens = from_xgboost(booster)
            ens.missing_value = -999.0  # the sentinel lives outside the JSON
        dm = xgb.DMatrix(X, **dm_kw)
        want = booster.predict(dm, pred_contribs=True)
        got = ens.predict_contribs(X, device=device)
        key = params.get("booster", params.get("objective", "reg")) + str(dm_kw)
        worst[key] = _rel_close(got, want, what=key)
        wi = booster.predict(xgb.DMatrix(X[:40], **dm_kw), pred_interactions=True)
        gi = ens.predict_interactions(X[:40], device=device)
        worst[key + " interactions"] = _rel_close(gi, wi, what=key + " interactions")
    return worst


def run_xgboost_categorical(device):
    xgb = pytest.importorskip("xgboost")
    pd = pytest.importorskip("pandas")
    from skltr import QuickScorerPredictor

    rng = np.random.default_rng(1)
    n = 500
    df = pd.DataFrame({"num": rng.normal(size=n),
                       "cat": pd.Categorical(rng.choice(list("abcdefg"), n)),
                       "num2": rng.normal(size=n)})
    df.loc[rng.random(n) < 0.1, "num"] = NAN
    y = df["num"].fillna(0) + (df["cat"].cat.codes % 3) + rng.normal(size=n) * 0.1
    model = xgb.XGBRegressor(n_estimators=20, max_depth=4, enable_categorical=True,
                             tree_method="hist", max_cat_to_onehot=1).fit(df, y)
    want = model.get_booster().predict(xgb.DMatrix(df, enable_categorical=True),
                                       pred_contribs=True)
    qs = QuickScorerPredictor.from_model(model, device=device)
    return _rel_close(qs.predict_contribs(df), want, what="xgboost categorical")


def run_lightgbm(device):
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    from skltr import QuickScorerPredictor

    rng = np.random.default_rng(2)
    n = 600
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.1] = NAN
    X[rng.random(n) < 0.1, 3] = 0.0
    y = np.nan_to_num(X[:, 0]) + np.abs(np.nan_to_num(X[:, 1])) + rng.normal(size=n) * 0.1
    worst = {}
    for params in ({"num_leaves": 31}, {"num_leaves": 255, "min_child_samples": 2},
                   {"num_leaves": 15, "zero_as_missing": True},
                   {"num_leaves": 7, "use_missing": False}):
        m = lgb.LGBMRegressor(n_estimators=15, verbose=-1, **params).fit(X, y)
        got = QuickScorerPredictor.from_model(m, device=device).predict_contribs(X)
        worst[str(params)] = _rel_close(got, m.predict(X, pred_contrib=True),
                                        what=str(params))
    # categorical columns of a DataFrame, and a multiclass model
    df = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(rng.integers(0, 12, n)),
                       "b": X[:, 1]})
    yc = rng.integers(0, 3, n)
    m = lgb.LGBMClassifier(n_estimators=10, num_leaves=15, verbose=-1,
                           min_data_per_group=5, cat_smooth=1).fit(df, yc)
    got = QuickScorerPredictor.from_model(m, device=device).predict_contribs(df)
    want = m.predict(df, pred_contrib=True).reshape(n, 3, 4)
    worst["multiclass categorical"] = _rel_close(got, want, what="lightgbm multiclass")
    return worst


def run_sklearn(device):
    shap = pytest.importorskip("shap")
    from sklearn.ensemble import (GradientBoostingRegressor, HistGradientBoostingRegressor,
                                  RandomForestClassifier, RandomForestRegressor)
    from sklearn.tree import DecisionTreeRegressor

    from skltr.convert import to_tree_ensemble

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 5))
    y = X[:, 0] * 2 + X[:, 1] ** 2 + rng.normal(size=300) * 0.1
    w = rng.uniform(0.5, 2.0, size=300)
    worst = {}
    models = [DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y, sample_weight=w),
              RandomForestRegressor(n_estimators=10, max_depth=5, random_state=0).fit(X, y),
              GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, y),
              HistGradientBoostingRegressor(max_iter=20, random_state=0).fit(X, y)]
    for model in models:
        ens = to_tree_ensemble(model)
        explainer = shap.TreeExplainer(model)
        want = np.column_stack([explainer.shap_values(X, check_additivity=False),
                                np.full(len(X), float(np.ravel(explainer.expected_value)[0]))])
        name = type(model).__name__
        worst[name] = _rel_close(ens.predict_contribs(X, device=device), want, what=name)
    # a multi-class forest: one output per class (probabilities), shap's (n, features, class)
    model = RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0).fit(
        X, np.digitize(y, [0.0, 2.0]))
    explainer = shap.TreeExplainer(model)
    values = np.asarray(explainer.shap_values(X, check_additivity=False))
    base = np.broadcast_to(np.ravel(explainer.expected_value), (len(X), 3))
    want = np.concatenate([np.moveaxis(values, 2, 1), base[:, :, None]], axis=2)
    got = to_tree_ensemble(model).predict_contribs(X, device=device)
    worst["RandomForestClassifier"] = _rel_close(got, want, what="forest classifier")
    return worst


def run_skltr_rankers(device):
    from skltr import GPUHistGBDTRanker, RankBoostRanker
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=30, docs_per_query=20, n_features=4, n_informative=3,
                           random_state=0)
    X = X.copy()
    X[::7, 1] = NAN
    for ranker in (GPUHistGBDTRanker(n_estimators=8, max_leaves=8, random_state=0),
                   RankBoostRanker(n_estimators=10)):
        ranker.fit(X, y, qid=qid)
        ens = ranker.to_tree_ensemble()
        assert ens.cover is not None
        got = ranker.predict_contribs(X[:12])
        np.testing.assert_allclose(got, naive_contribs(ens, X[:12])[:, 0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(got.sum(axis=1), ranker.predict(X[:12]), rtol=0, atol=1e-9)
        inter = ranker.predict_interactions(X[:5])
        np.testing.assert_allclose(inter, naive_interactions(ens, X[:5])[:, 0], rtol=0,
                                   atol=1e-9)
        if device != "cpu":
            np.testing.assert_allclose(ens.predict_contribs(X, device=device),
                                       ens.predict_contribs(X), rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------- CPU tests
@settings(max_examples=60, deadline=None)
@given(_covered())
def test_contribs_and_interactions_equal_brute_force_shapley(case):
    ens, X = case
    run_naive_adversarial(ens, X, "cpu")


def test_xgboost_pred_contribs_and_interactions():
    run_xgboost("cpu")


def test_xgboost_categorical_frame():
    run_xgboost_categorical("cpu")


def test_lightgbm_pred_contrib():
    run_lightgbm("cpu")


def test_sklearn_models_equal_shap_tree_explainer():
    run_sklearn("cpu")


def test_skltr_rankers_equal_brute_force():
    run_skltr_rankers("cpu")


def test_zero_cover_nodes_are_finite_and_additive():
    """LambdaMART gives queries of one label no gradient and no hessian: a node holding only
    those rows has cover 0, which must not divide by zero (each child then gets 1/2). The
    grower only makes such nodes incidentally, so zero the covers of a fitted model: a whole
    tree, and the subtree under one node."""
    import copy

    from skltr import GPUHistGBDTRanker
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=20, docs_per_query=10, n_features=3, n_informative=3,
                             random_state=5)
    y[qid >= 10] = 1.0  # half the queries have one label only
    ens = copy.deepcopy(GPUHistGBDTRanker(n_estimators=4, max_leaves=8, random_state=0)
                        .fit(X, y, qid=qid).to_tree_ensemble())
    tp = ens.tree_ptr
    ens.cover[tp[0]:tp[1]] = 0.0
    second = tp[1] + ens.left[tp[1]]  # the left child of tree 1's root and all below it
    stack = [int(second)]
    while stack:
        n = stack.pop()
        ens.cover[n] = 0.0
        if ens.left[n] >= 0:
            stack += [int(tp[1] + ens.left[n]), int(tp[1] + ens.right[n])]
    got = ens.predict_contribs(X)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got.sum(axis=1), ens.predict_raw(X), rtol=0, atol=1e-9)
    np.testing.assert_allclose(got[:8], naive_contribs(ens, X[:8])[:, 0], rtol=0, atol=1e-9)
    inter = ens.predict_interactions(X[:8])
    assert np.all(np.isfinite(inter))
    np.testing.assert_allclose(inter, naive_interactions(ens, X[:8])[:, 0], rtol=0, atol=1e-9)


def test_sparse_and_empty_inputs():
    sp = pytest.importorskip("scipy.sparse")
    from skltr import GPUHistGBDTRanker
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=10, docs_per_query=10, n_features=5, n_informative=3,
                           random_state=1)
    X[X < 0.3] = 0.0
    r = GPUHistGBDTRanker(n_estimators=4, random_state=0).fit(X, y, qid=qid)
    ens = r.to_tree_ensemble()
    np.testing.assert_array_equal(ens.predict_contribs(sp.csr_matrix(X)),
                                  ens.predict_contribs(X))
    assert ens.predict_contribs(X[:0]).shape == (0, 6)
    assert ens.predict_interactions(X[:0]).shape == (0, 6, 6)


def test_model_without_cover_says_how_to_get_one(tmp_path):
    ens = TreeEnsemble(tree_ptr=[0, 3], feature=[0, -1, -1], threshold=[0.5, 0, 0],
                       left=[1, -1, -1], right=[2, -1, -1], value=[0, 1.0, 2.0], n_features=1)
    for method in (ens.predict_contribs, ens.predict_interactions):
        with pytest.raises(ValueError, match="no cover statistics.*refit.*convert"):
            method(np.zeros((2, 1)))
    # an old file (no cover array) loads, and says the same
    ens.save(tmp_path / "old.json")
    back = TreeEnsemble.load(tmp_path / "old.json")
    assert back.cover is None
    with pytest.raises(ValueError, match="no cover statistics"):
        back.predict_contribs(np.zeros((1, 1)))
    # covers survive a round trip
    ens.cover = np.array([4.0, 1.0, 3.0])
    ens.save(tmp_path / "new.json")
    back = TreeEnsemble.load(tmp_path / "new.json")
    np.testing.assert_array_equal(back.cover, ens.cover)
    np.testing.assert_allclose(back.predict_contribs(np.array([[0.0], [1.0]])),
                               [[-0.75, 1.75], [0.25, 1.75]])
    with pytest.raises(ValueError, match="cover must be"):
        TreeEnsemble(tree_ptr=[0, 1], feature=[-1], threshold=[0.0], left=[-1], right=[-1],
                     value=[1.0], n_features=1, cover=[-1.0])


def test_bad_inputs_are_refused_clearly():
    pd = pytest.importorskip("pandas")
    from skltr import GPUHistGBDTRanker, OnDemandRuleRanker
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=10, docs_per_query=10, n_features=3, n_informative=2,
                           random_state=0)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    r = GPUHistGBDTRanker(n_estimators=3, random_state=0).fit(df, y, qid=qid)
    with pytest.raises(ValueError, match="features"):
        r.predict_contribs(X[:, :2])
    with pytest.raises(ValueError, match="feature names"):
        r.predict_contribs(df.rename(columns={"c": "zzz"}))
    with pytest.raises(ValueError, match="features"):
        r.to_tree_ensemble().predict_interactions(np.zeros((2, 4)))
    rules = OnDemandRuleRanker().fit(X, y, qid=qid)
    with pytest.raises(TypeError, match="no fixed trees"):
        rules.predict_contribs(X)
    pytest.importorskip("shap")
    import skltr

    with pytest.raises(TypeError, match="no fixed trees"):
        skltr.explain(rules, X)


def test_explain_returns_a_shap_explanation():
    shap = pytest.importorskip("shap")
    pd = pytest.importorskip("pandas")
    xgb = pytest.importorskip("xgboost")
    import skltr
    from skltr import GPUHistGBDTRanker
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=10, docs_per_query=10, n_features=3, n_informative=2,
                             random_state=0)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    ranker = GPUHistGBDTRanker(n_estimators=5, random_state=0).fit(df, y, qid=qid)
    exp = skltr.explain(ranker, df.iloc[:7])
    assert isinstance(exp, shap.Explanation)
    assert exp.values.shape == (7, 3) and list(exp.feature_names) == ["a", "b", "c"]
    np.testing.assert_allclose(exp.values.sum(axis=1) + exp.base_values,
                               ranker.predict(df.iloc[:7]), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(exp.data, X[:7])
    # a multi-class source model: shap's (rows, features, outputs), or one output
    model = xgb.XGBClassifier(n_estimators=5, max_depth=3).fit(X, np.arange(len(X)) % 3)
    exp = skltr.explain(model, X[:4])
    assert exp.values.shape == (4, 3, 3) and exp.base_values.shape == (4, 3)
    one = skltr.explain(model, X[:4], output=1)
    np.testing.assert_array_equal(one.values, exp.values[:, :, 1])


# ----------------------------------------------------------------------------- CPU tables
@settings(max_examples=60, deadline=None)
@given(_covered_rows(), st.integers(0, 6), st.integers(1, 20),
       st.sampled_from([8, 256, 4096, 2**19]), st.sampled_from([1, 2]))
def test_pattern_tables_equal_the_row_by_row_values_bit_for_bit(case, max_k, chunk,
                                                                block_bytes, n_jobs):
    """The CPU kernel's per-pattern tables hold what the row-by-row arithmetic computes: the
    same bits with no tables at all, with the default tables, and with tables for the paths
    of up to ``max_k`` elements only (the others row by row in the same tree), in blocks of
    trees of any size, chunks of rows of any size and threads (categorical and missing-value
    routing, zero covers, several outputs, averaged and weighted trees: the adversarial
    ensembles)."""
    from skltr.trees import _shap

    ens, X = case
    with _cpu_tables(TABLE_BYTES=0):
        want = ens.predict_contribs(X, n_jobs=n_jobs)
        assert not np.any(_shap.shap_tables(ens, _shap.shap_paths(ens)).table_off >= 0)
    with _cpu_tables(TABLE_ROWS_PER_PATTERN=0):
        np.testing.assert_array_equal(ens.predict_contribs(X, n_jobs=n_jobs), want)
    with _cpu_tables(TABLE_MAX_K=max_k, ROW_CHUNK=chunk, ROW_CHUNK_MIN=1,
                     BLOCK_BYTES=block_bytes, TABLE_ROWS_PER_PATTERN=0):
        np.testing.assert_array_equal(ens.predict_contribs(X, n_jobs=n_jobs), want)
        paths = _shap.shap_paths(ens)
        k = np.diff(paths.path_ptr)
        tabled = _shap.shap_tables(ens, paths).table_off >= 0
        np.testing.assert_array_equal(tabled, (k >= 1) & (k <= max_k))


def test_pattern_tables_on_library_models():
    """Fitted models, bit for bit against the row-by-row values: XGBoost with missing values
    and categorical splits, a multi-class one, and LightGBM trees of 255 leaves, whose long
    paths stay row by row beside the tabled short ones within a tree (and under a table
    budget that leaves out the longer paths of the whole model)."""
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    from skltr.convert import to_tree_ensemble
    from skltr.trees import _shap

    rng = np.random.default_rng(4)
    n = 700
    df = pd.DataFrame({"a": rng.normal(size=n), "c": pd.Categorical(rng.integers(0, 9, n)),
                       "b": rng.normal(size=n), "d": rng.normal(size=n)})
    df.loc[rng.random(n) < 0.1, "a"] = NAN
    y = df["a"].fillna(0) + (df["c"].cat.codes % 3) + df["b"] ** 2 + rng.normal(size=n) * 0.1
    models = [
        xgb.XGBRegressor(n_estimators=12, max_depth=6, enable_categorical=True,
                         tree_method="hist", max_cat_to_onehot=1).fit(df, y),
        xgb.XGBClassifier(n_estimators=4, max_depth=4).fit(df[["a", "b", "d"]],
                                                           np.digitize(y, [0.5, 2.0])),
        lgb.LGBMRegressor(n_estimators=6, num_leaves=255, min_child_samples=2,
                          verbose=-1).fit(df[["a", "b", "d"]], y),
    ]
    X = df.loc[:, ["a", "b", "d"]].to_numpy()
    for model in models:
        ens = to_tree_ensemble(model)
        rows = df if model is models[0] else X
        with _cpu_tables(TABLE_BYTES=0):
            want = ens.predict_contribs(rows, n_jobs=2)
        np.testing.assert_array_equal(ens.predict_contribs(rows, n_jobs=2), want)
        assert np.any(_shap.shap_tables(ens, _shap.shap_paths(ens)).table_off >= 0)
        paths = _shap.shap_paths(ens)
        k = np.diff(paths.path_ptr)
        sizes = k * 2.0 ** np.minimum(k, 12) * 8
        budget = int(sizes[k <= 4].sum())  # room for the tables of paths of <= 4 elements
        with _cpu_tables(TABLE_MAX_K=5, TABLE_BYTES=budget, ROW_CHUNK=50):
            np.testing.assert_array_equal(ens.predict_contribs(rows, n_jobs=2), want)
            tabled = _shap.shap_tables(ens, paths).table_off >= 0
            np.testing.assert_array_equal(tabled, (k >= 1) & (k <= 4))


def test_pattern_tables_grow_with_the_rows_explained():
    """An ensemble's first rows go row by row (a few rows would not pay for tables), and a
    path of ``k`` elements gets its table once the ensemble's calls have explained ``2**k``
    rows per ``TABLE_ROWS_PER_PATTERN``: the same values at every stage."""
    from skltr import GPUHistGBDTRanker
    from skltr.datasets import make_ranking
    from skltr.trees import _shap

    X, y, qid = make_ranking(n_queries=20, docs_per_query=15, n_features=6, n_informative=4,
                             random_state=3)
    ens = GPUHistGBDTRanker(n_estimators=10, max_leaves=15, random_state=0).fit(
        X, y, qid=qid).to_tree_ensemble()
    k = np.diff(_shap.shap_paths(ens).path_ptr)
    assert k.max() >= 4

    def tabled():
        return _shap._TABLES[ens][2].table_off >= 0

    with _cpu_tables(TABLE_ROWS_PER_PATTERN=2):
        got = [ens.predict_contribs(X[:3])]  # 3 rows: 1 per pattern, no table
        assert not tabled().any()
        got.append(ens.predict_contribs(X[3:16]))  # 16 rows: 8 a path of up to 3 elements
        np.testing.assert_array_equal(tabled(), (k >= 1) & (k <= 3))
        got.append(ens.predict_contribs(X[16:]))
        np.testing.assert_array_equal(tabled(), k >= 1)
    with _cpu_tables(TABLE_BYTES=0):
        np.testing.assert_array_equal(np.vstack(got), ens.predict_contribs(X))
