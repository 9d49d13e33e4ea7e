"""skltr.dask: the distributed model equals the one-process model bit for bit.

Clusters of 2 and 3 worker processes (``distributed.LocalCluster``); the reference is
``GPUHistGBDTRanker`` fitted on the same rows in one process. "Equal" is the whole model
document (every threshold, leaf value and split gain) and the predictions, compared exactly.
"""

import pickle
import threading
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

from skltr import GPUHistGBDTRanker, QuickScorerPredictor  # noqa: E402
from skltr.datasets import make_ranking, simulate_clicks  # noqa: E402
from skltr.dask import DaskGPUHistGBDTRanker, predict  # noqa: E402


def _data(seed=1, n_queries=160, docs=25, n_features=8):
    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=docs, n_features=n_features,
                             n_informative=4, random_state=seed)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))  # queries interleaved: the layout is the driver's job
    X, y, qid = X[perm], y[perm], qid[perm]
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y, qid, rng.random(len(y)) + 0.5


@pytest.fixture(scope="module", params=[2, 3], ids=["2workers", "3workers"])
def client(request):
    with distributed.LocalCluster(n_workers=request.param, threads_per_worker=1,
                                  processes=True, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _doc(model):
    return model.ensemble_.to_document()


def _assert_same(local, dist):
    assert _doc(dist) == _doc(local)
    assert dist.n_iter_ == local.n_iter_ and dist.best_iteration_ == local.best_iteration_
    assert dist.evals_result_ == local.evals_result_
    np.testing.assert_array_equal(dist.feature_importances_, local.feature_importances_)


def _spread(client, X, chunks=None):
    """``X`` as a dask Array whose blocks (``chunks`` rows; default one per worker) are
    placed on the workers in turn: every worker holds rows, whatever the scheduler would do."""
    workers = sorted(client.nthreads())
    if chunks is None:
        chunks = _chunks(len(X), np.linspace(0, len(X), len(workers) + 1)[1:-1].astype(int))
    bounds = np.concatenate([[0], np.cumsum(chunks)])
    blocks = [da.from_delayed(client.scatter(X[a:b], workers=[workers[i % len(workers)]]),
                              (b - a, X.shape[1]), X.dtype)
              for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
    return da.concatenate(blocks)


def _n_workers(client):
    return len(client.nthreads())  # scheduler_info() may race with its refresh


def _chunks(n, cuts):
    """Row chunks at ``cuts`` (empty chunks and one-row chunks allowed)."""
    bounds = [0, *cuts, n]
    return tuple(int(b - a) for a, b in zip(bounds[:-1], bounds[1:]))


KW = dict(n_estimators=12, random_state=3, n_jobs=1)


@pytest.mark.parametrize("params", [
    {},
    {"objective": "rank_xendcg", "subsample": 0.7, "colsample_bytree": 0.6},
    {"objective": "regression", "min_samples_leaf_counts": "rows"},
    {"objective": "rank_pairwise", "growth": "depthwise", "max_depth": 4},
    {"objective": "lambdarank", "early_stopping": True, "n_estimators": 40},
    {"objective": "yetirank", "yetirank_permutations": 3, "yetirank_decay": 0.7},
    {"objective": "yetirank", "growth": "symmetric", "max_depth": 4, "random_strength": 1.0,
     "min_samples_leaf": 1},
    {"growth": "symmetric", "max_depth": 3, "min_samples_leaf_counts": "rows",
     "random_strength": 2.0, "subsample": 0.7},
], ids=["lambdarank", "xendcg-subsample", "regression-rows", "pairwise-depthwise",
        "holdout-early-stopping", "yetirank", "symmetric-noise", "symmetric-rows-subsample"])
def test_same_model_as_one_process(client, params):
    X, y, qid, w = _data()
    kw = {**KW, **params}
    local = GPUHistGBDTRanker(**kw).fit(X, y, qid=qid, sample_weight=w)
    # unequal blocks, empty blocks, a one-row block; queries straddle every boundary
    chunks = _chunks(len(y), [0, 700, 701, 2400, 2400])
    dist = DaskGPUHistGBDTRanker(**kw).fit(
        _spread(client, X, chunks), da.from_array(y, chunks=1000),
        qid=da.from_array(qid, chunks=333), sample_weight=w)
    assert dist.timings_["workers"] == _n_workers(client)
    _assert_same(local, dist)
    got = dist.predict(da.from_array(X, chunks=(chunks, X.shape[1])))
    assert isinstance(got, da.Array) and got.chunks[0] == chunks
    np.testing.assert_array_equal(got.compute(), local.predict(X))
    assert dist.score(da.from_array(X, chunks=(999, -1)), da.from_array(y, chunks=500),
                      qid=qid) == local.score(X, y, qid=qid)


@pytest.mark.parametrize("n_blocks", [1, 2, 7, 40])
def test_any_partitioning_gives_the_same_model(client, n_blocks):
    X, y, qid, _ = _data(seed=4)
    local = GPUHistGBDTRanker(**KW).fit(X, y, qid=qid)
    size = -(-len(y) // n_blocks)
    chunks = _chunks(len(y), range(size, len(y), size))
    dist = DaskGPUHistGBDTRanker(**KW).fit(_spread(client, X, chunks), y, qid=qid)
    assert dist.timings_["workers"] == min(n_blocks, _n_workers(client))
    _assert_same(local, dist)


@pytest.mark.parametrize("shared_memory", [True, False], ids=["shared-memory", "tcp-star"])
def test_both_all_reduces_give_the_same_model(client, shared_memory):
    X, y, qid, w = _data(seed=6)
    local = GPUHistGBDTRanker(**KW).fit(X, y, qid=qid, sample_weight=w)
    dist = DaskGPUHistGBDTRanker(**KW)
    dist._shared_memory = shared_memory  # the benchmarks' switch
    dist.fit(_spread(client, X), y, qid=qid, sample_weight=w)
    # the workers of a LocalCluster share this host
    assert dist.timings_["communicator"] == ("shared-memory" if shared_memory else "tcp-star")
    assert dist.timings_["allreduce_calls"] > 0
    # every rank's figures: the same reductions everywhere, barriers counted on shared memory
    ranks = dist.timings_["ranks"]
    assert len(ranks) == dist.timings_["workers"]
    assert {r["allreduce_calls"] for r in ranks} == {dist.timings_["allreduce_calls"]}
    assert all(r["fit_s"] > r["allreduce_s"] >= r["barrier_s"] >= 0 for r in ranks)
    assert all(r["fit_s"] >= r["boosting_s"] > 0 for r in ranks)
    assert all((r["barriers"] >= r["allreduce_calls"]) == shared_memory for r in ranks)
    _assert_same(local, dist)


def test_numpy_and_pandas_input_is_scattered(client):
    X, y, qid, _ = _data(seed=5)
    local = GPUHistGBDTRanker(**KW).fit(X, y, qid=qid)
    _assert_same(local, DaskGPUHistGBDTRanker(**KW).fit(X, y, qid=qid))


def test_dask_dataframe_with_a_qid_column_and_eval_sets(client):
    X, y, qid, _ = _data(seed=6)
    cols = [f"f{i}" for i in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols).assign(qid=qid, y=y)
    train, valid = df.iloc[:3000], df.iloc[3000:]
    kw = {**KW, "n_estimators": 40, "early_stopping": True, "n_iter_no_change": 3,
          "eval_at": [5, 10]}
    local = GPUHistGBDTRanker(**kw).fit(
        train[cols], train["y"], qid=train["qid"],
        eval_set=[(valid[cols], valid["y"], valid["qid"]), (train[cols], train["y"],
                                                           train["qid"])])
    dd = pytest.importorskip("dask.dataframe")
    dtrain, dvalid = dd.from_pandas(train, npartitions=5), dd.from_pandas(valid, npartitions=3)
    dist = DaskGPUHistGBDTRanker(**kw).fit(
        dtrain[cols], dtrain["y"], qid=dtrain["qid"],
        eval_set=[(dvalid[cols], dvalid["y"], dvalid["qid"]),
                  (dtrain[cols], dtrain["y"], dtrain["qid"])])
    assert local.best_iteration_ is not None
    _assert_same(local, dist)
    assert list(dist.feature_names_in_) == cols
    scores = dist.predict(dvalid[cols])
    assert isinstance(scores, dd.Series) and scores.npartitions == dvalid.npartitions
    out = scores.compute()
    pd.testing.assert_index_equal(out.index, valid.index)
    np.testing.assert_array_equal(out.to_numpy(), local.predict(valid[cols]))


def test_predict_any_model_block_by_block(client):
    lgb = pytest.importorskip("lightgbm")
    X, y, qid, _ = _data(seed=7)
    model = lgb.LGBMRegressor(n_estimators=20, num_leaves=15, verbose=-1).fit(X, y)
    qs = QuickScorerPredictor.from_model(model)
    out = predict(qs, da.from_array(X, chunks=(777, -1)), client=client)
    assert out.chunks[0] == da.from_array(X, chunks=(777, -1)).chunks[0]
    np.testing.assert_array_equal(out.compute(), model.predict(X))
    out = predict(qs, da.from_array(X, chunks=(500, -1)))  # the model inside the graph
    np.testing.assert_array_equal(out.compute(), model.predict(X))
    with pytest.raises(TypeError, match="dask Array or DataFrame"):
        predict(qs, X)


def test_to_local_pickle_and_json(client, tmp_path):
    X, y, qid, _ = _data(seed=8)
    dist = DaskGPUHistGBDTRanker(**KW, client=client).fit(X, y, qid=qid)
    local = dist.to_local()
    assert type(local) is GPUHistGBDTRanker and local.get_params() == {
        k: v for k, v in dist.get_params().items() if k != "client"}
    np.testing.assert_array_equal(local.predict(X), dist.predict(X))
    again = pickle.loads(pickle.dumps(dist))
    assert again.client is None and dist.client is client
    np.testing.assert_array_equal(again.predict(X), local.predict(X))
    path = tmp_path / "model.json"
    dist.save_model(path)
    assert dist.client is client
    loaded = DaskGPUHistGBDTRanker.load_model(path)
    assert _doc(loaded) == _doc(dist) and loaded.client is None
    np.testing.assert_array_equal(loaded.predict(X), local.predict(X))


def _local_error(fit):
    with pytest.raises((ValueError, TypeError)) as info:
        fit()
    return info


@pytest.mark.parametrize("case", ["inf", "negative-label", "no-qid", "short-y", "eval-3",
                                  "eval-features", "float-hist"])
def test_bad_input_errors_match_the_local_ranker(client, case):
    X, y, qid, _ = _data(seed=9, n_queries=40)
    eval_set = None
    params = {}
    if case == "inf":
        X = X.copy()
        X[5, 2] = np.inf
    elif case == "negative-label":
        y = y.copy()
        y[7] = -1
    elif case == "no-qid":
        qid = None
    elif case == "short-y":
        y = y[:-1]
    elif case == "eval-3":
        eval_set = [(X, y)]
    elif case == "eval-features":
        eval_set = [(X[:, :-1], y, qid)]
    dist = DaskGPUHistGBDTRanker(**KW, **params)
    if case == "float-hist":
        with pytest.raises(ValueError, match="hist_mode='quantised'"):
            DaskGPUHistGBDTRanker(**KW, hist_mode="float").fit(X, y, qid=qid)
        return
    want = _local_error(lambda: GPUHistGBDTRanker(**KW).fit(X, y, qid=qid,
                                                            eval_set=eval_set))
    got = _local_error(lambda: dist.fit(da.from_array(X, chunks=(100, -1)), y, qid=qid,
                                        eval_set=eval_set))
    assert got.type is want.type and str(got.value) == str(want.value)
    assert not hasattr(dist, "ensemble_")


def test_fit_warnings_point_at_the_callers_line(client):
    # the local ranker's warnings, at the same place: the line that called fit
    X, y, qid, _ = _data()
    with pytest.warns(UserWarning, match="no tree found a split") as record:
        DaskGPUHistGBDTRanker(**KW).fit(_spread(client, X), np.ones(len(qid)), qid=qid)
    assert {w.filename for w in record} == {__file__}
    Xb = np.tile(X, (-(-10_001 // len(X)), 1))
    reps = Xb.shape[0] // len(X)
    yb = np.tile(y, reps)
    qb = np.concatenate([qid + k * (qid.max() + 1) for k in range(reps)])
    with pytest.warns(UserWarning, match="early_stopping='auto'") as record:
        DaskGPUHistGBDTRanker(**{**KW, "n_estimators": 2}, early_stopping="auto").fit(
            _spread(client, Xb), yb, qid=qb)
    assert {w.filename for w in record} == {__file__}


def test_grid_search_under_joblibs_dask_backend(client):
    import joblib
    import sklearn
    from sklearn.model_selection import GridSearchCV

    from skltr.model_selection import QueryKFold

    X, y, qid, _ = _data(seed=10, n_queries=60)
    grid = {"max_leaves": [3, 7], "learning_rate": [0.1, 0.3]}
    est = GPUHistGBDTRanker(n_estimators=5, random_state=0, n_jobs=1)
    with sklearn.config_context(enable_metadata_routing=True):
        local = GridSearchCV(est, grid, cv=QueryKFold(3)).fit(X, y, qid=qid)
        with joblib.parallel_backend("dask"):
            dist = GridSearchCV(est, grid, cv=QueryKFold(3), n_jobs=-1).fit(X, y, qid=qid)
    assert dist.best_params_ == local.best_params_
    np.testing.assert_array_equal(dist.cv_results_["mean_test_score"],
                                  local.cv_results_["mean_test_score"])


def test_a_worker_lost_mid_fit_raises_and_leaves_the_estimator_unchanged():
    X, y, qid, _ = _data(seed=11, n_queries=100)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        est = DaskGPUHistGBDTRanker(n_estimators=3, random_state=0, n_jobs=1).fit(
            X, y, qid=qid)
        before = _doc(est)
        est.set_params(n_estimators=100_000)
        Xd = da.from_array(X, chunks=(len(y) // 2 + 1, -1))
        errors = []

        def fit():
            try:
                est.fit(Xd, y, qid=qid)
            except Exception as exc:  # noqa: BLE001 - recorded and checked below
                errors.append(exc)

        thread = threading.Thread(target=fit)
        thread.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                "skltr-train" in str(key) for keys in c.processing().values() for key in keys):
            time.sleep(0.1)
        time.sleep(1.0)  # a few rounds in
        victim = sorted(c.nthreads())[-1]
        try:
            c.run(lambda: __import__("os")._exit(1), workers=[victim])
        except Exception:  # noqa: BLE001 - the worker dies before it answers
            pass
        thread.join(120)
        assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError)
    assert "unchanged" in str(errors[0])
    assert est.n_estimators == 100_000 and _doc(est) == before


@pytest.mark.gpu
def test_one_gpu_worker_gives_the_local_gpu_model():
    X, y, qid, _ = _data(seed=13)
    kw = dict(n_estimators=10, random_state=0, device="cuda", growth="depthwise",
              max_depth=4, max_leaves=None, eval_at=[10])
    ev = [(X[:800], y[:800], qid[:800])]
    local = GPUHistGBDTRanker(**kw).fit(X, y, qid=qid, eval_set=ev)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        dist = DaskGPUHistGBDTRanker(**kw).fit(da.from_array(X, chunks=(1000, -1)), y,
                                               qid=qid, eval_set=ev)
    _assert_same(local, dist)
    assert dist.device_ == local.device_


def _gpu_cluster(n_workers):
    """Workers with a GPU each where the machine has as many (``CUDA_VISIBLE_DEVICES`` per
    worker, as dask-cuda's ``LocalCUDACluster`` sets it), else sharing the GPUs in turn."""
    import cupy

    n_gpus = cupy.cuda.runtime.getDeviceCount()
    spec = {i: {"cls": distributed.Nanny,
                "options": {"nthreads": 2, "env": {"CUDA_VISIBLE_DEVICES": str(i % n_gpus)}}}
            for i in range(n_workers)}
    return distributed.SpecCluster(workers=spec, scheduler={
        "cls": distributed.Scheduler, "options": {"dashboard_address": ":0"}})


@pytest.mark.gpu
@pytest.mark.parametrize("n_workers", [2, 3])
@pytest.mark.parametrize("params", [
    dict(growth="depthwise", max_depth=4, max_leaves=None),
    dict(growth="leafwise", max_leaves=15, objective="rank_xendcg", subsample=0.6,
         colsample_bytree=0.7),
    dict(growth="depthwise", max_depth=3, max_leaves=None, early_stopping=True,
         n_iter_no_change=2, n_estimators=40),
], ids=["depthwise", "leafwise-xendcg-subsample", "holdout-early-stopping"])
def test_several_gpu_workers_give_the_local_gpu_model(n_workers, params):
    X, y, qid, w = _data(seed=14)
    kw = {**dict(n_estimators=10, random_state=0, device="cuda", eval_at=[10]), **params}
    fit_kw = {} if params.get("early_stopping") else dict(
        eval_set=[(X[:800], y[:800], qid[:800])])
    local = GPUHistGBDTRanker(**kw).fit(X, y, qid=qid, sample_weight=w, **fit_kw)
    with _gpu_cluster(n_workers) as cluster, distributed.Client(cluster) as client:
        Xd = _spread(client, X, _chunks(len(X), [5, 1700, 1701, 3000][:n_workers + 1]))
        dist = DaskGPUHistGBDTRanker(**kw).fit(Xd, y, qid=qid, sample_weight=w, **fit_kw)
    _assert_same(local, dist)
    assert dist.device_ == local.device_
    assert dist.timings_["workers"] == n_workers
    # GPU to GPU through NCCL when every worker has a GPU of its own, else through the host
    from skltr.dask._collective_cuda import _nccl_module
    import cupy

    own_gpus = n_workers <= cupy.cuda.runtime.getDeviceCount()
    assert dist.timings_["nccl"] == (own_gpus and _nccl_module() is not None)


def _clicks(seed=15, n_queries=90, docs=12):
    """A click log (two sessions a query), its rows interleaved: the layout is the driver's."""
    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=docs, n_features=6,
                             n_informative=3, random_state=seed)
    log = simulate_clicks(y, qid, n_sessions=2, random_state=seed)
    perm = np.random.default_rng(seed).permutation(log.rows.size)
    return X[log.rows][perm], log.clicks[perm], log.session[perm], log.position[perm]


@pytest.mark.parametrize("mode, params", [
    ("unbiased", {}),
    ("additive", {"lambdarank_position_bias_regularization": 0.5}),
    ("unbiased_paper", {"early_stopping": True, "n_iter_no_change": 3, "subsample": 0.8}),
], ids=["unbiased", "additive", "paper-holdout-subsample"])
@pytest.mark.parametrize("spread", ["one-worker", "every-worker"])
def test_learning_from_clicks_gives_the_one_process_model(client, mode, params, spread):
    """Every round's per-position sums are exact and all-reduced: the estimate, the trees
    and the predictions are the local fit's bits on 1, 2 or 3 workers."""
    X, clicks, session, position = _clicks()
    kw = {**KW, "position_bias": mode, **params}
    local = GPUHistGBDTRanker(**kw).fit(X, clicks, qid=session, position=position)
    chunks = (len(X),) if spread == "one-worker" else _chunks(len(X), [1, 400, 1500])
    dist = DaskGPUHistGBDTRanker(**kw).fit(
        _spread(client, X, chunks), da.from_array(clicks, chunks=300),
        qid=da.from_array(session, chunks=700), position=da.from_array(position, chunks=250))
    assert dist.timings_["workers"] == (1 if spread == "one-worker" else _n_workers(client))
    _assert_same(local, dist)
    assert dist.position_bias_.tobytes() == local.position_bias_.tobytes()
    if mode == "additive":
        assert dist.position_bias_minus_ is None and np.ptp(local.position_bias_) > 0
    else:
        assert dist.position_bias_minus_.tobytes() == local.position_bias_minus_.tobytes()
        assert not np.all(local.position_bias_ == 1.0)  # the estimate moved
    np.testing.assert_array_equal(dist.predict(X), local.predict(X))
    kept = dist.to_local()
    assert kept.position_bias_.tobytes() == local.position_bias_.tobytes()
    assert _doc(kept) == _doc(local)
    # a later fit without clicks forgets the estimate, as the local ranker's does
    dist.set_params(position_bias=None).fit(X, clicks, qid=session)
    assert dist.position_bias_ is None and dist.position_bias_minus_ is None


@pytest.mark.parametrize("case", ["short", "negative", "nan", "2-d", "missing", "objective",
                                  "init_model"])
def test_bad_position_errors_match_the_local_ranker(client, case):
    X, clicks, session, position = _clicks(n_queries=20)
    params, fit_kw = {"position_bias": "unbiased"}, {}
    position = position.astype(np.float64)
    if case == "short":
        position = position[:-1]
    elif case == "negative":
        position[3] = -1
    elif case == "nan":
        position[5] = np.nan
    elif case == "2-d":
        position = position[:, None]
    elif case == "missing":
        position = None
    elif case == "objective":
        params["objective"] = "rank_xendcg"
    elif case == "init_model":
        fit_kw["init_model"] = GPUHistGBDTRanker(**KW).fit(X, clicks, qid=session)
    want = _local_error(lambda: GPUHistGBDTRanker(**KW, **params).fit(
        X, clicks, qid=session, position=position, **fit_kw))
    dist = DaskGPUHistGBDTRanker(**KW, **params)
    got = _local_error(lambda: dist.fit(
        da.from_array(X, chunks=(100, -1)), clicks, qid=session,
        position=None if position is None else da.from_array(position), **fit_kw))
    assert got.type is want.type and str(got.value) == str(want.value)
    assert "position" in str(got.value)
    assert not hasattr(dist, "ensemble_")


def test_position_without_position_bias_warns_at_the_callers_line(client):
    X, clicks, session, position = _clicks(n_queries=20)
    with pytest.warns(UserWarning, match=r"position=\.\.\.\) is ignored") as record:
        dist = DaskGPUHistGBDTRanker(**KW).fit(_spread(client, X), clicks, qid=session,
                                               position=position)
    assert {w.filename for w in record} == {__file__}
    _assert_same(GPUHistGBDTRanker(**KW).fit(X, clicks, qid=session), dist)
    assert dist.position_bias_ is None
