"""from_xgboost: converted ensembles reproduce XGBoost's CPU predictions bit for bit.

Every comparison is ``np.testing.assert_array_equal`` on float32 outputs: the raw scores against
``Booster.predict(DMatrix(X, missing=...), output_margin=True)`` and the transformed outputs
against ``predict``. Inputs sit on the edges listed in FORMATS.md: thresholds and their float32
and float64 neighbours, NaN, ±inf, a ``missing=`` sentinel, invalid categories.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

xgb = pytest.importorskip("xgboost")
_XGB_VERSION = tuple(int(p) for p in xgb.__version__.split(".")[:2])
pd = pytest.importorskip("pandas")

from skltr.convert._xgboost import from_xgboost  # noqa: E402
from skltr.trees import NodeFlags, TreeEnsemble  # noqa: E402

NTHREAD = 2
CAT_EDGES = [np.nan, -1.0, -0.5, -0.0, 3.7, 500.0, 2.0**24, 2.0**24 + 2, 2.0**31 + 5, 1e10,
             np.inf, -np.inf]


# --------------------------------------------------------------------------- helpers
def xgb_margin(booster, X, *, missing=np.nan, iteration_range=(0, 0)):
    """XGBoost's CPU margins. DMatrix refuses ±inf, so rows holding one go through
    ``inplace_predict`` (the same CPU predictor, ±inf as ordinary values)."""
    X = np.asarray(X, dtype=np.float64)
    ft = booster.feature_types
    cat = ft is not None and "c" in ft
    finite = ~np.isinf(X).any(axis=1)
    out = None
    if finite.any():
        dm = xgb.DMatrix(X[finite], missing=missing, feature_types=ft, enable_categorical=cat)
        part = booster.predict(dm, output_margin=True, iteration_range=iteration_range)
        out = np.empty((X.shape[0],) + part.shape[1:], dtype=part.dtype)
        out[finite] = part
    if (~finite).any():
        part = booster.inplace_predict(X[~finite], predict_type="margin", missing=missing,
                                       iteration_range=iteration_range)
        if out is None:
            out = np.empty((X.shape[0],) + part.shape[1:], dtype=part.dtype)
        out[~finite] = part
    return out


def model_json(booster) -> dict:
    return json.loads(bytes(booster.save_raw("json")).decode())


def booster_from_json(doc) -> "xgb.Booster":
    b = xgb.Booster()
    b.load_model(bytearray(json.dumps(doc).encode()))
    b.set_param({"nthread": NTHREAD})
    return b


def trees_of(doc):
    gb = doc["learner"]["gradient_booster"]
    return (gb["gbtree"] if gb["name"] == "dart" else gb)["model"]["trees"]


def numeric_splits(doc):
    """(feature, float32 threshold) of every numerical split, read from XGBoost's JSON."""
    out = set()
    for tree in trees_of(doc):
        for lc, f, c, st_ in zip(tree["left_children"], tree["split_indices"],
                                 tree["split_conditions"], tree["split_type"]):
            if lc != -1 and st_ == 0:
                out.add((int(f), float(np.float32(c))))
    return sorted(out)


def edge_values(thr: float):
    """A float32 threshold, its float32 neighbours, float64 values around it (just below
    rounds onto it: XGBoost routes it right), and the float32 midpoints below and above."""
    t32 = np.float32(thr)
    down32 = np.nextafter(t32, np.float32(-np.inf))
    up32 = np.nextafter(t32, np.float32(np.inf))
    t = float(t32)
    return [t, float(down32), float(up32), np.nextafter(t, -np.inf), np.nextafter(t, np.inf),
            (t + float(down32)) / 2, (t + float(up32)) / 2,
            np.nextafter((t + float(down32)) / 2, np.inf)]


def adversarial_rows(doc, base, rng, *, max_splits=200, extra=(np.nan, np.inf, -np.inf)):
    """Rows of ``base`` with one column set to a threshold edge (or NaN, ±inf)."""
    rows = []
    splits = numeric_splits(doc)
    if len(splits) > max_splits:
        splits = [splits[i] for i in rng.choice(len(splits), max_splits, replace=False)]
    for f, thr in splits:
        for v in edge_values(thr):
            r = base[rng.integers(len(base))].copy()
            r[f] = v
            rows.append(r)
    for f in range(base.shape[1]):
        for v in extra:
            r = base[rng.integers(len(base))].copy()
            r[f] = v
            rows.append(r)
    return np.vstack([base, np.asarray(rows)]) if rows else base


def assert_margin_equal(ens, booster, X, **kw):
    np.testing.assert_array_equal(ens.predict_raw(X), xgb_margin(booster, X, **kw))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    X[:, 3] = np.round(X[:, 3], 1)  # repeated values: thresholds that sit on data
    X[rng.random(X.shape) < 0.15] = np.nan
    Xz = np.nan_to_num(X)
    y = 2 * Xz[:, 0] - Xz[:, 1] + np.sin(3 * Xz[:, 2]) + 0.3 * rng.normal(size=400)
    return X, y


# --------------------------------------------------------------------------- numerical routing
def test_numeric_edges_nan_inf_default_directions(data):
    X, y = data
    rng = np.random.default_rng(1)
    reg = xgb.XGBRegressor(n_estimators=12, max_depth=5, n_jobs=NTHREAD).fit(X, y)
    booster = reg.get_booster()
    ens = from_xgboost(reg)
    doc = model_json(booster)
    dl = np.concatenate([t["default_left"] for t in trees_of(doc)])
    internal = np.concatenate([t["left_children"] for t in trees_of(doc)]) != -1
    assert set(dl[internal]) == {0, 1}  # both default directions are exercised
    assert ens.decision == "<" and ens.precision == "float32" and ens.sum_dtype == "float32"
    numeric = ~ens.is_leaf
    assert np.all(NodeFlags.missing_type(ens.flags[numeric]) == NodeFlags.MISSING_NAN)
    assert np.all(ens.threshold == ens.threshold.astype(np.float32))

    Xa = adversarial_rows(doc, X, rng)
    assert np.isinf(Xa).any() and np.isnan(Xa).any()
    assert_margin_equal(ens, booster, Xa)
    finite = ~np.isinf(Xa).any(axis=1)
    np.testing.assert_array_equal(ens.predict(Xa[finite]), reg.predict(Xa[finite]))
    # float32 inputs route the same as the float64 values they came from
    X32 = Xa.astype(np.float32)
    np.testing.assert_array_equal(ens.predict_raw(X32), xgb_margin(booster, X32))


