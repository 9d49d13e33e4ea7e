"""from_lightgbm: converted ensembles reproduce LightGBM's predictions bit for bit.

Every comparison is ``np.testing.assert_array_equal`` on float64 outputs: ``predict_raw``
against ``Booster.predict(X, raw_score=True)`` and ``predict`` against ``predict(X)``. Inputs
sit on the edges listed in FORMATS.md: each threshold and its float64 / float32 neighbours,
NaN under every missing type, -0.0, 1e-36, ±1e-35, LightGBM's zero threshold (float32(1e-35)),
±inf, and invalid categories.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

lgb = pytest.importorskip("lightgbm")

from skltr.convert._lightgbm import K_ZERO_THRESHOLD, from_lightgbm  # noqa: E402
from skltr.trees import NodeFlags, TreeEnsemble  # noqa: E402

KZT = K_ZERO_THRESHOLD  # float32(1e-35) as a double: LightGBM's kZeroThreshold
NUMERIC_SPECIALS = [0.0, -0.0, 1e-36, -1e-36, 1e-35, -1e-35, 2e-35, -2e-35, KZT, -KZT,
                    float(np.nextafter(KZT, 1)), float(np.nextafter(-KZT, -1)), 1e300, -1e300,
                    np.inf, -np.inf, np.nan]
CAT_EDGES = [np.nan, -1.0, -0.5, -0.0, 0.0, 0.5, 3.7, 31.0, 32.0, 500.0, 2.0**24,
             2.0**31 - 1, 2.0**31 + 5, 1e10, np.inf, -np.inf]
BASE = dict(verbose=-1, num_threads=1, deterministic=True, force_col_wise=True)
# One thread everywhere: LightGBM's OpenMP runtime and numba's (threading layer "omp") are
# separate libgomp copies whose spinning workers starve each other on a small machine.
N_JOBS = 1


@pytest.fixture(autouse=True)
def _single_openmp_thread():
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


# --------------------------------------------------------------------------- helpers
def train(params, X, y, rounds=5, categorical=(), group=None):
    ds = lgb.Dataset(X, y, categorical_feature=list(categorical) or "auto", group=group,
                     free_raw_data=False)
    return lgb.train({**BASE, **params}, ds, rounds)


def in_zero_band(x):
    """1e-35 < |x| <= float32(1e-35): where the traversal kernel's zero test (|x| <= 1e-35)
    and LightGBM's (|x| <= kZeroThreshold) disagree. Only missing-type-Zero nodes care."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    return (a > 1e-35) & (a <= KZT)


def has_zero_nodes(ens):
    internal = ens.left >= 0
    numeric = (ens.flags & NodeFlags.CATEGORICAL) == 0
    return bool(np.any(internal & numeric
                       & (NodeFlags.missing_type(ens.flags) == NodeFlags.MISSING_ZERO)))


def lgb_nodes(booster):
    """(feature, threshold or category list, info) of every split, from dump_model()."""
    out = []
    for info in booster.dump_model()["tree_info"]:
        stack = [info["tree_structure"]]
        while stack:
            node = stack.pop()
            if "split_index" not in node:
                continue
            thr = node["threshold"]
            if node["decision_type"] == "==":
                thr = [int(c) for c in str(thr).split("||")]
            out.append((node["split_feature"], thr, node))
            stack.extend((node["left_child"], node["right_child"]))
    return out


def float32_neighbours(t):
    """float32 values around double t: the one below-or-equal and the one above-or-equal."""
    if not abs(t) <= float(np.finfo(np.float32).max):
        return []
    f = np.float32(t)
    down = f if float(f) <= t else np.nextafter(f, np.float32(-np.inf))
    up = f if float(f) >= t else np.nextafter(f, np.float32(np.inf))
    return [float(down), float(up), float(np.nextafter(down, np.float32(-np.inf))),
            float(np.nextafter(up, np.float32(np.inf)))]


