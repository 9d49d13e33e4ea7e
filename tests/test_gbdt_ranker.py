"""GPUHistGBDTRanker: the estimator, the boosting loop, bad input, and quality against peers.

Quality tests compare skltr's test NDCG@10 with LightGBM lambdarank trained with the same
hyper-parameters (tolerance 0.003, never loosened) and report XGBoost ``rank:ndcg`` (stated
tolerance below).
"""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from skltr import GPUHistGBDTRanker
from skltr.datasets import load_letor, make_ranking
from skltr.metrics import ndcg_score
from skltr.model_selection import train_test_split_by_query
from skltr.utils.estimator_checks import check_ranker

from _rankers import SingleQueryGBDTRanker

#: skltr must reach LightGBM's test NDCG@10 minus this (the issue's requirement).
LGB_TOLERANCE = 0.003
#: XGBoost's rank:ndcg differs in more than binning (its own pair sampling, depth-wise
#: defaults, float32 thresholds): it is reported, and only a gross shortfall fails.
XGB_TOLERANCE = 0.02

SMALL = dict(n_estimators=8, max_leaves=7, min_samples_leaf=3, random_state=0)


def _data(seed=0, n_queries=40, docs=15, n_features=6, **kw):
    return make_ranking(n_queries=n_queries, docs_per_query=docs, n_features=n_features,
                        n_informative=min(4, n_features), random_state=seed,
                        dtype=np.float64, **kw)


# ------------------------------------------------------------------------------- contract
def test_check_ranker():
    check_ranker(GPUHistGBDTRanker(**SMALL))


@parametrize_with_checks(
    # rank_pairwise accepts any real labels; scikit-learn's generic checks use regression-like
    # targets, which lambdarank's graded-relevance check refuses on purpose.
    [SingleQueryGBDTRanker(objective="rank_pairwise", n_estimators=3, max_leaves=4,
                           min_samples_leaf=1, random_state=0)],
    expected_failed_checks=lambda e: {
        "check_supervised_y_2d": "2-D y is rejected on purpose: rankers have one target.",
        # As scikit-learn's HistGradientBoosting: min_samples_leaf counts rows, not weight,
        # and a repeated document forms extra pairs with its query's other documents, so a
        # weight of 2 is not the same as a duplicated row.
        "check_sample_weight_equivalence_on_dense_data":
            "a weighted row is not a repeated row for pairwise objectives and row counts",
        "check_sample_weight_equivalence_on_sparse_data":
            "a weighted row is not a repeated row for pairwise objectives and row counts",
    })
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no tree found a split" on tiny data
        check(estimator)


def test_fitted_attributes_and_eval_results():
    X, y, qid = _data()
    Xv, yv, qv = _data(1)
    r = GPUHistGBDTRanker(**SMALL, eval_at=[5, 10]).fit(X, y, qid=qid,
                                                        eval_set=[(Xv, yv, qv), (X, y, qid)])
    assert r.n_features_in_ == 6 and r.n_estimators_ == 8 and r.n_iter_ == 8
    assert r.best_iteration_ is None  # early stopping is off by default
    assert set(r.evals_result_) == {"valid_0", "valid_1"}
    assert set(r.evals_result_["valid_0"]) == {"ndcg@5", "ndcg@10"}
    assert all(len(v) == 8 for v in r.evals_result_["valid_0"].values())
    # The last recorded value is the metric of the final model's predictions.
    assert r.evals_result_["valid_0"]["ndcg@10"][-1] == pytest.approx(
        ndcg_score(yv, r.predict(Xv), qid=qv, k=10), abs=1e-12)
    assert r.score(Xv, yv, qid=qv) == pytest.approx(
        ndcg_score(yv, r.predict(Xv), qid=qv, k=5), abs=1e-12)  # score uses eval_at[0]
    fi = r.feature_importances_
    assert fi.shape == (6,) and fi.sum() == pytest.approx(1.0) and np.all(fi >= 0)
    split = r.feature_importance("split")
    assert split.dtype.kind == "i" and split.sum() == int(np.sum(~r.ensemble_.is_leaf))
    np.testing.assert_allclose(r.feature_importance("gain", normalize=True), fi)
    with pytest.raises(ValueError, match="'gain' or 'split'"):
        r.feature_importance("cover")
    ens = r.to_tree_ensemble()
    assert ens.n_trees == 8 and ens.decision == "<=" and ens.base_score[0] == 0.0
    np.testing.assert_array_equal(ens.predict_raw(X), r.predict(X))