def test_float64_just_below_threshold_goes_right():
    # One stump on feature 0 with a threshold that is a float32 value.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 1))
    y = (X[:, 0] > 0.1).astype(float)
    b = xgb.train({"max_depth": 1, "nthread": NTHREAD, "base_score": 0.5}, xgb.DMatrix(X, y), 1)
    ens = from_xgboost(b)
    thr = ens.threshold[0]
    below64 = np.nextafter(thr, -np.inf)  # float64 below the threshold, float32 equal to it
    assert np.float32(below64) == np.float32(thr) and below64 < thr
    below32 = float(np.nextafter(np.float32(thr), np.float32(-np.inf)))
    Xe = np.array([[thr], [below64], [below32], [np.nextafter(np.float32(thr), np.inf)]])
    raw = ens.predict_raw(Xe)
    np.testing.assert_array_equal(raw, xgb_margin(b, Xe))
    assert raw[0] == raw[1] == raw[3] != raw[2]  # equal goes right; below64 rounds onto thr


def test_missing_sentinel_regressor():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    X[rng.random(X.shape) < 0.2] = -999.0
    y = np.where(X[:, 0] == -999.0, 3.0, X[:, 0]) + X[:, 1]
    reg = xgb.XGBRegressor(n_estimators=8, max_depth=4, missing=-999.0, n_jobs=NTHREAD)
    reg.fit(X, y)
    ens = from_xgboost(reg)
    assert ens.missing_value == -999.0
    Xt = X[:60].copy()
    Xt[:10, 0] = -999.0
    Xt[10:20, 0] = np.nan  # NaN is missing as well
    Xt[20:30, 0] = -999.00001  # rounds to float32 -999: missing for XGBoost too
    Xt[30:40, 0] = float(np.nextafter(np.float32(-999.0), np.float32(0)))  # not missing
    Xt = adversarial_rows(model_json(reg.get_booster()), Xt, rng)
    raw = ens.predict_raw(Xt)
    np.testing.assert_array_equal(raw, xgb_margin(reg.get_booster(), Xt, missing=-999.0))
    finite_or_nan = ~np.isinf(Xt).any(axis=1)
    np.testing.assert_array_equal(raw[finite_or_nan], reg.predict(Xt[finite_or_nan]))
    # A Booster carries no sentinel: -999 is an ordinary value there.
    assert np.isnan(from_xgboost(reg.get_booster()).missing_value)


# --------------------------------------------------------------------------- transforms
def test_binary_logistic_probabilities(data):
    X, y = data
    rng = np.random.default_rng(4)
    clf = xgb.XGBClassifier(n_estimators=15, max_depth=4, n_jobs=NTHREAD, learning_rate=0.5)
    clf.fit(X, (y > 0.5).astype(int))
    ens = from_xgboost(clf)
    assert ens.output_transform == "xgb_sigmoid"
    Xa = adversarial_rows(model_json(clf.get_booster()), X, rng, extra=(np.nan,))
    assert_margin_equal(ens, clf.get_booster(), Xa)
    proba = ens.predict(Xa)
    assert proba.dtype == np.float32
    np.testing.assert_array_equal(proba, clf.predict_proba(Xa)[:, 1])


def caterpillar_tree(leaf_values):
    """XGBoost JSON of one tree whose leaf k is reached by x0 = k: internal node j (index 2j)
    splits on x0 < j + 0.5, its left child (2j + 1) is leaf j. Feeds chosen margins through
    XGBoost's own predict."""
    m = len(leaf_values)
    n = 2 * m - 1
    left, right, parents = [-1] * n, [-1] * n, [2147483647] * n
    cond, feat = [0.0] * n, [0] * n
    for j in range(m - 1):
        left[2 * j], right[2 * j] = 2 * j + 1, 2 * j + 2
        parents[2 * j + 1] = parents[2 * j + 2] = 2 * j
        cond[2 * j] = j + 0.5
        cond[2 * j + 1] = float(np.float32(leaf_values[j]))
    cond[n - 1] = float(np.float32(leaf_values[m - 1]))
    return {"base_weights": [0.0] * n, "categories": [], "categories_nodes": [],
            "categories_segments": [], "categories_sizes": [], "default_left": [0] * n,
            "id": 0, "left_children": left, "right_children": right, "parents": parents,
            "loss_changes": [0.0] * n, "split_conditions": cond, "split_indices": feat,
            "split_type": [0] * n, "sum_hessian": [1.0] * n,
            "tree_param": {"num_deleted": "0", "num_feature": "2", "num_nodes": str(n),
                           "size_leaf_vector": "1"}}