def edge_values(booster, n_features):
    """Candidate values per feature, built from the model's own thresholds."""
    values = [list(NUMERIC_SPECIALS) for _ in range(n_features)]
    for f, thr, _ in lgb_nodes(booster):
        if isinstance(thr, list):  # categorical: members, neighbours, invalid values
            members = np.array(thr, dtype=np.float64)
            values[f] += list(members) + list(members + 1) + list(members - 1)
            values[f] += list(members + 0.5) + CAT_EDGES
            values[f] += [float(32 * ((int(members.max()) // 32) + 1) + 1)]
        else:
            t = float(thr)
            values[f] += [t, float(np.nextafter(t, np.inf)), float(np.nextafter(t, -np.inf)),
                          -t, *float32_neighbours(t)]
    return [np.unique(np.array(v, dtype=np.float64)) if v else np.zeros(1) for v in values]


def edge_matrix(booster, X_train, rng, *, n_mixed=200, drop_zero_band=False):
    """Rows that put one feature on an edge value (others from training rows), plus rows
    mixing edge values in every feature."""
    n_features = X_train.shape[1]
    values = edge_values(booster, n_features)
    # -0.0 is lost by np.unique (equal to 0.0): add it back
    values = [np.concatenate([v, [-0.0]]) for v in values]
    rows = []
    for f, vals in enumerate(values):
        base = X_train[rng.integers(0, X_train.shape[0], size=vals.size)].copy()
        base[:, f] = vals
        rows.append(base)
    mixed = np.column_stack([rng.choice(v, size=n_mixed) for v in values])
    rows.append(mixed)
    X = np.concatenate(rows)
    if drop_zero_band:
        X = X[~in_zero_band(X).any(axis=1)]
    return np.ascontiguousarray(X, dtype=np.float64)


def assert_exact(ens, booster, X, **predict_kwargs):
    raw = booster.predict(X, raw_score=True, **predict_kwargs)
    if ens.average_output:
        # LightGBM's raw_score in random-forest mode is the sum of the trees; its predict
        # divides by the number of iterations (as the ensemble does) before the transform.
        raw = raw / ens.source["num_iteration"]
    np.testing.assert_array_equal(ens.predict_raw(X, n_jobs=N_JOBS), raw)
    np.testing.assert_array_equal(ens.predict(X, n_jobs=N_JOBS),
                                  booster.predict(X, **predict_kwargs))


def make_data(rng, n=400, n_features=4, nan_frac=0.0, zero_frac=0.0):
    X = rng.normal(size=(n, n_features))
    X[rng.random((n, n_features)) < zero_frac] = 0.0
    y = X[:, 0] + 0.5 * np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=n)
    X[rng.random((n, n_features)) < nan_frac] = np.nan
    return X, y


# --------------------------------------------------------------------------- numeric routing
@pytest.mark.parametrize("params", [
    {},                                        # missing type NaN where NaN was seen, else None
    {"zero_as_missing": True},                 # missing type Zero
    {"use_missing": False},                    # missing type None everywhere
])
def test_numeric_edges_and_missing_types(params):
    rng = np.random.default_rng(1)
    X, y = make_data(rng, nan_frac=0.1, zero_frac=0.15)
    X[:, 3] = np.where(np.isnan(X[:, 3]), 0.5, X[:, 3])  # NaN only at predict time
    booster = train({"num_leaves": 15, "min_data_in_leaf": 3, **params}, X, y, rounds=8)
    ens = from_lightgbm(booster)
    types = {n["missing_type"] for _, _, n in lgb_nodes(booster)}
    expected = {"zero_as_missing": {"Zero"}, "use_missing": {"None"}}
    if params:
        assert types == expected[next(iter(params))]
    else:
        assert types == {"NaN", "None"}
    X_edges = edge_matrix(booster, X, rng, drop_zero_band=has_zero_nodes(ens))
    assert np.isnan(X_edges[:, 3]).any()
    assert_exact(ens, booster, X_edges)
    assert_exact(ens, booster, X)


def test_thresholds_stored_exactly_and_float32_rounding_both_ways():
    rng = np.random.default_rng(2)
    X, y = make_data(rng, n=600)
    booster = train({"num_leaves": 31, "min_data_in_leaf": 2}, X, y, rounds=10)
    ens = from_lightgbm(booster)
    nodes = booster.dump_model()["tree_info"]
    up = down = 0
    for t, info in enumerate(nodes):
        stack = [info["tree_structure"]]
        while stack:
            node = stack.pop()
            if "split_index" not in node:
                continue
            g = ens.tree_ptr[t] + node["split_index"]
            thr = float(node["threshold"])
            assert ens.feature[g] == node["split_feature"]
            assert ens.threshold[g] == thr  # bit for bit (no threshold near zero here)
            up += float(np.float32(thr)) > thr
            down += float(np.float32(thr)) < thr
            stack.extend((node["left_child"], node["right_child"]))
    assert up > 0 and down > 0  # both float32 rounding directions occur
    thr = ens.threshold[ens.left >= 0]
    feat = ens.feature[ens.left >= 0]
    rows = []
    for f, t in zip(feat, thr):
        for v in [t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf), *float32_neighbours(t)]:
            row = X[rng.integers(len(X))].copy()
            row[f] = v
            rows.append(row)
    X_edges = np.array(rows)
    assert_exact(ens, booster, X_edges)
    assert_exact(ens, booster, X_edges.astype(np.float32))  # float32 inputs: LightGBM widens


@pytest.mark.parametrize("zero_as_missing", [False, True])
@pytest.mark.parametrize("split_below_zero", [True, False])
def test_thresholds_at_lightgbm_zero_threshold(zero_as_missing, split_below_zero):
    """Splits between negatives and zero get threshold -kZeroThreshold, between zero and
    positives +kZeroThreshold; LightGBM reads |x| <= kZeroThreshold as 0 before routing, so
    x = -kZeroThreshold is 0 (right of -kZeroThreshold) although it equals the threshold."""
    rng = np.random.default_rng(3)
    n = 600
    x = rng.choice([-2.0, -1.0, 0.0, 1.0, 2.0], n)
    X = np.c_[x, rng.normal(size=n)]
    y = ((x < 0) if split_below_zero else (x <= 0)) * 1.0 + 0.01 * X[:, 1]
    booster = train({"num_leaves": 4, "min_data_in_leaf": 2,
                     "zero_as_missing": zero_as_missing}, X, y, rounds=3)
    root = booster.dump_model()["tree_info"][0]["tree_structure"]
    assert root["threshold"] == (-KZT if split_below_zero else KZT)
    ens = from_lightgbm(booster)
    vals = np.array([-KZT, KZT, -1e-35, 1e-35, 0.0, -0.0, 1e-36, -1e-36,
                     np.nextafter(-KZT, -1), np.nextafter(KZT, 1), -1.0, 1.0, np.nan,
                     np.inf, -np.inf])
    X_edges = np.c_[vals, np.zeros_like(vals)]
    assert_exact(ens, booster, X_edges)


def test_zero_as_missing_band():
    """Missing type Zero: LightGBM sends |x| <= float32(1e-35) the default way; the traversal
    kernel tests |x| <= 1e-35. Inputs with 1e-35 < |x| <= 1.0000000180025095e-35 route
    differently at a node whose default direction disagrees with ``x <= threshold`` (here:
    default left at x <= -1.02 below x <= 0.49). No threshold change can fix that node."""
    rng = np.random.default_rng(4)
    n = 600
    x = rng.normal(size=n)
    x[rng.random(n) < 0.3] = 0.0
    X = np.c_[x, rng.normal(size=n)]
    y = ((x < -1) | (x == 0)) * 1.0 + (x > 0.5) * 2.0 + 0.01 * X[:, 1]
    booster = train({"num_leaves": 8, "zero_as_missing": True}, X, y, rounds=3)
    ens = from_lightgbm(booster)
    outside = np.array([1e-35, -1e-35, 0.0, -0.0, 1e-36, np.nextafter(KZT, 1), -0.5, 2.0])
    X_out = np.c_[outside, np.zeros_like(outside)]
    assert_exact(ens, booster, X_out)  # exact outside the band, as everywhere else
    band = np.array([KZT, -KZT, 1.00000001e-35, -1.00000001e-35])
    assert_exact(ens, booster, np.c_[band, np.zeros_like(band)])


def test_split_on_nan_infinite_threshold():
    """A split of NaN against everything else has threshold=inf in the model text; the
    converter turns it into an empty category set (non-NaN left, NaN by default)."""
    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 3))
    X[rng.random(n) < 0.2, 1] = np.nan
    y = np.isnan(X[:, 1]) * 2.0 + X[:, 0]
    booster = train({"num_leaves": 6, "min_data_in_leaf": 2}, X, y, rounds=2)
    assert "threshold=inf" in booster.model_to_string()
    ens = from_lightgbm(booster)
    assert np.all(np.isfinite(ens.threshold))
    vals = np.array([np.nan, np.inf, -np.inf, 1e308, -1e308, 0.0, -0.0, -1.0, 2.5, 1e300])
    X_edges = np.repeat(X[:20], vals.size, axis=0)
    X_edges[:, 1] = np.tile(vals, 20)
    assert_exact(ens, booster, X_edges)
    assert_exact(ens, booster, edge_matrix(booster, X, rng))


