"""Ranker-specific checks every skltr ranker must pass (beyond scikit-learn's generic ones).

Call :func:`check_ranker` from a test with an unfitted ranker; it raises AssertionError naming
the check that failed. Each check is also importable on its own.
"""

from __future__ import annotations

import pickle

import numpy as np
from sklearn.base import clone

__all__ = ["check_ranker", "RANKER_CHECKS"]


def _make_data(seed=0, n_queries=30, n_docs=10, n_features=4):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 2 * n_docs, size=n_queries)
    sizes[0] = 1  # a single-document query is always present
    qid = np.repeat(np.arange(100, 100 + n_queries), sizes)
    X = rng.normal(size=(qid.size, n_features))
    y = np.clip(np.round(X[:, 0] + rng.normal(scale=0.5, size=qid.size) + 1), 0, 4)
    return X, y, qid


def _raises(fn, match_any, what):
    try:
        fn()
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        assert any(m in msg for m in match_any), (
            f"{what}: raised {type(exc).__name__} but the message {msg!r} names none of "
            f"{match_any}")
        return
    raise AssertionError(f"{what}: no error was raised")


def check_qid_routing(ranker):
    """GridSearchCV over a Pipeline with QueryKFold routes qid to fit and scorer."""
    import sklearn  # noqa: PLC0415
    from sklearn.model_selection import GridSearchCV  # noqa: PLC0415
    from sklearn.pipeline import make_pipeline  # noqa: PLC0415
    from sklearn.preprocessing import FunctionTransformer  # noqa: PLC0415

    from ..model_selection import QueryKFold, make_ranking_scorer  # noqa: PLC0415

    X, y, qid = _make_data(1)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(FunctionTransformer(), clone(ranker))
        search = GridSearchCV(pipe, {"functiontransformer__validate": [False]},
                              cv=QueryKFold(3), scoring=make_ranking_scorer("ndcg@5"))
        search.fit(X, y, qid=qid)
    assert np.isfinite(search.best_score_), "qid routing: the search produced no finite score"


def check_row_order_invariance(ranker):
    """Shuffling queries and interleaving their rows (each query's own row order kept) gives
    the identical model: rankers must group rows by a stable sort on qid."""
    X, y, qid = _make_data(2)
    rng = np.random.default_rng(0)
    keys = rng.random(len(y))
    # Rows of one query keep their relative order: sort by a random per-row key, then
    # stable-sort within queries back to their original order.
    perm = np.argsort(keys, kind="stable")
    rank_in_query = np.empty(len(y), dtype=np.int64)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid[perm] == q)
        rank_in_query[rows] = np.sort(perm[rows])
    perm = rank_in_query
    a = clone(ranker).fit(X, y, qid=qid)
    b = clone(ranker).fit(X[perm], y[perm], qid=qid[perm])
    np.testing.assert_array_equal(a.predict(X), b.predict(X),
                                  err_msg="row-order invariance: predictions differ")


def check_determinism(ranker):
    """Two fits with the same parameters (and random_state) give identical predictions."""
    X, y, qid = _make_data(3)
    params = {"random_state": 0} if "random_state" in ranker.get_params() else {}
    a = clone(ranker).set_params(**params).fit(X, y, qid=qid)
    b = clone(ranker).set_params(**params).fit(X, y, qid=qid)
    np.testing.assert_array_equal(a.predict(X), b.predict(X),
                                  err_msg="determinism: refit changed predictions")


def check_persistence(ranker):
    """Pickle round trip (and save_model/load_model when present) keep predictions."""
    X, y, qid = _make_data(4)
    fitted = clone(ranker).fit(X, y, qid=qid)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(fitted.predict(X), again.predict(X),
                                  err_msg="pickle round trip changed predictions")
    if hasattr(fitted, "save_model"):
        import os  # noqa: PLC0415
        import tempfile  # noqa: PLC0415

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.json")
            fitted.save_model(path)
            loaded = type(fitted).load_model(path)
        np.testing.assert_array_equal(fitted.predict(X), loaded.predict(X),
                                      err_msg="save_model/load_model changed predictions")