def crafted_model(objective, leaf_values_per_class, base_score):
    """A one-round model (one caterpillar tree per class) trained briefly, then rewritten."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 2))
    k = len(leaf_values_per_class)
    params = {"objective": objective, "max_depth": 1, "nthread": NTHREAD}
    if k > 1:
        params["num_class"] = k
    y = (X[:, 0] > 0).astype(float)  # valid labels for every objective used here
    if k > 1:
        y = rng.integers(0, k, 60)
    elif "logistic" not in objective:
        y = y + 1.0
    doc = model_json(xgb.train(params, xgb.DMatrix(X, y), 1))
    trees = []
    for c, values in enumerate(leaf_values_per_class):
        tree = caterpillar_tree(values)
        tree["id"] = c
        trees.append(tree)
    model = doc["learner"]["gradient_booster"]["model"]
    model["trees"] = trees
    model["gbtree_model_param"]["num_trees"] = str(len(trees))
    doc["learner"]["learner_model_param"]["base_score"] = base_score
    return doc


MARGINS = np.concatenate([
    np.random.default_rng(5).normal(scale=3, size=150),
    np.random.default_rng(6).normal(scale=30, size=50),
    [0.0, -0.0, 1e-8, -1e-8, 15.9, 16.1, -16.6, 87.0, 88.3, 88.7, 88.71, 88.8, 89.0, 100.0,
     -87.0, -88.7, -88.71, -88.8, -89.0, -103.0, -104.0, -200.0]])


@pytest.mark.parametrize("objective,base_score,transform", [
    ("binary:logistic", "[5E-1]", "xgb_sigmoid"),  # base margin 0
    ("reg:logistic", "[2.5E-1]", "xgb_sigmoid"),
    ("count:poisson", "[1E0]", "xgb_exp"),  # base margin logf(1) = 0
    ("reg:gamma", "[3E0]", "xgb_exp"),
    ("reg:tweedie", "[1E0]", "xgb_exp"),
])
def test_scalar_transforms_to_the_last_ulp(objective, base_score, transform):
    # Margins over the whole float32 range of interest, including the sigmoid's 88.7 cap and
    # expf overflow, through XGBoost's own predict.
    doc = crafted_model(objective, [MARGINS], base_score)
    b = booster_from_json(doc)
    ens = from_xgboost(doc)
    assert ens.output_transform == transform
    X = np.column_stack([np.arange(MARGINS.size, dtype=float), np.zeros(MARGINS.size)])
    np.testing.assert_array_equal(ens.predict_raw(X), xgb_margin(b, X))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(ens.predict(X), b.predict(xgb.DMatrix(X)))


def test_softmax_transform_extreme_margins():
    # Per-class margins far apart, equal, huge: through XGBoost's own softmax.
    rng = np.random.default_rng(7)
    triples = [rng.normal(scale=s, size=3) for s in (0.1, 1, 10, 50) for _ in range(40)]
    triples += [[0, 0, 0], [100, -100, 0], [88, 89, 90], [-200, -201, -150], [1e-7, 0, -1e-7],
                [1e30, 1e30, -1e30]]
    per_class = np.asarray(triples, dtype=float).T
    doc = crafted_model("multi:softprob", list(per_class), "[1E-1,-2E-1,3E-1]")
    b = booster_from_json(doc)
    ens = from_xgboost(doc)
    X = np.column_stack([np.arange(len(triples), dtype=float), np.zeros(len(triples))])
    np.testing.assert_array_equal(ens.predict_raw(X), xgb_margin(b, X))
    np.testing.assert_array_equal(ens.predict(X), b.predict(xgb.DMatrix(X)))


def test_multiclass_softprob_and_softmax(data):
    X, y = data
    rng = np.random.default_rng(6)
    labels = np.digitize(y, np.quantile(y, [0.1, 0.5, 0.6]))  # unbalanced: distinct bases
    clf = xgb.XGBClassifier(n_estimators=6, max_depth=3, n_jobs=NTHREAD).fit(X, labels)
    ens = from_xgboost(clf)
    assert ens.n_outputs == 4 and ens.output_transform == "xgb_softmax"
    base = np.asarray(json.loads(model_json(clf.get_booster())["learner"]["learner_model_param"]
                                 ["base_score"]), dtype=np.float32)
    assert base.size == 4 and len(set(base.tolist())) > 1  # a per-class base score
    np.testing.assert_array_equal(ens.base_score.astype(np.float32), base)
    np.testing.assert_array_equal(ens.tree_output, np.tile(np.arange(4), 6))
    Xa = adversarial_rows(model_json(clf.get_booster()), X, rng, extra=(np.nan,))
    assert_margin_equal(ens, clf.get_booster(), Xa)
    np.testing.assert_array_equal(ens.predict(Xa), clf.predict_proba(Xa))

    b = xgb.train({"objective": "multi:softmax", "num_class": 4, "max_depth": 3,
                   "nthread": NTHREAD}, xgb.DMatrix(X, labels), 5)
    ens = from_xgboost(b)
    assert ens.source["predict"] == "argmax"
    raw = ens.predict_raw(Xa)
    np.testing.assert_array_equal(raw, xgb_margin(b, Xa))
    np.testing.assert_array_equal(np.argmax(raw, axis=1), b.predict(xgb.DMatrix(Xa)))


@pytest.mark.parametrize("objective,params,label", [
    ("binary:logistic", {}, "binary"),
    ("binary:logistic", {"base_score": 0.3}, "binary"),
    ("reg:logistic", {}, "binary"),
    ("binary:logitraw", {}, "binary"),
    ("binary:hinge", {}, "binary"),
    ("count:poisson", {}, "count"),
    ("count:poisson", {"base_score": 2.5}, "count"),
    ("reg:gamma", {}, "positive"),
    ("reg:tweedie", {}, "count"),
    ("survival:cox", {}, "cox"),
    ("survival:aft", {}, "aft"),
    ("reg:squarederror", {}, "real"),
    ("reg:linear", {}, "real"),
    ("reg:squaredlogerror", {}, "positive"),
    ("reg:absoluteerror", {}, "real"),
    ("reg:pseudohubererror", {}, "real"),
    ("reg:quantileerror", {"quantile_alpha": 0.3}, "real"),
    ("multi:softprob", {"num_class": 3}, "class"),
    ("rank:pairwise", {}, "rank"),
    ("rank:ndcg", {}, "rank"),
])
@pytest.mark.filterwarnings("ignore:.*deprecated.*:UserWarning")
def test_base_margin_matches_zeroed_leaves(objective, params, label):
    # FORMATS.md's check: zero every leaf in a copy of the JSON and predict: the margin XGBoost
    # returns is its base margin, which the converter computed from base_score alone.
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 3))
    z = X[:, 0] + 0.5 * rng.normal(size=300)
    y = {"binary": (z > 0.4).astype(float), "count": rng.poisson(np.exp(0.5 * z)),
         "positive": np.exp(0.5 * z), "cox": np.where(z > 1, -1, 1) * np.exp(0.3 * z),
         "real": z, "class": np.digitize(z, [-0.5, 0.5]), "rank": np.digitize(z, [0, 1]),
         "aft": None}[label]
    dm = xgb.DMatrix(X, y, qid=np.repeat(np.arange(30), 10) if label == "rank" else None)
    if label == "aft":  # interval-censored survival times, some right-censored
        dm = xgb.DMatrix(X)
        lower = np.exp(0.5 * z)
        dm.set_float_info("label_lower_bound", lower)
        dm.set_float_info("label_upper_bound", np.where(z > 1, np.inf, lower))
    b = xgb.train({"objective": objective, "max_depth": 3, "nthread": NTHREAD, **params}, dm, 3)
    ens = from_xgboost(b)
    doc = model_json(b)
    for tree in trees_of(doc):
        tree["split_conditions"] = [0.0 if lc == -1 else c for lc, c in
                                    zip(tree["left_children"], tree["split_conditions"])]
    zeroed = xgb_margin(booster_from_json(doc), X[:2])
    np.testing.assert_array_equal(np.broadcast_to(ens.base_score.astype(np.float32),
                                                  zeroed.shape), zeroed)
    assert_margin_equal(ens, b, X)
    if objective != "binary:hinge":  # hinge's predict returns labels (source["predict"])
        np.testing.assert_array_equal(ens.predict(X), b.predict(xgb.DMatrix(X)))
    else:
        assert ens.source["predict"] == "margin>0"
        np.testing.assert_array_equal((ens.predict_raw(X) > 0).astype(np.float32),
                                      b.predict(xgb.DMatrix(X)))


# --------------------------------------------------------------------------- categorical
def _cat_data(rng, n=800, n_cat=45):
    x0 = rng.normal(size=n)
    codes = rng.integers(0, n_cat, n)
    effect = rng.normal(size=n_cat)
    y = x0 + 2 * effect[codes] + 0.1 * rng.normal(size=n)
    return x0, codes, y


@pytest.mark.parametrize("onehot", [False, True])
def test_categorical_numeric_coded(onehot):
    rng = np.random.default_rng(9)
    x0, codes, y = _cat_data(rng)
    X = np.column_stack([x0, codes.astype(float)])
    X[rng.random(len(X)) < 0.1, 1] = np.nan
    dm = xgb.DMatrix(X, y, feature_types=["q", "c"], enable_categorical=True)
    params = {"max_depth": 4, "nthread": NTHREAD, "tree_method": "hist",
              "max_cat_to_onehot": 64 if onehot else 1}
    b = xgb.train(params, dm, 6)
    ens = from_xgboost(b)
    cat = (ens.flags & NodeFlags.CATEGORICAL) != 0
    assert cat.any()
    assert np.all(ens.flags[cat] & NodeFlags.CAT_SET_RIGHT)
    if not onehot:
        assert ens.cat_nwords.max() >= 2  # sets reaching past category 32
    assert ens.source["feature_types"] == ["q", "c"]
    values = np.array(list(range(50)) + CAT_EDGES, dtype=float)
    Xt = np.column_stack([rng.choice(x0, values.size), values])
    Xt = np.vstack([Xt, np.column_stack([np.full(values.size, np.nan), values]), X[:100]])
    assert_margin_equal(ens, b, Xt)


def test_categorical_pandas_with_names():
    rng = np.random.default_rng(10)
    x0, codes, y = _cat_data(rng, n_cat=40)
    names = np.array([f"c{i:02d}" for i in range(40)])
    col = pd.Categorical(names[codes], categories=names)
    col[rng.random(len(col)) < 0.1] = np.nan
    df = pd.DataFrame({"num": x0, "colour": col})
    reg = xgb.XGBRegressor(n_estimators=6, max_depth=4, enable_categorical=True,
                           tree_method="hist", max_cat_to_onehot=1, n_jobs=NTHREAD).fit(df, y)
    ens = from_xgboost(reg)
    assert ens.feature_names == ["num", "colour"]
    assert ens.categories == [None, {"type": "str", "values": list(names)}]
    assert ens.frame_rule == "xgboost"
    assert ens.cat_nwords.max() >= 2
    codes_f = df["colour"].cat.codes.to_numpy().astype(float)
    codes_f[codes_f < 0] = np.nan
    Xn = np.column_stack([df["num"].to_numpy(), codes_f])
    np.testing.assert_array_equal(ens.predict_raw(Xn), reg.predict(df))
    np.testing.assert_array_equal(
        ens.predict_raw(Xn), reg.get_booster().predict(xgb.DMatrix(df, enable_categorical=True),
                                                       output_margin=True))
    # the DataFrame itself, and one whose categories are listed in another order
    np.testing.assert_array_equal(ens.predict_raw(df), reg.predict(df))
    shuffled = df.assign(colour=df["colour"].cat.reorder_categories(names[::-1]))
    np.testing.assert_array_equal(ens.predict_raw(shuffled), reg.predict(shuffled))


# --------------------------------------------------------------------------- tree shapes, boosters
def test_one_leaf_trees_and_stumps(data):
    X, y = data
    one = xgb.train({"max_depth": 3, "min_child_weight": 1e9, "nthread": NTHREAD},
                    xgb.DMatrix(X, y), 3)
    ens = from_xgboost(one)
    assert np.all(ens.n_leaves() == 1)
    assert_margin_equal(ens, one, X)
    stumps = xgb.XGBRegressor(n_estimators=10, max_depth=1, n_jobs=NTHREAD).fit(X, y)
    ens = from_xgboost(stumps)
    assert np.all(ens.n_leaves() == 2)
    assert_margin_equal(ens, stumps.get_booster(), adversarial_rows(
        model_json(stumps.get_booster()), X, np.random.default_rng(11)))


def test_random_forest_sums_parallel_trees(data):
    X, y = data
    rf = xgb.XGBRFRegressor(n_estimators=5, max_depth=4, n_jobs=NTHREAD).fit(X, y)
    ens = from_xgboost(rf)
    assert ens.n_trees == 5 and not ens.average_output
    assert ens.source["num_parallel_tree"] == 5
    np.testing.assert_array_equal(ens.predict_raw(X), rf.predict(X))
    # Boosted forests, multiclass: rounds of num_class * num_parallel_tree trees.
    labels = np.digitize(y, [-1, 1])
    b = xgb.train({"objective": "multi:softprob", "num_class": 3, "num_parallel_tree": 3,
                   "subsample": 0.7, "colsample_bynode": 0.8, "max_depth": 3,
                   "nthread": NTHREAD}, xgb.DMatrix(X, labels), 4)
    ens = from_xgboost(b)
    assert ens.n_trees == 36
    assert_margin_equal(ens, b, X)
    for rng_ in [(1, 3), (0, 1), (2, 0), (3, 4)]:
        part = from_xgboost(b, iteration_range=rng_)
        assert_margin_equal(part, b, X, iteration_range=rng_)
        np.testing.assert_array_equal(part.predict(X),
                                      b.predict(xgb.DMatrix(X), iteration_range=rng_))
    with pytest.raises(ValueError, match="iteration_range"):
        from_xgboost(b, iteration_range=(0, 5))
    with pytest.raises(ValueError, match="iteration_range"):
        from_xgboost(b, iteration_range=(2, 2))


def test_dart_tree_weights(data):
    X, y = data
    b = xgb.train({"booster": "dart", "rate_drop": 0.4, "skip_drop": 0.0, "max_depth": 4,
                   "nthread": NTHREAD, "seed": 3}, xgb.DMatrix(X, y), 10)
    ens = from_xgboost(b)
    assert ens.source["booster"] == "dart"
    assert np.any(ens.tree_weight != 1.0)
    assert_margin_equal(ens, b, adversarial_rows(model_json(b), X, np.random.default_rng(12)))
    clf = xgb.XGBClassifier(booster="dart", rate_drop=0.3, skip_drop=0.0, n_estimators=8,
                            max_depth=3, n_jobs=NTHREAD).fit(X, (y > 0).astype(int))
    ens = from_xgboost(clf)
    np.testing.assert_array_equal(ens.predict(X), clf.predict_proba(X)[:, 1])


def _ranking_data(rng, n_q=40, per_q=12):
    qid = np.repeat(np.arange(n_q), per_q)
    X = rng.normal(size=(n_q * per_q, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    rel = np.clip(np.round(np.nan_to_num(X[:, 0]) + 0.7 * rng.normal(size=len(X)) + 1), 0, 4)
    return X, rel, qid


def test_ranker_ndcg_with_qid():
    rng = np.random.default_rng(13)
    X, rel, qid = _ranking_data(rng)
    rk = xgb.XGBRanker(objective="rank:ndcg", n_estimators=10, max_depth=4, n_jobs=NTHREAD)
    rk.fit(X, rel, qid=qid)
    ens = from_xgboost(rk)
    assert ens.output_transform == "identity" and ens.source["objective"] == "rank:ndcg"
    Xa = adversarial_rows(model_json(rk.get_booster()), X, rng)
    assert_margin_equal(ens, rk.get_booster(), Xa)
    finite = ~np.isinf(Xa).any(axis=1)
    np.testing.assert_array_equal(ens.predict(Xa[finite]), rk.predict(Xa[finite]))


def test_early_stopping_regressor_and_ranker(data):
    X, y = data
    rng = np.random.default_rng(14)
    Xv = rng.normal(size=(150, 5))
    yv = 2 * Xv[:, 0] + rng.normal(size=150) * 3
    reg = xgb.XGBRegressor(n_estimators=300, learning_rate=0.3, max_depth=5,
                           early_stopping_rounds=5, n_jobs=NTHREAD)
    reg.fit(X, y, eval_set=[(Xv, yv)], verbose=False)
    booster = reg.get_booster()
    assert 0 < reg.best_iteration < booster.num_boosted_rounds() - 1
    ens = from_xgboost(reg)
    assert ens.n_trees == reg.best_iteration + 1
    np.testing.assert_array_equal(ens.predict_raw(X), reg.predict(X))
    full = from_xgboost(booster)  # a Booster predicts with every tree
    assert full.n_trees == booster.num_boosted_rounds()
    assert_margin_equal(full, booster, X)

    Xr, rel, qid = _ranking_data(rng)
    Xrv, relv, qidv = _ranking_data(rng, n_q=15)
    relv = rng.permutation(relv)  # noisy validation: stops early
    rk = xgb.XGBRanker(objective="rank:ndcg", n_estimators=200, learning_rate=0.5,
                       max_depth=5, early_stopping_rounds=3, n_jobs=NTHREAD)
    rk.fit(Xr, rel, qid=qid, eval_set=[(Xrv, relv)], eval_qid=[qidv], verbose=False)
    assert rk.best_iteration + 1 < rk.get_booster().num_boosted_rounds()
    ens = from_xgboost(rk)
    assert ens.n_trees == rk.best_iteration + 1
    np.testing.assert_array_equal(ens.predict_raw(Xr), rk.predict(Xr))
    # an explicit range overrides best_iteration, as in predict(iteration_range=...)
    ens2 = from_xgboost(rk, iteration_range=(0, 2))
    np.testing.assert_array_equal(ens2.predict_raw(Xr), rk.predict(Xr, iteration_range=(0, 2)))


def test_multi_target_one_output_per_tree(data):
    X, y = data
    Y = np.column_stack([y, -y + np.nan_to_num(X[:, 2])])
    reg = xgb.XGBRegressor(n_estimators=4, max_depth=3, n_jobs=NTHREAD).fit(X, Y)
    ens = from_xgboost(reg)
    assert ens.n_outputs == 2
    np.testing.assert_array_equal(ens.predict_raw(X), reg.predict(X))


@pytest.mark.filterwarnings("ignore:.*updater.*:UserWarning")
def test_pruned_trees_with_deleted_nodes(data):
    X, y = data
    dm = xgb.DMatrix(X, y)
    b = xgb.train({"max_depth": 6, "nthread": NTHREAD}, dm, 3)
    pruned = xgb.train({"process_type": "update", "updater": "prune", "gamma": 20.0,
                        "max_depth": 6, "nthread": NTHREAD}, dm, 3, xgb_model=b)
    assert any(int(t["tree_param"]["num_deleted"]) > 0 for t in trees_of(model_json(pruned)))
    assert_margin_equal(from_xgboost(pruned), pruned, X)


# --------------------------------------------------------------------------- inputs and files
def test_files_bytes_dict_without_xgboost(data, tmp_path, monkeypatch):
    X, y = data
    reg = xgb.XGBRegressor(n_estimators=5, max_depth=3, n_jobs=NTHREAD).fit(
        pd.DataFrame(X, columns=list("abcde")), y)
    booster = reg.get_booster()
    ref = from_xgboost(booster)
    assert ref.feature_names == list("abcde")
    assert ref.source["library"] == "xgboost" and ref.source["version"] == xgb.__version__
    assert ref.source["objective"] == "reg:squarederror"
    booster.save_model(tmp_path / "m.json")
    booster.save_model(tmp_path / "m.ubj")
    raw_ubj = bytes(booster.save_raw())  # UBJSON by default
    raw_json = bytes(booster.save_raw("json"))
    doc = json.loads(raw_json)
    monkeypatch.setitem(sys.modules, "xgboost", None)  # any import of xgboost now fails
    for src in (tmp_path / "m.json", str(tmp_path / "m.ubj"), raw_ubj, raw_json, doc):
        ens = from_xgboost(src)
        assert ens.equals(ref), type(src)
    np.testing.assert_array_equal(from_xgboost(tmp_path / "m.ubj").predict_raw(X),
                                  ref.predict_raw(X))


def test_import_skltr_does_not_import_xgboost():
    code = ("import sys, skltr, skltr.convert, skltr.convert._xgboost; "
            "assert 'xgboost' not in sys.modules, 'xgboost imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_roundtrip_through_skltr_document(data, tmp_path):
    X, y = data
    clf = xgb.XGBClassifier(n_estimators=4, max_depth=3, n_jobs=NTHREAD, missing=-1.5)
    clf.fit(X, (y > 0).astype(int))
    ens = from_xgboost(clf)
    ens.save(tmp_path / "e.json")
    back = TreeEnsemble.load(tmp_path / "e.json")
    assert back.equals(ens) and back.missing_value == -1.5
    np.testing.assert_array_equal(back.predict(X), ens.predict(X))


# --------------------------------------------------------------------------- rejections
def test_rejects_gblinear_multi_output_and_unknown(data):
    X, y = data
    lin = xgb.XGBRegressor(booster="gblinear", n_estimators=3, n_jobs=NTHREAD).fit(
        np.nan_to_num(X), y)
    with pytest.raises(ValueError, match="gblinear"):
        from_xgboost(lin)
    Y = np.column_stack([y, -y])
    mo = xgb.XGBRegressor(n_estimators=3, max_depth=3, tree_method="hist",
                          multi_strategy="multi_output_tree", n_jobs=NTHREAD).fit(X, Y)
    with pytest.raises(ValueError, match="multi_output_tree"):
        from_xgboost(mo)
    doc = model_json(xgb.train({"max_depth": 2, "nthread": NTHREAD}, xgb.DMatrix(X, y), 1))
    bad = json.loads(json.dumps(doc))
    trees_of(bad)[0]["split_type"][0] = 2
    with pytest.raises(ValueError, match="split_type 2"):
        from_xgboost(bad)
    bad = json.loads(json.dumps(doc))
    bad["learner"]["objective"]["name"] = "reg:mystery"
    with pytest.raises(ValueError, match="reg:mystery"):
        from_xgboost(bad)
    with pytest.raises(ValueError, match="not an XGBoost JSON model"):
        from_xgboost({"foo": 1})
    with pytest.raises(TypeError, match="from_xgboost expects"):
        from_xgboost(3.0)
    with pytest.raises(ValueError, match="UBJSON"):
        from_xgboost(b"{L\x00\x00")


# --------------------------------------------------------------------------- property test
@settings(deadline=None, max_examples=15)
@given(
    depth=st.integers(1, 6),
    objective=st.sampled_from(["reg:squarederror", "binary:logistic", "rank:pairwise"]),
    missing_frac=st.sampled_from([0.0, 0.1, 0.4]),
    with_cat=st.booleans(),
    rounds=st.integers(2, 10),
    seed=st.integers(0, 2**31 - 1),
)
def test_random_models_bitwise(depth, objective, missing_frac, with_cat, rounds, seed):
    rng = np.random.default_rng(seed)
    n = 160
    X = rng.normal(size=(n, 4)) * rng.choice([1e-3, 1.0, 1e4], size=4)
    X[:, 1] = np.round(X[:, 1], 2)
    if with_cat:
        X = np.column_stack([X, rng.integers(0, 40, n).astype(float)])
    X[rng.random(X.shape) < missing_frac] = np.nan
    z = np.nan_to_num(X[:, 0] / np.nanstd(X[:, 0]) if np.nanstd(X[:, 0]) > 0 else X[:, 0])
    if with_cat:
        z = z + (np.nan_to_num(X[:, -1]) % 3)
    y = {"reg:squarederror": z, "binary:logistic": (z > 0).astype(float),
         "rank:pairwise": np.digitize(z, [0, 1])}[objective]
    ft = ["q"] * 4 + (["c"] if with_cat else [])
    qid = np.repeat(np.arange(n // 8), 8) if objective.startswith("rank") else None
    dm = xgb.DMatrix(X, y, qid=qid, feature_types=ft, enable_categorical=with_cat)
    b = xgb.train({"objective": objective, "max_depth": depth, "nthread": NTHREAD,
                   "tree_method": "hist", "max_cat_to_onehot": 1, "seed": 0}, dm, rounds)
    ens = from_xgboost(b)
    Xa = adversarial_rows(model_json(b), X, rng, max_splits=120)
    if with_cat:
        extra = np.repeat(X[:len(CAT_EDGES)], 1, axis=0).copy()
        extra[:, -1] = CAT_EDGES
        Xa = np.vstack([Xa, extra])
    np.testing.assert_array_equal(ens.predict_raw(Xa), xgb_margin(b, Xa))
    finite = ~np.isinf(Xa).any(axis=1)
    np.testing.assert_array_equal(
        ens.predict(Xa[finite]),
        b.predict(xgb.DMatrix(Xa[finite], feature_types=ft, enable_categorical=with_cat)))


# --------------------------------------------------------------------------- issue #11
def _qs_outputs(model, X):
    """QuickScorerPredictor (both backends) and TreeEnsemble.predict on the same input."""
    from skltr import QuickScorerPredictor

    outs = [QuickScorerPredictor.from_model(model, backend=b).predict(X)
            for b in ("quickscorer", "traversal")]
    return outs + [from_xgboost(model).predict(X)]


@pytest.mark.parametrize("params", [
    dict(rate_drop=0.3, max_depth=4),
    dict(rate_drop=0.5, skip_drop=0.5, max_depth=4),
    dict(rate_drop=0.3, normalize_type="forest", sample_type="weighted", max_depth=4),
], ids=["tree", "skip_drop", "forest"])
def test_dart_regressor_matches_predict_bit_for_bit(params):
    """Issue #11: 1,894 of 3,000 scores of XGBRegressor(booster='dart', rate_drop=0.3,
    max_depth=4) differed by up to 3.6e-7. scikit-learn's predict is Dart::InplacePredict,
    which adds float32(float32(float32(base + leaf) - base) * w); Booster.predict(DMatrix)
    adds float32(leaf * w). Both are reproduced (dart_predict)."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(3000, 6))
    y = 3 * X[:, 0] + np.sin(X[:, 1]) + rng.normal(size=3000) + 10
    reg = xgb.XGBRegressor(booster="dart", n_estimators=30, n_jobs=NTHREAD, **params).fit(X, y)
    expected = reg.predict(X)
    for got in _qs_outputs(reg, X):
        np.testing.assert_array_equal(got, expected)
    booster = reg.get_booster()
    dmatrix = booster.predict(xgb.DMatrix(X), output_margin=True)
    if _XGB_VERSION < (3, 3):
        assert np.sum(dmatrix != expected) > 100  # XGBoost's two paths really differ here
        assert from_xgboost(reg).source["dart_predict"] == "inplace"
    else:  # XGBoost 3.3 saves dart as gbtree + weights; its two paths agree ("dmatrix")
        np.testing.assert_array_equal(dmatrix, expected)
        assert from_xgboost(reg).source["dart_predict"] == "dmatrix"
    np.testing.assert_array_equal(from_xgboost(booster).predict_raw(X), dmatrix)
    np.testing.assert_array_equal(from_xgboost(reg, dart_predict="dmatrix").predict_raw(X),
                                  dmatrix)
    ranged = from_xgboost(reg, iteration_range=(3, 12))
    np.testing.assert_array_equal(
        ranged.predict_raw(X),
        booster.inplace_predict(X, predict_type="margin", iteration_range=(3, 12)))
    with pytest.raises(ValueError, match="dart_predict="):
        from_xgboost(reg, dart_predict="gpu")


