"""OnDemandRuleRanker on bad arrays and parameter values (issue 26): every case ends, within a
time limit, in a clear error (its type, and words that say what was wrong or how to fix it)
or in a correct result, checked against the model's definition: the scores of the naive LRAR
enumeration (``tests/naive_rules.py``) over the ranker's own cuts, or the training prior where
a document can have no rule.

The time limit (``tests/_limits.py``) is ``signal.setitimer`` raising in the main thread: a
numba kernel does not see it, but the rule kernels return to Python between batches of about
0.1 s, where it lands.
"""

import sys

import numpy as np
import pytest
import scipy.sparse as sp

import naive_rules as naive
from _limits import time_limit
from skltr import OnDemandRuleRanker
from skltr.datasets import make_ranking

#: Seconds a case may take (the kernels are compiled or loaded beforehand, by ``warm``).
LIMIT = 30


def test_time_limit_stops_a_predict_between_batches():
    # what the limit relies on: a long predict returns to Python often enough to be stopped
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 400)), rng.integers(0, 3, 60)
    ranker = OnDemandRuleRanker(discretization="quantile").fit(X, y, qid=np.zeros(60))
    ranker.predict(X[:1])
    import time

    t = time.perf_counter()
    with pytest.raises(AssertionError, match="did not finish"):
        with time_limit(0.5):
            ranker.predict(np.tile(X, (4, 1)))  # tens of seconds of work
    assert time.perf_counter() - t < 2.0


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=12, docs_per_query=8, n_features=5, n_informative=3,
                             random_state=0, dtype=np.float64)
    return X, y, qid


@pytest.fixture(scope="module")
def fitted(data):
    X, y, qid = data
    return OnDemandRuleRanker(max_rule_size=2).fit(X, y, qid=qid)


@pytest.fixture(autouse=True)
def limited(fitted):
    # ``fitted`` compiles (or loads) the kernels outside the limit
    with time_limit(LIMIT):
        yield


def naive_scores(ranker, X, y, Xt):
    """The scores of LRAR's definition for the rows ``Xt``, by the naive enumeration over the
    ranker's cuts (``tests/test_rule_ranker.py``'s reference)."""
    cuts = [list(ranker.cut_values_[ranker.cut_ptr_[f]:ranker.cut_ptr_[f + 1]])
            for f in range(X.shape[1])]
    items = naive.Items(X, cuts, np.isnan(X).any(axis=0))
    assert items.used == ranker.used_features_.tolist()
    levels, level_idx = np.unique(y, return_inverse=True)
    train = [items.of(row) for row in X]
    prior = naive.prior_of(y)
    return np.array([naive.score_of(
        naive.rules_of(items.of(row), train, level_idx, levels.size, ranker.max_rule_size,
                       ranker.min_support, ranker.min_confidence), levels, prior)
        for row in Xt], dtype=np.float64)


def assert_correct(ranker, X, y, Xt):
    got = ranker.predict(Xt)
    assert got.shape == (Xt.shape[0],) and got.dtype == np.float64 and np.isfinite(got).all()
    np.testing.assert_allclose(got, naive_scores(ranker, X, y, Xt), rtol=1e-9, atol=1e-12)
    return got


# -- fit: errors ---------------------------------------------------------------------------------

