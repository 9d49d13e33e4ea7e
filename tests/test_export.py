"""Export of TreeEnsembles to XGBoost, LightGBM, ONNX and Treelite (issue #32).

What is checked, per target (docs/user_guide/export.rst states the same):

* Routing: for every input the target reads (float32 for XGBoost and its dump, float64 for
  LightGBM), the exported model reaches the leaf skltr reaches: the exported file converted
  back with ``skltr.convert`` keeps node numbering, so ``apply`` leaf indices are compared.
* Scores: the target's own prediction equals skltr's prediction of the same ensemble in the
  target's arithmetic (XGBoost: float32 leaves, float32 sum -- bit for bit; LightGBM: the
  float64 sum -- bit for bit); ONNX Runtime within float32 summation (max difference reported).
* Round trips XGBoost -> skltr -> XGBoost and LightGBM -> skltr -> LightGBM.
* Refusals: a clear error naming the target, and no file left behind.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from skltr.convert import from_lightgbm, from_sklearn, from_xgboost
from skltr.trees import ExportError, NodeFlags, TreeEnsemble
from skltr.trees._export_common import float32_lt_thresholds
from skltr.trees._input import refuses_inf
from skltr.trees._export_xgboost import node_order, xgboost_document, xgboost_dump
from skltr.trees._traversal import apply
from strategies_trees import ensembles, inputs

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


# --------------------------------------------------------------------------- models
def _rank_data(rng, n_queries=30, per_query=10, n_features=5, nan_frac=0.1):
    X = rng.normal(size=(n_queries * per_query, n_features))
    X[:, 1] = np.round(X[:, 1], 1)  # ties on bin edges
    X[rng.random(X.shape) < nan_frac] = np.nan
    y = rng.integers(0, 4, X.shape[0])
    qid = np.repeat(np.arange(n_queries), per_query)
    return X, y, qid


def _edge_inputs(ens, X, rng):
    """Rows of X plus rows whose entries sit on every threshold of ``ens`` and one double /
    float32 step either side, NaN and infinities."""
    thr = np.unique(ens.threshold[(ens.left >= 0) & ((ens.flags & 1) == 0)])
    with np.errstate(over="ignore"):
        vals = [thr, np.nextafter(thr, np.inf), np.nextafter(thr, -np.inf)]
        t32 = thr.astype(np.float32)
        vals += [t32, np.nextafter(t32, np.float32(np.inf)),
                 np.nextafter(t32, np.float32(-np.inf))]
    specials = [np.nan, 0.0, -0.0, 1e-40, -1e-40]
    if not refuses_inf(ens):  # skltr's own models refuse +-inf, as their predict does
        specials += [np.inf, -np.inf]
    pool = np.concatenate([np.asarray(v, dtype=np.float64) for v in vals] + [specials])
    extra = rng.choice(pool, size=(400, X.shape[1]))
    return np.vstack([X, extra])


def _fitted_models():
    from skltr.ranking import GPUHistGBDTRanker, RankBoostRanker

    rng = np.random.default_rng(1)
    X, y, qid = _rank_data(rng)
    out = {
        "gbdt_leafwise": GPUHistGBDTRanker(n_estimators=15, random_state=0).fit(
            X, y, qid=qid).ensemble_,
        "gbdt_depthwise": GPUHistGBDTRanker(n_estimators=10, growth="depthwise", max_depth=4,
                                            max_leaves=None, random_state=0).fit(
            X, y, qid=qid).ensemble_,
        "rankboost": RankBoostRanker(n_estimators=30, random_state=0).fit(
            X, y, qid=qid).ensemble_,
    }
    return out, X


def _converted_models():
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 4))
    X[:, 3] = rng.integers(0, 40, 500)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 3]) % 3 + rng.normal(size=500) * 0.1
    out = {}
    out["xgb_numeric"] = from_xgboost(xgb.train(
        {"max_depth": 4, "nthread": 1, "base_score": 0.3}, xgb.DMatrix(X[:, :3], y), 8))
    df = pd.DataFrame({f"c{i}": X[:, i] for i in range(3)})
    codes = np.where(np.isnan(X[:, 3]), -1, np.nan_to_num(X[:, 3])).astype(int)
    df["cat"] = pd.Categorical.from_codes(codes, categories=list(range(40)))
    out["xgb_categorical"] = from_xgboost(xgb.train(
        {"max_depth": 4, "nthread": 1, "max_cat_to_onehot": 1},
        xgb.DMatrix(df, y, enable_categorical=True), 8))
    lgb_ds = lgb.Dataset(X, y, categorical_feature=[3], params={"verbose": -1})
    out["lgb_categorical"] = from_lightgbm(lgb.train(
        {"num_leaves": 15, "verbose": -1, "num_threads": 1, "min_data_per_group": 5,
         "cat_smooth": 1}, lgb_ds, 8))
    out["lgb_numeric"] = from_lightgbm(lgb.train(
        {"num_leaves": 15, "verbose": -1, "num_threads": 1},
        lgb.Dataset(X[:, :3], y, params={"verbose": -1}), 8))
    out["sklearn_hgb"] = from_sklearn(HistGradientBoostingRegressor(
        max_iter=8, random_state=0).fit(X, y))
    return out, X


@pytest.fixture(scope="module")
def models():
    fitted, Xf = _fitted_models()
    converted, Xc = _converted_models()
    rng = np.random.default_rng(3)
    out = {}
    for name, ens in fitted.items():
        out[name] = (ens, _edge_inputs(ens, Xf, rng))
    for name, ens in converted.items():
        X = Xc[:, :ens.n_features]
        out[name] = (ens, _edge_inputs(ens, X, rng))
    return out


MODEL_NAMES = ["gbdt_leafwise", "gbdt_depthwise", "rankboost", "xgb_numeric",
               "xgb_categorical", "lgb_categorical", "lgb_numeric", "sklearn_hgb"]


def _cat_safe_rows(ens, X):
    """Rows without negative values on features of categorical splits (not categories: see
    the exactness notes of the docs) -- all rows when the model has none."""
    cat = (ens.left >= 0) & ((ens.flags & NodeFlags.CATEGORICAL) != 0)
    feats = np.unique(ens.feature[cat])
    if feats.size == 0:
        return X
    bad = np.any(X[:, feats] < 0, axis=1)
    return X[~bad]


def _xgb_leaves(ens, back, X):
    """Leaves reached in ``back`` (converted from an XGBoost export of ``ens``), in ``ens``'s
    local numbering (the export renumbers nodes breadth first, see ``node_order``)."""
    leaves = apply(back, X)
    for t in range(ens.n_trees):
        s, e = ens.tree_ptr[t], ens.tree_ptr[t + 1]
        left, right = ens.left[s:e].copy(), ens.right[s:e].copy()
        cat = (left >= 0) & ((ens.flags[s:e] & NodeFlags.CATEGORICAL) != 0)
        swap = cat & ((ens.flags[s:e] & NodeFlags.CAT_SET_RIGHT) == 0)
        left[swap], right[swap] = right[swap], left[swap]
        leaves[:, t] = node_order(left, right)[leaves[:, t]]
    return leaves


def _assert_xgb_routes_like(ens, X32):
    """Every tree of the XGBoost export of ``ens``, evaluated by XGBoost itself one round at a
    time on leaf ids, reaches the leaf skltr reaches (also where the exported threshold is
    +inf, which skltr's own XGBoost reader refuses)."""
    uniq = dataclasses.replace(_unique_leaves(ens), n_outputs=1,
                               tree_output=np.zeros(ens.n_trees, np.int32),
                               base_score=np.zeros(1), source={})
    booster = xgb.Booster(model_file=bytearray(json.dumps(xgboost_document(uniq)).encode()))
    leaves = apply(ens, X32) + ens.tree_ptr[:-1]
    for t in range(ens.n_trees):
        got = booster.inplace_predict(X32, predict_type="margin", missing=np.nan,
                                      iteration_range=(t, t + 1))
        np.testing.assert_array_equal(got, uniq.value[leaves[:, t]])


def _xgb_margin(booster, X32):
    # inplace_predict reads +-inf as ordinary values (a DMatrix refuses them)
    return booster.inplace_predict(X32, predict_type="margin", missing=np.nan)


def _xgb_arithmetic(ens):
    """``ens`` evaluated as XGBoost evaluates its export: float32 leaves (tree weights folded
    in, one rounding of the product), a float32 sum, and a ``missing=`` sentinel compared
    as XGBoost compares it, rounded to float32."""
    from skltr.trees._export_common import effective_leaves

    with np.errstate(over="ignore"):
        missing = float(np.float32(ens.missing_value))
    if ens.average_output:
        return dataclasses.replace(ens, sum_dtype="float32", missing_value=missing)
    return dataclasses.replace(ens, value=effective_leaves(ens), tree_weight=np.ones(ens.n_trees),
                               sum_dtype="float32", missing_value=missing)


# --------------------------------------------------------------------------- XGBoost JSON
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_xgboost_export_predicts_like_skltr(models, name, tmp_path):
    ens, X = models[name]
    X32 = _cat_safe_rows(ens, X).astype(np.float32)
    path = tmp_path / "model.json"
    ens.to_xgboost(path)
    booster = xgb.Booster(model_file=str(path))
    margin = _xgb_margin(booster, X32)
    if ens.n_outputs == 1:
        margin = margin.reshape(-1)
    # routing: XGBoost reaches skltr's leaves, tree by tree; skltr reads the file back alike
    _assert_xgb_routes_like(ens, X32)
    back = from_xgboost(str(path))
    np.testing.assert_array_equal(_xgb_leaves(ens, back, X32), apply(ens, X32))
    # scores: bit for bit the ensemble's in XGBoost's arithmetic
    np.testing.assert_array_equal(margin, back.predict_raw(X32))
    if not ens.average_output:
        np.testing.assert_array_equal(margin, _xgb_arithmetic(ens).predict_raw(X32))
    # against skltr's own (float64) prediction: float32 rounding of leaves and sum only
    ref = ens.predict_raw(X32)
    diff = float(np.max(np.abs(margin - ref))) if X32.size else 0.0
    print(f"{name}: XGBoost export max |diff| vs skltr float64 predict = {diff:.3g}")
    assert diff <= 1e-5 * max(1.0, float(np.max(np.abs(ref))))


@pytest.mark.parametrize("params,rounds", [
    ({"objective": "rank:ndcg", "max_depth": 3}, 6),
    ({"objective": "binary:logistic", "max_depth": 3, "base_score": 0.37}, 6),
    ({"objective": "multi:softprob", "num_class": 3, "max_depth": 3}, 4),
    ({"objective": "count:poisson", "max_depth": 3}, 5),
    ({"objective": "reg:squarederror", "max_depth": 4, "booster": "dart", "rate_drop": 0.3},
     5),
])
def test_xgboost_round_trip(params, rounds, tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    obj = params["objective"]
    if obj.startswith("multi"):
        y = rng.integers(0, 3, 300)
    elif obj.startswith("binary") or obj.startswith("rank"):
        y = rng.integers(0, 2, 300)
    else:
        y = rng.poisson(2, 300)
    dm = xgb.DMatrix(X, y)
    if obj.startswith("rank"):
        dm.set_group([30] * 10)
    booster = xgb.train({**params, "nthread": 1, "seed": 0}, dm, rounds)
    ens = from_xgboost(booster)
    path = tmp_path / "again.json"
    ens.to_xgboost(path)
    again = xgb.Booster(model_file=str(path))
    dx = xgb.DMatrix(X)
    np.testing.assert_array_equal(again.predict(dx, output_margin=True),
                                  booster.predict(dx, output_margin=True))
    np.testing.assert_array_equal(again.predict(dx), booster.predict(dx))
    assert json.loads(again.save_config())["learner"]["objective"]["name"] == obj


def _unique_leaves(ens):
    """A copy whose leaf values are distinct small integers and whose arithmetic is plain."""
    value = np.where(ens.left < 0, np.arange(ens.n_nodes, dtype=np.float64), 0.0)
    return dataclasses.replace(
        ens, value=value, tree_weight=np.ones(ens.n_trees), base_score=np.zeros(ens.n_outputs),
        average_output=False, output_transform="identity", transform_params={},
        missing_value=math.nan)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_xgboost_routing_hypothesis(data):
    original, thr = data.draw(ensembles(max_trees=4, max_splits=8))
    ens = _unique_leaves(original)
    X = data.draw(inputs(ens, thr, max_rows=16))
    try:
        doc = xgboost_document(ens)
    except ExportError as exc:
        # only the two documented refusals: zero-band nodes and huge categories
        assert any(m in str(exc) for m in ("missing type 'zero'", "2**24", "empty category")), \
            str(exc)
        return
    with np.errstate(over="ignore"):
        X32 = _cat_safe_rows(ens, X).astype(np.float32)
    assume(X32.shape[0] > 0)
    if ens.n_trees:
        _assert_xgb_routes_like(ens, X32)
    # and skltr's own XGBoost reader, where it accepts the file (it refuses +inf thresholds)
    if not np.any(np.isinf(float32_lt_thresholds(ens))):
        back = from_xgboost(doc)
        np.testing.assert_array_equal(_xgb_leaves(ens, back, X32), apply(ens, X32))
    # the drawn ensemble itself (several outputs, base scores, tree weights, transforms, a
    # missing= sentinel given back at predict time): XGBoost's margin is the ensemble's in
    # float32 arithmetic, bit for bit
    full = data.draw(st.sampled_from([dataclasses.replace(original, average_output=False),
                                      original]))
    try:
        full_doc = xgboost_document(full)
    except ExportError as exc:
        # an output transform XGBoost lacks, or a folded leaf beyond float32's range
        assert "transform" in str(exc) or "folded in" in str(exc), str(exc)
        event(f"full ensemble: refused ({'transform' if 'transform' in str(exc) else 'leaf'})")
        return
    event(f"full ensemble: {full.n_outputs} output(s), {full.output_transform}, "
          f"average={full.average_output}")
    booster = xgb.Booster(model_file=bytearray(json.dumps(full_doc).encode()))
    margin = booster.inplace_predict(X32, predict_type="margin", missing=full.missing_value)
    want = _xgb_arithmetic(full).predict_raw(X32)
    if full.average_output:  # averaging folded into the leaves: one rounding more
        np.testing.assert_allclose(margin.reshape(want.shape), want, rtol=1e-5, atol=1e-3)
    else:
        np.testing.assert_array_equal(margin.reshape(want.shape), want)


def test_xgboost_thresholds_exhaustive_around_edges():
    """``x <= t`` in double equals ``x < t'`` in float32 for every float32 near t."""
    rng = np.random.default_rng(5)
    t = np.concatenate([rng.normal(size=200), rng.normal(size=50).astype(np.float32),
                        [0.0, -0.0, 1e-40, -1e-40, 3.4e38, -3.4e38, 1.7e308, -1.7e308, 0.1]])
    for decision in ("<=", "<"):
        n = t.size
        ens = TreeEnsemble(tree_ptr=np.arange(0, 3 * n + 1, 3),
                           feature=np.tile([0, -1, -1], n), threshold=np.repeat(t, 3),
                           left=np.tile([1, -1, -1], n), right=np.tile([2, -1, -1], n),
                           value=np.zeros(3 * n), n_features=1, decision=decision)
        tp = float32_lt_thresholds(ens)[::3]
        for ti, tpi in zip(t, tp):
            with np.errstate(over="ignore"):
                x = np.float32(ti) if np.isfinite(np.float32(ti)) else np.float32(3.4e38)
            xs, up, lo = [x], x, x
            for _ in range(40):
                up = np.nextafter(up, np.float32(np.inf))
                lo = np.nextafter(lo, np.float32(-np.inf))
                xs += [up, lo]
            xs += [np.float32(np.inf), np.float32(-np.inf), np.float32(3.4028235e38)]
            for xv in xs:
                want = (float(xv) <= ti) if decision == "<=" else (float(xv) < ti)
                assert (xv < tpi) == want, (ti, xv, tpi, decision)


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("decision", ["<=", "<"])
def test_double_thresholds_exhaustive_around_edges(precision, decision):
    """``x <= t'`` in double is the ensemble's test (after rounding x to float32 for a
    float32-precision ensemble) for every double near t' and near t."""
    from skltr.trees._export_common import double_le_thresholds

    rng = np.random.default_rng(6)
    t = np.concatenate([rng.normal(size=150), rng.normal(size=150).astype(np.float32),
                        [0.0, 3.4e38, -3.4e38, 1e-45, -1e-45, 1e-40, 1e300, -1e300]])
    n = t.size
    ens = TreeEnsemble(tree_ptr=np.arange(0, 3 * n + 1, 3), feature=np.tile([0, -1, -1], n),
                       threshold=np.repeat(t, 3), left=np.tile([1, -1, -1], n),
                       right=np.tile([2, -1, -1], n), value=np.zeros(3 * n), n_features=1,
                       decision=decision, precision=precision)
    tp = double_le_thresholds(ens)[::3]
    for ti, tpi in zip(t, tp):
        xs, up, lo = [tpi, ti], tpi, tpi
        for _ in range(30):
            up, lo = np.nextafter(up, np.inf), np.nextafter(lo, -np.inf)
            xs += [up, lo]
        for x in xs + [np.inf, -np.inf]:
            with np.errstate(over="ignore"):
                xr = float(np.float32(x)) if precision == "float32" else x
            want = (xr <= ti) if decision == "<=" else (xr < ti)
            assert (x <= tpi) == want, (ti, x, tpi)


# --------------------------------------------------------------------------- XGBoost dump
def _eval_ltr_plugin(dump, X32, names):
    """The OpenSearch / Elasticsearch LTR plugin's NaiveAdditiveDecisionTree: float features,
    left when ``threshold > x``, float32 sum from 0, trees weight 1 (XGBoostJsonParser)."""
    col = {n: i for i, n in enumerate(names)}
    out = np.zeros(X32.shape[0], dtype=np.float32)
    for r in range(X32.shape[0]):
        acc = np.float32(0)
        for tree in dump:
            node = tree
            while "leaf" not in node:
                thr = np.float32(node["split_condition"])
                x = X32[r, col[node["split"]]]
                yes = thr > x
                node = node["children"][0 if yes else 1]
            acc = np.float32(acc + np.float32(node["leaf"]))
        out[r] = acc
    return out


@pytest.mark.parametrize("name", ["gbdt_leafwise", "rankboost", "xgb_numeric", "lgb_numeric"])
def test_xgboost_dump_matches_xgboost_and_ltr_plugin(models, name, tmp_path):
    ens, X = models[name]
    X32 = X.astype(np.float32)
    names = [f"feat_{i}" for i in range(ens.n_features)]
    dump = xgboost_dump(ens, feature_names=names)
    # children[0] is the "yes" node, as the LTR plugin's parser requires
    def walk(node):
        if "leaf" in node:
            return
        assert node["children"][0]["nodeid"] == node["yes"]
        assert node["children"][1]["nodeid"] == node["no"]
        walk(node["children"][0])
        walk(node["children"][1])
    for tree in dump:
        walk(tree)
    # the dump of the exported JSON model, by XGBoost itself, is the same tree
    if np.all(ens.base_score == 0):
        path = tmp_path / "m.json"
        ens.to_xgboost(path)
        theirs = [json.loads(t) for t in xgb.Booster(model_file=str(path)).get_dump(
            dump_format="json")]
        mine = xgboost_dump(ens)

        def same(a, b):
            assert set(a) == set(b), (a, b)
            for k in a:
                if k == "children":
                    for ca, cb in zip(a[k], b[k]):
                        same(ca, cb)
                elif k in ("split_condition", "leaf"):
                    assert np.float32(a[k]) == np.float32(b[k]) or (
                        np.isinf(np.float32(a[k])) and np.isinf(np.float32(b[k])))
                else:
                    assert a[k] == b[k], (k, a[k], b[k])
        for a, b in zip(mine, theirs):
            same(a, b)
    # the plugin's arithmetic on finite inputs gives XGBoost's margin (base folded)
    finite = X32[np.all(np.isfinite(X32), axis=1)]
    got = _eval_ltr_plugin(dump, finite[:200], names)
    want = _xgb_arithmetic(ens).predict_raw(finite[:200])
    np.testing.assert_array_equal(got, want)
    path = tmp_path / "dump.json"
    ens.to_xgboost_dump(path, feature_names=names)
    assert json.loads(path.read_text()) == json.loads(json.dumps(dump))


def test_xgboost_dump_base_score_drop(models):
    ens, X = models["xgb_numeric"]
    kept = xgboost_dump(ens)
    dropped = xgboost_dump(ens, base_score="drop")
    assert kept != dropped
    with pytest.raises(ValueError, match="base_score"):
        xgboost_dump(ens, base_score="add")


# --------------------------------------------------------------------------- refusals
def _assert_refused(fn, tmp_path, match):
    target = tmp_path / "out" / "model.file"
    target.parent.mkdir(parents=True)
    with pytest.raises(ExportError, match=match):
        fn(target)
    assert os.listdir(target.parent) == []


def test_refusals_leave_no_file(models, tmp_path):
    cat, _ = models["xgb_categorical"]
    _assert_refused(cat.to_xgboost_dump, tmp_path / "a", "XGBoost JSON dump.*categorical")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    multi = from_xgboost(xgb.train({"objective": "multi:softprob", "num_class": 3,
                                    "nthread": 1}, xgb.DMatrix(X, rng.integers(0, 3, 200)), 2))
    _assert_refused(multi.to_xgboost_dump, tmp_path / "b", "XGBoost JSON dump.*3 outputs")
    scaled = dataclasses.replace(models["gbdt_leafwise"][0], output_transform="sigmoid",
                                 transform_params={"scale": 2.0})
    _assert_refused(scaled.to_xgboost, tmp_path / "c", "XGBoost JSON.*transform 'sigmoid'")


def test_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    from skltr.trees import _export_common

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        _export_common.write_file(tmp_path / "m.json", "{}")
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- LightGBM
def _not_in_zero_band(X):
    """LightGBM reads 0 < |x| <= 1e-35f as 0 (dense rows drop them): rows without such
    values (see the docs: exact except for that band at thresholds inside it)."""
    tiny = (np.abs(X) <= float(np.float32(1e-35))) & (X != 0)
    return X[~np.any(tiny, axis=1)]


@pytest.mark.parametrize("name", [n for n in MODEL_NAMES if n != "xgb_categorical"])
def test_lightgbm_export_predicts_like_skltr(models, name, tmp_path):
    ens, X = models[name]
    X = _not_in_zero_band(_cat_safe_rows(ens, X))
    path = tmp_path / "model.txt"
    ens.to_lightgbm(path)
    booster = lgb.Booster(model_file=str(path))
    X32 = X.astype(np.float32)
    if ens.sum_dtype == "float64":
        # bit for bit on float64 and float32 inputs
        for Xi in (X, X32):
            np.testing.assert_array_equal(booster.predict(Xi, raw_score=True),
                                          ens.predict_raw(Xi))
        np.testing.assert_array_equal(booster.predict(X), ens.predict(X))
    else:
        # XGBoost models (inputs rounded to float32, float32 sums): routing is exact on every
        # input; the sum is LightGBM's double sum of the float32 leaves
        want = dataclasses.replace(ens, sum_dtype="float64")
        for Xi in (X, X32):
            got = booster.predict(Xi, raw_score=True)
            np.testing.assert_array_equal(got, want.predict_raw(Xi))
        diff = float(np.max(np.abs(got - ens.predict_raw(X32))))
        print(f"{name}: LightGBM export of a float32-sum model, max |diff| = {diff:.3g}")
        assert diff <= 1e-5 * max(1.0, float(np.max(np.abs(got))))


def _lgb_train(params, X, y, rounds, categorical=(), group=None):
    ds = lgb.Dataset(X, y, categorical_feature=list(categorical) or "auto", group=group,
                     params={"verbose": -1})
    return lgb.train({"verbose": -1, "num_threads": 1, "seed": 0, **params}, ds, rounds)


@pytest.mark.parametrize("params", [
    {"objective": "lambdarank", "num_leaves": 15},
    {"objective": "binary", "num_leaves": 7, "sigmoid": 1.5},
    {"objective": "multiclass", "num_class": 3, "num_leaves": 7},
    {"objective": "regression", "num_leaves": 31, "min_data_per_group": 5, "cat_smooth": 1,
     "zero_as_missing": True},
    {"objective": "poisson", "num_leaves": 7},
])
def test_lightgbm_round_trip(params, tmp_path):
    rng = np.random.default_rng(6)
    n = 400
    X = rng.normal(size=(n, 4))
    X[:, 3] = rng.integers(0, 50, n)
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.05] = 0.0
    obj = params["objective"]
    y = {"binary": rng.integers(0, 2, n), "multiclass": rng.integers(0, 3, n),
         "lambdarank": rng.integers(0, 4, n), "poisson": rng.poisson(2, n)}.get(
        obj, np.nan_to_num(X[:, 0]) + rng.normal(size=n))
    group = [20] * (n // 20) if obj == "lambdarank" else None
    booster = _lgb_train(params, X, y, 6, categorical=[3], group=group)
    ens = from_lightgbm(booster)
    path = tmp_path / "again.txt"
    ens.to_lightgbm(path)
    again = lgb.Booster(model_file=str(path))
    Xt = np.vstack([X, [[0.0, -0.0, np.inf, -1.0], [np.nan] * 4, [1e-36, -1e-36, 1e300, 2.0**31],
                        [3.7, 0.5, -np.inf, 500.0]]])
    np.testing.assert_array_equal(again.predict(Xt, raw_score=True),
                                  booster.predict(Xt, raw_score=True))
    np.testing.assert_array_equal(again.predict(Xt), booster.predict(Xt))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_lightgbm_routing_hypothesis(data):
    from skltr.trees._export_lightgbm import lightgbm_text

    original, thr = data.draw(ensembles(max_trees=3, max_splits=8))
    ens = dataclasses.replace(_unique_leaves(original), n_outputs=1,
                              tree_output=np.zeros(original.n_trees, np.int32),
                              base_score=np.zeros(1))
    assume(ens.n_trees > 0)
    X = data.draw(inputs(ens, thr, max_rows=16))
    try:
        text = lightgbm_text(ens)
    except ExportError as exc:
        assert "NaN into its category set" in str(exc), str(exc)
        return
    booster = lgb.Booster(model_str=text)
    X = _trunc_safe_rows(ens, _not_in_zero_band(_cat_safe_rows(ens, X)))
    assume(X.shape[0] > 0)
    leaves = apply(ens, X) + ens.tree_ptr[:-1]
    for t in range(ens.n_trees):
        got = booster.predict(X, raw_score=True, start_iteration=t, num_iteration=1)
        np.testing.assert_array_equal(got, ens.value[leaves[:, t]])
    # the drawn ensemble itself (outputs round robin, base scores, tree weights, transforms)
    _assert_lightgbm_scores_like(original, X)


def _assert_lightgbm_scores_like(ens, X):
    """LightGBM's raw score of the export is the ensemble's float64 sum of its leaves (tree
    weights folded in), bit for bit; transforms agree."""
    from skltr.trees._export_common import effective_leaves
    from skltr.trees._export_lightgbm import lightgbm_text

    if not np.isnan(ens.missing_value):
        ens = dataclasses.replace(ens, missing_value=math.nan)
    try:
        text = lightgbm_text(ens)
    except ExportError as exc:
        assert any(m in str(exc) for m in ("transform", "NaN into its category set")), str(exc)
        event("LightGBM full ensemble: refused")
        return
    event(f"LightGBM full ensemble: {ens.n_outputs} output(s), {ens.output_transform}")
    booster = lgb.Booster(model_str=text)
    want = dataclasses.replace(ens, value=effective_leaves(ens),
                               tree_weight=np.ones(ens.n_trees), sum_dtype="float64")
    got = booster.predict(X, raw_score=True).reshape(want.predict_raw(X).shape)
    if ens.average_output:  # averaging folded into the leaves: one rounding more
        want = dataclasses.replace(ens, sum_dtype="float64")
        np.testing.assert_allclose(got, want.predict_raw(X), rtol=1e-6, atol=1e-6)
        return
    np.testing.assert_array_equal(got, want.predict_raw(X))
    if ens.output_transform in ("identity", "sigmoid", "exp", "softmax"):
        prob = booster.predict(X).reshape(got.shape)
        np.testing.assert_array_equal(prob, want.predict(X))


def _trunc_safe_rows(ens, X):
    """Rows without values in (-1, 0) on categorical features: LightGBM truncates before its
    negativity test, so -0.5 reads as category 0 (a source that tests first sends it to the
    not-in-set side)."""
    cat = (ens.left >= 0) & ((ens.flags & NodeFlags.CATEGORICAL) != 0)
    feats = np.unique(ens.feature[cat])
    if feats.size == 0:
        return X
    bad = np.any((X[:, feats] < 0) & (X[:, feats] > -1), axis=1)
    return X[~bad]


@pytest.mark.parametrize("name", ["gbdt_leafwise", "lgb_categorical", "xgb_numeric"])
def test_lightgbm_json_matches_lightgbm_dump_model(models, name, tmp_path):
    from skltr.trees._export_lightgbm import lightgbm_json

    ens, _ = models[name]
    path = tmp_path / "model.txt"
    ens.to_lightgbm(path)
    theirs = lgb.Booster(model_file=str(path)).dump_model()
    mine = lightgbm_json(ens)
    assert mine["tree_info"] == theirs["tree_info"]
    for key in ("num_class", "num_tree_per_iteration", "max_feature_idx", "objective",
                "feature_names"):
        assert mine[key] == theirs[key], key
    ens.to_lightgbm(tmp_path / "model.json", format="json")
    assert json.loads((tmp_path / "model.json").read_text()) == json.loads(json.dumps(mine))


def test_lightgbm_refusals(models, tmp_path):
    cat, _ = models["xgb_categorical"]
    _assert_refused(cat.to_lightgbm, tmp_path / "a", "LightGBM.*NaN into its category set")
    sentinel = dataclasses.replace(models["xgb_numeric"][0], missing_value=-999.0)
    _assert_refused(sentinel.to_lightgbm, tmp_path / "b", "LightGBM.*-999.0.*missing")
    with pytest.raises(ValueError, match="format"):
        models["gbdt_leafwise"][0].to_lightgbm(tmp_path / "c.txt", format="xml")


# --------------------------------------------------------------------------- ONNX
def _ort_session(model):
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def _integer_categories(ens, X):
    """Rows whose values on categorical features are integers (or NaN): ONNX's
    BRANCH_MEMBER compares values, where skltr truncates a fraction to its category."""
    cat = (ens.left >= 0) & ((ens.flags & NodeFlags.CATEGORICAL) != 0)
    feats = np.unique(ens.feature[cat])
    if feats.size == 0:
        return X
    v = X[:, feats]
    with np.errstate(invalid="ignore"):
        ok = np.isnan(v) | (np.trunc(v) == v)
    return X[np.all(ok, axis=1)]


@pytest.mark.parametrize("ml_opset", [3, 5])
@pytest.mark.parametrize("input_type", ["float32", "float64"])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_onnx_export_predicts_like_skltr(models, name, input_type, ml_opset, tmp_path):
    pytest.importorskip("onnx")
    ens, X = models[name]
    if ml_opset == 3 and "categorical" in name:
        pytest.skip("categorical splits need ml_opset=5 (refusal tested separately)")
    X = _integer_categories(ens, _cat_safe_rows(ens, X)).astype(input_type)
    path = tmp_path / "model.onnx"
    model = ens.to_onnx(path, input_type=input_type, ml_opset=ml_opset)
    assert path.read_bytes() == model.SerializeToString()
    got = _ort_session(model).run(None, {"X": X})[0]
    want = ens.predict(X).reshape(got.shape)
    diff = float(np.max(np.abs(got - want)))
    print(f"{name} ({input_type} input, ml opset {ml_opset}): ONNX Runtime max |diff| vs "
          f"skltr = {diff:.3g}")
    # routing is exact: the only differences are float32 rounding of leaves and sums
    assert diff <= 4e-6 * max(1.0, float(np.max(np.abs(want))))
    if ml_opset == 5 and (ens.sum_dtype == "float32") == (input_type == "float32"):
        # TreeEnsemble sums in the input's type, in tree order (one thread)
        np.testing.assert_array_equal(got, want)
    # exact routing, seen through unique leaf values (small integers: exact in float32)
    uniq = _unique_leaves(ens)
    got_u = _ort_session(uniq.to_onnx(input_type=input_type, raw_score=True,
                                      ml_opset=ml_opset)).run(None, {"X": X})[0]
    np.testing.assert_array_equal(got_u, uniq.predict_raw(X).reshape(got_u.shape))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(["float32", "float64"]), st.sampled_from([3, 5]))
def test_onnx_routing_hypothesis(data, input_type, ml_opset):
    pytest.importorskip("onnx")
    ens, thr = data.draw(ensembles(max_trees=3, max_splits=8))
    ens = _unique_leaves(ens)
    X = data.draw(inputs(ens, thr, max_rows=16))
    try:
        model = ens.to_onnx(input_type=input_type, ml_opset=ml_opset)
    except ExportError as exc:
        assert any(m in str(exc) for m in ("categorical", "missing type 'zero'")), str(exc)
        return
    with np.errstate(over="ignore"):
        X = X.astype(input_type)
    X = _integer_categories(ens, _cat_safe_rows(ens, X))
    assume(X.shape[0] > 0)
    got = _ort_session(model).run(None, {"X": X})[0]
    want = ens.predict_raw(X).reshape(got.shape)
    # leaf ids are < 2**24 and the sum of a few of them is exact in float32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob", "count:poisson"])
def test_onnx_transforms(objective):
    pytest.importorskip("onnx")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = {"binary:logistic": rng.integers(0, 2, 300), "multi:softprob": rng.integers(0, 3, 300),
         "count:poisson": rng.poisson(2, 300)}[objective]
    params = {"objective": objective, "nthread": 1, "max_depth": 3}
    if objective.startswith("multi"):
        params["num_class"] = 3
    ens = from_xgboost(xgb.train(params, xgb.DMatrix(X, y), 5))
    got = _ort_session(ens.to_onnx()).run(None, {"X": X})[0]
    want = ens.predict(X).reshape(got.shape)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


def test_onnx_refusals(models, tmp_path):
    pytest.importorskip("onnx")
    cat, X = models["lgb_categorical"]
    _assert_refused(lambda p: cat.to_onnx(p, ml_opset=3), tmp_path / "a",
                    "ONNX \\(ai.onnx.ml opset 3\\).*categorical")
    assert cat.to_onnx().opset_import[1].version == 5  # the default for categorical models
    scaled = dataclasses.replace(models["gbdt_leafwise"][0], output_transform="sigmoid",
                                 transform_params={"scale": 2.0})
    got = _ort_session(scaled.to_onnx()).run(None, {"X": models["gbdt_leafwise"][1].astype(
        np.float32)})[0][:, 0]
    np.testing.assert_allclose(got, scaled.predict(models["gbdt_leafwise"][1].astype(
        np.float32)), rtol=2e-6)


# --------------------------------------------------------------------------- Treelite
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_treelite_gtil_predicts_like_skltr(models, name):
    gtil = pytest.importorskip("treelite.gtil")
    ens, X = models[name]
    X = _cat_safe_rows(ens, X)
    model = ens.to_treelite()
    want = dataclasses.replace(ens, sum_dtype="float64")  # Treelite sums float64 leaves
    for input_type in ("float64", "float32"):
        Xi = X.astype(input_type)
        got = gtil.predict(model, Xi, nthread=1, pred_margin=True).reshape(
            ens.predict_raw(Xi).shape)
        np.testing.assert_array_equal(got, want.predict_raw(Xi))
        diff = float(np.max(np.abs(got - ens.predict_raw(Xi))))
        print(f"{name} ({input_type}): Treelite GTIL max |diff| vs skltr = {diff:.3g}")
        prob = gtil.predict(model, Xi, nthread=1).reshape(got.shape)
        np.testing.assert_allclose(prob, want.predict(Xi), rtol=1e-6, atol=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(["float32", "float64"]))
def test_treelite_routing_hypothesis(data, input_type):
    gtil = pytest.importorskip("treelite.gtil")
    ens, thr = data.draw(ensembles(max_trees=3, max_splits=8))
    ens = _unique_leaves(ens)
    X = data.draw(inputs(ens, thr, max_rows=16))
    try:
        model = ens.to_treelite()
    except ExportError as exc:
        assert "missing type 'zero'" in str(exc), str(exc)
        return
    with np.errstate(over="ignore"):
        X = X.astype(input_type)
    X = _cat_safe_rows(ens, X)
    cat = (ens.left >= 0) & ((ens.flags & NodeFlags.CATEGORICAL) != 0)
    if np.any(cat):  # Treelite: categories above 2**24 (float32) are not in any set
        X = X[~np.any(np.abs(X[:, np.unique(ens.feature[cat])]) >= 2**24, axis=1)]
    assume(X.shape[0] > 0)
    got = gtil.predict(model, X, nthread=1, pred_margin=True)
    want = dataclasses.replace(ens, sum_dtype="float64").predict_raw(X)
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_tl2cgen_compiled_c_predicts_like_skltr(models, tmp_path):
    import shutil

    tl2cgen = pytest.importorskip("tl2cgen")
    if shutil.which("gcc") is None:
        pytest.skip("no C compiler (gcc)")
    ens, X = models["gbdt_leafwise"]
    lib = tmp_path / "model.so"
    tl2cgen.export_lib(ens.to_treelite(), toolchain="gcc", libpath=str(lib),
                       params={"parallel_comp": 1}, nthread=1)
    predictor = tl2cgen.Predictor(str(lib), nthread=1)
    X32 = X.astype(np.float32)
    got = predictor.predict(tl2cgen.DMatrix(X32), pred_margin=True).reshape(-1)
    np.testing.assert_array_equal(got, ens.predict_raw(X32))
    # float64 input: TL2cgen's C marks a missing entry by writing the int -1 over the double
    # (union Entry), so a double whose low 32 bits are all ones reads as missing -- e.g.
    # 1.2499999999999998, the double below 1.25. Exact on every other double.
    low_ones = np.any((X.view(np.uint64) & np.uint64(0xFFFFFFFF)) == np.uint64(0xFFFFFFFF),
                      axis=1)
    assert np.any(low_ones)  # the edge inputs include such doubles
    got = predictor.predict(tl2cgen.DMatrix(X[~low_ones]), pred_margin=True).reshape(-1)
    np.testing.assert_array_equal(got, ens.predict_raw(X[~low_ones]))


# --------------------------------------------------------------------------- estimators
def test_estimators_export(tmp_path):
    from sklearn.exceptions import NotFittedError

    from skltr.ranking import GPUHistGBDTRanker, RankBoostRanker
    from skltr.ranking._quickscorer_predictor import QuickScorerPredictor

    rng = np.random.default_rng(8)
    X, y, qid = _rank_data(rng, n_queries=20)
    for est in (GPUHistGBDTRanker(n_estimators=5, random_state=0),
                RankBoostRanker(n_estimators=10, random_state=0)):
        with pytest.raises(NotFittedError):
            est.to_lightgbm(tmp_path / "unfitted.txt")
        est.fit(X, y, qid=qid)
        est.to_lightgbm(tmp_path / "m.txt")
        booster = lgb.Booster(model_file=str(tmp_path / "m.txt"))
        np.testing.assert_array_equal(booster.predict(X), est.predict(X))
        est.to_xgboost(tmp_path / "m.json")
        margin = xgb.Booster(model_file=str(tmp_path / "m.json")).inplace_predict(
            X.astype(np.float32), predict_type="margin")
        np.testing.assert_allclose(margin, est.predict(X.astype(np.float32)), rtol=1e-5,
                                   atol=1e-6)
        est.to_xgboost_dump(tmp_path / "dump.json")
        assert len(json.loads((tmp_path / "dump.json").read_text())) == est.ensemble_.n_trees
        assert est.to_treelite() is not None
        if pytest.importorskip("onnx"):
            assert est.to_onnx() is not None
    booster = xgb.train({"nthread": 1, "max_depth": 3}, xgb.DMatrix(X, y), 4)
    qs = QuickScorerPredictor.from_model(booster)
    qs.to_lightgbm(tmp_path / "qs.txt")
    np.testing.assert_array_equal(
        lgb.Booster(model_file=str(tmp_path / "qs.txt")).predict(X.astype(np.float32),
                                                                   raw_score=True),
        dataclasses.replace(qs.ensemble_, sum_dtype="float64").predict_raw(
            X.astype(np.float32)))


def test_rule_ranker_cannot_export(tmp_path):
    from skltr.ranking import OnDemandRuleRanker

    rng = np.random.default_rng(9)
    X = rng.normal(size=(60, 3))
    ranker = OnDemandRuleRanker(max_rule_size=1).fit(X, rng.integers(0, 2, 60),
                                                      qid=np.repeat(np.arange(6), 10))
    for method, match in ((ranker.to_xgboost, "XGBoost JSON"),
                          (ranker.to_xgboost_dump, "XGBoost JSON dump"),
                          (ranker.to_lightgbm, "LightGBM"), (ranker.to_onnx, "ONNX")):
        _assert_refused(method, tmp_path / match.replace(" ", "_"),
                        f"{match}: OnDemandRuleRanker.*no fixed model.*predict time")
    with pytest.raises(ExportError, match="Treelite: OnDemandRuleRanker"):
        ranker.to_treelite()


# --------------------------------------------------------------------------- CLI
def test_cli_export(tmp_path, capsys):
    from skltr.cli import main

    rng = np.random.default_rng(10)
    X = rng.normal(size=(200, 3))
    y = X[:, 0] + rng.normal(size=200) * 0.1
    booster = lgb.train({"num_leaves": 7, "verbose": -1, "num_threads": 1},
                        lgb.Dataset(X, y, params={"verbose": -1}), 5)
    src = tmp_path / "src.txt"
    booster.save_model(str(src))
    for target, name in (("xgboost", "m.json"), ("lightgbm", "m.txt"),
                         ("lightgbm-json", "m.lgb.json"), ("xgboost-dump", "dump.json")):
        assert main(["export", str(src), "--to", target, "-o", str(tmp_path / name)]) == 0
    assert "(xgboost-dump)" in capsys.readouterr().out
    np.testing.assert_array_equal(
        lgb.Booster(model_file=str(tmp_path / "m.txt")).predict(X), booster.predict(X))
    X32 = X.astype(np.float32)
    xgb_margin = xgb.Booster(model_file=str(tmp_path / "m.json")).inplace_predict(X32)
    np.testing.assert_allclose(xgb_margin, booster.predict(X32), rtol=1e-5, atol=1e-6)
    assert main(["export", str(src), "--to", "xgboost-dump", "-o", str(tmp_path / "d2.json"),
                 "--feature-names", "a,b,c", "--base-score", "drop"]) == 0
    assert json.loads((tmp_path / "d2.json").read_text())[0]["split"] in ("a", "b", "c")
    if pytest.importorskip("onnx"):
        assert main(["export", str(src), "--to", "onnx", "-o", str(tmp_path / "m.onnx")]) == 0
    # a refused export: one line naming the target and the reason, no file
    codes = rng.integers(0, 5, 200)
    cat = from_lightgbm(lgb.train(
        {"num_leaves": 7, "verbose": -1, "num_threads": 1, "min_data_per_group": 5,
         "cat_smooth": 1},
        lgb.Dataset(np.c_[X[:, :2], codes], y + 3 * (codes % 2), categorical_feature=[2],
                    params={"verbose": -1}), 3))
    assert np.any((cat.flags & NodeFlags.CATEGORICAL) != 0)
    cat.save(tmp_path / "cat.json")
    out_dir = tmp_path / "refused"
    out_dir.mkdir()
    capsys.readouterr()
    assert main(["export", str(tmp_path / "cat.json"), "--to", "xgboost-dump", "-o",
                 str(out_dir / "dump.json")]) == 2
    err = capsys.readouterr().err
    assert "skltr export: error: cannot export to XGBoost JSON dump" in err
    assert "categorical" in err and os.listdir(out_dir) == []


# --------------------------------------------------------------------------- docs
def test_export_docs_examples_run(tmp_path, monkeypatch):
    """The Python blocks of docs/user_guide/export.rst run as written, in order."""
    import re
    from pathlib import Path

    pytest.importorskip("onnxruntime")
    pytest.importorskip("treelite")
    page = Path(__file__).resolve().parents[1] / "docs" / "user_guide" / "export.rst"
    text = page.read_text()
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", text)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for block in blocks:
        code = "\n".join(line[4:] for line in block.splitlines())
        exec(compile(code, str(page), "exec"), namespace)  # noqa: S102 - our own docs


# --------------------------------------------------------------------------- fitted models
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), library=st.sampled_from(["xgboost", "lightgbm", "skltr"]),
       nan_frac=st.sampled_from([0.0, 0.2]), categorical=st.booleans(),
       leaves=st.integers(2, 12))
