"""Learning to rank from clicks: the exact per-position sums against ``math.fsum``, the click
simulator, the position-debiased gradients and propensity updates against slow references
(``naive_objectives.py``), Unbiased LambdaMART against XGBoost's ``lambdarank_unbiased``, and
the estimator's API (routing, persistence).
"""

import json
import math
import pickle
from fractions import Fraction

import naive_objectives as naive
import numpy as np
import pytest
import sklearn
from hypothesis import given
from hypothesis import strategies as st
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skltr import GPUHistGBDTRanker
from skltr._cpu import exact_sum
from skltr._cpu import objectives as kernels
from skltr.datasets import make_ranking, simulate_clicks
from skltr.metrics import ndcg_score
from skltr.model_selection import QueryKFold

# --------------------------------------------------------------------------------------------
# exact sums per position (skltr._cpu.exact_sum) against math.fsum
# --------------------------------------------------------------------------------------------

MAX = np.finfo(np.float64).max
TINY = 5e-324  # the smallest subnormal, 2**-1074


def _accumulate(values, keys, k):
    acc = exact_sum.accumulator(k)
    exact_sum.add_by_key(values, np.asarray(keys, dtype=np.int64), acc)
    return acc


def _rounded(acc):
    out = np.empty(acc.shape[0])
    exact_sum.to_float64(acc, out)
    return out


def _exact(values):
    values = np.asarray(values, dtype=np.float64)
    return _rounded(_accumulate(values, np.zeros(values.size), 1))[0]


def _fsum(values):
    """``math.fsum``, correctly rounded; ``+ 0.0``: an exact zero is +0.0 in skltr (Python's
    sign of an all-negative-zero fsum has changed between versions)."""
    return math.fsum(values) + 0.0


def _bits(x):
    return np.float64(x).tobytes()


def _hostile(name, rng):
    """Sums a sequential float64 loop gets wrong, or that test the rounding and range."""
    if name == "cancellation":
        big = rng.normal(size=500) * 1e300
        small = rng.normal(size=500) * 1e-300
        return np.concatenate([big, small, -big, [1e16, 1.0, -1e16]])
    if name == "huge-and-tiny":
        return (rng.choice([-1.0, 1.0], 2000) * rng.uniform(1, 2, 2000)
                * 2.0 ** rng.integers(-1074, 1000, 2000))
    if name == "subnormals":
        return (rng.integers(-(1 << 52), 1 << 52, 2000) * TINY).tolist() + [2.0 ** -1022, -TINY]
    if name == "many":
        return rng.standard_normal(200_000) * 10.0 ** rng.integers(-8, 8, 200_000)
    if name == "ties-to-even":
        # 2**53 + 1 is halfway: to 2**53 (even); + 2**-100 breaks the tie upwards;
        # 2**53 + 2 + 1 is halfway between +2 and +4: to +4 (even)
        return [2.0 ** 53, 1.0, 2.0 ** 53 + 2.0, 1.0, 2.0 ** -100, -(2.0 ** 53)]
    if name == "near-overflow":
        return [MAX, -MAX, MAX, 2.0 ** 969, -(2.0 ** 960)]  # stays below the rounding edge
    raise AssertionError(name)


HOSTILE = ["cancellation", "huge-and-tiny", "subnormals", "many", "ties-to-even",
           "near-overflow"]


@pytest.mark.parametrize("name", HOSTILE)
def test_exact_sum_is_fsum_in_any_order_and_partition(name):
    """The correctly rounded sum, whatever the order of the values or their partition into
    accumulators (workers) merged as int64."""
    rng = np.random.default_rng(HOSTILE.index(name))
    values = np.asarray(_hostile(name, rng), dtype=np.float64)
    want = _bits(_fsum(values.tolist()))
    naive_sum = 0.0
    for v in values:
        naive_sum += v
    assert _bits(_exact(values)) == want
    for _ in range(3):
        perm = rng.permutation(values.size)
        assert _bits(_exact(values[perm])) == want
        cuts = np.sort(rng.integers(0, values.size + 1, rng.integers(1, 5)))
        merged = sum(_accumulate(part, np.zeros(part.size), 1)
                     for part in np.split(values[perm], cuts))
        assert _bits(_rounded(merged)[0]) == want
    if name in ("cancellation", "huge-and-tiny", "ties-to-even"):
        assert _bits(naive_sum) != want  # the inputs do defeat a sequential sum