def test_training_scores_match_the_exported_ensemble():
    # The loop's own score bookkeeping (grower row -> leaf map, predict_binned) equals what the
    # converted TreeEnsemble predicts: recorded training NDCG == NDCG of predict.
    X, y, qid = _data(2, nan_fraction=0.1)
    r = GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    assert r.evals_result_["valid_0"]["ndcg@10"][-1] == pytest.approx(
        ndcg_score(y, r.predict(X), qid=qid, k=10), abs=1e-12)


def test_early_stopping_keeps_the_best_iteration():
    X, y, qid = _data(3, n_queries=60)
    Xv, yv, qv = _data(4, n_queries=30)
    r = GPUHistGBDTRanker(n_estimators=200, max_leaves=15, min_samples_leaf=2,
                          learning_rate=0.5, early_stopping=True, n_iter_no_change=3,
                          random_state=0).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    hist = r.evals_result_["valid_0"]["ndcg@10"]
    assert r.n_iter_ < 200 and len(hist) == r.n_iter_
    best = int(np.argmax(hist))  # first maximum: improvements are strict
    assert r.best_iteration_ == best + 1 == r.n_estimators_
    assert r.n_iter_ == r.best_iteration_ + 3
    assert ndcg_score(yv, r.predict(Xv), qid=qv, k=10) == pytest.approx(hist[best], abs=1e-12)


def test_early_stopping_holds_out_queries():
    X, y, qid = _data(5, n_queries=50)
    r = GPUHistGBDTRanker(**{**SMALL, "n_estimators": 30}, early_stopping=True,
                          validation_fraction=0.2).fit(X, y, qid=qid)
    assert list(r.evals_result_) == ["validation"]
    r2 = clone(r).fit(X, y, qid=qid)
    assert r.to_tree_ensemble().equals(r2.to_tree_ensemble())
    assert r.evals_result_ == r2.evals_result_