def test_fitted_models_export_hypothesis(seed, library, nan_frac, categorical, leaves):
    """Freshly fitted models of every origin: the XGBoost, Treelite, ONNX and LightGBM
    exports route as skltr does and score in their arithmetic, bit for bit."""
    import pandas as pd

    from skltr.ranking import GPUHistGBDTRanker

    rng = np.random.default_rng(seed)
    n = 240
    X = np.round(rng.normal(size=(n, 3)), int(rng.integers(1, 4)))
    codes = rng.integers(0, 12, n)
    y = np.nan_to_num(X[:, 0]) + (codes % 3) * categorical + rng.normal(size=n) * 0.1
    X[rng.random(X.shape) < nan_frac] = np.nan
    if library == "xgboost":
        if categorical:
            df = pd.DataFrame({f"c{i}": X[:, i] for i in range(3)})
            df["k"] = pd.Categorical.from_codes(codes, categories=list(range(12)))
            dm = xgb.DMatrix(df, y, enable_categorical=True)
            X = np.c_[X, codes]
        else:
            dm = xgb.DMatrix(X, y)
        ens = from_xgboost(xgb.train({"max_leaves": leaves, "grow_policy": "lossguide",
                                      "nthread": 1, "max_cat_to_onehot": 1}, dm, 4))
    elif library == "lightgbm":
        if categorical:
            X = np.c_[X, codes]
        ens = from_lightgbm(_lgb_train({"num_leaves": leaves, "min_data_per_group": 5,
                                        "cat_smooth": 1, "min_data_in_leaf": 5}, X, y, 4,
                                       categorical=[3] if categorical else ()))
    else:
        ens = GPUHistGBDTRanker(n_estimators=4, max_leaves=leaves, random_state=seed).fit(
            X, np.clip(np.round(y), 0, 4).astype(int), qid=np.repeat(np.arange(24), 10)
        ).ensemble_
    Xt = _cat_safe_rows(ens, _edge_inputs(ens, X, rng))
    with np.errstate(over="ignore"):
        X32 = Xt.astype(np.float32)
    if refuses_inf(ens):  # rows whose float32 form overflows to inf are refused by skltr
        keep = ~np.isinf(X32).any(axis=1)
        Xt, X32 = Xt[keep], X32[keep]
    if ens.precision == "float32" and np.any((ens.flags & NodeFlags.CATEGORICAL) != 0):
        # an XGBoost model rounds 2.9999999999999996 to category 3; a double-reading target
        # truncates it to 2 (the docs say so): categorical XGBoost models get float32 values
        Xt = X32.astype(np.float64)
    doc = xgboost_document(ens)
    _assert_xgb_routes_like(ens, X32)
    booster = xgb.Booster(model_file=bytearray(json.dumps(doc).encode()))
    np.testing.assert_array_equal(_xgb_margin(booster, X32),
                                  _xgb_arithmetic(ens).predict_raw(X32))
    # Treelite (GTIL) and ONNX Runtime on the same inputs
    gtil = pytest.importorskip("treelite.gtil")
    want64 = dataclasses.replace(ens, sum_dtype="float64")
    for Xi in (Xt, X32):
        got = gtil.predict(ens.to_treelite(), Xi, nthread=1, pred_margin=True)
        np.testing.assert_array_equal(got.reshape(-1), want64.predict_raw(Xi))
    pytest.importorskip("onnx")
    Xo = _integer_categories(ens, Xt)
    for input_type in ("float32", "float64"):
        with np.errstate(over="ignore"):
            Xi = Xo.astype(input_type)
        uniq = _unique_leaves(ens)
        got = _ort_session(uniq.to_onnx(input_type=input_type)).run(None, {"X": Xi})[0]
        np.testing.assert_array_equal(got.reshape(-1), uniq.predict_raw(Xi))
    from skltr.trees._export_lightgbm import lightgbm_text

    try:
        text = lightgbm_text(ens)
    except ExportError as exc:  # XGBoost categorical nodes sending NaN into the set
        assert library == "xgboost" and "NaN into its category set" in str(exc)
        return
    Xl = _not_in_zero_band(_trunc_safe_rows(ens, Xt))
    got = lgb.Booster(model_str=text).predict(Xl, raw_score=True)
    np.testing.assert_array_equal(got, dataclasses.replace(ens, sum_dtype="float64")
                                  .predict_raw(Xl))


