"""Truncated and staged prediction of the tree rankers (issue #29): ``predict(X,
iteration_range=(begin, end))``, XGBoost's form, and ``staged_predict``, scikit-learn's.

References: the naive walk of every tree (``tests/naive_trees.py``) summed over the asked
rounds, and the NDCG the fit itself recorded after each round (``evals_result_``), which the
staged scores must reproduce.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from naive_trees import naive_leaf

from skltr import GPUHistGBDTRanker, RankBoostRanker
from skltr.datasets import make_ranking
from skltr.metrics import ndcg_score


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=60, docs_per_query=20, n_features=12, n_informative=6,
                             random_state=3)
    X[::17, 2] = np.nan
    return X, y, qid


@pytest.fixture(scope="module")
def gbdt(data):
    X, y, qid = data
    return GPUHistGBDTRanker(n_estimators=25, max_leaves=7, random_state=0).fit(X, y, qid=qid)


def naive_rounds(ens, X, begin, end):
    """The base score plus the values of trees begin .. end - 1, walked one row at a time."""
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        row = [float(v) for v in X[i]]
        acc = float(ens.base_score[0])
        for t in range(begin, end):
            acc += float(ens.value[int(ens.tree_ptr[t]) + naive_leaf(ens, t, row)]) * float(
                ens.tree_weight[t])
        out[i] = acc
    return out


@pytest.mark.parametrize("rounds", [(0, 1), (0, 10), (3, 9), (24, 25), (5, 0), (0, 0)])
def test_iteration_range_scores_those_rounds(gbdt, data, rounds):
    X = data[0][:80]
    begin, end = rounds
    want = naive_rounds(gbdt.ensemble_, X, begin, end or gbdt.n_estimators_)
    np.testing.assert_allclose(gbdt.predict(X, iteration_range=rounds), want, rtol=0,
                               atol=1e-12)


def test_every_round_of_the_model_is_the_default(gbdt, data):
    X = data[0]
    np.testing.assert_array_equal(gbdt.predict(X, iteration_range=(0, 25)), gbdt.predict(X))
    np.testing.assert_array_equal(gbdt.predict(X, iteration_range=(0, 0)), gbdt.predict(X))


def test_staged_predict_equals_each_truncation_bit_for_bit(gbdt, data):
    X = data[0]
    stages = list(gbdt.staged_predict(X))
    assert len(stages) == gbdt.n_estimators_ == 25
    for k, scores in enumerate(stages, start=1):
        np.testing.assert_array_equal(scores, gbdt.predict(X, iteration_range=(0, k)))
    np.testing.assert_array_equal(stages[-1], gbdt.predict(X))


def test_staged_scores_give_the_ndcg_the_fit_recorded_each_round(data):
    # the fit scored its eval set after every round; the staged scores are those scores
    X, y, qid = data
    tr, va = qid < 45, qid >= 45
    model = GPUHistGBDTRanker(n_estimators=15, max_leaves=7, random_state=0, eval_at=5).fit(
        X[tr], y[tr], qid=qid[tr], eval_set=[(X[va], y[va], qid[va])])
    (recorded,) = [v for v in model.evals_result_.values()]
    (curve,) = recorded.values()
    got = [ndcg_score(y[va], s, qid=qid[va], k=5) for s in model.staged_predict(X[va])]
    np.testing.assert_allclose(got, curve, rtol=1e-12)


def test_early_stopping_keeps_and_predicts_with_the_best_round(data):
    X, y, qid = data
    tr, va = qid < 45, qid >= 45
    model = GPUHistGBDTRanker(n_estimators=200, learning_rate=0.5, early_stopping=True,
                              n_iter_no_change=3, random_state=0).fit(
        X[tr], y[tr], qid=qid[tr], eval_set=[(X[va], y[va], qid[va])])
    assert model.best_iteration_ == model.n_estimators_ < model.n_iter_
    assert len(list(model.staged_predict(X))) == model.best_iteration_
    np.testing.assert_array_equal(
        model.predict(X), model.predict(X, iteration_range=(0, model.best_iteration_)))


def test_rankboost_stages_and_ranges(data):
    X, y, qid = data
    model = RankBoostRanker(n_estimators=12, random_state=0).fit(X, y, qid=qid)
    stages = list(model.staged_predict(X[:50]))
    assert len(stages) == 12
    np.testing.assert_array_equal(stages[6], model.predict(X[:50], iteration_range=(0, 7)))
    np.testing.assert_allclose(model.predict(X[:50], iteration_range=(4, 8)),
                               naive_rounds(model.ensemble_, X[:50], 4, 8), rtol=0, atol=1e-12)


def test_sparse_float32_and_frame_inputs_stage_as_predict(gbdt, data):
    pd = pytest.importorskip("pandas")
    X = data[0][:60]
    X0 = np.where(np.isnan(X), 0.0, X)
    want = gbdt.predict(X0, iteration_range=(0, 9))
    for inp in (sp.csr_matrix(X0), sp.csc_matrix(X0), pd.DataFrame(X0)):
        np.testing.assert_array_equal(gbdt.predict(inp, iteration_range=(0, 9)), want)
        np.testing.assert_array_equal(list(gbdt.staged_predict(inp))[8], want)
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(list(gbdt.staged_predict(X32))[8],
                                  gbdt.predict(X32, iteration_range=(0, 9)))


def test_empty_input_and_pickled_model(gbdt, data):
    X = data[0]
    assert gbdt.predict(X[:0], iteration_range=(0, 3)).shape == (0,)
    assert all(s.shape == (0,) for s in gbdt.staged_predict(X[:0]))
    back = pickle.loads(pickle.dumps(gbdt))
    np.testing.assert_array_equal(back.predict(X, iteration_range=(2, 7)),
                                  gbdt.predict(X, iteration_range=(2, 7)))


@pytest.mark.parametrize("bad", [(3, 3), (5, 2), (0, 26), (-1, 4), (0.5, 3), "0:3", (1, 2, 3),
                                 5])
def test_bad_iteration_range_is_refused_and_changes_nothing(gbdt, data, bad):
    X = data[0][:20]
    before = gbdt.predict(X)
    with pytest.raises(ValueError, match="iteration_range"):
        gbdt.predict(X, iteration_range=bad)
    with pytest.raises(ValueError, match="iteration_range"):
        gbdt.predict(X[:0], iteration_range=bad)
    np.testing.assert_array_equal(gbdt.predict(X), before)


def test_dask_predict_takes_an_iteration_range(gbdt, data):
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    from skltr.dask import DaskGPUHistGBDTRanker

    X, y, qid = data
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        model = DaskGPUHistGBDTRanker(client=client, n_estimators=25, max_leaves=7,
                                      random_state=0).fit(X, y, qid=qid)
        assert model.ensemble_.equals(gbdt.ensemble_)
        Xd = da.from_array(X, chunks=300)
        got = model.predict(Xd, iteration_range=(3, 11)).compute()
        np.testing.assert_array_equal(got, gbdt.predict(X, iteration_range=(3, 11)))
        np.testing.assert_array_equal(model.predict(X, iteration_range=(0, 4)),
                                      gbdt.predict(X, iteration_range=(0, 4)))
        with pytest.raises(ValueError, match="iteration_range"):
            model.predict(Xd, iteration_range=(4, 2))