def test_early_stopping_auto_threshold_warns_about_the_hold_out():
    X, y, qid = _data(6, n_queries=110, docs=(100, 100), n_features=3)  # 11,000 rows
    auto = GPUHistGBDTRanker(n_estimators=3, max_leaves=4, early_stopping="auto",
                             random_state=0)
    with pytest.warns(UserWarning, match=r"early_stopping='auto'.* held 11 of the 110 "
                                         r"training queries out.*validation_fraction=0.1"):
        auto.fit(X, y, qid=qid)
    assert "validation" in auto.evals_result_ and auto.best_iteration_ is not None
    # With an eval_set nothing is held out, and nothing is said; below 10,001 rows "auto"
    # is off.
    Xv, yv, qv = _data(7, n_features=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = clone(auto).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
        assert list(r.evals_result_) == ["valid_0"] and r.best_iteration_ is not None
        r = clone(auto).fit(X[:10_000], y[:10_000], qid=qid[:10_000])
        assert r.best_iteration_ is None and r.evals_result_ == {}
    with pytest.raises(ValueError, match="1 query"):
        GPUHistGBDTRanker(n_estimators=2, early_stopping=True).fit(X[:50], y[:50],
                                                                   qid=np.zeros(50))


def test_default_trains_every_round_on_every_query():
    # The default (early_stopping=False) is LightGBM's: n_estimators rounds on all the
    # training queries at any size, eval sets only recorded. The former default ("auto")
    # held out 10 % of the queries above 10,000 rows and cost up to 0.06 test NDCG@10
    # (benchmarks/defaults_quality.py).
    assert GPUHistGBDTRanker().early_stopping is False
    X, y, qid = _data(6, n_queries=110, docs=(100, 100), n_features=3)  # 11,000 rows
    Xv, yv, qv = _data(7, n_features=3)
    params = dict(n_estimators=12, max_leaves=4, learning_rate=0.5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing held out: nothing to warn about
        default = GPUHistGBDTRanker(**params).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    explicit = GPUHistGBDTRanker(**params, early_stopping=False).fit(X, y, qid=qid)
    assert default.to_tree_ensemble().equals(explicit.to_tree_ensemble())
    assert default.n_estimators_ == default.n_iter_ == 12 and default.best_iteration_ is None
    assert list(default.evals_result_) == ["valid_0"]
    # Early stopping on the same eval set would have changed the model: the default did not.
    stopped = GPUHistGBDTRanker(**params, early_stopping=True, n_iter_no_change=1).fit(
        X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    assert stopped.n_estimators_ < 12


def test_defaults_are_lightgbms():
    # Every default that shapes a lambdarank model equals LGBMRanker()'s, so that fitting
    # with defaults never trails LightGBM's defaults by design (measured:
    # benchmarks/defaults_quality.py).
    lgb = pytest.importorskip("lightgbm")
    from skltr._engine.binning import BinMapper
    from skltr._gbdt.fit import fit_objective
    from skltr._gbdt.objectives import LIGHTGBM_TRUNCATION_LEVEL

    ours = GPUHistGBDTRanker().get_params()
    theirs = lgb.LGBMRanker().get_params()
    pairs = {"n_estimators": "n_estimators", "learning_rate": "learning_rate",
             "max_leaves": "num_leaves", "min_samples_leaf": "min_child_samples",
             "min_child_weight": "min_child_weight", "reg_lambda": "reg_lambda",
             "reg_alpha": "reg_alpha", "min_split_gain": "min_split_gain",
             "subsample": "subsample", "colsample_bytree": "colsample_bytree"}
    for mine, peer in pairs.items():
        assert ours[mine] == theirs[peer], (mine, ours[mine], peer, theirs[peer])
    assert ours["max_depth"] is None and theirs["max_depth"] == -1
    assert ours["growth"] == "leafwise" and ours["min_samples_leaf_counts"] == "hessian"
    assert ours["early_stopping"] is False  # LightGBM stops only when asked to
    assert BinMapper().subsample == theirs["subsample_for_bin"] == 200_000
    # LightGBM's documented defaults that its scikit-learn wrapper does not list:
    # max_bin=255, lambdarank_truncation_level=30, lambdarank_norm=true, sigmoid=1.0,
    # label_gain 2**i - 1.
    assert ours["max_bins"] == 255 and ours["gain"] == "exp2"
    assert LIGHTGBM_TRUNCATION_LEVEL == 30 and ours["lambdarank_truncation_level"] is None
    obj = fit_objective(GPUHistGBDTRanker().get_params(), 0)
    assert obj._params() == {"gain": "exp2", "truncation_level": 30, "sigmoid": 1.0,
                             "normalize": True}


# ---------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("params", [
    {},
    {"subsample": 0.5, "colsample_bytree": 0.5},
    {"objective": "rank_xendcg"},
])
def test_same_random_state_same_model(params):
    X, y, qid = _data(7, nan_fraction=0.05)
    a = GPUHistGBDTRanker(**SMALL, **params).fit(X, y, qid=qid)
    b = GPUHistGBDTRanker(**SMALL, **params, n_jobs=1).fit(X, y, qid=qid)
    assert a.to_tree_ensemble().equals(b.to_tree_ensemble())


def test_float32_X_is_binned_without_a_copy_and_gives_the_same_model():
    X, y, qid = _data(8, nan_fraction=0.05)
    X32 = X.astype(np.float32)
    a = GPUHistGBDTRanker(**SMALL).fit(X32, y, qid=qid)
    b = GPUHistGBDTRanker(**SMALL).fit(X32.astype(np.float64), y, qid=qid)
    assert a.to_tree_ensemble().equals(b.to_tree_ensemble())
    np.testing.assert_array_equal(a.predict(X32), b.predict(X32.astype(np.float64)))


def test_subsampling_changes_the_model_and_seed_matters():
    X, y, qid = _data(8)
    full = GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid).to_tree_ensemble()
    sub = GPUHistGBDTRanker(**SMALL, subsample=0.5).fit(X, y, qid=qid).to_tree_ensemble()
    other = GPUHistGBDTRanker(**{**SMALL, "random_state": 1}, subsample=0.5).fit(
        X, y, qid=qid).to_tree_ensemble()
    assert not full.equals(sub) and not sub.equals(other)
    col = GPUHistGBDTRanker(**SMALL, colsample_bytree=1 / 6).fit(X, y, qid=qid)
    # one feature per tree: every tree splits on a single feature
    ens = col.to_tree_ensemble()
    for t in range(ens.n_trees):
        f = ens.feature[ens.tree_ptr[t]:ens.tree_ptr[t + 1]]
        assert np.unique(f[f >= 0]).size <= 1