def test_exact_sum_edge_cases():
    # signed zeros: an exact zero is +0.0, as a sum from 0.0 is
    for values in ([], [-0.0], [-0.0, -0.0], [0.0, -0.0], [1.5, -1.5], [-TINY, TINY]):
        assert _bits(_exact(values)) == _bits(0.0)
    assert _bits(_exact([-0.0, -1.0, -0.0])) == _bits(-1.0)
    # beyond float64: an infinity, as rounding to nearest gives (fsum raises instead)
    assert _exact([MAX, MAX]) == np.inf and _exact([-MAX, -MAX, MAX]) == -MAX
    assert _exact([MAX, 2.0 ** 970]) == np.inf      # the tie above MAX: to even, upwards
    assert _exact([MAX, 2.0 ** 969]) == MAX          # below the tie
    assert _exact([-MAX, -(2.0 ** 970)]) == -np.inf
    # non-finite values: IEEE addition's result
    assert _exact([np.inf, 1.0, MAX]) == np.inf and _exact([-np.inf, -MAX]) == -np.inf
    assert np.isnan(_exact([np.inf, -np.inf])) and np.isnan(_exact([1.0, np.nan]))
    # float32 values are summed exactly, widened: 2**24 + 1 ones is not float32's 2**24
    ones = np.ones(1 << 24 | 1, dtype=np.float32)
    acc = _accumulate(ones, np.zeros(ones.size), 1)
    assert _rounded(acc)[0] == 2.0 ** 24 + 1 and acc[0, exact_sum.COUNT] == ones.size


def test_exact_sums_by_key_skip_untracked_keys_and_count_rows():
    rng = np.random.default_rng(3)
    values = rng.normal(size=3000) * 10.0 ** rng.integers(-30, 30, 3000)
    keys = rng.integers(0, 9, 3000)  # keys 6..8 are not tracked
    acc = _accumulate(values, keys, 6)
    got = _rounded(acc)
    for key in range(6):
        assert _bits(got[key]) == _bits(_fsum(values[keys == key].tolist()))
        assert acc[key, exact_sum.COUNT] == np.sum(keys == key)
    # the limbs in use: only those that values of 1e-30 .. 1e30 reach
    first, stop = exact_sum.used_limbs(acc)
    assert 0 < first < stop < exact_sum.LIMBS and stop - first <= 10
    assert exact_sum.used_limbs(exact_sum.accumulator(3)) == (0, 0)


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=60),
       st.randoms(use_true_random=False))
def test_exact_sum_equals_fsum_property(values, random):
    try:
        want = _fsum(values)
    except OverflowError:  # fsum's answer to a partial sum beyond float64: exact rationals
        exact = sum(map(Fraction, values), Fraction(0))
        try:
            want = float(exact)  # correctly rounded
        except OverflowError:
            want = math.inf if exact > 0 else -math.inf
    assert _bits(_exact(values)) == _bits(want)
    random.shuffle(values)
    assert _bits(_exact(values)) == _bits(want)


# --------------------------------------------------------------------------------------------
# random queries for the kernels
# --------------------------------------------------------------------------------------------