def test_xgboost_categorical_round_trip(tmp_path):
    """XGBoost (categorical, trained on a DataFrame) -> skltr -> XGBoost: the export, given
    the category codes, predicts what the original predicts on the frame, bit for bit."""
    import pandas as pd

    rng = np.random.default_rng(11)
    n = 400
    codes = rng.integers(0, 40, n)
    x = rng.normal(size=n)
    y = (codes % 4) + x + rng.normal(size=n) * 0.1
    df = pd.DataFrame({"x": x, "k": pd.Categorical.from_codes(codes, categories=list(range(40)))})
    df.loc[rng.random(n) < 0.1, "k"] = np.nan
    booster = xgb.train({"max_depth": 4, "nthread": 1, "max_cat_to_onehot": 1},
                        xgb.DMatrix(df, y, enable_categorical=True), 6)
    ens = from_xgboost(booster)
    try:
        ens.to_xgboost(tmp_path / "again.json")
    except ExportError as exc:  # pragma: no cover - depends on the fit
        pytest.skip(str(exc))
    again = xgb.Booster(model_file=str(tmp_path / "again.json"))
    X_codes = np.c_[x, np.where(df["k"].isna(), np.nan, df["k"].cat.codes)].astype(np.float32)
    np.testing.assert_array_equal(
        again.inplace_predict(X_codes, predict_type="margin"),
        booster.predict(xgb.DMatrix(df, enable_categorical=True), output_margin=True))


