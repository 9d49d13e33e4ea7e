"""Continued training of the GBDT ranker (issue #29): ``fit(..., init_model=...)`` and
``warm_start``.

The reference is the one long fit: with the same data, ``random_state`` and settings, a model
continued for ``m`` rounds from an ``n``-round model is the ``n + m``-round model, tree for
tree and bit for bit (``TreeEnsemble.equals``), its eval curve the long fit's from round ``n``
on; and the continued model's first ``n`` trees score as the starting model, walked tree by
tree (``tests/naive_trees.py``).
"""

import pickle

import numpy as np
import pytest
from scipy import sparse
from naive_trees import naive_predict_raw

from skltr import GPUHistGBDTRanker
from skltr.datasets import make_ranking
from skltr.trees import NodeFlags

KW = dict(random_state=3, max_leaves=7, n_jobs=2)


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=90, docs_per_query=20, n_features=10, n_informative=5,
                             random_state=0)
    X[::11, 3] = np.nan
    return X, y, qid


def _fit(n, data, **kw):
    X, y, qid = data
    return GPUHistGBDTRanker(n_estimators=n, **{**KW, **kw}).fit(X, y, qid=qid)


@pytest.mark.parametrize("settings", [
    {}, {"growth": "depthwise", "max_depth": 3}, {"subsample": 0.7, "colsample_bytree": 0.5},
    {"objective": "rank_xendcg"}, {"objective": "rank_pairwise", "hist_mode": "float"}])
def test_continuing_equals_the_long_fit_bit_for_bit(data, settings):
    X, y, qid = data
    long = _fit(25, data, **settings)
    start = _fit(9, data, **settings)
    more = GPUHistGBDTRanker(n_estimators=16, **{**KW, **settings}).fit(
        X, y, qid=qid, init_model=start)
    assert more.ensemble_.equals(long.ensemble_)
    assert more.n_estimators_ == more.n_iter_ == 25
    np.testing.assert_array_equal(more.predict(X), long.predict(X))
    np.testing.assert_array_equal(more.feature_importance("split"),
                                  long.feature_importance("split"))
    np.testing.assert_allclose(more.feature_importance("gain"), long.feature_importance("gain"),
                               rtol=1e-12)


@pytest.mark.parametrize("kind", ["ranker", "ensemble", "file"])
def test_every_form_of_the_starting_model(data, kind, tmp_path):
    X, y, qid = data
    long, start = _fit(14, data), _fit(6, data)
    init = {"ranker": start, "ensemble": start.to_tree_ensemble(),
            "file": tmp_path / "start.json"}[kind]
    if kind == "file":
        start.save_model(init)
    more = GPUHistGBDTRanker(n_estimators=8, **KW).fit(X, y, qid=qid, init_model=str(init)
                                                       if kind == "file" else init)
    assert more.ensemble_.equals(long.ensemble_)
    # the first trees score as the starting model did, walked one row at a time
    np.testing.assert_array_equal(more.predict(X[:40], iteration_range=(0, 6)),
                                  naive_predict_raw(start.ensemble_, X[:40]))


def test_eval_curve_and_early_stopping_continue_the_long_fit(data):
    X, y, qid = data
    tr, va = qid < 70, qid >= 70
    ev = [(X[va], y[va], qid[va])]
    long = GPUHistGBDTRanker(n_estimators=20, **KW).fit(X[tr], y[tr], qid=qid[tr], eval_set=ev)
    start = GPUHistGBDTRanker(n_estimators=8, **KW).fit(X[tr], y[tr], qid=qid[tr])
    more = GPUHistGBDTRanker(n_estimators=12, **KW).fit(X[tr], y[tr], qid=qid[tr],
                                                        eval_set=ev, init_model=start)
    (curve,) = long.evals_result_["valid_0"].values()
    (tail,) = more.evals_result_["valid_0"].values()
    assert tail == curve[8:]
    stop = GPUHistGBDTRanker(n_estimators=200, learning_rate=0.6, early_stopping=True,
                             n_iter_no_change=2, **KW).fit(X[tr], y[tr], qid=qid[tr],
                                                           eval_set=ev, init_model=start)
    assert stop.best_iteration_ == stop.n_estimators_ > 8
    assert stop.n_iter_ > stop.best_iteration_


def test_warm_start_raises_n_estimators(data):
    X, y, qid = data
    long = _fit(22, data)
    ranker = GPUHistGBDTRanker(n_estimators=10, warm_start=True, **KW).fit(X, y, qid=qid)
    first = ranker.ensemble_
    ranker.set_params(n_estimators=22).fit(X, y, qid=qid)
    assert ranker.ensemble_.equals(long.ensemble_)
    assert first.n_trees == 10  # the earlier model is not changed in place
    with pytest.warns(UserWarning, match="no round was added"):
        ranker.fit(X, y, qid=qid)
    assert ranker.ensemble_.equals(long.ensemble_)
    # another objective cannot continue this model (the model records its own)
    ranker.set_params(n_estimators=30, objective="regression")
    with pytest.raises(ValueError, match="objective='lambdarank'"):
        ranker.fit(X, y, qid=qid)
    ranker.set_params(objective="lambdarank")
    back = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(back.predict(X), long.predict(X))