def _queries(seed, n_queries=40, max_docs=14, spread=1.0):
    """Query-grouped clicks/grades, scores with ties, displayed positions (shuffled, some
    repeated, some beyond the tracked ones) and single-document queries."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_docs, size=n_queries)
    group_ptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    n = int(group_ptr[-1])
    y = rng.integers(0, 3, size=n).astype(np.float64)
    scores = np.round(rng.normal(scale=spread, size=n), 1)  # rounding makes ties
    shown = np.concatenate([rng.permutation(m) for m in sizes]).astype(np.int64)
    shown[rng.random(n) < 0.1] = 0  # a position shown twice in a query (merged sessions)
    return y, scores, group_ptr, shown


def _reference(y, scores, group_ptr, shown, tplus, tminus, **params):
    grad, hess, li, lj = [], [], [], []
    for q in range(group_ptr.size - 1):
        lo, hi = group_ptr[q], group_ptr[q + 1]
        g, h, a, b = naive.unbiased_lambdarank(
            list(y[lo:hi]), list(scores[lo:hi]), [int(p) for p in shown[lo:hi]],
            list(tplus), list(tminus), **params)
        grad += g
        hess += h
        li += a
        lj += b
    return np.array(grad), np.array(hess), np.array(li), np.array(lj)


@pytest.mark.parametrize("xgboost_cost", [False, True])
@pytest.mark.parametrize("spread", [1.0, 1e3])  # 1e3: the overflow-safe (exact) branch
@pytest.mark.parametrize("seed", range(4))
def test_unbiased_gradients_and_costs_match_the_reference(seed, spread, xgboost_cost):
    y, scores, group_ptr, shown = _queries(seed, spread=spread)
    rng = np.random.default_rng(100 + seed)
    k = 7  # fewer than the longest query: pairs shown below are not reweighted
    tplus, tminus = rng.uniform(0.1, 1.5, k), rng.uniform(0.1, 1.5, k)
    tplus[3] = 0.0  # an unknown propensity: its pairs are not reweighted either
    truncation = 5
    n = y.size
    grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
    li, lj = np.full(n, np.nan), np.full(n, np.nan)
    kernels.unbiased_lambdarank_gradients(scores, y, group_ptr, np.empty(0), True, truncation,
                                          1.0, True, shown, tplus, tminus, li, lj, grad, hess,
                                          kernels.QueryMemo.none(), xgboost_cost)
    g, h, a, b = _reference(y, scores, group_ptr, shown, tplus, tminus,
                            truncation_level=truncation, xgboost_cost=xgboost_cost)
    np.testing.assert_allclose(grad, g.astype(np.float32), rtol=2e-6, atol=1e-12)
    np.testing.assert_allclose(hess, h.astype(np.float32), rtol=2e-6, atol=1e-12)
    np.testing.assert_allclose(li, a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lj, b, rtol=1e-10, atol=1e-12)
    assert np.abs(a).max() > 0 and np.abs(b).max() > 0  # the test exercised the costs


def test_unbiased_with_unit_propensities_is_lambdarank():
    """t+ = t- = 1: the reweighting is the identity, the gradients are lambdarank's bits."""
    y, scores, group_ptr, shown = _queries(7)
    n = y.size
    out = [np.empty(n, np.float32) for _ in range(4)]
    kernels.lambdarank_gradients(scores, y, group_ptr, np.empty(0), True, 10, 1.0, True,
                                 out[0], out[1], kernels.QueryMemo.none())
    kernels.unbiased_lambdarank_gradients(scores, y, group_ptr, np.empty(0), True, 10, 1.0,
                                          True, shown, np.ones(12), np.ones(12), np.empty(n),
                                          np.empty(n), out[2], out[3],
                                          kernels.QueryMemo.none())
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[1], out[3])


def _host_round(mode, shown, k, **spec):
    """The host step of a fit (``skltr._gbdt.position_bias``) on rows shown at ``shown``."""
    from skltr._gbdt.position_bias import (AdditiveRound, PositionBias, PositionEstimate,
                                           UnbiasedRound)

    spec = PositionBias(mode, **spec)
    kind = AdditiveRound if mode == "additive" else UnbiasedRound
    return kind(spec, shown, PositionEstimate.start(mode, k))


