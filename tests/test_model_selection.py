import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skltr.model_selection import QueryKFold, make_ranking_scorer, train_test_split_by_query


@settings(max_examples=40)
@given(st.lists(st.integers(0, 9), min_size=6, max_size=60), st.integers(2, 4), st.booleans())
def test_query_kfold_partitions_whole_queries(ids, k, shuffle):
    qid = np.array(ids)
    if len(np.unique(qid)) < k:
        with pytest.raises(ValueError, match=f"Cannot make {k} folds"):
            list(QueryKFold(k).split(np.zeros((len(qid), 1)), qid=qid))
        return
    cv = QueryKFold(k, shuffle=shuffle, random_state=0 if shuffle else None)
    seen = np.zeros(len(qid), dtype=int)
    for train, test in cv.split(np.zeros((len(qid), 1)), groups=qid):
        assert set(qid[train]).isdisjoint(qid[test])
        assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(len(qid)))
        assert np.all(np.diff(test) > 0)
        seen[test] += 1
    assert np.all(seen == 1)


def test_query_kfold_balances_rows_and_is_deterministic():
    qid = np.repeat(np.arange(20), np.arange(1, 21))
    folds = [test for _, test in QueryKFold(4).split(np.zeros((len(qid), 1)), qid=qid)]
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 20  # greedy: within one query of each other
    a = [t.tolist() for _, t in QueryKFold(4, shuffle=True, random_state=3).split(qid, qid=qid)]
    b = [t.tolist() for _, t in QueryKFold(4, shuffle=True, random_state=3).split(qid, qid=qid)]
    assert a == b


def test_query_kfold_errors():
    with pytest.raises(ValueError, match="n_splits must be an integer >= 2"):
        QueryKFold(1)
    with pytest.raises(ValueError, match="random_state only has an effect"):
        QueryKFold(3, random_state=0)
    with pytest.raises(ValueError, match="needs the query id"):
        list(QueryKFold(2).split(np.zeros((4, 1))))
    with pytest.raises(ValueError, match="differ"):
        list(QueryKFold(2).split(np.zeros((4, 1)), qid=[0, 0, 1, 1], groups=[0, 1, 1, 1]))


def test_train_test_split_by_query():
    rng = np.random.default_rng(0)
    qid = rng.integers(0, 30, size=300)
    X = np.arange(300)[:, None]
    y = rng.random(300)
    X_tr, X_te, y_tr, y_te, q_tr, q_te = train_test_split_by_query(
        X, y, qid=qid, test_size=0.2, random_state=1)
    assert set(q_tr).isdisjoint(q_te)
    assert len(np.unique(q_te)) == 6 and len(X_tr) + len(X_te) == 300
    assert np.all(np.diff(X_tr[:, 0]) > 0) and np.all(np.diff(X_te[:, 0]) > 0)
    assert np.array_equal(y_te, y[X_te[:, 0]])
    with pytest.raises(ValueError, match="both parts need at least one query"):
        train_test_split_by_query(X, qid=qid, test_size=30)
    with pytest.raises(ValueError, match="test_size must be"):
        train_test_split_by_query(X, qid=qid, test_size=1.5)


def test_scorer_specs():
    assert repr(make_ranking_scorer("NDCG@5")) == "make_ranking_scorer('ndcg@5')"
    assert make_ranking_scorer("err").k is None
    for bad in ("auc@10", "ndcg@", "ndcg@0", "ndcg@-1"):
        with pytest.raises(ValueError):
            make_ranking_scorer(bad)
