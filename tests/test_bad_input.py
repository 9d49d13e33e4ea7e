"""Bad and unusual arrays for the trained rankers: every case ends in a clear error or in the
correct model.

The audit of issue #26 tried such inputs on every estimator; this suite keeps the answers.
"Correct" is checked against an independent reference, never against a stored figure: an
input accepted in another representation (integer or boolean dtypes, lists, Fortran order,
scalar weights, string qids) must give bit for bit the model fitted on the plain float64 /
integer-qid form of the same values. An input refused must raise ``ValueError`` or
``TypeError`` whose message names what was wrong, within a time limit, and leave an already
fitted estimator exactly as it was. (The rule ranker, ``QuickScorerPredictor`` and the CLI have
suites of their own: ``test_rule_ranker_bad_input.py``, ``test_cli_bad_input.py``; model files:
``test_bad_model_files.py``.)
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from _limits import time_limit
from skltr import GPUHistGBDTRanker, RankBoostRanker

RANKERS = {
    "gbdt": GPUHistGBDTRanker(n_estimators=4, max_leaves=7, random_state=0),
    "gbdt-depthwise": GPUHistGBDTRanker(n_estimators=4, growth="depthwise", max_depth=3,
                                        random_state=0),
    "rankboost": RankBoostRanker(n_estimators=6),
}

#: seconds a case may take before it counts as a hang (a fit here takes milliseconds)
LIMIT_S = 60


def _data(seed=0, n_queries=12, docs=9, n_features=4):
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(n_queries), docs)
    X = rng.normal(size=(qid.size, n_features))
    y = np.clip(np.round(X[:, 0] + rng.normal(scale=0.7, size=qid.size) + 1), 0, 3)
    return X, y, qid


def _model(fitted):
    """What must be equal between two fits: the model's scores and its saved document."""
    return fitted.ensemble_.to_document()


def _fit(name, X, y, qid, **kw):
    with time_limit(LIMIT_S):
        return clone(RANKERS[name]).fit(X, y, qid=qid, **kw)


def _refused(fn, *fragments):
    with time_limit(LIMIT_S):
        with pytest.raises((ValueError, TypeError)) as info:
            fn()
    message = str(info.value)
    assert any(f.lower() in message.lower() for f in fragments), (
        f"the error {type(info.value).__name__}: {message!r} names none of {fragments}")
    return message


# --- inputs accepted in another form: the same model as the plain form ----------------------

def _variants(X, y, qid):
    Xi = np.round(X * 4)
    yield "int64 X", (Xi.astype(np.int64), y, qid), (Xi, y, qid)
    yield "int8 X", (Xi.astype(np.int8), y, qid), (Xi, y, qid)
    yield "uint8 X", (np.abs(Xi).astype(np.uint8), y, qid), (np.abs(Xi), y, qid)
    yield "bool X", (X > 0, y, qid), ((X > 0).astype(np.float64), y, qid)
    yield "float16 X", (X.astype(np.float16), y, qid), (X.astype(np.float16).astype(float), y, qid)
    yield "Fortran X", (np.asfortranarray(X), y, qid), (X, y, qid)
    yield "strided X", (np.repeat(X, 2, axis=1)[:, ::2], y, qid), (X, y, qid)
    yield "lists", (X.tolist(), y.tolist(), qid.tolist()), (X, y, qid)
    yield "object X of floats", (X.astype(object), y, qid), (X, y, qid)
    yield "int labels", (X, y.astype(np.int32), qid), (X, y, qid)
    yield "bool labels", (X, y > 1, qid), (X, (y > 1).astype(float), qid)
    # zero-padded so the queries sort as the integers do: RankBoost's float sums over queries
    # follow the query order, so another order may move a leaf value by an ulp
    yield "string qid", (X, y, np.char.add("q", np.char.zfill(qid.astype(str), 3))), \
        (X, y, qid)
    yield "uint64 qid near 2**64", (X, y, qid.astype(np.uint64) + np.uint64(2**64 - 100)), \
        (X, y, qid)
    yield "float qid", (X, y, qid + 0.5), (X, y, qid)
    yield "CSR X", (sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X)), y, qid), \
        (np.where(np.abs(X) < 0.5, 0.0, X), y, qid)
    yield "CSC X", (sp.csc_matrix(np.where(np.abs(X) < 0.5, 0.0, X)), y, qid), \
        (np.where(np.abs(X) < 0.5, 0.0, X), y, qid)