@pytest.mark.parametrize("bias_norm", [0.0, 1.0, 3.0])
def test_propensity_update_matches_the_reference(bias_norm):
    """The exact per-position sums are ``math.fsum``'s: the reference's bits."""
    y, scores, group_ptr, shown = _queries(3)
    rng = np.random.default_rng(0)
    li, lj = rng.uniform(0, 2, y.size), rng.uniform(0, 2, y.size)
    k = 6
    host = _host_round("unbiased", shown, k, bias_norm=bias_norm)
    host.estimate.tplus[:] = host.estimate.tminus[:] = 7.0
    host.update(li, lj)
    ref_plus, ref_minus = naive.propensities(list(li), list(lj), list(shown), k, bias_norm)
    np.testing.assert_array_equal(host.estimate.tplus, ref_plus)
    np.testing.assert_array_equal(host.estimate.tminus, ref_minus)
    assert host.estimate.tplus[0] == 1.0 and host.estimate.tminus[0] == 1.0
    # no cost at position 0: the propensities are kept (XGBoost's guard)
    host.regularizer = 0.5
    host.update(np.where(shown == 0, 0.0, li), lj)
    np.testing.assert_array_equal(host.estimate.tplus, ref_plus)


@pytest.mark.parametrize("regularization", [0.0, 0.5])
def test_additive_bias_step_matches_the_reference(regularization):
    y, scores, group_ptr, shown = _queries(5)
    rng = np.random.default_rng(1)
    grad = rng.normal(size=y.size).astype(np.float32)
    hess = rng.uniform(0, 1, y.size).astype(np.float32)
    bias = rng.normal(size=9)
    expected = naive.additive_bias_step([float(v) for v in grad], [float(v) for v in hess],
                                        list(shown), list(bias), 0.1, regularization)
    host = _host_round("additive", shown, bias.size, learning_rate=0.1,
                       regularization=regularization)
    host.estimate.bias[:] = bias
    host.update(grad, hess)
    np.testing.assert_array_equal(host.estimate.bias, expected)


# --------------------------------------------------------------------------------------------
# the simulator
# --------------------------------------------------------------------------------------------


def test_pbm_click_rates_match_the_propensities():
    """With every document of the top grade (attractiveness 1) and a random logging policy,
    position p's click rate is its propensity: within 4 binomial standard errors."""
    n_queries, docs, sessions = 50, 10, 400
    y = np.full(n_queries * docs, 3)
    qid = np.repeat(np.arange(n_queries), docs)
    prop = 0.9 / (np.arange(docs) + 1.0) ** 0.7
    log = simulate_clicks(y, qid, propensities=prop, noise=0.0, n_sessions=sessions,
                          random_state=0)
    rate = np.bincount(log.position, weights=log.clicks) / np.bincount(log.position)
    n_per = n_queries * sessions
    np.testing.assert_array_less(np.abs(rate - prop), 4 * np.sqrt(prop * (1 - prop) / n_per))


def test_pbm_attractiveness_and_noise():
    """At position 0 (propensity 1) a grade-g document is clicked with probability
    eps + (1 - eps) (2**g - 1) / (2**g_max - 1)."""
    y = np.tile(np.arange(4), 5000)  # one query per 4 docs
    qid = np.repeat(np.arange(5000), 4)
    log = simulate_clicks(y, qid, propensities=lambda p: np.ones(p.shape), noise=0.2,
                          random_state=1)
    grade = y[log.rows]
    for g in range(4):
        want = 0.2 + 0.8 * (2.0 ** g - 1) / 7.0  # max grade 3
        got = log.clicks[grade == g].mean()
        assert abs(got - want) < 4 * np.sqrt(want * (1 - want) / 5000) + 1e-12, (g, got)