# ---------------------------------------------------------------------------- persistence
def test_save_load_and_pickle(tmp_path):
    import pandas as pd

    X, y, qid = _data(9, nan_fraction=0.05)
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    r = GPUHistGBDTRanker(**SMALL, eval_at=[3]).fit(df, y, qid=qid, eval_set=[(df, y, qid)])
    expected = r.predict(df)
    path = tmp_path / "model.json"
    r.save_model(path)
    loaded = GPUHistGBDTRanker.load_model(path)
    np.testing.assert_array_equal(loaded.predict(df), expected)
    assert loaded.get_params() == r.get_params()
    assert loaded.evals_result_ == r.evals_result_
    assert list(loaded.feature_names_in_) == list(df.columns)
    np.testing.assert_array_equal(loaded.feature_importances_, r.feature_importances_)
    # The file is a TreeEnsemble document: the generic readers take it too.
    from skltr import QuickScorerPredictor
    from skltr.convert import load_model

    assert load_model(path).equals(r.to_tree_ensemble())
    np.testing.assert_array_equal(QuickScorerPredictor.from_file(path).predict(X), expected)
    # Pickles do not carry the QuickScorer tables; they are rebuilt on the first predict.
    blob = pickle.dumps(r)
    again = pickle.loads(blob)
    assert again._layout_cache.layout is None
    np.testing.assert_array_equal(again.predict(df), expected)
    assert len(blob) < len(pickle.dumps(r.to_tree_ensemble())) + 20_000


def test_load_model_refuses_a_plain_ensemble(tmp_path):
    X, y, qid = _data(10)
    r = GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid)
    path = tmp_path / "ens.json"
    r.to_tree_ensemble().save(path)
    with pytest.raises(ValueError, match="QuickScorerPredictor.from_file"):
        GPUHistGBDTRanker.load_model(path)


# ------------------------------------------------------------------------------ bad input
def test_qid_missing_or_wrong_length():
    X, y, qid = _data(11)
    with pytest.raises(ValueError, match="qid"):
        GPUHistGBDTRanker(**SMALL).fit(X, y)
    with pytest.raises(ValueError, match=f"qid has {len(y) - 1} entries but X has {len(y)}"):
        GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid[:-1])


def test_single_document_queries_contribute_no_pairs():
    X, y, qid = _data(12)
    # Append 30 one-document queries with high labels: they carry no pairs, so the lambdarank
    # model is unchanged (binning is fitted on the training rows, so give them existing rows).
    Xs = np.vstack([X, X[:30]])
    ys = np.concatenate([y, np.full(30, 4.0)])
    qs = np.concatenate([qid, 10_000 + np.arange(30)])
    a = GPUHistGBDTRanker(**SMALL, max_bins=255).fit(X, y, qid=qid)
    b = GPUHistGBDTRanker(**SMALL, max_bins=255).fit(Xs, ys, qid=qs)
    assert np.all(np.isfinite(b.predict(Xs)))
    # Same pairs; trees may differ only through min_samples_leaf counts and bin edges.
    assert abs(ndcg_score(y, a.predict(X), qid=qid) - ndcg_score(y, b.predict(X), qid=qid)) < 0.05


def test_all_equal_labels_give_a_constant_model_with_a_warning():
    X, _, qid = _data(13)
    with pytest.warns(UserWarning, match="no tree found a split"):
        r = GPUHistGBDTRanker(**SMALL).fit(X, np.ones(len(qid)), qid=qid)
    assert np.unique(r.predict(X)).size == 1


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_labels(bad):
    X, y, qid = _data(14)
    y[5] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid)


@pytest.mark.parametrize("objective", ["lambdarank", "rank_xendcg"])
def test_graded_objectives_need_whole_nonnegative_labels(objective):
    X, y, qid = _data(15)
    order = np.random.default_rng(0).permutation(len(y))  # message names the caller's row
    X, y, qid = X[order], y[order].copy(), qid[order]
    y[7] = -1
    with pytest.raises(ValueError, match=r"labels must be >= 0; y\[7\] = -1"):
        GPUHistGBDTRanker(**SMALL, objective=objective).fit(X, y, qid=qid)
    y[7] = 1.5
    with pytest.raises(ValueError, match=r"whole numbers.*y\[7\] = 1.5"):
        GPUHistGBDTRanker(**SMALL, objective=objective).fit(X, y, qid=qid)
    # rank_pairwise and regression take any real labels
    for other in ("rank_pairwise", "regression"):
        GPUHistGBDTRanker(**SMALL, objective=other).fit(X, y - 3.25, qid=qid)


