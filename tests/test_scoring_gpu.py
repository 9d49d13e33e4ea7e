"""GPU scoring (``skltr._gpu.traversal``, ``skltr._gpu.quickscorer``): every strategy (the
traversal placements and GPU-QuickScorer) against the CPU's ``TreeEnsemble.predict_raw``, bit
for bit, on adversarial ensembles and inputs (tests/strategies_trees.py), in both child orders,
and on converted models read from the inputs users pass.

Skipped without CuPy and a CUDA GPU (the ``gpu`` marker).
"""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies_trees import ensemble_and_inputs

cupy = pytest.importorskip("cupy")

pytestmark = pytest.mark.gpu

from skltr import GPUHistGBDTRanker, QuickScorerPredictor, RankBoostRanker  # noqa: E402
from skltr._gpu import quickscorer as gq  # noqa: E402
from skltr._gpu import traversal as gt  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402
from skltr.trees._traversal import node_visits  # noqa: E402


def _placements(ens, X, visits=None, qs_options=None):
    """Raw scores of every eligible strategy (forced), as predict_raw returns them."""
    layout = gt.ForestLayout(ens, visits, gt.STRATEGIES)
    if qs_options:
        layout.qs = gq.QuickScorerTables.build(ens, layout, **qs_options)
    Xd = gt.device_input(ens, X)
    out = {}
    for p in layout.eligible(Xd):
        raw = cupy.empty((Xd.shape[0], ens.n_outputs), cupy.float64)
        layout.run(p, Xd, raw)
        raw = layout.to_float32(raw) if ens.sum_dtype == "float32" else raw
        out[p] = (raw[:, 0] if ens.n_outputs == 1 else raw).get()
    return out


@settings(max_examples=200, deadline=None)
@given(ensemble_and_inputs(), st.booleans(), st.sampled_from([None, (1, 1), (2, 3), (5, 2)]))
def test_every_placement_equals_the_cpu_on_adversarial_ensembles(case, calibrated, qs):
    # float32 ensembles without categorical splits take the 8-byte layout, the others the
    # 16-byte one; children in preorder, or the more visited first; GPU-QuickScorer with tiny
    # tree blocks (many blocks) and several documents a thread block: all exercised here
    ens, X = case
    ref = ens.predict_raw(X)
    visits = node_visits(ens, X) if calibrated else None
    options = None if qs is None else {"tree_block": qs[0], "docs": qs[1]}
    got_all = _placements(ens, X, visits, options)
    assert "quickscorer" in got_all and "split_trees" in got_all
    for placement, got in got_all.items():
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref, err_msg=placement)


def test_shared_forest_chunks_and_many_rows(monkeypatch):
    # small shared budget: many chunks; rows over several blocks, a partial last block
    X, y, qid = make_ranking(n_queries=120, docs_per_query=30, n_features=20, random_state=1)
    X[::17, 3] = np.nan
    ens = GPUHistGBDTRanker(n_estimators=40, max_leaves=31, random_state=0).fit(
        X, y, qid=qid).to_tree_ensemble()
    monkeypatch.setattr(gt, "SHARED_BYTES", 6000)  # 20 float64 features x 32 rows fit
    monkeypatch.setattr(gt, "SPLIT_BYTES", 2000)    # split_rows: many chunks
    got = _placements(ens, X[:3001], qs_options={"tree_block": 7, "docs": 4})
    assert set(got) == set(gt.STRATEGIES)
    for placement, raw in got.items():
        np.testing.assert_array_equal(raw, ens.predict_raw(X[:3001]), err_msg=placement)


def _sklearn_models():
    from sklearn.ensemble import (GradientBoostingClassifier, HistGradientBoostingClassifier,
                                  HistGradientBoostingRegressor, RandomForestRegressor)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 7))
    X[:, 6] = rng.integers(0, 9, 600)
    y = X[:, 0] + X[:, 6] + rng.normal(size=600)
    X[rng.random(X.shape) < 0.05] = np.nan
    yc = (y > np.median(y)).astype(int) + (y > 2)
    Xf = np.nan_to_num(X)
    return X, [
        (HistGradientBoostingRegressor(max_iter=20, categorical_features=[6],
                                       random_state=0).fit(X, y), X),
        (HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, yc), X),
        (RandomForestRegressor(n_estimators=15, max_depth=6, random_state=0).fit(Xf, y), Xf),
        (GradientBoostingClassifier(n_estimators=10, random_state=0).fit(Xf, yc), Xf),
    ]


@pytest.mark.parametrize("kind", ["float64", "float32", "int64", "cupy", "csr", "frame"])
def test_converted_models_score_as_their_library(kind):
    import scipy.sparse as sp

    _, models = _sklearn_models()
    for model, X in models:
        cpu = QuickScorerPredictor.from_model(model)
        gpu = QuickScorerPredictor.from_model(model, device="cuda")
        assert gpu.backend_ == "gpu_auto"
        Xk = {"float64": X, "float32": X.astype(np.float32), "int64": np.nan_to_num(X).astype(
            np.int64), "cupy": X, "csr": sp.csr_matrix(np.nan_to_num(X)), "frame": X}[kind]
        if kind == "frame":
            import pandas as pd

            Xk = pd.DataFrame(X)
        args = cupy.asarray(Xk) if kind == "cupy" else Xk
        for method in ("predict_raw", "predict"):
            want = getattr(cpu, method)(Xk)
            got = getattr(gpu, method)(args)
            if kind == "cupy" and want.dtype.kind in "biuf":
                assert isinstance(got, cupy.ndarray)
                got = got.get()
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{model} {method}")
        if hasattr(model, "predict_proba") and kind not in ("cupy", "csr"):
            np.testing.assert_array_equal(gpu.predict_proba(Xk), model.predict_proba(Xk))