def test_dart_multiclass_and_binary_match_predict_proba():
    rng = np.random.default_rng(22)
    X = rng.normal(size=(1500, 5))
    y3 = np.digitize(X[:, 0] + X[:, 2], [-1, 0, 1])
    for y in (y3, (X[:, 1] > 0).astype(int)):
        clf = xgb.XGBClassifier(booster="dart", rate_drop=0.3, max_depth=4, n_estimators=15,
                                n_jobs=NTHREAD).fit(X, y)
        from skltr import QuickScorerPredictor

        for backend in ("quickscorer", "traversal"):
            qs = QuickScorerPredictor.from_model(clf, backend=backend)
            np.testing.assert_array_equal(qs.predict_proba(X), clf.predict_proba(X))
            np.testing.assert_array_equal(qs.predict(X), clf.predict(X))


def _cat_frame(rng, n, cats):
    col = pd.Categorical(np.asarray(cats, dtype=object)[rng.integers(0, len(cats), n)].tolist(),
                         categories=cats)
    df = pd.DataFrame({"x": rng.normal(size=n), "c": col,
                       "k": pd.Categorical(rng.choice([10, 20, 30, 40], n))})
    codes = df["c"].cat.codes.to_numpy()
    y = np.isin(codes, [1, 3]) + 0.5 * (df["k"].astype(int) == 30) + 0.1 * df["x"]
    return df, y + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("onehot", [1, 64])