def _bad_fit_cases():
    X, y, qid = make_ranking(n_queries=12, docs_per_query=8, n_features=5, n_informative=3,
                             random_state=0, dtype=np.float64)
    inf = X.copy()
    inf[3, 1] = np.inf
    ninf = X.copy()
    ninf[0, 0] = -np.inf
    y_nan = y.astype(np.float64)
    y_nan[2] = np.nan
    qid_nan = qid.astype(np.float64)
    qid_nan[5] = np.nan
    return [
        ("+inf in X", (inf, y, qid), {}, ValueError, "infinity"),
        ("-inf in X", (ninf, y, qid), {}, ValueError, "infinity"),
        ("0 rows", (X[:0], y[:0], qid[:0]), {}, ValueError, "0 sample"),
        ("0 features", (X[:, :0], y, qid), {}, ValueError, "0 feature"),
        ("non-integer labels", (X, y + 0.5, qid), {}, ValueError, "whole numbers"),
        ("negative labels", (X, y - 1, qid), {}, ValueError, ">= 0"),
        ("NaN label", (X, y_nan, qid), {}, ValueError, "NaN"),
        ("text labels", (X, np.array(["a"] * len(y)), qid), {}, ValueError, "numeric"),
        ("y too short", (X, y[:-1], qid), {}, ValueError, "y has"),
        ("qid too short", (X, y, qid[:-1]), {}, ValueError, "one query id per row"),
        ("qid too long", (X, y, np.append(qid, 0)), {}, ValueError, "one query id per row"),
        ("qid missing", (X, y, None), {}, ValueError, "qid is required"),
        ("NaN qid", (X, y, qid_nan), {}, ValueError, "NaN"),
        ("text X", (np.full(X.shape, "high"), y, qid), {}, ValueError, "convert"),
        ("complex X", (X + 1j, y, qid), {}, ValueError, "[Cc]omplex"),
        ("3-D X", (X[:, :, None], y, qid), {}, ValueError, "dim 3"),
        ("1-D X", (X[:, 0], y, qid), {}, ValueError, "2D"),
        ("sparse X", (sp.csr_matrix(X), y, qid), {}, TypeError, "toarray"),
        ("2-D y", (X, np.c_[y, y], qid), {}, ValueError, "1-D"),
        ("sample_weight", (X, y, qid), {"sample_weight": np.ones(len(y))}, TypeError,
         "sample_weight"),
    ]


@pytest.mark.parametrize("name,args,kw,exc,match", _bad_fit_cases(),
                         ids=[c[0] for c in _bad_fit_cases()])
def test_bad_fit_input_is_refused_clearly(fitted, name, args, kw, exc, match):
    with pytest.raises(exc, match=match):
        OnDemandRuleRanker().fit(*args[:2], qid=args[2], **kw)
    # a refused refit leaves a fitted ranker as it was
    before = {k: v for k, v in vars(fitted).items() if k.endswith("_")}
    with pytest.raises(exc, match=match):
        fitted.fit(*args[:2], qid=args[2], **kw)
    after = {k: v for k, v in vars(fitted).items() if k.endswith("_")}
    assert after.keys() == before.keys()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])


_BAD_PARAMS = [
    ({"discretization": "uniform"}, "discretization"),
    ({"discretization": None}, "discretization"),
    ({"discretization": 3}, "discretization"),
    ({"discretization": "MDL"}, "discretization"),
    ({"n_bins": 1}, "n_bins"), ({"n_bins": 255}, "n_bins"), ({"n_bins": 2.5}, "n_bins"),
    ({"n_bins": "10"}, "n_bins"), ({"n_bins": -3}, "n_bins"),
    ({"max_rule_size": 0}, "max_rule_size"), ({"max_rule_size": 2.0}, "max_rule_size"),
    ({"min_support": 0}, "min_support"), ({"min_confidence": 1.01}, "min_confidence"),
    ({"min_confidence": float("nan")}, "min_confidence"),
    ({"max_itemsets_per_document": 0}, "max_itemsets_per_document"),
    ({"max_itemsets_per_document": 1e9}, "max_itemsets_per_document"),
    ({"cache_size": -1}, "cache_size"), ({"cache_size": 2**40}, "cache_size"),
    ({"n_jobs": 0}, "n_jobs"), ({"max_rule_size": 40}, "too many to score"),
]


@pytest.mark.parametrize("params,match", _BAD_PARAMS, ids=[str(p) for p, _ in _BAD_PARAMS])
def test_bad_parameters_are_refused_clearly(data, params, match):
    X, y, qid = data
    X = np.c_[X, np.random.default_rng(0).normal(size=(X.shape[0], 60))]  # 65 features
    with pytest.raises(ValueError, match=match):
        OnDemandRuleRanker(**{"discretization": "quantile", **params}).fit(X, y, qid=qid)