def check_edge_queries(ranker):
    """Single-document queries and a 10,001-document query train and predict."""
    X, y, qid = _make_data(5, n_queries=3)
    rng = np.random.default_rng(5)
    big = 10_001
    Xb = np.vstack([X, rng.normal(size=(big, X.shape[1]))])
    yb = np.concatenate([y, rng.integers(0, 5, size=big).astype(float)])
    qb = np.concatenate([qid, np.full(big, -1)])
    pred = clone(ranker).fit(Xb, yb, qid=qb).predict(Xb)
    assert pred.shape == (Xb.shape[0],) and np.all(np.isfinite(pred)), "edge queries failed"


def check_bad_input(ranker):
    """Each malformed input raises a clear error, and a failed fit keeps the fitted state."""
    X, y, qid = _make_data(6)
    n = len(y)
    _raises(lambda: clone(ranker).fit(X, y, qid=qid[:-1]), [f"{n - 1} entries", str(n)],
            "qid length mismatch")
    sizes = np.bincount(qid - qid.min())
    sizes = sizes[sizes > 0]
    _raises(lambda: clone(ranker).fit(X, y, qid=sizes), ["group sizes", "group_sizes_to_qid"],
            "group sizes passed as qid")
    qnan = qid.astype(float)
    qnan[3] = np.nan
    _raises(lambda: clone(ranker).fit(X, y, qid=qnan), ["NaN"], "NaN qid")
    for bad in (np.nan, np.inf):
        yb = y.copy()
        yb[2] = bad
        _raises(lambda yb=yb: clone(ranker).fit(X, yb, qid=qid), ["NaN or inf"], "bad label")
    _raises(lambda: clone(ranker).fit(X, y[:, None], qid=qid), ["1-D"], "2-D y")
    _raises(lambda: clone(ranker).fit(X[:0], y[:0], qid=qid[:0]), ["0 sample"], "empty X")
    _raises(lambda: clone(ranker).fit(X.astype(str).astype(object) + "x", y, qid=qid),
            ["could not convert", "string", "dtype"], "object strings in X")
    fitted = clone(ranker).fit(X, y, qid=qid)
    before = fitted.predict(X)
    state = set(vars(fitted))
    _raises(lambda: fitted.fit(X[:, :2], y[:-1], qid=qid), ["entries", "rows"],
            "mismatched refit")
    assert set(vars(fitted)) == state, "a failed fit changed the fitted attributes"
    np.testing.assert_array_equal(fitted.predict(X), before,
                                  err_msg="a failed fit changed the model")
    _raises(lambda: fitted.predict(X[:, :-1]), ["features"], "feature count at predict")
    assert fitted.predict(X[:0]).shape == (0,), "predict on empty X must return empty output"
    try:
        import pandas as pd  # noqa: PLC0415
    except ImportError:  # pragma: no cover - pandas is a test dependency
        return
    cols = [f"f{i}" for i in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols)
    fitted_df = clone(ranker).fit(df, y, qid=qid)
    assert list(fitted_df.feature_names_in_) == cols
    _raises(lambda: fitted_df.predict(df[cols[::-1]]), ["feature names"], "reordered columns")
    _raises(lambda: fitted_df.predict(df.rename(columns={"f0": "g0"})), ["feature names"],
            "renamed columns")


RANKER_CHECKS = (check_qid_routing, check_row_order_invariance, check_determinism,
                 check_persistence, check_edge_queries, check_bad_input)


def check_ranker(ranker, *, skip=()):
    """Run every ranker check on an unfitted ``ranker``.

    Parameters
    ----------
    ranker : estimator
        An unfitted skltr ranker (or any estimator following its fit/predict contract).
    skip : iterable of str
        Names of checks to skip, e.g. ``{"check_edge_queries"}`` for very slow estimators;
        say why in the calling test.
    """
    for check in RANKER_CHECKS:
        if check.__name__ not in set(skip):
            check(ranker)