def test_sparse_absent_entries_differ_as_documented(tmp_path):
    """docs: an entry absent from a sparse row is missing to XGBoost and Treelite's GTIL,
    0.0 to skltr's own models and LightGBM (the model formats cannot record it)."""
    import scipy.sparse as sp

    ens = TreeEnsemble(tree_ptr=[0, 3], feature=[0, -1, -1], threshold=[0.5, 0, 0],
                       left=[1, -1, -1], right=[2, -1, -1], value=[0, 1.0, 2.0], n_features=2,
                       flags=[NodeFlags.MISSING_NAN << NodeFlags.MISSING_SHIFT, 0, 0])
    X = sp.csr_matrix(np.array([[0.0, 1.0]]))
    assert ens.predict_raw(X)[0] == 1.0  # absent = 0.0 <= 0.5: left
    ens.to_xgboost(tmp_path / "m.json")
    booster = xgb.Booster(model_file=str(tmp_path / "m.json"))
    assert booster.predict(xgb.DMatrix(X), output_margin=True)[0] == 2.0  # missing: right
    ens.to_lightgbm(tmp_path / "m.txt")
    assert lgb.Booster(model_file=str(tmp_path / "m.txt")).predict(X)[0] == 1.0
    gtil = pytest.importorskip("treelite.gtil")
    assert gtil.predict(ens.to_treelite(), X, pred_margin=True).ravel()[0] == 2.0