# -- fit: accepted, with correct results ---------------------------------------------------------

def test_nan_in_X_is_an_item(data):
    X, y, qid = data
    X = X.copy()
    X[::5, 1] = np.nan
    X[::7, 3] = np.nan
    ranker = OnDemandRuleRanker(max_rule_size=2, discretization="quantile", n_bins=4).fit(
        X, y, qid=qid)
    assert ranker.has_missing_[[1, 3]].all() and not ranker.has_missing_[[0, 2, 4]].any()
    Xt = X[:20].copy()
    Xt[:5, 0] = np.nan  # a NaN where training had none: no item
    assert_correct(ranker, X, y, Xt)


def test_constant_features_make_no_items_and_the_prior(data):
    X, y, qid = data
    C = np.ones_like(X)
    ranker = OnDemandRuleRanker().fit(C, y, qid=qid)
    assert ranker.used_features_.size == 0 and ranker.n_items_ == 0
    np.testing.assert_array_equal(ranker.predict(X), np.full(len(X), y.mean()))
    # a constant column beside informative ones is left out
    Xc = np.c_[X, np.full(len(X), 7.0)]
    ranker = OnDemandRuleRanker(max_rule_size=2, discretization="quantile", n_bins=3).fit(
        Xc, y, qid=qid)
    assert X.shape[1] not in ranker.used_features_
    assert_correct(ranker, Xc, y, Xc[:10])


def test_one_row(data):
    X, y, qid = data
    ranker = OnDemandRuleRanker().fit(X[:1], y[:1], qid=qid[:1])
    assert ranker.used_features_.size == 0  # every feature covers the one document
    np.testing.assert_array_equal(ranker.predict(X), np.full(len(X), float(y[0])))


def test_one_feature(data):
    X, y, qid = data
    ranker = OnDemandRuleRanker(discretization="quantile", n_bins=5).fit(X[:, :1], y, qid=qid)
    assert_correct(ranker, X[:, :1], y, X[:15, :1])


def test_one_level(data):
    X, y, qid = data
    ranker = OnDemandRuleRanker(discretization="quantile", n_bins=3).fit(
        X, np.full(len(y), 2), qid=qid)
    np.testing.assert_array_equal(ranker.predict(X), 2.0)


def test_every_row_its_own_level(data):
    X, y, qid = data
    labels = np.arange(len(y))
    ranker = OnDemandRuleRanker(max_rule_size=2, discretization="quantile", n_bins=3).fit(
        X, labels, qid=qid)
    assert ranker.levels_.size == len(y)
    assert_correct(ranker, X, labels, X[:8])


def test_extreme_finite_values(data):
    X, y, qid = data
    big = X.copy()
    big[::3] *= 1e300
    big[1::3] = -np.finfo(np.float64).max
    big[2, :] = np.finfo(np.float64).tiny
    ranker = OnDemandRuleRanker(max_rule_size=2, discretization="quantile", n_bins=4).fit(
        big, y, qid=qid)
    assert np.isfinite(ranker.cut_values_).all()
    assert_correct(ranker, big, y, big[:12])
    ranker = OnDemandRuleRanker(max_rule_size=2).fit(big, y, qid=qid)  # MDL's midpoints
    assert np.isfinite(ranker.cut_values_).all()
    assert_correct(ranker, big, y, big[:12])