def test_cascade_clicks_once_and_stops():
    y = np.tile([3, 3, 3, 0], 300)
    qid = np.repeat(np.arange(300), 4)
    log = simulate_clicks(y, qid, model="cascade", noise=0.0, random_state=0)
    per_session = np.bincount(log.session, weights=log.clicks)
    assert np.all(per_session == 1)  # the first (fully attractive) document is clicked
    assert np.all(log.clicks[log.position > 0][y[log.rows][log.position > 0] == 0] == 0)
    # stop_probability 0: every attractive document is clicked
    log = simulate_clicks(y, qid, model="cascade", noise=0.0, stop_probability=0.0,
                          random_state=0)
    np.testing.assert_array_equal(log.clicks, (y[log.rows] == 3).astype(float))


def test_logging_scores_give_the_display_order_and_the_log_is_deterministic():
    X, y, qid = make_ranking(n_queries=20, docs_per_query=8, n_features=4, n_informative=2,
                             random_state=0)
    scores = np.random.default_rng(0).normal(size=y.size)
    log = simulate_clicks(y, qid, logging_scores=scores, n_sessions=2, random_state=3)
    for s in np.unique(log.session):
        rows = log.rows[log.session == s]
        assert np.all(np.diff(scores[rows]) <= 0)  # shown by descending logging score
        np.testing.assert_array_equal(log.position[log.session == s], np.arange(rows.size))
    again = simulate_clicks(y, qid, logging_scores=scores, n_sessions=2, random_state=3)
    for a, b in zip(log, again):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(log.query, qid[log.rows])
    page = simulate_clicks(y, qid, logging_scores=scores, n_sessions=2, n_shown=3,
                           random_state=3)
    assert page.position.max() == 2
    np.testing.assert_array_equal(page.rows, log.rows[log.position < 3])


@pytest.mark.parametrize("kw, fragment", [
    (dict(model="dbn"), "model"),
    (dict(noise=1.5), "noise"),
    (dict(n_sessions=0), "n_sessions"),
    (dict(max_grade=1), "max_grade"),
    (dict(propensities=[0.5, 1.5]), "propensities"),
    (dict(propensities=lambda p: np.ones(3)), "propensities"),
    (dict(model="cascade", propensities=[1.0]), "propensities"),
    (dict(logging_scores=np.ones(3)), "logging_scores"),
    (dict(stop_probability=-0.1), "stop_probability"),
    (dict(n_shown=0), "n_shown"),
])
def test_simulator_refuses_bad_input(kw, fragment):
    y = np.array([0, 2, 1, 0, 1])
    qid = np.array([1, 1, 1, 2, 2])
    with pytest.raises(ValueError, match=fragment):
        simulate_clicks(y, qid, **kw)
    with pytest.raises(ValueError, match="y"):
        simulate_clicks(np.array([0, -1, 1]), np.zeros(3))
    with pytest.raises(ValueError, match="qid"):
        simulate_clicks(y, qid[:-1])


# --------------------------------------------------------------------------------------------
# fits
# --------------------------------------------------------------------------------------------


def _click_data(seed=0, n_queries=150, docs=15, sessions=2):
    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=docs, n_features=10,
                             n_informative=5, random_state=seed)
    log = simulate_clicks(y, qid, n_sessions=sessions, random_state=seed)
    return X[log.rows], log


@pytest.mark.parametrize("mode", ["unbiased", "unbiased_paper"])
def test_first_round_propensities_equal_xgboost(mode):
    """After one round from equal scores both costs are log 2 |delta NDCG|: the propensities
    are XGBoost's ``ti+`` / ``tj-`` (stored in float32) for rows in displayed order."""
    xgb = pytest.importorskip("xgboost")
    X, log = _click_data()
    dtrain = xgb.DMatrix(X, label=log.clicks, qid=log.session)
    booster = xgb.train(dict(objective="rank:ndcg", lambdarank_unbiased=True,
                             lambdarank_pair_method="topk", lambdarank_num_pair_per_sample=10,
                             base_score=0.0, max_depth=3, tree_method="hist"), dtrain, 1)
    config = json.loads(booster.save_config())["learner"]["objective"]
    ranker = GPUHistGBDTRanker(n_estimators=1, position_bias=mode,
                               lambdarank_truncation_level=10, random_state=0)
    ranker.fit(X, log.clicks, qid=log.session, position=log.position)
    np.testing.assert_allclose(ranker.position_bias_, np.array(config["ti+"], float),
                               rtol=2e-7, atol=1e-7)
    np.testing.assert_allclose(ranker.position_bias_minus_, np.array(config["tj-"], float),
                               rtol=2e-7, atol=1e-7)