def test_dataframe_categories_recoded_as_xgboost_does(onehot):
    """Issue #11: string categories raised 'could not convert string to float'; integer
    categories were read as their values (up to 0.57 off). XGBoost re-codes a frame's
    categories to the training categories by value."""
    rng = np.random.default_rng(23)
    cats = ["a", "b", "c", "d", "e"]
    df, y = _cat_frame(rng, 400, cats)
    reg = xgb.XGBRegressor(n_estimators=6, max_depth=3, enable_categorical=True,
                           max_cat_to_onehot=onehot, n_jobs=NTHREAD).fit(df, y)
    ens = from_xgboost(reg)
    assert ens.categories == [None, {"type": "str", "values": cats},
                              {"type": "int64", "values": [10, 20, 30, 40]}]
    other = pd.DataFrame({
        "x": rng.normal(size=8),
        "c": pd.Categorical(["e", "a", "d", None, "b", "d", "c", "a"],
                            categories=["e", "d", "c", "b", "a"]),
        "k": pd.Categorical([40, 30, None, 10, 20, 30, 30, 10], categories=[40, 30, 20, 10])})
    for X in (df, other, other.iloc[::-1]):
        for got in _qs_outputs(reg, X):
            np.testing.assert_array_equal(got, reg.predict(X))
    # an array holds the codes themselves
    codes = np.column_stack([df["x"], df["c"].cat.codes, df["k"].cat.codes]).astype(float)
    for got in _qs_outputs(reg, codes):
        np.testing.assert_array_equal(got, reg.predict(codes))