def test_library_models_xgboost_and_lightgbm():
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 12)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) + rng.normal(size=2000)
    models = [xgb.XGBRegressor(n_estimators=60, max_depth=6).fit(X, y),
              lgb.LGBMRegressor(n_estimators=60, num_leaves=63, verbose=-1).fit(X, y)]
    for m, compact in zip(models, (True, False)):
        for backend in ("auto", "traversal", "quickscorer"):
            gpu = QuickScorerPredictor.from_model(m, device="cuda", backend=backend)
            assert gpu.layout_.compact == compact  # XGBoost: the 8-byte float32 layout
            np.testing.assert_array_equal(gpu.predict(X), m.predict(X))
            np.testing.assert_array_equal(gpu.predict(cupy.asarray(X)).get(), m.predict(X))
            np.testing.assert_array_equal(gpu.calibrate(X).predict(X), m.predict(X))


def test_rankers_fitted_on_the_gpu_score_there():
    X, y, qid = make_ranking(n_queries=60, docs_per_query=20, n_features=10, n_informative=5,
                             random_state=4)
    for est in (GPUHistGBDTRanker(n_estimators=10, device="cuda", random_state=0),
                RankBoostRanker(n_estimators=20, device="cuda", random_state=0)):
        est.fit(X, y, qid=qid)
        got = est.predict(X)
        assert est._layout_cache.backend.name == "gpu_auto"
        np.testing.assert_array_equal(got, est.to_tree_ensemble().predict_raw(X))
        back = pickle.loads(pickle.dumps(est))
        np.testing.assert_array_equal(back.predict(X), got)


def test_placements_are_measured_and_the_predictor_pickles():
    X, y, qid = make_ranking(n_queries=50, docs_per_query=20, n_features=8, n_informative=4,
                             random_state=5)
    ens = GPUHistGBDTRanker(n_estimators=10, random_state=0).fit(X, y, qid=qid)
    qs = QuickScorerPredictor.from_model(ens, device="cuda")
    qs.predict(X)
    assert qs.placements_ == {10: qs.placements_[10]}
    assert qs.placements_[10] in gt.STRATEGIES
    back = pickle.loads(pickle.dumps(qs))
    np.testing.assert_array_equal(back.predict(X), qs.predict(X))
    want = qs.predict(X)
    qs.calibrate(cupy.asarray(X[:300]))  # CuPy calibration rows; scores unchanged
    np.testing.assert_array_equal(qs.node_visits_, node_visits(ens.to_tree_ensemble(), X[:300]))
    assert qs.placements_ == {}  # a new layout measures again
    np.testing.assert_array_equal(qs.predict(X), want)
    back = pickle.loads(pickle.dumps(qs))  # the calibrated order is rebuilt on load
    assert back.layout_._visits is not None
    np.testing.assert_array_equal(back.predict(X), want)
    for backend in ("quickscorer", "traversal"):
        other = QuickScorerPredictor.from_model(ens, device="cuda", backend=backend)
        assert other.backend_ == "gpu_" + backend
        np.testing.assert_array_equal(other.predict(X), want)
    with pytest.raises(ValueError, match="scores on the CPU"):
        QuickScorerPredictor.from_model(ens).calibrate(X)
    with pytest.raises(ValueError, match="features"):
        qs.predict(cupy.zeros((3, 2)))


def test_quickscorer_walks_trees_of_more_than_64_leaves(monkeypatch):
    # some trees tabled, some walked inside the same kernel; split placements past their
    # buffer budget are not eligible
    X, y, qid = make_ranking(n_queries=80, docs_per_query=40, n_features=12, n_informative=6,
                             random_state=6)
    ens = GPUHistGBDTRanker(n_estimators=12, max_leaves=100, min_samples_leaf=40,
                            min_samples_leaf_counts="rows", random_state=0).fit(
        X, y, qid=qid).to_tree_ensemble()  # 62 to 68 leaves
    leaves = ens.n_leaves()
    assert (leaves > 64).any() and (leaves <= 64).any()
    got = _placements(ens, X, qs_options={"tree_block": 5, "docs": 2})
    for placement, raw in got.items():
        np.testing.assert_array_equal(raw, ens.predict_raw(X), err_msg=placement)
    monkeypatch.setattr(gt, "SPLIT_MAX_ENTRIES", X.shape[0] * ens.n_trees - 1)
    layout = gt.ForestLayout(ens, None, gt.STRATEGIES)
    assert not set(gt.SPLIT) & set(layout.eligible(gt.device_input(ens, X)))
    assert set(gt.SPLIT) <= set(layout.eligible(gt.device_input(ens, X[:100])))


def test_fit_on_a_gpu_orders_the_layout_by_the_training_rows(monkeypatch):
    from skltr.ranking import _quickscorer_predictor as qp

    X, y, qid = make_ranking(n_queries=40, docs_per_query=25, n_features=8, n_informative=4,
                             random_state=8)
    monkeypatch.setattr(qp, "CALIBRATION_ROWS", 300)
    qs = QuickScorerPredictor(GPUHistGBDTRanker(n_estimators=8, random_state=0),
                              device="cuda").fit(X, y, qid=qid)
    rows = np.linspace(0, X.shape[0] - 1, 300).astype(np.intp)
    np.testing.assert_array_equal(qs.node_visits_, node_visits(qs.ensemble_, X[rows]))
    np.testing.assert_array_equal(qs.predict(X), qs.ensemble_.predict_raw(X))
    cpu = QuickScorerPredictor(GPUHistGBDTRanker(n_estimators=8, random_state=0)).fit(
        X, y, qid=qid)
    assert not hasattr(cpu, "node_visits_")