# --------------------------------------------------------------------------- categorical
@pytest.mark.parametrize("nan_in_training", [False, True])
def test_categorical_edges(nan_in_training):
    rng = np.random.default_rng(5)
    n = 1500
    X = np.c_[rng.normal(size=n), rng.integers(0, 150, n).astype(float), rng.normal(size=n)]
    y = (X[:, 1] % 2) * 2.0 + X[:, 0] + 0.1 * rng.normal(size=n)
    if nan_in_training:
        X[rng.random(n) < 0.1, 1] = np.nan
    booster = train({"num_leaves": 15, "min_data_in_leaf": 2, "min_data_per_group": 2,
                     "cat_smooth": 1.0, "cat_l2": 0.1, "max_cat_threshold": 100,
                     "max_cat_to_onehot": 1}, X, y, rounds=10, categorical=[1])
    ens = from_lightgbm(booster)
    cat = (ens.left >= 0) & ((ens.flags & NodeFlags.CATEGORICAL) != 0)
    assert cat.any()
    assert ens.cat_nwords[cat].max() >= 2  # category sets beyond 32 categories
    n_members = max(len(thr) for _, thr, _ in lgb_nodes(booster) if isinstance(thr, list))
    assert n_members > 32
    assert np.all(ens.flags[cat] & NodeFlags.CAT_TRUNC_FIRST)
    assert not np.any(ens.flags[cat] & NodeFlags.DEFAULT_LEFT)
    X_edges = edge_matrix(booster, X, rng)
    for v in CAT_EDGES:
        assert (X_edges[:, 1] == v).any() or np.isnan(v)
    assert_exact(ens, booster, X_edges)