def test_constant_features_are_never_split_on():
    X, y, qid = _data(16)
    X[:, 2] = 7.0
    X[:, 4] = np.nan
    r = GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid)
    used = r.feature_importance("split")
    assert used[2] == 0 and used[4] == 0 and used.sum() > 0


def test_max_bins_above_255():
    X, y, qid = _data(17)
    with pytest.raises(ValueError, match="max_bins"):
        GPUHistGBDTRanker(max_bins=256).fit(X, y, qid=qid)


def test_bad_eval_sets():
    X, y, qid = _data(18)
    r = GPUHistGBDTRanker(**SMALL)
    with pytest.raises(ValueError, match="qid=None"):
        r.fit(X, y, qid=qid, eval_set=[(X, y, None)])
    with pytest.raises(ValueError, match=r"eval_set\[0\] must be an \(X, y, qid\) tuple; got 2"):
        r.fit(X, y, qid=qid, eval_set=[(X, y)])
    with pytest.raises(ValueError, match="list of"):
        r.fit(X, y, qid=qid, eval_set=(X, y, qid))
    with pytest.raises(ValueError, match=r"eval_set\[1\]: qid has 3 entries"):
        r.fit(X, y, qid=qid, eval_set=[(X, y, qid), (X, y, qid[:3])])
    with pytest.raises(ValueError, match=r"eval_set\[0\]: X has 5 features"):
        r.fit(X, y, qid=qid, eval_set=[(X[:, :5], y, qid)])


def test_predict_with_other_feature_count():
    X, y, qid = _data(19)
    r = GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="features"):
        r.predict(X[:, :-1])


def test_failed_fit_keeps_previous_model():
    X, y, qid = _data(20)
    r = GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid)
    before = r.to_tree_ensemble()
    y_bad = y.copy()
    y_bad[0] = 0.5
    with pytest.raises(ValueError):
        r.fit(X, y_bad, qid=qid)
    with pytest.raises(ValueError):
        r.fit(X, y, qid=qid, eval_set=[(X, y)])
    assert r.to_tree_ensemble() is before
    np.testing.assert_array_equal(r.predict(X), before.predict_raw(X))


def test_devices():
    X, y, qid = _data(21)
    with pytest.raises((ImportError, NotImplementedError, RuntimeError), match="cuda|CuPy|GPU"):
        GPUHistGBDTRanker(**SMALL, device="cuda").fit(X, y, qid=qid)
    from skltr._device import is_cupy_available

    if not is_cupy_available():
        with pytest.warns(UserWarning, match="fell back to the CPU"):
            r = GPUHistGBDTRanker(**SMALL, device="auto").fit(X, y, qid=qid)
        assert r.device_ == "cpu"


def test_one_loop_picks_the_devices_back_end(monkeypatch):
    # one boosting loop; the device decides only its back-end (CuPy imported for a GPU
    # only: a CPU-only run checks the choice with a stand-in CUDA module)
    import sys
    import types

    from skltr._device import Device
    from skltr._gbdt.backend_cpu import CPUBackend
    from skltr._gbdt.boosting import make_backend
    from skltr._gbdt.params import BoostParams

    params = BoostParams(objective_name="lambdarank", n_estimators=1, max_bins=15)
    assert isinstance(make_backend(params, "comm", Device("cpu")), CPUBackend)
    fake = types.ModuleType("skltr._gbdt.backend_cuda")
    fake.CUDABackend = lambda *args: ("cuda back-end", args)
    monkeypatch.setitem(sys.modules, "skltr._gbdt.backend_cuda", fake)
    assert make_backend(params, "comm", Device("cuda", 1)) == (
        "cuda back-end", (params, "comm", Device("cuda", 1)))


def test_registered_and_exported():
    import skltr
    from skltr.ranking import RANKERS

    assert isinstance(RANKERS["GPUHistGBDTRanker"]("cpu"), skltr.GPUHistGBDTRanker)
    assert "GPUHistGBDTRanker" in dir(skltr)