def test_importance_type_picks_what_feature_importances_sums(data):
    model = _fit(10, data, importance_type="split")
    counts = model.feature_importance("split")
    np.testing.assert_allclose(model.feature_importances_, counts / counts.sum())
    gains = model.feature_importance("gain")
    np.testing.assert_allclose(model.set_params(importance_type="gain").feature_importances_,
                               gains / gains.sum())


def _lightgbm_booster(data, rounds=3):
    lgb = pytest.importorskip("lightgbm")

    X, y, qid = data
    return lgb.train({"objective": "lambdarank", "num_leaves": 7, "verbose": -1,
                      "min_data_in_leaf": 5}, lgb.Dataset(X, y, group=np.bincount(qid)),
                     num_boost_round=rounds)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_lightgbm_model_continues_from_its_own_scores(data, dtype):
    from skltr._gbdt.continuation import continuation_from
    from skltr.convert import to_tree_ensemble

    X, y, qid = data
    X = X.astype(dtype)
    booster = _lightgbm_booster(data, rounds=8)
    want = booster.predict(X, raw_score=True)
    cont = continuation_from(to_tree_ensemble(booster), n_features=X.shape[1],
                             objective="lambdarank")
    np.testing.assert_array_equal(cont.scores(X), want)  # the rounds start from these
    more = GPUHistGBDTRanker(n_estimators=6, **KW).fit(X, y, qid=qid,
                                                       init_model=to_tree_ensemble(booster))
    assert more.n_estimators_ == 14
    np.testing.assert_array_equal(more.predict(X, iteration_range=(0, 8)), want)
    # the Booster itself, as LightGBM's own init_model takes it: converted, the same model
    again = GPUHistGBDTRanker(n_estimators=6, **KW).fit(X, y, qid=qid, init_model=booster)
    assert again.ensemble_.equals(more.ensemble_)
    assert more.score(X, y, qid=qid) > GPUHistGBDTRanker(n_estimators=1, **KW).fit(
        X, y, qid=qid).score(X, y, qid=qid)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_xgboost_model_continues_from_its_own_scores(data, dtype):
    # XGBoost's float32(x) < t rewritten as x <= float32_below(t): the same leaf for every
    # row, values at and around the thresholds included; the rounds start from XGBoost's
    # own margins, and the kept trees sum them in float64 (float32 rounding apart)
    xgb = pytest.importorskip("xgboost")
    from skltr._gbdt.continuation import continuation_from
    from skltr.convert import to_tree_ensemble
    from skltr.trees._traversal import apply

    X, y, qid = data
    X = X.astype(dtype)
    X[::13, 2] = np.nan
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 4, "eta": 0.3},
                        xgb.DMatrix(X, y, qid=qid), num_boost_round=8)
    original = to_tree_ensemble(booster)
    cont = continuation_from(booster, n_features=X.shape[1], objective="lambdarank")
    # probes at every threshold, one float32 step and one double step either side of it
    internal = original.left >= 0
    f, t = original.feature[internal], original.threshold[internal]
    t32 = t.astype(np.float32)
    probes = np.repeat(np.asarray(X[:len(t)], np.float64), 5, axis=0)[:5 * len(t)]
    values = np.stack([t, np.nextafter(t32, np.float32(-np.inf)).astype(np.float64),
                       np.nextafter(t32, np.float32(np.inf)).astype(np.float64),
                       np.nextafter(t, -np.inf), np.nextafter(t, np.inf)], axis=1).ravel()
    probes[np.arange(probes.shape[0]), np.repeat(f, 5)[:probes.shape[0]]] = values[
        :probes.shape[0]]
    for P in (np.asarray(X, np.float64), probes):
        np.testing.assert_array_equal(apply(cont.ensemble, P), apply(original, P))
    want = booster.predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_array_equal(cont.scores(X), want.astype(np.float64))
    more = GPUHistGBDTRanker(n_estimators=6, **KW).fit(X, y, qid=qid, init_model=booster)
    assert more.n_estimators_ == 14
    np.testing.assert_allclose(more.predict(X, iteration_range=(0, 8)), want, rtol=0,
                               atol=1e-6 * max(1.0, np.abs(want).max()))
    assert more.score(X, y, qid=qid) > ndcg_of(want, y, qid)
    with pytest.raises(ValueError, match="dense X"):
        GPUHistGBDTRanker(n_estimators=2, **KW).fit(sparse.csr_matrix(np.nan_to_num(X)), y,
                                                    qid=qid, init_model=booster)