# --------------------------------------------------------------------------- tree shapes
def test_one_leaf_trees_and_stumps():
    rng = np.random.default_rng(6)
    X, y = make_data(rng)
    constant = train({"num_leaves": 4}, X, np.full(len(X), 2.5), rounds=3)
    ens = from_lightgbm(constant)  # LightGBM stops after one single-leaf tree
    assert np.all(ens.n_leaves() == 1) and ens.n_nodes == ens.n_trees >= 1
    assert_exact(ens, constant, edge_matrix(constant, X, rng))
    # stumps, with single-leaf trees for the class that has no worthwhile split
    labels = np.where(rng.random(len(X)) < 0.3, 2, (X[:, 0] > 0).astype(int))
    stumps = train({"objective": "multiclass", "num_class": 3, "num_leaves": 4,
                    "min_gain_to_split": 10}, X, labels, rounds=4)
    ens = from_lightgbm(stumps)
    assert set(ens.n_leaves().tolist()) == {1, 2}
    assert_exact(ens, stumps, edge_matrix(stumps, X, rng))


def test_deep_unbalanced_trees():
    rng = np.random.default_rng(7)
    n = 80
    X = np.c_[np.sort(rng.normal(size=n)), rng.normal(size=n)]
    y = 3.0 ** (np.arange(n) - n / 2)  # every split peels off the largest label: a chain
    booster = train({"num_leaves": 60, "max_depth": -1, "min_data_in_leaf": 1,
                     "min_data_in_bin": 1, "min_sum_hessian_in_leaf": 0,
                     "learning_rate": 1.0, "boost_from_average": False}, X, y, rounds=2)
    ens = from_lightgbm(booster)
    assert ens.max_depth() >= 30
    assert_exact(ens, booster, edge_matrix(booster, X, rng))


@pytest.mark.parametrize("num_leaves", [64, 65, 90])
def test_64_and_more_leaves(num_leaves):
    rng = np.random.default_rng(8)
    X, y = make_data(rng, n=3000, nan_frac=0.02)
    booster = train({"num_leaves": num_leaves, "min_data_in_leaf": 2}, X, y, rounds=2)
    ens = from_lightgbm(booster)
    assert ens.n_leaves().max() == num_leaves
    assert_exact(ens, booster, edge_matrix(booster, X, rng))


# --------------------------------------------------------------------------- objectives
def test_multiclass_softmax_and_ova():
    rng = np.random.default_rng(9)
    X, _ = make_data(rng, nan_frac=0.05)
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int) + (np.nan_to_num(X[:, 1]) > 0.3)
    for objective in ("multiclass", "multiclassova"):
        booster = train({"objective": objective, "num_class": 3, "num_leaves": 7}, X, y,
                        rounds=4)
        ens = from_lightgbm(booster)
        assert ens.n_outputs == 3 and ens.n_trees == 12
        assert ens.output_transform == ("softmax" if objective == "multiclass" else "sigmoid")
        assert_exact(ens, booster, edge_matrix(booster, X, rng))
    clf = lgb.LGBMClassifier(n_estimators=4, num_leaves=7, verbose=-1, n_jobs=1).fit(X, y)
    ens = from_lightgbm(clf)
    np.testing.assert_array_equal(ens.predict(X, n_jobs=N_JOBS), clf.predict_proba(X))
    np.testing.assert_array_equal(ens.predict_raw(X, n_jobs=N_JOBS), clf.predict(X, raw_score=True))