@pytest.mark.parametrize("case", ["unseen", "unused unseen", "int32 index", "float index",
                                  "numeric for category", "category for numeric",
                                  "renamed", "reordered columns"])
def test_dataframes_xgboost_refuses_are_refused(case):
    rng = np.random.default_rng(24)
    df, y = _cat_frame(rng, 300, ["a", "b", "c", "d"])
    reg = xgb.XGBRegressor(n_estimators=3, max_depth=3, enable_categorical=True,
                           n_jobs=NTHREAD).fit(df, y)
    X = df.iloc[:5].copy()
    if case == "unseen":
        X["c"] = pd.Categorical(["a", "zz", "b", "a", "a"])
    elif case == "unused unseen":
        X["c"] = pd.Categorical(["a", "b", "b", "a", "a"], categories=["a", "b", "zz"])
    elif case == "int32 index":
        X["k"] = pd.Categorical(np.array([10, 20, 30, 40, 10], dtype=np.int32))
    elif case == "float index":
        X["k"] = pd.Categorical([10.0, 20.0, 30.0, 40.0, 10.0])
    elif case == "numeric for category":
        X["c"] = X["c"].cat.codes.astype(float)
    elif case == "category for numeric":
        X["x"] = pd.Categorical([1, 2, 3, 4, 5])
    elif case == "renamed":
        X = X.rename(columns={"x": "x2"})
    else:
        X = X[["c", "x", "k"]]
    with pytest.raises(Exception):  # noqa: B017 - XGBoost raises XGBoostError or ValueError
        reg.predict(X)
    from skltr import QuickScorerPredictor

    for backend in ("quickscorer", "traversal"):
        with pytest.raises(ValueError):
            QuickScorerPredictor.from_model(reg, backend=backend).predict(X)
    with pytest.raises(ValueError):
        from_xgboost(reg).predict(X)