def ndcg_of(scores, y, qid):
    from skltr.metrics import ndcg_score

    return ndcg_score(y, scores, qid=qid, k=10)


def test_a_lightgbm_model_with_categorical_splits_continues_from_its_own_scores(data):
    # LightGBM's categorical nodes (its routing rules kept per node) beside skltr's
    lgb = pytest.importorskip("lightgbm")
    from skltr.convert import to_tree_ensemble

    X, y, qid = data
    X = X.copy()
    X[:, 3] = np.floor(np.abs(X[:, 3]) * 7) % 12  # 12 categories
    X[::11, 3] = np.nan
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 7, "verbose": -1,
                         "min_data_in_leaf": 5, "min_data_per_group": 5, "cat_smooth": 1},
                        lgb.Dataset(X, y, group=np.bincount(qid), categorical_feature=[3]),
                        num_boost_round=8)
    start = to_tree_ensemble(booster)
    assert np.any(start.flags & NodeFlags.CATEGORICAL)
    P = X.copy()
    P[::7, 3] = 40.0  # a category unseen by both
    want = booster.predict(P, raw_score=True)
    more = GPUHistGBDTRanker(n_estimators=6, categorical_features=[3], **KW).fit(
        X, y, qid=qid, init_model=booster)
    assert more.n_estimators_ == 14
    np.testing.assert_array_equal(more.predict(P, iteration_range=(0, 8)), want)
    assert np.any(more.ensemble_.select_trees(8, 14).flags & NodeFlags.CATEGORICAL)


@pytest.mark.parametrize("case", ["features", "objective", "unfitted", "type", "xgboost",
                                  "lightgbm-objective", "both", "fewer"])
def test_bad_starting_models_are_refused_and_change_nothing(data, case):
    X, y, qid = data
    ranker = GPUHistGBDTRanker(n_estimators=5, **KW).fit(X, y, qid=qid)
    before = ranker.predict(X)
    start = _fit(4, data)
    fit_kw, err, match = {}, ValueError, "init_model"
    if case == "features":
        fit_kw["init_model"] = GPUHistGBDTRanker(n_estimators=2, **KW).fit(X[:, :6], y, qid=qid)
        match = "reads 6 features, but X has 10"
    elif case == "objective":
        fit_kw["init_model"] = _fit(2, data, objective="regression")
        match = "objective='regression'"
    elif case == "unfitted":
        fit_kw["init_model"] = GPUHistGBDTRanker()
        match = "unfitted"
    elif case == "type":
        fit_kw["init_model"], err = 5, TypeError
    elif case == "xgboost":
        xgb = pytest.importorskip("xgboost")

        fit_kw["init_model"] = xgb.XGBRanker(missing=-999.0, n_estimators=2).fit(
            X, y, qid=qid)  # a missing sentinel skltr's trees do not read
        match = "missing=-999"
    elif case == "lightgbm-objective":
        from skltr.convert import to_tree_ensemble

        fit_kw["init_model"] = to_tree_ensemble(_lightgbm_booster(data))
        ranker.set_params(objective="rank_pairwise")
        match = "objective='lambdarank'"
    elif case == "both":
        ranker.set_params(warm_start=True)
        fit_kw["init_model"] = start
        match = "one or the other"
    else:  # fewer
        ranker.set_params(warm_start=True, n_estimators=3)
        match = "n_estimators=3 is fewer"
    with pytest.raises(err, match=match):
        ranker.fit(X, y, qid=qid, **fit_kw)
    assert ranker.n_estimators_ == 5
    np.testing.assert_array_equal(ranker.predict(X), before)


def test_dask_continues_as_the_local_fit(data):
    # init_model and warm_start on a LocalCluster of 2 workers: the local long fit's trees
    distributed = pytest.importorskip("distributed")
    from skltr.dask import DaskGPUHistGBDTRanker

    X, y, qid = data
    long = _fit(20, data)
    start = _fit(7, data)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        kw = {**KW, "n_jobs": 1}
        more = DaskGPUHistGBDTRanker(client=client, n_estimators=13, **kw).fit(
            X, y, qid=qid, init_model=start)
        assert more.ensemble_.equals(long.ensemble_)
        warm = DaskGPUHistGBDTRanker(client=client, n_estimators=7, warm_start=True,
                                     **kw).fit(X, y, qid=qid)
        warm.set_params(n_estimators=20).fit(X, y, qid=qid)
        assert warm.ensemble_.equals(long.ensemble_)
        with pytest.raises(ValueError, match="reads 10 features, but X has 6"):
            DaskGPUHistGBDTRanker(client=client, n_estimators=3, **kw).fit(
                X[:, :6], y, qid=qid, init_model=start)