@pytest.mark.parametrize("objective,transform", [
    ("poisson", "exp"), ("gamma", "exp"), ("tweedie", "exp"), ("huber", "identity"),
    ("regression_l1", "identity"), ("quantile", "identity"), ("cross_entropy", "sigmoid"),
    ("binary", "sigmoid"),
])
def test_objective_transforms(objective, transform):
    rng = np.random.default_rng(10)
    X, y = make_data(rng, nan_frac=0.05)
    if objective in ("poisson", "gamma", "tweedie"):
        y = np.exp(y / 2)
    elif objective in ("binary", "cross_entropy"):
        y = (y > 0).astype(float)
    params = {"objective": objective, "num_leaves": 7}
    if objective == "binary":
        params["sigmoid"] = 1.7
    booster = train(params, X, y, rounds=4)
    ens = from_lightgbm(booster)
    assert ens.output_transform == transform
    if objective == "binary":
        assert ens.transform_params == {"scale": 1.7}
    assert_exact(ens, booster, edge_matrix(booster, X, rng))


def test_unsupported_transforms_raise():
    rng = np.random.default_rng(11)
    X, y = make_data(rng)
    booster = train({"objective": "regression", "reg_sqrt": True}, X, y, rounds=2)
    with pytest.raises(ValueError, match="sign"):
        from_lightgbm(booster)
    booster = train({"objective": "cross_entropy_lambda"}, X, (y > 0).astype(float), rounds=2)
    with pytest.raises(ValueError, match="log"):
        from_lightgbm(booster)


def test_custom_objective_is_raw():
    rng = np.random.default_rng(12)
    X, y = make_data(rng)

    def l2(preds, data):
        return preds - data.get_label(), np.ones_like(preds)

    booster = train({"objective": l2, "num_leaves": 5}, X, y, rounds=3)
    ens = from_lightgbm(booster)
    assert ens.output_transform == "identity"
    assert_exact(ens, booster, X)


# --------------------------------------------------------------------------- modes
@pytest.mark.parametrize("objective", ["regression", "binary"])
def test_random_forest_mode(objective):
    rng = np.random.default_rng(13)
    X, y = make_data(rng, nan_frac=0.05)
    if objective == "binary":
        y = (y > 0).astype(float)
    booster = train({"objective": objective, "boosting": "rf", "bagging_fraction": 0.6,
                     "bagging_freq": 1, "feature_fraction": 0.8, "num_leaves": 9}, X, y,
                    rounds=6)
    ens = from_lightgbm(booster)
    assert ens.average_output and ens.n_trees == 6
    assert_exact(ens, booster, edge_matrix(booster, X, rng))
    truncated = from_lightgbm(booster, num_iteration=4)
    assert truncated.source["num_iteration"] == 4
    assert_exact(truncated, booster, X, num_iteration=4)


def _ranking_data(rng, n_queries=40, per_query=12):
    n = n_queries * per_query
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    score = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1])
    y = np.clip(np.round(score + 1.5 + 0.3 * rng.normal(size=n)), 0, 4).astype(int)
    group = np.full(n_queries, per_query)
    return X, y, group


def test_lambdarank_ranker_with_group():
    rng = np.random.default_rng(14)
    X, y, group = _ranking_data(rng)
    ranker = lgb.LGBMRanker(n_estimators=8, num_leaves=15, min_child_samples=3, verbose=-1,
                            n_jobs=1).fit(X, y, group=group)
    ens = from_lightgbm(ranker)
    assert ens.output_transform == "identity"
    assert ens.source["objective"].split()[0] == "lambdarank"
    X_edges = edge_matrix(ranker.booster_, X, rng)
    np.testing.assert_array_equal(ens.predict_raw(X_edges, n_jobs=N_JOBS), ranker.predict(X_edges))
    np.testing.assert_array_equal(ens.predict(X_edges, n_jobs=N_JOBS), ranker.predict(X_edges))