def test_xgboost_cost_is_the_reversed_pair_loss():
    """XGBoost's second-round propensities follow from its first-round scores with the
    reference's ``xgboost_cost`` (and not with the paper's cost)."""
    xgb = pytest.importorskip("xgboost")
    X, log = _click_data(1, n_queries=60)
    dtrain = xgb.DMatrix(X, label=log.clicks, qid=log.session)
    params = dict(objective="rank:ndcg", lambdarank_unbiased=True,
                  lambdarank_pair_method="topk", lambdarank_num_pair_per_sample=8,
                  base_score=0.0, max_depth=3, tree_method="hist")
    first = json.loads(xgb.train(params, dtrain, 1).save_config())["learner"]["objective"]
    second = json.loads(xgb.train(params, dtrain, 2).save_config())["learner"]["objective"]
    scores = xgb.train(params, dtrain, 1).predict(dtrain, output_margin=True).astype(float)
    group_ptr = np.r_[0, np.flatnonzero(np.diff(log.session)) + 1, log.session.size]
    errors = {}
    for cost in (False, True):
        *_, li, lj = _reference(log.clicks, scores, group_ptr, log.position,
                                np.array(first["ti+"]), np.array(first["tj-"]),
                                truncation_level=8, xgboost_cost=cost)
        plus, _ = naive.propensities(list(li), list(lj), list(log.position), 8)
        errors[cost] = np.abs(np.array(plus) - np.array(second["ti+"])).max()
    assert errors[True] < 1e-6 < errors[False], errors


def test_unbiased_fit_recovers_pbm_propensities_and_ranks_like_xgboost():
    """Clicks from a PBM with propensities 1 / (p + 1) under a random logging policy: the
    estimated t+ is within 0.1 of XGBoost's estimate on the same clicks, and test NDCG on the
    true grades is no more than 0.03 below XGBoost's (one data seed, 150 test queries: the
    seed-to-seed spread; ``benchmarks/clicks.py`` compares means over seeds). XGBoost's
    hessian is twice LightGBM's (and skltr's): its eta=0.1 takes the steps of
    learning_rate=0.05 here."""
    xgb = pytest.importorskip("xgboost")
    X, y, qid = make_ranking(n_queries=500, docs_per_query=12, n_features=10,
                             n_informative=5, random_state=4)
    test = qid >= np.quantile(np.unique(qid), 0.7)
    log = simulate_clicks(y[~test], qid[~test], n_sessions=3, random_state=4)
    Xc = X[~test][log.rows]
    ranker = GPUHistGBDTRanker(n_estimators=60, position_bias="unbiased",
                               learning_rate=0.05, lambdarank_truncation_level=12,
                               random_state=0)
    ranker.fit(Xc, log.clicks, qid=log.session, position=log.position)
    booster = xgb.train(dict(objective="rank:ndcg", lambdarank_unbiased=True,
                             lambdarank_pair_method="topk", lambdarank_num_pair_per_sample=12,
                             base_score=0.0, max_leaves=31, grow_policy="lossguide",
                             tree_method="hist", eta=0.1, max_depth=0),
                        xgb.DMatrix(Xc, label=log.clicks, qid=log.session), 60)
    cfg = json.loads(booster.save_config())["learner"]["objective"]
    assert np.abs(ranker.position_bias_ - np.array(cfg["ti+"])).max() < 0.1
    ours = ndcg_score(y[test], ranker.predict(X[test]), qid=qid[test], k=10)
    theirs = ndcg_score(y[test], booster.predict(xgb.DMatrix(X[test])), qid=qid[test], k=10)
    assert ours > theirs - 0.03, (ours, theirs)