def test_labels_as_numeric_text_and_large_integers(data):
    X, y, qid = data
    a = OnDemandRuleRanker(max_rule_size=2).fit(X, y.astype(str), qid=qid)
    b = OnDemandRuleRanker(max_rule_size=2).fit(X, y, qid=qid)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    big = OnDemandRuleRanker(max_rule_size=2).fit(X, y * 10**12, qid=qid)
    assert_correct(big, X, y * 10**12, X[:10])


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, object])
def test_other_dtypes_are_read_as_float64(data, dtype):
    X, y, qid = data
    Xd = (X > 0.5) if dtype is np.bool_ else (X * 10).astype(dtype)
    ranker = OnDemandRuleRanker(max_rule_size=2, discretization="quantile", n_bins=3).fit(
        Xd, y, qid=qid)
    X64 = np.asarray(Xd, dtype=np.float64)
    assert_correct(ranker, X64, y, Xd[:10].astype(np.float64))
    np.testing.assert_array_equal(ranker.predict(Xd[:10]), ranker.predict(X64[:10]))


# -- predict: errors and accepted inputs ---------------------------------------------------------

def _bad_predict_cases():
    X, _, _ = make_ranking(n_queries=12, docs_per_query=8, n_features=5, n_informative=3,
                           random_state=0, dtype=np.float64)
    inf = X[:4].copy()
    inf[1, 2] = -np.inf
    return [
        ("wider X", np.c_[X, X], ValueError, "10 features.*expecting 5"),
        ("narrower X", X[:, :3], ValueError, "3 features.*expecting 5"),
        ("inf", inf, ValueError, "infinity"),
        ("text X", np.full((3, 5), "high"), ValueError, "convert"),
        ("3-D X", X[:, :, None], ValueError, "dim 3"),
        ("1-D X", X[0], ValueError, "2D"),
        ("sparse X", sp.csr_matrix(X), TypeError, "toarray"),
        ("complex X", X + 1j, ValueError, "[Cc]omplex"),
    ]


@pytest.mark.parametrize("name,Xt,exc,match", _bad_predict_cases(),
                         ids=[c[0] for c in _bad_predict_cases()])
def test_bad_predict_input_is_refused_clearly(fitted, name, Xt, exc, match):
    before = {k: v for k, v in vars(fitted).items() if k.endswith("_")}
    for call in (fitted.predict, fitted.rule_stats):
        with pytest.raises(exc, match=match):
            call(Xt)
    for k, v in vars(fitted).items():
        if k.endswith("_"):
            np.testing.assert_array_equal(v, before[k])


def test_predict_edge_rows(fitted, data):
    X, y, qid = data
    assert fitted.predict(X[:0]).shape == (0,)
    n_rules, conf = fitted.rule_stats(X[:0])
    assert n_rules.shape == conf.shape == (0, fitted.levels_.size)
    # every feature NaN where training had none: no item, no rule, the prior
    np.testing.assert_array_equal(fitted.predict(np.full((3, 5), np.nan)), fitted.prior_)
    # values far outside the training range fall in the end intervals
    far = np.vstack([X[:3] * 1e300, -np.abs(X[:3]) * 1e300])
    assert_correct(fitted, X, y, far)
    assert_correct(fitted, X, y, X[:1])  # one row


def test_unfitted_and_wrong_order_calls(data):
    X, y, qid = data
    from sklearn.exceptions import NotFittedError

    for call in (OnDemandRuleRanker().predict, OnDemandRuleRanker().rule_stats):
        with pytest.raises(NotFittedError):
            call(X)
    with pytest.raises(ValueError, match="score\\(\\) needs qid"):
        OnDemandRuleRanker(max_rule_size=1).fit(X, y, qid=qid).score(X, y)


@pytest.mark.skipif(sys.platform == "win32", reason="the time limit uses SIGALRM")
def test_many_features_warn_at_fit_and_are_refused_at_predict_in_time():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(40, 3000)), rng.integers(0, 2, 40)
    with pytest.warns(UserWarning, match="max_itemsets_per_document"):
        ranker = OnDemandRuleRanker(discretization="quantile").fit(X, y, qid=np.zeros(40))
    with pytest.raises(ValueError, match="max_itemsets_per_document=100000000"):
        ranker.predict(X[:2])
    ranker.set_params(max_rule_size=1)  # 3,000 one-item rules: fine
    assert np.isfinite(ranker.predict(X[:2])).all()