_X, _y, _q = _data()
VARIANTS = {name: (given_, plain) for name, given_, plain in _variants(_X, _y, _q)}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("name", sorted(RANKERS))
def test_an_input_in_another_form_gives_the_model_of_its_plain_form(name, variant):
    given_, plain = VARIANTS[variant]
    got = _fit(name, *given_)
    want = _fit(name, *plain)
    assert _model(got) == _model(want)
    Xp = plain[0]
    np.testing.assert_array_equal(got.predict(given_[0]), want.predict(Xp))


@pytest.mark.parametrize("name", sorted(RANKERS))
def test_scalar_and_constant_weights(name):
    X, y, qid = _data(1)
    plain = _fit(name, X, y, qid)
    assert _model(_fit(name, X, y, qid, sample_weight=1.0)) == _model(plain)
    assert _model(_fit(name, X, y, qid, sample_weight=np.ones(len(y), np.float32))) == \
        _model(plain)


# --- inputs refused: a clear error, and a fitted estimator is left as it was -----------------

def _refusals(X, y, qid):
    n = len(y)
    w = np.ones(n)
    yield "qid one short", (X, y, qid[:-1], None), ["qid", f"{n - 1}"]
    yield "y one short", (X, y[:-1], qid, None), [f"{n - 1}", "y"]
    yield "sample_weight one short", (X, y, qid, w[:-1]), ["sample_weight", f"{n - 1}"]
    yield "sample_weight 7 long", (X, y, qid, np.ones(n + 7)), ["sample_weight", f"{n + 7}"]
    yield "negative weight", (X, y, qid, -w), ["negative"]
    yield "NaN weight", (X, y, qid, np.r_[np.nan, w[1:]]), ["nan"]
    yield "inf weight", (X, y, qid, np.r_[np.inf, w[1:]]), ["infinity", "inf"]
    yield "all-zero weights", (X, y, qid, 0 * w), ["non-zero", "zero"]
    yield "2-D weights", (X, y, qid, w[:, None]), ["1d", "1-d"]
    yield "string weights", (X, y, qid, np.array(["a"] * n)), ["string", "convert"]
    yield "+inf in X", (np.where(X > 1.5, np.inf, X), y, qid, None), ["infinity"]
    yield "-inf in X", (np.where(X > 1.5, -np.inf, X), y, qid, None), ["infinity"]
    yield "+inf in CSR X", (sp.csr_matrix(np.where(X > 1.5, np.inf, X)), y, qid, None), \
        ["infinity"]
    yield "complex X", (X + 1j, y, qid, None), ["complex"]
    yield "3-D X", (X[:, :, None], y, qid, None), ["dim 3"]
    yield "1-D X", (X[:, 0], y, qid, None), ["2d", "2-d"]
    yield "no features", (X[:, :0], y, qid, None), ["0 feature"]
    yield "no rows", (X[:0], y[:0], qid[:0], None), ["0 sample"]
    yield "strings in X", (np.full(X.shape, "a", dtype=object), y, qid, None), \
        ["string", "convert"]
    yield "COO X", (sp.coo_matrix(X), y, qid, None), ["coo", "tocsr"]
    yield "NaN label", (X, np.r_[np.nan, y[1:]], qid, None), ["nan"]
    yield "inf label", (X, np.r_[np.inf, y[1:]], qid, None), ["inf"]
    yield "2-D labels", (X, y[:, None], qid, None), ["1-d"]
    yield "string labels", (X, np.array(["high"] * n), qid, None), ["string", "convert", "label"]
    yield "NaN qid", (X, y, np.r_[np.nan, qid[1:]], None), ["nan"]
    yield "qid of mixed types", (X, y, np.array([1, "a"] * (n // 2), dtype=object), None), \
        ["mixes"]
    yield "qid as group sizes", (X, y, np.full(n // 9, 9), None), ["group sizes"]
    yield "no qid", (X, y, None, None), ["qid"]


REFUSALS = {name: (args, frags) for name, args, frags in _refusals(*_data(2))}


@pytest.mark.parametrize("case", sorted(REFUSALS))
@pytest.mark.parametrize("name", sorted(RANKERS))
def test_a_bad_fit_input_is_refused_and_leaves_the_fitted_model(name, case):
    (X, y, qid, w), fragments = REFUSALS[case]
    if name == "rankboost" and case in ("string labels",):
        fragments = fragments + ["label"]
    X0, y0, q0 = _data(3)
    fitted = _fit(name, X0, y0, q0)
    before = pickle.dumps(fitted)
    scores = fitted.predict(X0)
    _refused(lambda: fitted.fit(X, y, qid=qid, sample_weight=w), *fragments)
    assert pickle.dumps(fitted) == before, "a refused fit changed the fitted estimator"
    np.testing.assert_array_equal(fitted.predict(X0), scores)


def _predict_refusals(X):
    yield "+inf", np.where(X > 1.5, np.inf, X), ["infinity"]
    yield "-inf", np.where(X > 1.5, -np.inf, X), ["infinity"]
    yield "+inf in CSR", sp.csr_matrix(np.where(X > 1.5, np.inf, X)), ["infinity"]
    yield "one feature fewer", X[:, :-1], ["features"]
    yield "one feature more", np.c_[X, X[:, :1]], ["features"]
    yield "CSR one feature fewer", sp.csr_matrix(X[:, :-1]), ["features"]
    yield "1-D row", X[0], ["2d", "2-d"]
    yield "3-D", X[:, :, None], ["dim 3"]
    yield "complex", X + 1j, ["complex"]
    yield "strings", np.full(X.shape, "a", dtype=object), ["string", "convert"]


PREDICT_REFUSALS = {name: (X, frags) for name, X, frags in _predict_refusals(_data(4)[0])}


@pytest.mark.parametrize("case", sorted(PREDICT_REFUSALS))
@pytest.mark.parametrize("name", sorted(RANKERS))
def test_a_bad_predict_input_is_refused(name, case):
    X, fragments = PREDICT_REFUSALS[case]
    fitted = _fit(name, *_data(3))
    _refused(lambda: fitted.predict(X), *fragments)


@pytest.mark.parametrize("name", sorted(RANKERS))
def test_predict_on_no_rows_and_nan_rows(name):
    X, y, qid = _data(5)
    fitted = _fit(name, X, y, qid)
    assert fitted.predict(X[:0]).shape == (0,)
    scores = fitted.predict(np.full((3, X.shape[1]), np.nan))
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    assert len(set(scores)) == 1  # every feature missing: one leaf path


# --- random corruptions: a clear error or a model equal to a clean refit ---------------------

_CORRUPTIONS = ("nan", "inf", "-inf", "huge", "tiny", "zero-row", "constant-column",
                "duplicate-rows", "single-doc-queries", "one-query")


def _corrupt(kind, X, y, qid, rng):
    X, y, qid = X.copy(), y.copy(), qid.copy()
    rows = rng.choice(len(y), size=max(1, len(y) // 10), replace=False)
    col = int(rng.integers(X.shape[1]))
    if kind == "nan":
        X[rows, col] = np.nan
    elif kind == "inf":
        X[rows, col] = np.inf
    elif kind == "-inf":
        X[rows, col] = -np.inf
    elif kind == "huge":
        X[rows, col] = np.finfo(np.float64).max
    elif kind == "tiny":
        X[rows, col] = np.finfo(np.float64).tiny
    elif kind == "zero-row":
        X[rows] = 0.0
    elif kind == "constant-column":
        X[:, col] = 3.0
    elif kind == "duplicate-rows":
        X[rows] = X[rows[0]]
    elif kind == "single-doc-queries":
        qid[rows] = 1000 + np.arange(rows.size)
    elif kind == "one-query":
        qid[:] = 7
    return X, y, qid


@settings(max_examples=40, deadline=None)
@given(kinds=st.lists(st.sampled_from(_CORRUPTIONS), min_size=1, max_size=3),
       seed=st.integers(0, 2**16), name=st.sampled_from(sorted(RANKERS)))
def test_random_corruptions_end_in_a_clear_error_or_a_sound_model(kinds, seed, name):
    rng = np.random.default_rng(seed)
    X, y, qid = _data(seed % 7)
    for kind in kinds:
        X, y, qid = _corrupt(kind, X, y, qid, rng)
    if not np.all(np.isfinite(X) | np.isnan(X)):
        _refused(lambda: _fit(name, X, y, qid), "infinity")
        return
    fitted = _fit(name, X, y, qid)
    scores = fitted.predict(X)
    assert scores.shape == (len(y),) and np.all(np.isfinite(scores))
    # rows interleaved across queries (each query's own rows kept in order) give the same
    # model: rows are grouped by a stable sort on qid
    shuffled_qid = qid[rng.permutation(len(qid))]
    rows = np.empty(len(qid), dtype=np.int64)
    rows[np.argsort(shuffled_qid, kind="stable")] = np.argsort(qid, kind="stable")
    assert np.array_equal(qid[rows], shuffled_qid)
    again = _fit(name, X[rows], y[rows], qid[rows])
    assert _model(again) == _model(fitted)


@pytest.mark.parametrize("device_params", [{}, {"growth": "depthwise", "max_depth": 3}])
def test_gradients_beyond_float32_are_refused_not_trained_on(device_params):
    """Gradients are float32: a regression label of 1e100 used to end in "math domain error"
    deep in the grower, a weight of 1e39 in infinite gradients."""
    X, y, qid = _data(6)
    yr = y + np.linspace(-1, 1, len(y))
    fitted = GPUHistGBDTRanker(n_estimators=2, objective="regression", **device_params)
    for big in (1e100, 1e300):
        _refused(lambda big=big: clone(fitted).fit(X, np.r_[big, yr[1:]], qid=qid),
                 "float32", "rescale y")
    _refused(lambda: clone(fitted).fit(X, yr, qid=qid, sample_weight=np.r_[1e37, np.ones(
        len(y) - 1)]), "float32", "rescale y")
    for objective in ("lambdarank", "rank_pairwise", "rank_xendcg"):
        ranker = GPUHistGBDTRanker(n_estimators=2, objective=objective, **device_params)
        _refused(lambda r=ranker: r.fit(X, y, qid=qid, sample_weight=np.r_[1e38, np.ones(
            len(y) - 1)]), "float32", "rescale the weights")
    # large but representable values train to finite scores
    scores = clone(fitted).fit(X, yr * 1e30, qid=qid).predict(X)
    assert np.all(np.isfinite(scores))
    np.testing.assert_allclose(scores / 1e30, clone(fitted).fit(X, yr, qid=qid).predict(X),
                               rtol=1e-5, atol=1e-6)


# --- position (learning from clicks) -----------------------------------------------------

def _position_refusals(n):
    shown = np.tile(np.arange(9), n // 9)
    yield "position too short", dict(position=shown[:-1]), ["position has", "entries"]
    yield "position too long", dict(position=np.r_[shown, 0]), ["position has", "entries"]
    yield "negative position", dict(position=np.r_[-1, shown[1:]]), ["position", "negative"]
    yield "NaN position", dict(position=np.r_[np.nan, shown[1:]]), ["position", "non-finite"]
    yield "inf position", dict(position=np.r_[np.inf, shown[1:]]), ["position", "non-finite"]
    yield "fractional position", dict(position=np.r_[0.5, shown[1:]]), ["position",
                                                                          "fractional"]
    yield "string position", dict(position=np.array(["a"] * n)), ["position", "numeric"]
    yield "2-D position", dict(position=shown[:, None]), ["position", "1-d"]
    yield "position_bias without position", dict(), ["position_bias", "position="]
    yield "position_bias with rank_xendcg", dict(position=shown, objective="rank_xendcg"), \
        ["position_bias", "lambdarank"]


POSITION_REFUSALS = {name: kw for name, kw, _ in _position_refusals(_data(2)[0].shape[0])}
POSITION_FRAGMENTS = {name: f for name, _, f in _position_refusals(_data(2)[0].shape[0])}


@pytest.mark.parametrize("mode", ["unbiased", "additive"])
@pytest.mark.parametrize("case", sorted(POSITION_REFUSALS))
def test_a_bad_position_is_refused_and_leaves_the_fitted_model(case, mode):
    X, y, qid = _data(2)
    kw = dict(POSITION_REFUSALS[case])
    objective = kw.pop("objective", "lambdarank")
    X0, y0, q0 = _data(3)
    fitted = clone(RANKERS["gbdt"]).set_params(position_bias=mode).fit(
        X0, y0, qid=q0, position=np.tile(np.arange(9), X0.shape[0] // 9))
    before = pickle.dumps(fitted)
    scores = fitted.predict(X0)
    fitted.set_params(objective=objective)
    _refused(lambda: fitted.fit(X, y, qid=qid, **kw), *POSITION_FRAGMENTS[case])
    fitted.set_params(objective="lambdarank")
    assert pickle.dumps(fitted) == before, "a refused fit changed the fitted estimator"
    np.testing.assert_array_equal(fitted.predict(X0), scores)


def test_a_position_no_objective_reads_warns_once_and_changes_nothing():
    X, y, qid = _data(2)
    shown = np.tile(np.arange(9), X.shape[0] // 9)
    plain = _fit("gbdt", X, y, qid)
    with pytest.warns(UserWarning, match="position.*ignored.*position_bias") as record:
        ignored = _fit("gbdt", X, y, qid, position=shown)
    assert len(record) == 1 and "\n" not in str(record[0].message)
    assert ignored.position_bias_ is None
    assert _model(ignored) == _model(plain)


def test_position_bias_does_not_continue_a_model():
    X, y, qid = _data(2)
    shown = np.tile(np.arange(9), X.shape[0] // 9)
    ranker = clone(RANKERS["gbdt"]).set_params(position_bias="unbiased", warm_start=True)
    ranker.fit(X, y, qid=qid, position=shown)
    ranker.set_params(n_estimators=8)
    _refused(lambda: ranker.fit(X, y, qid=qid, position=shown), "position_bias",
             "warm_start")