def test_early_stopping_entry_points():
    rng = np.random.default_rng(15)
    X, y, group = _ranking_data(rng, n_queries=60)
    Xv, yv, gv = _ranking_data(rng, n_queries=20)
    yv = rng.permutation(yv)  # validation labels unrelated to X: stops early
    stop = [lgb.early_stopping(3, verbose=False)]
    ranker = lgb.LGBMRanker(n_estimators=100, num_leaves=7, verbose=-1, n_jobs=1).fit(
        X, y, group=group, eval_set=[(Xv, yv)], eval_group=[gv], callbacks=stop)
    assert 0 < ranker.best_iteration_ < 100
    ens = from_lightgbm(ranker)
    assert ens.n_trees == ranker.best_iteration_
    np.testing.assert_array_equal(ens.predict_raw(X, n_jobs=N_JOBS), ranker.predict(X))

    yr = np.nan_to_num(X[:, 0]) + 0.1 * rng.normal(size=len(X))
    reg = lgb.LGBMRegressor(n_estimators=200, num_leaves=7, verbose=-1, n_jobs=1).fit(
        X, yr, eval_set=[(Xv, rng.normal(size=len(Xv)))], callbacks=stop)
    ens = from_lightgbm(reg)
    assert ens.n_trees == reg.best_iteration_ < 200
    np.testing.assert_array_equal(ens.predict(X, n_jobs=N_JOBS), reg.predict(X))

    # lightgbm.train keeping every tree: Booster.predict uses best_iteration by default
    booster = lgb.train({**BASE, "num_leaves": 7}, lgb.Dataset(X, yr), 100,
                        valid_sets=[lgb.Dataset(Xv, rng.normal(size=len(Xv)))],
                        callbacks=stop, keep_training_booster=True)
    assert 0 < booster.best_iteration < booster.current_iteration()
    ens = from_lightgbm(booster)
    assert ens.n_trees == booster.best_iteration
    assert_exact(ens, booster, X)
    full = from_lightgbm(booster, num_iteration=0)  # <= 0: all iterations
    assert full.n_trees == booster.current_iteration()
    assert_exact(full, booster, X, num_iteration=-1)
    some = from_lightgbm(booster, num_iteration=2)
    assert some.n_trees == 2
    assert_exact(some, booster, X, num_iteration=2)
    # the model text of the full booster has no best iteration: all trees
    text = booster.model_to_string(num_iteration=-1)
    assert from_lightgbm(text).n_trees == booster.current_iteration()


# --------------------------------------------------------------------------- inputs, errors
def test_model_file_string_and_bytes(tmp_path):
    rng = np.random.default_rng(16)
    X, y = make_data(rng, nan_frac=0.1)
    X[:, 2] = rng.integers(0, 10, len(X))
    booster = train({"num_leaves": 7, "min_data_per_group": 2, "cat_smooth": 1}, X, y,
                    rounds=4, categorical=[2])
    path = tmp_path / "model.txt"
    booster.save_model(path)
    reference = from_lightgbm(booster)
    for model in (path, str(path), booster.model_to_string(),
                  booster.model_to_string().encode()):
        ens = from_lightgbm(model)
        assert ens.equals(reference)
        assert_exact(ens, booster, edge_matrix(booster, X, rng))
    assert reference.feature_names == booster.feature_name()
    assert reference.source["library"] == "lightgbm"
    assert reference.source["version"] == "v4"
    assert reference.source["num_iteration"] == 4
    # a saved and reloaded ensemble stays exact
    reference.save(tmp_path / "ens.json")
    assert TreeEnsemble.load(tmp_path / "ens.json").equals(reference)