def test_dataframe_without_stored_categories_reads_codes():
    """A model trained without DataFrame categories reads a category column's own codes."""
    rng = np.random.default_rng(25)
    X = np.column_stack([rng.normal(size=300), rng.integers(0, 5, 300)]).astype(float)
    y = X[:, 1] == 2
    reg = xgb.XGBRegressor(n_estimators=3, max_depth=2, n_jobs=NTHREAD).fit(
        pd.DataFrame({"x": X[:, 0], "k": X[:, 1]}), y)
    assert from_xgboost(reg).categories is None
    frame = pd.DataFrame({"x": [0.0, 0.0, 0.0], "k": pd.Categorical([0, 2, 4])})
    for got in _qs_outputs(reg, frame):
        np.testing.assert_array_equal(got, reg.predict(frame))


def test_dataframe_non_ascii_categories():
    """XGBoost cuts non-ASCII names at character offsets of their UTF-8 bytes; in training
    order the codes are the identity, which skltr reproduces; any other listing is refused."""
    rng = np.random.default_rng(26)
    cats = ["café", "naïve", "zoë", "plain", "日本"]
    df, y = _cat_frame(rng, 300, cats)
    reg = xgb.XGBRegressor(n_estimators=4, max_depth=3, enable_categorical=True,
                           max_cat_to_onehot=1, n_jobs=NTHREAD).fit(df, y)
    for got in _qs_outputs(reg, df):
        np.testing.assert_array_equal(got, reg.predict(df))
    shuffled = df.assign(c=df["c"].cat.reorder_categories(cats[::-1]))
    with pytest.raises(ValueError, match="non-ASCII"):
        from_xgboost(reg).predict(shuffled)


