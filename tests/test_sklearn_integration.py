"""scikit-learn plumbing: qid routing through Pipeline, GridSearchCV and cross_validate."""

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skltr.metrics import ndcg_score
from skltr.model_selection import QueryKFold, make_ranking_scorer
from skltr.utils.estimator_checks import check_ranker

from _rankers import LinearTestRanker, SingleQueryLinearTestRanker


def _data(seed=0, n_queries=40, n_docs=12, n_features=5):
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(n_queries), n_docs)
    X = rng.normal(size=(qid.size, n_features))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=qid.size)), 0, 4)
    perm = rng.permutation(qid.size)  # unsorted, non-contiguous qid on purpose
    return X[perm], y[perm], qid[perm]


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def test_grid_search_pipeline_query_kfold(routing):
    X, y, qid = _data()
    search = GridSearchCV(
        make_pipeline(StandardScaler(), LinearTestRanker()),
        {"lineartestranker__alpha": [0.1, 1e4]},
        cv=QueryKFold(4),
        scoring=make_ranking_scorer("ndcg@10"),
    ).fit(X, y, qid=qid)
    assert search.best_params_ == {"lineartestranker__alpha": 0.1}
    # The search's CV score equals the mean over folds computed by hand.
    by_hand = []
    for train, test in QueryKFold(4).split(X, qid=qid):
        ranker = LinearTestRanker(alpha=0.1)
        scaler = StandardScaler().fit(X[train])
        ranker.fit(scaler.transform(X[train]), y[train], qid=qid[train])
        by_hand.append(ndcg_score(y[test], ranker.predict(scaler.transform(X[test])),
                                  qid=qid[test], k=10))
    assert search.best_score_ == pytest.approx(np.mean(by_hand), abs=1e-12)


def test_cross_validate_params_qid(routing):
    X, y, qid = _data(1)
    res = cross_validate(LinearTestRanker(), X, y, cv=QueryKFold(3), params={"qid": qid},
                         scoring={"ndcg": make_ranking_scorer("ndcg@5"),
                                  "map": make_ranking_scorer("map@5")})
    assert res["test_ndcg"].shape == (3,) and np.all(res["test_ndcg"] > 0.5)
    assert np.all((res["test_map"] >= 0) & (res["test_map"] <= 1))


def test_default_score_is_ndcg_at_eval_at(routing):
    X, y, qid = _data(2)
    res = cross_validate(LinearTestRanker(eval_at=3), X, y, cv=QueryKFold(3),
                         params={"qid": qid})
    train, test = next(QueryKFold(3).split(X, qid=qid))
    r = LinearTestRanker(eval_at=3).fit(X[train], y[train], qid=qid[train])
    assert res["test_score"][0] == pytest.approx(
        ndcg_score(y[test], r.predict(X[test]), qid=qid[test], k=3), abs=1e-12)


def test_score_without_qid_explains_routing():
    X, y, qid = _data()
    r = LinearTestRanker().fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="enable_metadata_routing=True"):
        r.score(X, y)


def test_scorer_without_routing_explains():
    X, y, qid = _data()
    r = LinearTestRanker().fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="enable_metadata_routing"):
        make_ranking_scorer("ndcg@10")(r, X, y)


def test_query_kfold_without_routing_takes_groups():
    X, y, qid = _data(3)
    # Without routing scikit-learn forwards fit params to fit (split per fold) and groups to
    # the splitter; score() then has no qid and must say how to fix it.
    search = GridSearchCV(LinearTestRanker(), {"alpha": [1.0]}, cv=QueryKFold(3),
                          error_score="raise")
    with pytest.raises(ValueError, match="enable_metadata_routing"):
        search.fit(X, y, groups=qid, qid=qid)
    # With the default error_score, scikit-learn turns the error into NaN plus a warning
    # that carries the same explanation.
    search = GridSearchCV(LinearTestRanker(), {"alpha": [1.0]}, cv=QueryKFold(3))
    with pytest.warns(UserWarning, match="enable_metadata_routing"):
        search.fit(X, y, groups=qid, qid=qid)
    assert np.isnan(search.cv_results_["mean_test_score"][0])


@parametrize_with_checks([SingleQueryLinearTestRanker()], expected_failed_checks=lambda e: {
    "check_supervised_y_2d": "2-D y is rejected on purpose: rankers have one target.",
})
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_check_ranker_on_minimal_ranker():
    check_ranker(LinearTestRanker())


def test_sparse_X_rejected_with_a_clear_message():
    import scipy.sparse as sp

    X, y, qid = _data()
    with pytest.raises(TypeError, match=r"does not accept scipy sparse input yet.*toarray"):
        LinearTestRanker().fit(sp.csr_matrix(X), y, qid=qid)
    model = LinearTestRanker().fit(X, y, qid=qid)
    with pytest.raises(TypeError, match="toarray"):
        model.predict(sp.csr_matrix(X))


def test_inf_in_features_is_an_error_for_rankers_that_do_not_route_it():
    X, y, qid = _data()
    X[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        LinearTestRanker().fit(X, y, qid=qid)