def test_text_model_needs_no_lightgbm(tmp_path):
    rng = np.random.default_rng(17)
    X, y = make_data(rng)
    booster = train({"num_leaves": 5}, X, y, rounds=2)
    path = tmp_path / "model.txt"
    booster.save_model(path)
    code = (
        "import sys\n"
        "sys.modules['lightgbm'] = None\n"  # any import of lightgbm now fails
        "import skltr, skltr.convert\n"
        "from skltr.convert._lightgbm import from_lightgbm\n"
        f"ens = from_lightgbm({str(path)!r})\n"
        "assert ens.n_trees == 2\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    out = subprocess.run(
        [sys.executable, "-c", "import sys, skltr, skltr.convert; "
                               "from skltr.convert import _lightgbm; "
                               "print('lightgbm' in sys.modules)"],
        capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_linear_tree_raises():
    rng = np.random.default_rng(18)
    X, y = make_data(rng)
    booster = train({"linear_tree": True, "num_leaves": 5}, X, y, rounds=2)
    with pytest.raises(ValueError, match="linear"):
        from_lightgbm(booster)


def test_bad_inputs():
    with pytest.raises(TypeError, match="from_lightgbm expects"):
        from_lightgbm(42)
    with pytest.raises(ValueError, match="neither"):
        from_lightgbm("/no/such/model.txt")
    with pytest.raises(ValueError, match="end of trees"):
        from_lightgbm("tree\nversion=v4\nmax_feature_idx=1\n\nTree=0\nnum_leaves=1\n")
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        from_lightgbm(lgb.LGBMRegressor())


# --------------------------------------------------------------------------- hypothesis
@settings(deadline=None, max_examples=15)
@given(
    num_leaves=st.integers(2, 70),
    objective=st.sampled_from(["regression", "binary", "lambdarank"]),
    nan_frac=st.sampled_from([0.0, 0.05, 0.3]),
    zero_frac=st.sampled_from([0.0, 0.2]),
    missing=st.sampled_from(["default", "zero_as_missing", "no_missing"]),
    with_categorical=st.booleans(),
    rounds=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_random_models_on_adversarial_inputs(num_leaves, objective, nan_frac, zero_frac,
                                             missing, with_categorical, rounds, seed):
    rng = np.random.default_rng(seed)
    n, per_query = 360, 12
    X, y = make_data(rng, n=n, nan_frac=nan_frac, zero_frac=zero_frac)
    categorical = ()
    if with_categorical:
        X[:, 2] = rng.integers(0, 45, n)
        X[rng.random(n) < nan_frac, 2] = np.nan
        y = y + np.isin(X[:, 2], np.arange(0, 45, 4))
        categorical = (2,)
    group = None
    if objective == "binary":
        y = (y > np.median(y)).astype(float)
    elif objective == "lambdarank":
        y = np.clip(np.round(y - y.min()), 0, 4).astype(int)
        group = np.full(n // per_query, per_query)
    params = {"objective": objective, "num_leaves": num_leaves, "min_data_in_leaf": 2,
              "min_data_per_group": 2, "cat_smooth": 1.0, "max_cat_threshold": 64,
              "seed": seed}
    if missing == "zero_as_missing":
        params["zero_as_missing"] = True
    elif missing == "no_missing":
        params["use_missing"] = False
    booster = train(params, X, y, rounds=rounds, categorical=categorical, group=group)
    ens = from_lightgbm(booster)
    X_edges = edge_matrix(booster, X, rng, n_mixed=100, drop_zero_band=has_zero_nodes(ens))
    assert_exact(ens, booster, X_edges)


def test_source_is_json_serialisable():
    rng = np.random.default_rng(19)
    X, y = make_data(rng)
    ens = from_lightgbm(train({"num_leaves": 4}, X, y, rounds=1))
    json.dumps(ens.source)


def test_quickscorer_backend_agrees():
    """The converted node kinds (folded zero-band thresholds, +inf thresholds as empty
    category sets, LightGBM category sets) go through the QuickScorer backend unchanged."""
    from skltr.ranking._quickscorer_predictor import QuickScorerPredictor

    rng = np.random.default_rng(20)
    n = 600
    X = rng.normal(size=(n, 3))
    X[rng.random(n) < 0.2, 1] = np.nan
    X[rng.random(n) < 0.2, 0] = 0.0
    X[:, 2] = rng.integers(0, 60, n)
    y = np.isnan(X[:, 1]) * 2.0 + X[:, 0] + (X[:, 2] % 3 == 0)
    booster = train({"num_leaves": 40, "min_data_in_leaf": 2, "min_data_per_group": 2,
                     "cat_smooth": 1.0}, X, y, rounds=5, categorical=[2])
    qs = QuickScorerPredictor.from_model(booster, backend="quickscorer", n_jobs=N_JOBS)
    X_edges = edge_matrix(booster, X, rng)
    np.testing.assert_array_equal(qs.predict_raw(X_edges), booster.predict(X_edges,
                                                                            raw_score=True))


# --------------------------------------------------------------------------- issue #11
pd = pytest.importorskip("pandas")


def _all_outputs(model, X):
    """QuickScorerPredictor (both backends) and TreeEnsemble.predict on the same input."""
    from skltr import QuickScorerPredictor

    outs = [QuickScorerPredictor.from_model(model, backend=b, n_jobs=N_JOBS).predict(X)
            for b in ("quickscorer", "traversal")]
    return outs + [from_lightgbm(model).predict(X, n_jobs=N_JOBS)]


def _cat_frame(rng, n, cats):
    col = pd.Categorical(np.asarray(cats, dtype=object)[rng.integers(0, len(cats), n)].tolist(),
                         categories=cats)
    df = pd.DataFrame({"x": rng.normal(size=n), "c": col,
                       "k": pd.Categorical(rng.choice([10, 20, 30, 40], n))})
    codes = df["c"].cat.codes.to_numpy()
    y = np.isin(codes, [1, 3]) + 0.5 * (df["k"].astype(int) == 30) + 0.1 * df["x"]
    return df, y + 0.1 * rng.normal(size=n)


def _fit(df, y, **kw):
    return lgb.LGBMRegressor(n_estimators=6, num_leaves=7, min_child_samples=3,
                             min_data_per_group=3, cat_smooth=1, n_jobs=N_JOBS, verbose=-1,
                             **kw).fit(df, y)


def test_dataframe_categories_recoded_as_lightgbm_does():
    """Issue #11: string categories raised 'could not convert string to float'; integer
    categories were read as their values (up to 0.39 off). LightGBM re-codes the frame's
    category columns to pandas_categorical; unseen categories and NaN read as missing."""
    rng = np.random.default_rng(31)
    cats = ["a", "b", "c", "d", "e"]
    df, y = _cat_frame(rng, 400, cats)
    reg = _fit(df, y)
    ens = from_lightgbm(reg)
    assert ens.frame_rule == "lightgbm"
    assert ens.pandas_categorical == [cats, [10, 20, 30, 40]]
    other = pd.DataFrame({
        "x": rng.normal(size=8),
        "c": pd.Categorical(["e", "a", "zz", None, "b", "d", "c", "a"],
                            categories=["e", "d", "zz", "c", "b", "a"]),
        "k": pd.Categorical([40, 30, 50, 10, 20, None, 30, 10])})
    strings_for_ints = other.assign(k=pd.Categorical(["10", "20", "30", "40", "10", "20",
                                                      "30", "40"]))  # LightGBM: all NaN
    floats_for_ints = other.assign(k=pd.Categorical([10.0, 20.0, 30.0, 40.0] * 2))
    for X in (df, other, strings_for_ints, floats_for_ints):
        for got in _all_outputs(reg, X):
            np.testing.assert_array_equal(got, reg.predict(X))
    codes = np.column_stack([df["x"], df["c"].cat.codes, df["k"].cat.codes]).astype(float)
    for got in _all_outputs(reg, codes):
        np.testing.assert_array_equal(got, reg.predict(codes))
    # a model text round trip keeps the categories
    again = from_lightgbm(reg.booster_.model_to_string())
    np.testing.assert_array_equal(again.predict(other), reg.predict(other))


@pytest.mark.parametrize("case", ["codes instead of category", "string column",
                                  "renamed", "empty"])
def test_dataframes_refused(case):
    rng = np.random.default_rng(32)
    df, y = _cat_frame(rng, 300, ["a", "b", "c", "d"])
    reg = _fit(df, y)
    X = df.iloc[:5].copy()
    if case == "codes instead of category":  # LightGBM refuses: category count differs
        X["c"] = X["c"].cat.codes.astype(float)
    elif case == "string column":
        X["c"] = X["c"].astype(str)
    elif case == "renamed":  # LightGBM would predict; skltr refuses, as scikit-learn does
        X = X.rename(columns={"x": "x2"})
    else:
        X = X.iloc[:0]
    if case != "renamed":
        with pytest.raises(ValueError):
            reg.predict(X)
    from skltr import QuickScorerPredictor

    for backend in ("quickscorer", "traversal"):
        with pytest.raises(ValueError):
            QuickScorerPredictor.from_model(reg, backend=backend).predict(X)
    with pytest.raises(ValueError):
        from_lightgbm(reg).predict(X)


def test_dataframe_int64_columns_read_as_float64_unlike_arrays():
    """LightGBM converts a DataFrame to np.result_type(*dtypes, float32): an int64 column
    reads as float64, where an int64 array reads as float32 (LightGBM's array rule)."""
    rng = np.random.default_rng(33)
    n = 500
    a = 2**24 + rng.integers(-20, 21, n)
    b = 2**53 - 2**30 + rng.integers(-20, 21, n) * 2**28
    y = (a % 2 == 1) + (b > 2**53 - 2**30) + 0.01 * rng.normal(size=n)
    df = pd.DataFrame({"a": a.astype(np.int64), "b": b.astype(np.int64)})
    reg = _fit(df, y, max_bin=1023)
    frame_pred = reg.predict(df)
    array_pred = reg.predict(df.to_numpy())
    assert np.any(frame_pred != array_pred)  # the two rules really differ here
    for X in (df, df.to_numpy(), df.astype({"a": "uint64"}), df.astype({"b": "Int64"}),
              df.astype({"a": np.int16}).assign(a=np.int16(7))):
        for got in _all_outputs(reg, X):
            np.testing.assert_array_equal(got, reg.predict(X))


def test_dataframe_names_with_spaces_and_array_fitted_models():
    """LightGBM stores 'my col' as 'my_col'; a model fitted on an array (names Column_i)
    takes a DataFrame with any names."""
    rng = np.random.default_rng(34)
    X = rng.normal(size=(300, 2))
    y = X[:, 0] + rng.normal(size=300) * 0.1
    spaced = pd.DataFrame({"my col": X[:, 0], "b": X[:, 1]})
    reg = _fit(spaced, y)
    assert from_lightgbm(reg).feature_names == ["my_col", "b"]
    for got in _all_outputs(reg, spaced):
        np.testing.assert_array_equal(got, reg.predict(spaced))
    plain = _fit(X, y)
    frame = pd.DataFrame({"anything": X[:, 0], "else": X[:, 1]})
    for got in _all_outputs(plain, frame):
        np.testing.assert_array_equal(got, plain.predict(frame))