# -------------------------------------------------------------------------------- quality
# Peers run on one thread: the quality does not depend on it, and on a shared machine their
# OpenMP pools spin (a 3,000-row fit took 12 s on two busy cores instead of under 1 s).
def _lightgbm_ndcg(X, y, qid, Xt, yt, qt, *, rounds, leaves, lr, min_leaf, bins,
                   truncation):
    lgb = pytest.importorskip("lightgbm")
    from skltr.utils import group_by_qid

    g = group_by_qid(qid)
    model = lgb.LGBMRanker(
        objective="lambdarank", n_estimators=rounds, learning_rate=lr, num_leaves=leaves,
        max_depth=-1, min_child_samples=min_leaf, min_child_weight=1e-3, reg_lambda=0.0,
        reg_alpha=0.0, min_split_gain=0.0, max_bin=bins, subsample=1.0,
        colsample_bytree=1.0, lambdarank_truncation_level=truncation,
        label_gain=[2.0 ** i - 1 for i in range(int(max(y.max(), yt.max())) + 1)],
        n_jobs=1, random_state=0, verbose=-1, deterministic=True, force_row_wise=True)
    model.fit(X[g.order], y[g.order], group=g.sizes)
    return ndcg_score(yt, model.predict(Xt), qid=qt, k=10)


def _xgboost_ndcg(X, y, qid, Xt, yt, qt, *, rounds, leaves, lr, min_leaf, bins):
    xgb = pytest.importorskip("xgboost")
    from skltr.utils import group_by_qid

    g = group_by_qid(qid)
    model = xgb.XGBRanker(objective="rank:ndcg", n_estimators=rounds, learning_rate=lr,
                          max_leaves=leaves, max_depth=0, grow_policy="lossguide",
                          max_bin=bins, tree_method="hist", n_jobs=1, random_state=0)
    model.fit(X[g.order], y[g.order], qid=g.codes[g.order])
    return ndcg_score(yt, model.predict(Xt), qid=qt, k=10)


def _compare(X, y, qid, Xt, yt, qt, *, rounds, leaves, lr, min_leaf, bins=255,
             truncation=30, xgb=False):
    r = GPUHistGBDTRanker(n_estimators=rounds, learning_rate=lr, max_leaves=leaves,
                          min_samples_leaf=min_leaf, max_bins=bins,
                          lambdarank_truncation_level=truncation, early_stopping=False,
                          random_state=0).fit(X, y, qid=qid)
    ours = ndcg_score(yt, r.predict(Xt), qid=qt, k=10)
    lgb = _lightgbm_ndcg(X, y, qid, Xt, yt, qt, rounds=rounds, leaves=leaves, lr=lr,
                         min_leaf=min_leaf, bins=bins, truncation=truncation)
    print(f"test NDCG@10: skltr {ours:.4f}  lightgbm {lgb:.4f}  (diff {ours - lgb:+.4f})")
    x = None
    if xgb:
        x = _xgboost_ndcg(X, y, qid, Xt, yt, qt, rounds=rounds, leaves=leaves, lr=lr,
                          min_leaf=min_leaf, bins=bins)
        print(f"test NDCG@10: xgboost rank:ndcg {x:.4f} (skltr - xgboost {ours - x:+.4f})")
    assert ours >= lgb - LGB_TOLERANCE, (ours, lgb)
    if x is not None:
        assert ours >= x - XGB_TOLERANCE, (ours, x)


# Formerly a known gap (skltr - LightGBM at 50/100/200 rounds: -0.018 / -0.013 / -0.022):
# LightGBM checks min_data_in_leaf on hessian-estimated counts and keeps the highest of
# equivalent thresholds. skltr's defaults now do both (min_samples_leaf_counts="hessian";
# docs/user_guide/gbdt_ranker.rst has the measurements). The tolerance is unchanged.
def test_quality_letor_small(letor_dir):
    X, y, qid = load_letor(letor_dir / "train.letor")
    Xt, yt, qt = load_letor(letor_dir / "test.letor", n_features=X.shape[1])
    _compare(X, y, qid, Xt, yt, qt, rounds=100, leaves=31, lr=0.1, min_leaf=20, xgb=True)