@pytest.mark.parametrize("mode", ["unbiased", "additive"])
def test_fit_is_deterministic_and_independent_of_session_order(mode):
    X, log = _click_data(2, n_queries=80)
    kw = dict(n_estimators=8, position_bias=mode, random_state=0)
    a = GPUHistGBDTRanker(**kw).fit(X, log.clicks, qid=log.session, position=log.position)
    # whole sessions shuffled (rows of a session keep their order: lambdarank breaks score
    # ties by row order)
    sessions = np.random.default_rng(0).permutation(np.unique(log.session))
    perm = np.concatenate([np.flatnonzero(log.session == s) for s in sessions])
    b = GPUHistGBDTRanker(**kw).fit(X[perm], log.clicks[perm], qid=log.session[perm],
                                    position=log.position[perm])
    np.testing.assert_array_equal(a.position_bias_, b.position_bias_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_additive_gradients_are_lambdarank_at_shifted_scores():
    """The additive form: one round's gradients are lambdarank's at score + bias[position],
    and the bias takes LightGBM's Newton step from them."""
    from skltr._gbdt.objectives import make_objective
    from skltr._gbdt.position_bias import PositionBias

    y, scores, group_ptr, shown = _queries(9)
    obj = make_objective("lambdarank", truncation_level=10,
                         position_bias=PositionBias("additive", learning_rate=0.3))
    obj = obj.at_positions(shown)
    obj.estimate.bias[:] = np.linspace(1.0, -1.0, obj.estimate.bias.size)
    bias = obj.estimate.bias.copy()
    n = y.size
    grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
    obj.gradients(scores, y, group_ptr, None, grad, hess, 0)
    g_ref, h_ref = naive.per_query(naive.lambdarank, y, scores + bias[shown], group_ptr,
                                   truncation_level=10)
    np.testing.assert_allclose(grad, np.float32(g_ref), rtol=2e-6, atol=1e-12)
    expected = naive.additive_bias_step([float(v) for v in grad], [float(v) for v in hess],
                                        list(shown), list(bias), 0.3, 0.0)
    np.testing.assert_allclose(obj.estimate.bias, expected, rtol=1e-12)


def test_position_is_routed_through_pipeline_and_grid_search():
    X, log = _click_data(3, n_queries=60)
    pipe = make_pipeline(StandardScaler(), GPUHistGBDTRanker(
        n_estimators=4, position_bias="unbiased", random_state=0))
    grid = {"gpuhistgbdtranker__lambdarank_bias_norm": [0.0, 1.0]}
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(pipe, grid, cv=QueryKFold(n_splits=2))
        search.fit(X, log.clicks, qid=log.session, position=log.position)
        # the refit saw every row's position: the same model as a direct fit
        direct = make_pipeline(StandardScaler(), GPUHistGBDTRanker(
            n_estimators=4, position_bias="unbiased", random_state=0,
            lambdarank_bias_norm=search.best_params_[
                "gpuhistgbdtranker__lambdarank_bias_norm"]))
        direct.fit(X, log.clicks, qid=log.session, position=log.position)
    np.testing.assert_array_equal(search.best_estimator_[-1].position_bias_,
                                  direct[-1].position_bias_)
    # without position, the search's fits fail with the message naming it
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(ValueError, match="position"):
            GridSearchCV(pipe, grid, cv=QueryKFold(n_splits=2),
                         error_score="raise").fit(X, log.clicks, qid=log.session)


def test_position_without_position_bias_warns_at_the_callers_line():
    X, log = _click_data(6, n_queries=20)
    with pytest.warns(UserWarning, match=r"position=\.\.\.\) is ignored") as record:
        ranker = GPUHistGBDTRanker(n_estimators=2).fit(X, log.clicks, qid=log.session,
                                                       position=log.position)
    assert {w.filename for w in record} == {__file__}
    assert ranker.position_bias_ is None


@pytest.mark.parametrize("mode", ["unbiased", "additive"])
def test_save_load_and_pickle_keep_position_bias(tmp_path, mode):
    X, log = _click_data(4, n_queries=60)
    ranker = GPUHistGBDTRanker(n_estimators=5, position_bias=mode, random_state=0)
    ranker.fit(X, log.clicks, qid=log.session, position=log.position)
    assert ranker.position_bias_ is not None
    path = tmp_path / "m.json"
    ranker.save_model(path)
    loaded = GPUHistGBDTRanker.load_model(path)
    clone = pickle.loads(pickle.dumps(ranker))
    for other in (loaded, clone):
        np.testing.assert_array_equal(other.position_bias_, ranker.position_bias_)
        if mode == "additive":
            assert other.position_bias_minus_ is None
        else:
            np.testing.assert_array_equal(other.position_bias_minus_,
                                          ranker.position_bias_minus_)
        np.testing.assert_array_equal(other.predict(X), ranker.predict(X))
    # a later fit without positions forgets them
    ranker.set_params(position_bias=None).fit(X, log.clicks, qid=log.session)
    assert ranker.position_bias_ is None and ranker.position_bias_minus_ is None


def test_num_positions_and_bias_norm():
    X, log = _click_data(5, n_queries=80)
    base = dict(n_estimators=6, position_bias="unbiased", random_state=0)
    few = GPUHistGBDTRanker(lambdarank_num_positions=4, **base).fit(
        X, log.clicks, qid=log.session, position=log.position)
    assert few.position_bias_.shape == (4,)
    default = GPUHistGBDTRanker(**base).fit(X, log.clicks, qid=log.session,
                                            position=log.position)
    shown = int(log.position.max()) + 1
    assert default.position_bias_.shape == (min(30, shown),)  # XGBoost's top-k rule
    flat = GPUHistGBDTRanker(lambdarank_bias_norm=50.0, **base).fit(
        X, log.clicks, qid=log.session, position=log.position)
    # a large exponent p pulls the propensities towards 1 (where there were pairs to count)
    seen = default.position_bias_ > 0
    assert (np.abs(flat.position_bias_[seen] - 1).mean()
            < 0.2 * np.abs(default.position_bias_[seen] - 1).mean())
    additive = GPUHistGBDTRanker(n_estimators=6, position_bias="additive",
                                 random_state=0).fit(X, log.clicks, qid=log.session,
                                                     position=log.position)
    assert additive.position_bias_.shape == (shown,)  # every position shown (LightGBM)
    assert additive.position_bias_minus_ is None


def test_exact_sums_in_row_chunks_are_the_one_thread_bits():
    """add_by_key splits large inputs over numba's threads (an accumulator a chunk, merged
    as integers): the sums are math.fsum's and the same on 1 and several threads."""
    import numba

    rng = np.random.default_rng(5)
    n = 4 * exact_sum.PARALLEL_MIN_ROWS + 123
    values = rng.normal(size=n) * np.exp(rng.normal(size=n) * 20)
    values[::5] = -values[1::5][: values[::5].size]  # cancellation across chunks
    keys = rng.integers(-1, 9, n)  # -1 and 8: outside the 8 keys, skipped
    sums = {}
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, min(4, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            acc = exact_sum.accumulator(8)
            exact_sum.add_by_key(values, keys, acc)
            out = np.empty(8)
            exact_sum.to_float64(acc, out)
            sums[threads] = (out, acc[:, exact_sum.COUNT].copy())
    finally:
        numba.set_num_threads(before)
    for out, count in sums.values():
        np.testing.assert_array_equal(out, [math.fsum(values[keys == k]) for k in range(8)])
        np.testing.assert_array_equal(count, [np.count_nonzero(keys == k) for k in range(8)])