def test_lightgbm_export_keeps_pandas_categorical(tmp_path):
    """A LightGBM model trained on a DataFrame: the export carries pandas_categorical, so
    LightGBM re-codes a frame whose categories come in another order exactly as before."""
    import pandas as pd

    rng = np.random.default_rng(12)
    n = 400
    df = pd.DataFrame({"x": rng.normal(size=n),
                       "k": pd.Categorical(rng.choice(["a", "b", "c", "d"], n))})
    y = df["x"] + (df["k"].cat.codes % 2)
    booster = lgb.train({"num_leaves": 7, "verbose": -1, "num_threads": 1,
                         "min_data_per_group": 5, "cat_smooth": 1}, lgb.Dataset(df, y), 5)
    from_lightgbm(booster).to_lightgbm(tmp_path / "m.txt")
    again = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    assert again.pandas_categorical == [["a", "b", "c", "d"]]
    shuffled = df.assign(k=pd.Categorical(df["k"].astype(str), categories=["d", "c", "b", "a"]))
    np.testing.assert_array_equal(again.predict(shuffled), booster.predict(shuffled))


def test_xgboost_export_keeps_training_categories(tmp_path):
    """An XGBoost model trained on a DataFrame with string and integer category columns:
    the export writes the same ``cats`` document, so XGBoost re-codes a frame whose
    categories come in another order exactly as the original does."""
    import pandas as pd

    rng = np.random.default_rng(13)
    n = 300
    names = ["pear", "apple", "fig", "\u00e9t\u00e9"]
    df = pd.DataFrame({"x": rng.normal(size=n),
                       "s": pd.Categorical(rng.choice(names, n), categories=names),
                       "i": pd.Categorical(rng.choice([30, 10, 20], n))})
    y = df["x"] + (df["s"].cat.codes % 2) + df["i"].cat.codes
    booster = xgb.train({"max_depth": 3, "nthread": 1, "max_cat_to_onehot": 1},
                        xgb.DMatrix(df, y, enable_categorical=True), 3)
    from_xgboost(booster).to_xgboost(tmp_path / "m.json")
    mine = json.loads((tmp_path / "m.json").read_text())["learner"]
    theirs = json.loads(booster.save_raw("json"))["learner"]
    assert (mine["gradient_booster"]["model"]["cats"]
            == theirs["gradient_booster"]["model"]["cats"])
    assert mine["feature_types"] == theirs["feature_types"]
    again = xgb.Booster(model_file=str(tmp_path / "m.json"))
    reordered = df.assign(i=df["i"].cat.reorder_categories([30, 20, 10]),
                          s=df["s"].cat.reorder_categories(names[::-1]))
    for frame in (df, reordered):
        dm = xgb.DMatrix(frame, enable_categorical=True)
        np.testing.assert_array_equal(again.predict(dm), booster.predict(dm))


def test_a_leaf_beyond_float32_once_weighted_is_refused_by_name(tmp_path):
    # 3e38 is a float32 number; times its tree weight 2 it is not: XGBoost (float32 leaves)
    # refuses the export by target and node, while the float64 targets take it
    ens = TreeEnsemble(tree_ptr=[0, 3], feature=[0, -1, -1], threshold=[0.5, 0, 0],
                       left=[1, -1, -1], right=[2, -1, -1], value=[0, 3e38, 1.0], n_features=1,
                       tree_weight=[2.0])
    with pytest.raises(ExportError, match=r"XGBoost JSON.*node 1's leaf value becomes inf"):
        ens.to_xgboost(tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()
    ens.to_lightgbm(tmp_path / "m.txt")  # float64 leaves: 6e38
    assert lgb.Booster(model_file=str(tmp_path / "m.txt")).predict(np.zeros((1, 1)))[0] == 6e38