def test_quality_letor_small_min_data_1(letor_dir):
    # The same comparison where LightGBM's count estimate cannot matter (min_data_in_leaf=1).
    X, y, qid = load_letor(letor_dir / "train.letor")
    Xt, yt, qt = load_letor(letor_dir / "test.letor", n_features=X.shape[1])
    _compare(X, y, qid, Xt, yt, qt, rounds=100, leaves=31, lr=0.1, min_leaf=1, xgb=True)


def test_quality_make_ranking_200k():
    X, y, qid = make_ranking(n_queries=2500, docs_per_query=100, n_features=136,
                             random_state=0)
    X, Xt, y, yt, qid, qt = train_test_split_by_query(X, y, qid=qid, test_size=0.2,
                                                      random_state=0)
    _compare(X, y, qid, Xt, yt, qt, rounds=20, leaves=31, lr=0.1, min_leaf=20, xgb=True)


def test_quality_with_missing_values():
    X, y, qid = make_ranking(n_queries=600, docs_per_query=50, n_features=40,
                             nan_fraction=0.05, random_state=1)
    X, Xt, y, yt, qid, qt = train_test_split_by_query(X, y, qid=qid, test_size=0.25,
                                                      random_state=0)
    _compare(X, y, qid, Xt, yt, qt, rounds=50, leaves=31, lr=0.1, min_leaf=20)


def test_verbose_progress_bar(capsys):
    X, y, qid = _data(22)
    GPUHistGBDTRanker(**SMALL, verbose=1).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    err = capsys.readouterr().err
    assert "boosting" in err and "valid_0 ndcg@10" in err


def test_infinite_features_are_refused():
    X, y, qid = _data(23)
    X[4, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid)
    r = GPUHistGBDTRanker(**SMALL).fit(np.nan_to_num(X, posinf=1e300), y, qid=qid)
    with pytest.raises(ValueError, match="infinity"):
        r.predict(X)


def test_hist_mode_and_count_rule_parameters():
    X, y, qid = _data(24, nan_fraction=0.05)
    with pytest.raises(ValueError, match="hist_mode"):
        GPUHistGBDTRanker(**SMALL, hist_mode="int").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="min_samples_leaf_counts"):
        GPUHistGBDTRanker(**SMALL, min_samples_leaf_counts="weight").fit(X, y, qid=qid)
    default = GPUHistGBDTRanker(**SMALL).fit(X, y, qid=qid)
    assert default.get_params()["hist_mode"] == "quantised"
    assert default.get_params()["min_samples_leaf_counts"] == "hessian"
    # Both histogram modes and both count rules train comparable models (the rules
    # themselves are tested against the naive grower in test_grower.py).
    base = ndcg_score(y, default.predict(X), qid=qid)
    for mode in ("quantised", "float"):
        for counts in ("hessian", "rows"):
            r = GPUHistGBDTRanker(**SMALL, hist_mode=mode, min_samples_leaf_counts=counts)
            assert abs(ndcg_score(y, r.fit(X, y, qid=qid).predict(X), qid=qid) - base) < 0.1


def test_cuda_all_is_refused_by_name_before_any_work():
    # one device resolver (skltr._device): "cuda:all" is the rule ranker's; here it is refused
    # by name, CuPy or not, and the failed fit leaves no fitted state
    X, y, qid = _data(22)
    est = GPUHistGBDTRanker(**SMALL, device="cuda:all")
    with pytest.raises(ValueError, match="GPUHistGBDTRanker does not support "
                                         "device='cuda:all'"):
        est.fit(X, y, qid=qid)
    assert not hasattr(est, "ensemble_")


def test_fit_warnings_point_at_the_callers_line():
    # the fit recipe's two warnings name the line that called fit, not skltr's internals
    X, _, qid = _data(13)
    with pytest.warns(UserWarning, match="no tree found a split") as record:
        GPUHistGBDTRanker(**SMALL).fit(X, np.ones(len(qid)), qid=qid)
    assert {w.filename for w in record} == {__file__}
    X, y, qid = _data(6, n_queries=110, docs=(100, 100), n_features=3)  # 11,000 rows
    with pytest.warns(UserWarning, match="early_stopping='auto'") as record:
        GPUHistGBDTRanker(n_estimators=2, max_leaves=4, early_stopping="auto").fit(
            X, y, qid=qid)
    assert {w.filename for w in record} == {__file__}