def test_dataframe_numeric_columns_read_one_by_one_to_float32():
    """int64 columns go straight to float32 (not through float64, which differs near 2**60),
    float64 columns are rounded to float32, nullable columns read NA as missing."""
    rng = np.random.default_rng(27)
    n = 400
    tie = 2**60 + 2**36  # halfway between two float32 neighbours
    big = tie + rng.integers(-1, 2, n) * np.int64(1) + rng.integers(0, 3, n) * np.int64(2**37)
    small = 2**24 + rng.integers(-5, 6, n)
    y = (big > tie) + (small > 2**24) + 0.01 * rng.normal(size=n)
    df = pd.DataFrame({"big": big.astype(np.int64), "small": small.astype(np.int64)})
    reg = xgb.XGBRegressor(n_estimators=4, max_depth=3, n_jobs=NTHREAD).fit(df, y)
    through64 = from_xgboost(reg).predict(df.to_numpy().astype(np.float64))
    assert np.any(through64 != reg.predict(df))  # the order of the casts matters
    variants = [df, df.astype({"small": "float64"}), df.astype({"big": "uint64"}),
                df.astype({"small": "Int64"}).assign(small=lambda d: d["small"].mask(
                    d.index % 7 == 0))]
    for X in variants:
        for got in _qs_outputs(reg, X):
            np.testing.assert_array_equal(got, reg.predict(X))


def test_dart_saved_as_gbtree_with_weights_is_read_as_dart():
    """XGBoost 3.3 and later save a dart model as ``gbtree`` with ``weight_drop`` inside the
    tree model (and both predict paths then add float32(leaf * w)); read as plain gbtree the
    weights were lost and every score was wrong (seen with XGBoost 3.4.1). The 3.3 layout is
    made here from this XGBoost's dart model, whose DMatrix predict is that arithmetic."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 4))
    y = X[:, 0] + rng.normal(size=500) * 0.1
    booster = xgb.train({"booster": "dart", "rate_drop": 0.4, "max_depth": 3,
                         "nthread": NTHREAD}, xgb.DMatrix(X, y), 8)
    doc = json.loads(booster.save_raw("json"))
    gb = doc["learner"]["gradient_booster"]
    if gb["name"] == "dart":  # XGBoost < 3.3: move the weights where 3.3 keeps them
        weights = gb["weight_drop"]
        doc["learner"]["gradient_booster"] = gb = {**gb["gbtree"], "name": "gbtree"}
        gb["model"]["weight_drop"] = weights
    assert gb["name"] == "gbtree" and len(gb["model"]["weight_drop"]) == 8
    assert len(set(gb["model"]["weight_drop"])) > 1  # the weights matter
    ens = from_xgboost(bytearray(json.dumps(doc).encode()))
    assert ens.source["booster"] == "dart" and ens.source["dart_predict"] == "dmatrix"
    np.testing.assert_array_equal(ens.predict_raw(X),
                                  booster.predict(xgb.DMatrix(X), output_margin=True))
