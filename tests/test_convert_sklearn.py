"""from_sklearn: converted scikit-learn tree models reproduce scikit-learn bit for bit.

HistGradientBoosting first, then (below "sklearn.tree models") decision trees, forests and
GradientBoosting.

``predict_raw`` is compared with ``model._raw_predict(X)`` (private, but it is what ``predict``
and ``predict_proba`` use) and ``predict`` with ``predict`` / ``predict_proba``, all with
``np.testing.assert_array_equal`` on float64. Inputs sit on thresholds and their neighbours,
NaN (both missing directions), ±inf, and categorical edges (unknown, negative, huge values).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.exceptions import NotFittedError
from threadpoolctl import threadpool_limits

from skltr.convert._sklearn import from_sklearn
from skltr.trees import NodeFlags, TreeEnsemble

NUMERIC_SPECIALS = [0.0, -0.0, 1e-300, -1e-300, 1e300, -1e300, np.inf, -np.inf, np.nan]
CAT_SPECIALS = [np.nan, -1.0, -0.0, 0.0, 1.0, 255.0, 256.0, 257.0, 500.0, 1e6, 2.0**24,
                2.0**31 + 5, 1e300]  # sklearn's encoder refuses ±inf in categorical columns


# One thread on both sides: scikit-learn's OpenMP runtime and numba's (threading layer "omp")
# are different libgomp copies; their spinning workers starve each other on a small machine.
N_JOBS = 1


@pytest.fixture(autouse=True)
def _single_openmp_thread():
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


# --------------------------------------------------------------------------- helpers
def raw_predict(model, X):
    raw = model._raw_predict(X)
    return raw[:, 0] if raw.shape[1] == 1 else raw


def transformed(model, X):
    if isinstance(model, HistGradientBoostingClassifier):
        proba = model.predict_proba(X)
        return proba[:, 1] if proba.shape[1] == 2 else proba
    return model.predict(X)


def assert_exact(ens, model, X):
    np.testing.assert_array_equal(ens.predict_raw(X, n_jobs=N_JOBS), raw_predict(model, X))
    out = ens.predict(X, n_jobs=N_JOBS)
    np.testing.assert_array_equal(out, transformed(model, X))
    if isinstance(model, HistGradientBoostingClassifier):
        proba = model.predict_proba(X)
        if proba.shape[1] == 2:
            np.testing.assert_array_equal(1 - out, proba[:, 0])
        classes = np.asarray(ens.source["classes"])
        if ens.source["predict"] == "proba>0.5":
            labels = classes[(out > 0.5).astype(int)]
        else:
            assert ens.source["predict"] == "argmax"
            labels = classes[np.argmax(out, axis=1)]
        np.testing.assert_array_equal(labels, model.predict(X))


def edge_matrix(ens, X_train, rng, categorical=(), n_mixed=200):
    """Rows with one feature on an edge value (the ensemble's thresholds, their float64 and
    float32 neighbours, specials; category values and their neighbours), plus mixed rows."""
    n_features = X_train.shape[1]
    values = []
    for f in range(n_features):
        if f in categorical:
            seen = np.unique(X_train[:, f][~np.isnan(X_train[:, f])])
            v = [*seen, *(seen + 1), *(seen - 1), *CAT_SPECIALS]
        else:
            node = (ens.left >= 0) & (ens.feature == f) & (
                (ens.flags & NodeFlags.CATEGORICAL) == 0)
            t = ens.threshold[node]
            v = [*t, *np.nextafter(t, np.inf), *np.nextafter(t, -np.inf),
                 *np.float32(t).astype(np.float64), *NUMERIC_SPECIALS]
        values.append(np.array(v, dtype=np.float64))
    rows = []
    for f, vals in enumerate(values):
        base = X_train[rng.integers(0, X_train.shape[0], size=vals.size)].copy()
        base[:, f] = vals
        rows.append(base)
    rows.append(np.column_stack([rng.choice(v, size=n_mixed) for v in values]))
    return np.concatenate(rows)


def numeric_data(rng, n=800, nan_frac=0.1):
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=n)
    # NaN predicts high in column 0 and low in column 1: both missing directions occur
    nan0, nan1 = rng.random(n) < nan_frac, rng.random(n) < nan_frac
    y[nan0] += 3.0
    y[nan1] -= 3.0
    X[nan0, 0] = np.nan
    X[nan1, 1] = np.nan
    return X, y  # columns 2 and 3 never NaN in training: NaN appears only at predict time


def categorical_data(rng, n=2000):
    """Integer-coded categories with gaps and values above 255."""
    cats = np.array([0, 2, 3, 5, 7, 11, 40, 100, 200, 300, 1000])
    X = np.c_[rng.normal(size=n), rng.choice(cats, n).astype(float), rng.normal(size=n),
              rng.integers(0, 60, n).astype(float)]
    y = (np.isin(X[:, 1], [2, 5, 11, 300]) * 2.0 + X[:, 0] + (X[:, 3] % 4 == 1)
         + 0.1 * rng.normal(size=n))
    nan1 = rng.random(n) < 0.05
    X[nan1, 1] = np.nan
    y[nan1] += 2.5  # NaN behaves like the "in set" categories
    X[rng.random(n) < 0.05, 3] = np.nan
    return X, y


# --------------------------------------------------------------------------- numeric
def test_regressor_thresholds_and_nan_both_ways():
    rng = np.random.default_rng(0)
    X, y = numeric_data(rng)
    model = HistGradientBoostingRegressor(max_iter=15, max_leaf_nodes=15,
                                          random_state=0).fit(X, y)
    ens = from_sklearn(model)
    internal = ens.left >= 0
    default_left = (ens.flags & NodeFlags.DEFAULT_LEFT) != 0
    assert np.any(internal & default_left) and np.any(internal & ~default_left)
    assert ens.n_trees == model.n_iter_ and ens.base_score[0] == model._baseline_prediction[0, 0]
    X_edges = edge_matrix(ens, X, rng)
    assert np.isnan(X_edges[:, 2]).any()  # NaN where training had none
    assert_exact(ens, model, X_edges)
    assert_exact(ens, model, X)
    assert_exact(ens, model, X_edges.astype(np.float32))


def test_thresholds_stored_exactly():
    rng = np.random.default_rng(1)
    X, y = numeric_data(rng, nan_frac=0.0)
    model = HistGradientBoostingRegressor(max_iter=5, random_state=0).fit(X, y)
    ens = from_sklearn(model)
    for t, predictor in enumerate(p for it in model._predictors for p in it):
        nodes = predictor.nodes
        internal = ~nodes["is_leaf"].astype(bool)
        g = ens.tree_ptr[t] + np.arange(nodes.shape[0])
        np.testing.assert_array_equal(ens.threshold[g][internal], nodes["num_threshold"][internal])
        np.testing.assert_array_equal(ens.value[g][~internal], nodes["value"][~internal])


def test_split_on_nan_nodes():
    """scikit-learn splits "NaN vs the rest" with num_threshold=+inf; the converter keeps the
    node exact as an empty category set (every non-NaN value goes left, +inf included)."""
    rng = np.random.default_rng(2)
    n = 600
    X = rng.normal(size=(n, 2))
    X[rng.random(n) < 0.3, 0] = np.nan
    y = np.isnan(X[:, 0]) * 3.0 + 0.1 * X[:, 1]
    model = HistGradientBoostingRegressor(max_iter=3, random_state=0).fit(X, y)
    has_inf = [np.isinf(p.nodes["num_threshold"]).any() for it in model._predictors for p in it]
    assert any(has_inf)
    ens = from_sklearn(model)
    assert np.all(np.isfinite(ens.threshold))
    vals = np.array([np.nan, np.inf, -np.inf, 1.7e308, -1.7e308, 0.0, -0.0, 1.0])
    X_edges = np.c_[vals, np.zeros_like(vals)]
    assert_exact(ens, model, X_edges)
    assert_exact(ens, model, edge_matrix(ens, X, rng))


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error", "quantile", "poisson",
                                  "gamma"])
def test_regression_losses(loss):
    rng = np.random.default_rng(3)
    X, y = numeric_data(rng)
    if loss in ("poisson", "gamma"):
        y = np.exp(y / 3)
    model = HistGradientBoostingRegressor(loss=loss, quantile=0.3 if loss == "quantile" else None,
                                          max_iter=8, random_state=0).fit(X, y)
    ens = from_sklearn(model)
    assert ens.output_transform == ("sklearn_exp" if loss in ("poisson", "gamma") else "identity")
    assert_exact(ens, model, edge_matrix(ens, X, rng))


def test_early_stopping_keeps_used_iterations():
    rng = np.random.default_rng(4)
    X, y = numeric_data(rng, n=1500)
    model = HistGradientBoostingRegressor(max_iter=500, early_stopping=True,
                                          n_iter_no_change=3, random_state=0).fit(X, y)
    assert model.n_iter_ < 500
    ens = from_sklearn(model)
    assert ens.n_trees == model.n_iter_ == ens.source["n_iter"]
    assert_exact(ens, model, edge_matrix(ens, X, rng))


# --------------------------------------------------------------------------- classifiers
def test_binary_classifier():
    rng = np.random.default_rng(5)
    X, y = numeric_data(rng)
    labels = np.where(y > np.median(y), "yes", "no")
    model = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, labels)
    ens = from_sklearn(model)
    assert ens.output_transform == "sigmoid" and ens.n_outputs == 1
    assert ens.source["classes"] == ["no", "yes"]
    assert_exact(ens, model, edge_matrix(ens, X, rng))


def test_multiclass_classifier():
    rng = np.random.default_rng(6)
    X, y = numeric_data(rng)
    labels = np.digitize(y, np.quantile(y, [0.25, 0.5, 0.75]))
    model = HistGradientBoostingClassifier(max_iter=6, random_state=0).fit(X, labels)
    ens = from_sklearn(model)
    assert ens.output_transform == "sklearn_softmax" and ens.n_outputs == 4
    assert ens.n_trees == 4 * model.n_iter_
    np.testing.assert_array_equal(ens.base_score, model._baseline_prediction.ravel())
    assert_exact(ens, model, edge_matrix(ens, X, rng))


# --------------------------------------------------------------------------- categorical
@pytest.mark.parametrize("spec", ["mask", "index"])
@pytest.mark.parametrize("estimator", ["regressor", "binary", "multiclass"])
def test_integer_coded_categorical(spec, estimator):
    rng = np.random.default_rng(7)
    X, y = categorical_data(rng)
    categorical = [False, True, False, True] if spec == "mask" else [1, 3]
    if estimator == "regressor":
        model = HistGradientBoostingRegressor(categorical_features=categorical, max_iter=12,
                                              random_state=0)
    else:
        model = HistGradientBoostingClassifier(categorical_features=categorical, max_iter=6,
                                               random_state=0)
        y = (y > np.median(y)).astype(int) if estimator == "binary" else np.digitize(
            y, np.quantile(y, [0.33, 0.66]))
    model.fit(X, y)
    ens = from_sklearn(model)
    cat = (ens.left >= 0) & ((ens.flags & NodeFlags.CATEGORICAL) != 0)
    assert set(ens.feature[cat].tolist()) <= {1, 3} and cat.any()
    assert np.all(ens.flags[cat] & NodeFlags.CAT_INVALID_DEFAULT)
    # the preprocessor moved the categorical columns first; the ensemble reads original X
    assert not np.array_equal(model._preprocessor.transform(X[:5]), X[:5])
    X_edges = edge_matrix(ens, X, rng, categorical=(1, 3))
    for v in (1.0, 4.0, 201.0, 1001.0, -1.0, 2.0**31 + 5):  # unknown and invalid categories
        assert (X_edges[:, 1] == v).any()
    assert_exact(ens, model, X_edges)


def test_categorical_missing_direction_both_ways():
    """Unknown / negative / NaN categories follow the missing direction on both sides: a node
    whose missing values go left stores its right set with CAT_SET_RIGHT."""
    rng = np.random.default_rng(8)
    found = set()
    for seed in range(6):
        X, y = categorical_data(np.random.default_rng(seed))
        if seed % 2:
            y = y - 5.0 * np.isnan(X[:, 1])
        model = HistGradientBoostingRegressor(categorical_features=[1, 3], max_iter=8,
                                              random_state=seed).fit(X, y)
        ens = from_sklearn(model)
        cat = (ens.left >= 0) & ((ens.flags & NodeFlags.CATEGORICAL) != 0)
        found |= set((ens.flags[cat] & NodeFlags.DEFAULT_LEFT).astype(bool).tolist())
        assert_exact(ens, model, edge_matrix(ens, X, rng, categorical=(1, 3), n_mixed=100))
    assert found == {True, False}


def test_fractional_categorical_inputs_differ_documented():
    """scikit-learn's encoder treats 3.7 as an unknown category (missing direction); the
    ensemble reads trunc(3.7) = 3. The only categorical inputs that are not exact."""
    rng = np.random.default_rng(9)
    X, y = categorical_data(rng)
    model = HistGradientBoostingRegressor(categorical_features=[1, 3], max_iter=10,
                                          random_state=0).fit(X, y)
    ens = from_sklearn(model)
    rows = np.repeat(X[:100], 3, axis=0)
    rows[0::3, 1] = 5.5
    rows[1::3, 1] = 5.0
    rows[2::3, 1] = np.nan
    ours, theirs = ens.predict_raw(rows, n_jobs=N_JOBS), raw_predict(model, rows)
    np.testing.assert_array_equal(ours[0::3], ours[1::3])      # ensemble: 5.5 is category 5
    np.testing.assert_array_equal(theirs[0::3], theirs[2::3])  # sklearn: 5.5 is missing
    np.testing.assert_array_equal(ours[1::3], theirs[1::3])
    np.testing.assert_array_equal(ours[2::3], theirs[2::3])


def test_pandas_categories():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(10)
    X, y = categorical_data(rng, n=1000)
    df = pd.DataFrame({"a": X[:, 0], "cat": pd.Categorical(X[:, 1]), "b": X[:, 2],
                       "num": X[:, 3]})
    model = HistGradientBoostingRegressor(max_iter=8, random_state=0).fit(df, y)
    assert model.is_categorical_.tolist() == [False, True, False, False]
    ens = from_sklearn(model)
    assert ens.feature_names == ["a", "cat", "b", "num"]
    X_edges = edge_matrix(ens, X, rng, categorical=(1,))
    df_edges = pd.DataFrame({"a": X_edges[:, 0], "cat": pd.Categorical(X_edges[:, 1]),
                             "b": X_edges[:, 2], "num": X_edges[:, 3]})
    np.testing.assert_array_equal(ens.predict_raw(X_edges, n_jobs=N_JOBS),
                                  raw_predict(model, df_edges))
    strings = df.assign(cat=pd.Categorical(np.array(["x", "y", "z"])[X[:, 3].astype(int) % 3]))
    model = HistGradientBoostingRegressor(max_iter=2).fit(strings, y)
    with pytest.raises(ValueError, match="non-numeric categories"):
        from_sklearn(model)


def test_invalid_models():
    with pytest.raises(NotFittedError):
        from_sklearn(HistGradientBoostingRegressor())
    from sklearn.ensemble import AdaBoostRegressor

    with pytest.raises(TypeError, match="HistGradientBoosting"):
        from_sklearn(AdaBoostRegressor())
    rng = np.random.default_rng(11)
    X = np.c_[rng.normal(size=200), rng.choice([-1.0, 0.5, 2.0], 200)]
    model = HistGradientBoostingRegressor(categorical_features=[1], max_iter=2).fit(
        X, X[:, 0])
    with pytest.raises(ValueError, match="not integers"):
        from_sklearn(model)


def test_persistence_roundtrip(tmp_path):
    rng = np.random.default_rng(12)
    X, y = categorical_data(rng, n=600)
    model = HistGradientBoostingRegressor(categorical_features=[1, 3], max_iter=4).fit(X, y)
    ens = from_sklearn(model)
    ens.save(tmp_path / "m.json")
    loaded = TreeEnsemble.load(tmp_path / "m.json")
    assert loaded.equals(ens)
    np.testing.assert_array_equal(loaded.predict_raw(X, n_jobs=N_JOBS), raw_predict(model, X))


@settings(deadline=None, max_examples=10)
@given(
    max_leaf_nodes=st.integers(2, 40),
    kind=st.sampled_from(["regressor", "binary", "multiclass", "poisson"]),
    nan_frac=st.sampled_from([0.0, 0.1, 0.4]),
    with_categorical=st.booleans(),
    max_iter=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_random_models_on_adversarial_inputs(max_leaf_nodes, kind, nan_frac,
                                             with_categorical, max_iter, seed):
    rng = np.random.default_rng(seed)
    if with_categorical:
        X, y = categorical_data(rng, n=600)
        X[rng.random(600) < nan_frac, 0] = np.nan
        categorical = [1, 3]
    else:
        X, y = numeric_data(rng, n=600, nan_frac=nan_frac)
        categorical = None
    params = dict(max_leaf_nodes=max_leaf_nodes, max_iter=max_iter, min_samples_leaf=3,
                  categorical_features=categorical, random_state=seed)
    if kind in ("regressor", "poisson"):
        if kind == "poisson":
            y = np.exp(y / 3)
        model = HistGradientBoostingRegressor(
            loss="poisson" if kind == "poisson" else "squared_error", **params)
    else:
        model = HistGradientBoostingClassifier(**params)
        y = (y > np.median(y)).astype(int) if kind == "binary" else np.digitize(
            y, np.quantile(y, [0.3, 0.6]))
    model.fit(X, y)
    ens = from_sklearn(model)
    cats = (1, 3) if with_categorical else ()
    assert_exact(ens, model, edge_matrix(ens, X, rng, categorical=cats, n_mixed=100))


def test_quickscorer_backend_agrees():
    """Converted node kinds (re-coded category sets, CAT_SET_RIGHT sets, split-on-NaN nodes)
    go through the QuickScorer backend unchanged."""
    from skltr.ranking._quickscorer_predictor import QuickScorerPredictor

    rng = np.random.default_rng(13)
    X, y = categorical_data(rng, n=1000)
    X[rng.random(1000) < 0.3, 0] = np.nan
    y = y + 3.0 * np.isnan(X[:, 0])
    model = HistGradientBoostingRegressor(categorical_features=[1, 3], max_iter=10,
                                          random_state=0).fit(X, y)
    qs = QuickScorerPredictor.from_model(model, backend="quickscorer", n_jobs=N_JOBS)
    X_edges = edge_matrix(qs.ensemble_, X, rng, categorical=(1, 3))
    np.testing.assert_array_equal(qs.predict_raw(X_edges), raw_predict(model, X_edges))
    np.testing.assert_array_equal(qs.predict(X_edges), model.predict(X_edges))


# =========================================================================== sklearn.tree models
# DecisionTree / ExtraTree, RandomForest / ExtraTrees and GradientBoosting: every output the
# estimator has (predict, predict_proba, decision_function) is compared, on the very object
# handed to scikit-learn, with TreeEnsemble.predict_raw / predict and with
# QuickScorerPredictor on both backends.
from sklearn.base import is_classifier  # noqa: E402
from sklearn.dummy import DummyClassifier, DummyRegressor  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import (  # noqa: E402
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    ExtraTreeRegressor,
)

from skltr.convert import to_tree_ensemble  # noqa: E402
from skltr.ranking._quickscorer_predictor import QuickScorerPredictor  # noqa: E402

F32_MAX = float(np.finfo(np.float32).max)


def sklearn_outputs(model, X):
    out = {"predict": model.predict(X)}
    for name in ("predict_proba", "decision_function"):
        if hasattr(model, name):
            out[name] = getattr(model, name)(X)
    return out


def assert_tree_model_exact(model, X, X_sklearn=None):
    """TreeEnsemble (traversal) and QuickScorerPredictor (both backends) on ``X`` give exactly
    what ``model`` gives on ``X_sklearn`` -- ``X`` itself, the same object, by default."""
    ref = sklearn_outputs(model, X if X_sklearn is None else X_sklearn)
    ens = from_sklearn(model)
    assert (ens.input_rule, ens.precision, ens.decision) == ("float32", "float64", "<=")
    raw, out = ens.predict_raw(X, n_jobs=N_JOBS), ens.predict(X, n_jobs=N_JOBS)
    if "decision_function" in ref:  # GradientBoostingClassifier
        proba = ref["predict_proba"]
        np.testing.assert_array_equal(raw, ref["decision_function"])
        np.testing.assert_array_equal(out, proba[:, 1] if proba.shape[1] == 2 else proba)
    elif is_classifier(model):
        np.testing.assert_array_equal(raw, ref["predict_proba"])
        np.testing.assert_array_equal(out, ref["predict_proba"])
    else:
        np.testing.assert_array_equal(raw, ref["predict"])
        np.testing.assert_array_equal(out, ref["predict"])
    for backend in ("traversal", "quickscorer"):
        qs = QuickScorerPredictor.from_model(model, backend=backend, n_jobs=N_JOBS)
        for name, expected in ref.items():
            got = getattr(qs, name)(X)
            assert got.shape == expected.shape, (backend, name)
            np.testing.assert_array_equal(got, expected, err_msg=f"{backend} {name}")
    return ens


def numeric_thresholds(ens, f):
    node = (ens.left >= 0) & (ens.feature == f) & ((ens.flags & NodeFlags.CATEGORICAL) == 0)
    return np.unique(ens.threshold[node])


def column_edges(ens, X_train, f, dtype):
    """Values of column ``f`` on the model's edges, in ``dtype``: each threshold, its float64
    and float32 neighbours (float inputs), or the integers around it (integer inputs, in
    exact integer arithmetic: int64 values above 2**53 round differently to float32 directly
    than through float64)."""
    t = numeric_thresholds(ens, f)
    col = X_train[:, f][~np.isnan(X_train[:, f].astype(np.float64))]
    if np.dtype(dtype).kind == "f":
        t32 = t.astype(np.float32)
        parts = [t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf), t32,
                 np.nextafter(t32, np.float32(np.inf)), np.nextafter(t32, np.float32(-np.inf)),
                 col, [0.0, -0.0]]
        with np.errstate(over="ignore"):
            return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts]).astype(dtype)
    info = np.iinfo(dtype)
    values = {int(info.min), int(info.max), 0, *(int(v) for v in col)}
    for thr in t:
        base = int(np.floor(thr))
        values.update(base + d for d in range(-2, 4))
    return np.array(sorted(v for v in values if info.min <= v <= info.max), dtype=dtype)


def edge_rows(ens, X_train, rng, dtype, n_mixed=150):
    """Rows with one column on an edge value (the others from training rows), plus rows that
    mix edge values of every column; all of ``dtype``."""
    columns = [column_edges(ens, X_train, f, dtype) for f in range(X_train.shape[1])]
    rows = []
    for f, vals in enumerate(columns):
        base = X_train[rng.integers(0, X_train.shape[0], size=vals.size)].astype(dtype)
        base[:, f] = vals
        rows.append(base)
    rows.append(np.column_stack([rng.choice(v, size=n_mixed) for v in columns]))
    return np.ascontiguousarray(np.concatenate(rows))


def assert_exact_with_infinities(model, X):
    """Finite rows: compared on the same object. Rows scikit-learn refuses (an infinity, or a
    value that rounds to one in float32): scikit-learn raises; the ensemble routes them as
    the largest / smallest values, i.e. as scikit-learn routes +-float32 max (no threshold
    reaches it)."""
    with np.errstate(over="ignore"):
        x32 = X.astype(np.float32)
    infinite = np.isinf(x32).any(axis=1)
    if (~infinite).any():
        assert_tree_model_exact(model, np.ascontiguousarray(X[~infinite]))
    if infinite.any():
        X_inf = np.ascontiguousarray(X[infinite])
        with np.errstate(over="ignore"), pytest.raises(ValueError, match="infinity"):
            model.predict(X_inf)
        X_sub = np.where(np.isinf(x32[infinite]), np.sign(x32[infinite]) * F32_MAX,
                         X_inf.astype(np.float64))
        with np.errstate(over="ignore"):
            assert_tree_model_exact(model, X_inf, X_sklearn=X_sub)


def tree_data(rng, n=300, nan_frac=0.0, n_targets=1):
    X = np.c_[3 * rng.normal(size=n), 2.0**24 + rng.integers(-6, 7, n), rng.normal(size=n)]
    y = np.sin(X[:, 0]) + (X[:, 1] % 3) + 0.3 * rng.normal(size=(n_targets, n))
    y = y[0] if n_targets == 1 else y.T
    if nan_frac:
        nan0 = rng.random(n) < nan_frac
        X[nan0, 0] = np.nan
        y[nan0] += 2.0
        X[rng.random(n) < nan_frac, 2] = np.nan
    return X, y


def labels_of(y, n_classes):
    y = y if y.ndim == 1 else y[:, 0]
    return np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))


# --------------------------------------------------------------------------- trees, forests
TREE_MODELS = {
    "DecisionTreeRegressor": lambda: DecisionTreeRegressor(random_state=0),
    "DecisionTreeClassifier": lambda: DecisionTreeClassifier(random_state=0),
    "ExtraTreeRegressor": lambda: ExtraTreeRegressor(random_state=0),
    "ExtraTreeClassifier": lambda: ExtraTreeClassifier(random_state=0),
    "RandomForestRegressor": lambda: RandomForestRegressor(n_estimators=5, random_state=0),
    "RandomForestClassifier": lambda: RandomForestClassifier(n_estimators=5, random_state=0),
    "ExtraTreesRegressor": lambda: ExtraTreesRegressor(n_estimators=5, random_state=0),
    "ExtraTreesClassifier": lambda: ExtraTreesClassifier(n_estimators=5, random_state=0),
}


@pytest.mark.parametrize("name", list(TREE_MODELS))
def test_trees_and_forests_with_missing_values(name):
    """max_depth=None trees (more than 64 leaves: QuickScorer traverses them), NaN in the
    training data and at predict time, float64 edges, float32 rounding boundaries."""
    rng = np.random.default_rng(20)
    X, y = tree_data(rng, nan_frac=0.15)
    model = TREE_MODELS[name]()
    if is_classifier(model):
        y = labels_of(y, 3)
    model.fit(X, y)
    ens = from_sklearn(model)
    assert to_tree_ensemble(model).equals(ens)
    internal = ens.left >= 0
    default_left = (ens.flags & NodeFlags.DEFAULT_LEFT) != 0
    assert np.any(internal & default_left) and np.any(internal & ~default_left)
    assert ens.n_leaves().max() > 64
    n_copies = 3 if is_classifier(model) else 1
    forest = "Forest" in name or "Trees" in name
    assert ens.n_trees == (5 if forest else 1) * n_copies and ens.average_output == forest
    X_edges = edge_rows(ens, X, rng, np.float64)
    X_edges[rng.random(X_edges.shape) < 0.05] = np.nan
    assert_tree_model_exact(model, X_edges)
    assert_tree_model_exact(model, X_edges.astype(np.float32))


def test_split_on_nan_nodes_sklearn_trees():
    """A best split "NaN vs the rest" has threshold +inf in scikit-learn; the ensemble keeps it
    as an empty category set (every non-NaN value left)."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(400, 2))
    X[rng.random(400) < 0.3, 0] = np.nan
    y = np.isnan(X[:, 0]) * 3.0 + 0.1 * X[:, 1]
    model = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    assert np.isinf(model.tree_.threshold).any()
    ens = from_sklearn(model)
    assert np.all(np.isfinite(ens.threshold))
    vals = np.array([np.nan, F32_MAX, -F32_MAX, 0.0, -0.0, 1.0, 1e30])
    assert_tree_model_exact(model, np.c_[vals, np.zeros_like(vals)])
    assert_tree_model_exact(model, edge_rows(ens, X, rng, np.float64))


@pytest.mark.parametrize("name", ["DecisionTreeRegressor", "RandomForestRegressor",
                                  "ExtraTreesRegressor", "ExtraTreeRegressor"])
def test_multi_output_regressors(name):
    rng = np.random.default_rng(22)
    X, y = tree_data(rng, n=200, nan_frac=0.1, n_targets=3)
    model = TREE_MODELS[name]().set_params(max_depth=6).fit(X, y)
    ens = from_sklearn(model)
    assert ens.n_outputs == 3 and ens.output_transform == "identity"
    assert model.predict(X[:2]).shape == (2, 3)
    assert_tree_model_exact(model, edge_rows(ens, X, rng, np.float64))


@pytest.mark.parametrize("name", ["DecisionTreeClassifier", "RandomForestClassifier",
                                  "ExtraTreesClassifier"])
def test_unrepresentable_classifiers_refused(name):
    rng = np.random.default_rng(23)
    X, y = tree_data(rng, n=100)
    Y = np.c_[labels_of(y, 2), labels_of(-y, 3)]
    with pytest.raises(ValueError, match="2 outputs.*one single-output classifier per column"):
        from_sklearn(TREE_MODELS[name]().fit(X, Y))
    with pytest.raises(ValueError, match="single class"):
        from_sklearn(TREE_MODELS[name]().fit(X, np.full(100, "only")))


def test_weights_bootstrap_and_single_leaf_trees():
    rng = np.random.default_rng(24)
    X, y = tree_data(rng, n=200)
    labels = np.array(["a", "b", "c"])[labels_of(y, 3)]
    weight = rng.integers(0, 4, 200).astype(float) + rng.random(200)
    models = [
        RandomForestClassifier(n_estimators=4, class_weight="balanced_subsample",
                               max_features=None, random_state=0).fit(X, labels),
        ExtraTreesClassifier(n_estimators=4, bootstrap=True, class_weight={"a": 3, "b": 1,
                                                                            "c": 0.5},
                             random_state=0).fit(X, labels, sample_weight=weight),
        RandomForestRegressor(n_estimators=4, bootstrap=False, max_features=1,
                              random_state=0).fit(X, y, sample_weight=weight),
        DecisionTreeClassifier(class_weight="balanced", min_weight_fraction_leaf=0.05,
                               random_state=0).fit(X, labels, sample_weight=weight),
        # single-leaf trees: a constant target, and an impossible split
        DecisionTreeRegressor().fit(X, np.full(200, 1.5)),
        RandomForestClassifier(n_estimators=3, min_samples_split=1000,
                               random_state=0).fit(X, labels),
    ]
    for model in models:
        ens = from_sklearn(model)
        assert_tree_model_exact(model, edge_rows(ens, X, rng, np.float64))
    assert from_sklearn(models[-2]).n_nodes == 1
    assert np.all(from_sklearn(models[-1]).n_leaves() == 1)


def test_inputs_scikit_learn_refuses():
    """Infinities and values beyond float32's range: scikit-learn raises, the ensemble routes
    them as +-float32 max."""
    rng = np.random.default_rng(25)
    X, y = tree_data(rng, n=200, nan_frac=0.1)
    model = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    ens = from_sklearn(model)
    X_edges = edge_rows(ens, X, rng, np.float64, n_mixed=20)
    X_edges[::7, 0] = np.inf
    X_edges[1::7, 1] = -np.inf
    X_edges[2::7, 2] = 1e39  # rounds to +inf in float32
    X_edges[3::7, 0] = -3.5e38
    assert_exact_with_infinities(model, X_edges)


def test_sparse_input_to_scikit_learn_matches_dense():
    """scikit-learn's CSR walk reads absent entries as 0.0 (absent_value); the ensemble on the
    dense equivalent gives the same (skltr's own sparse predict is tested where it lives)."""
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(26)
    X, y = tree_data(rng, n=200)
    X[rng.random(X.shape) < 0.5] = 0.0
    for model in (DecisionTreeRegressor(random_state=0).fit(X, y),
                  ExtraTreesClassifier(n_estimators=3, random_state=0).fit(X, labels_of(y, 3)),
                  GradientBoostingClassifier(n_estimators=5, random_state=0).fit(
                      X, labels_of(y, 2))):
        ens = from_sklearn(model)
        assert ens.absent_value == 0.0
        X_edges = edge_rows(ens, X, rng, np.float64)
        X_edges[rng.random(X_edges.shape) < 0.5] = 0.0
        ref, dense = sklearn_outputs(model, sp.csr_matrix(X_edges)), sklearn_outputs(model, X_edges)
        for name, expected in ref.items():
            np.testing.assert_array_equal(expected, dense[name])
        assert_tree_model_exact(model, X_edges)


# --------------------------------------------------------------------------- GradientBoosting
REGRESSION_LOSSES = ["squared_error", "absolute_error", "huber", "quantile"]


@pytest.mark.parametrize("loss", REGRESSION_LOSSES)
@pytest.mark.parametrize("init", ["default", "zero", "tree", "dummy", "hgb", "gb", "forest1"])
def test_gradient_boosting_regressor_inits(loss, init):
    rng = np.random.default_rng(30)
    X, y = tree_data(rng, n=300)
    inits = {"default": None, "zero": "zero",
             "tree": DecisionTreeRegressor(max_depth=3, random_state=0),
             "dummy": DummyRegressor(strategy="constant", constant=0.3),
             "hgb": HistGradientBoostingRegressor(max_iter=4, random_state=0),
             "gb": GradientBoostingRegressor(n_estimators=3, init=DecisionTreeRegressor(
                 max_depth=2), random_state=0),
             # a one-tree forest: its average (sum / 1) is the tree's value, exactly
             "forest1": ExtraTreesRegressor(n_estimators=1, max_depth=4, random_state=0)}
    model = GradientBoostingRegressor(loss=loss, alpha=0.3 if loss == "quantile" else 0.9,
                                      n_estimators=8, max_depth=3, subsample=0.8,
                                      init=inits[init], random_state=0).fit(X, y)
    ens = from_sklearn(model)
    assert np.all(ens.tree_weight[-8:] == model.learning_rate)
    if init in ("default", "dummy"):
        assert ens.n_trees == 8 and ens.base_score[0] == model._raw_predict_init(X[:1])[0, 0]
    assert_tree_model_exact(model, edge_rows(ens, X, rng, np.float64))


@pytest.mark.parametrize("kind", ["binary", "exponential", "multiclass", "ten_classes"])
@pytest.mark.parametrize("init", ["default", "zero", "tree", "most_frequent", "constant"])
def test_gradient_boosting_classifier_inits(kind, init):
    rng = np.random.default_rng(31)
    X, y = tree_data(rng, n=400)
    n_classes = {"binary": 2, "exponential": 2, "multiclass": 3, "ten_classes": 10}[kind]
    labels = np.array(list("abcdefghij"))[labels_of(y, n_classes)]
    inits = {"default": None, "zero": "zero",
             "tree": DecisionTreeClassifier(max_depth=3, random_state=0),
             "most_frequent": DummyClassifier(strategy="most_frequent"),
             "constant": DummyClassifier(strategy="constant", constant=1)}
    model = GradientBoostingClassifier(
        loss="exponential" if kind == "exponential" else "log_loss", n_estimators=6,
        max_depth=2, init=inits[init], random_state=0).fit(X, labels)
    ens = from_sklearn(model)
    assert ens.source["classes"] == model.classes_.tolist()
    assert ens.source["predict"] == ("raw>=0" if n_classes == 2 else "argmax_raw")
    if kind == "exponential":
        assert ens.transform_params == {"scale": 2.0}
    assert_tree_model_exact(model, edge_rows(ens, X, rng, np.float64))


def test_softmax_memory_order_matters_with_many_classes():
    """With 10 classes NumPy sums a C-ordered row pairwise: GradientBoosting's probabilities
    need the C-ordered softmax; HistGradientBoosting's Fortran-ordered one differs."""
    rng = np.random.default_rng(32)
    X, y = tree_data(rng, n=400)
    model = GradientBoostingClassifier(n_estimators=6, max_depth=2, random_state=0).fit(
        X, labels_of(y, 10))
    ens = from_sklearn(model)
    assert ens.transform_params == {"order": "C"}
    X_edges = edge_rows(ens, X, rng, np.float64)
    np.testing.assert_array_equal(ens.predict(X_edges), model.predict_proba(X_edges))
    fortran = TreeEnsemble.from_document(ens.to_document())
    fortran.transform_params = {}
    assert not np.array_equal(fortran.predict(X_edges), model.predict_proba(X_edges))


def test_gradient_boosting_early_stopping_and_warm_start():
    rng = np.random.default_rng(37)
    X, y = tree_data(rng, n=400)
    stopped = GradientBoostingRegressor(n_estimators=300, n_iter_no_change=2,
                                        validation_fraction=0.2, random_state=0).fit(X, y)
    assert stopped.n_estimators_ < 300
    grown = GradientBoostingClassifier(n_estimators=3, warm_start=True, random_state=0).fit(
        X, labels_of(y, 3))
    grown.set_params(n_estimators=6).fit(X, labels_of(y, 3))
    for model, n_trees in ((stopped, stopped.n_estimators_), (grown, 18)):
        ens = from_sklearn(model)
        assert ens.n_trees == n_trees
        assert_tree_model_exact(model, edge_rows(ens, X, rng, np.float64))


def test_gradient_boosting_labels_come_from_raw_scores():
    """A balanced binary problem on a constant X: every tree is one leaf worth 0, the raw score
    is exactly 0 and predict_proba is [0.5, 0.5]. scikit-learn's predict says classes_[1]
    (raw >= 0), where the argmax of the probabilities would say classes_[0]."""
    X = np.ones((40, 2))
    y = np.array(["no", "yes"] * 20)
    model = GradientBoostingClassifier(n_estimators=3, random_state=0).fit(X, y)
    ens = from_sklearn(model)
    assert np.all(ens.n_leaves() == 1)
    assert np.all(model.decision_function(X) == 0.0) and np.all(model.predict(X) == "yes")
    assert_tree_model_exact(model, X)


def test_gradient_boosting_nan_follows_stage_trees():
    """GradientBoosting refuses NaN; the ensemble sends it where each stage tree's own
    predict does (missing_go_to_left: the side that received more training samples)."""
    rng = np.random.default_rng(33)
    X, y = tree_data(rng, n=300)
    model = GradientBoostingClassifier(n_estimators=5, max_depth=3, random_state=0).fit(
        X, labels_of(y, 3))
    ens = from_sklearn(model)
    X_nan = edge_rows(ens, X, rng, np.float64)
    X_nan[rng.random(X_nan.shape) < 0.2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.predict(X_nan)
    X32 = X_nan.astype(np.float32)
    expected = model._raw_predict_init(np.nan_to_num(X32))
    for stage in model.estimators_:
        for k, tree in enumerate(stage):
            expected[:, k] += model.learning_rate * tree.predict(X32)
    np.testing.assert_array_equal(ens.predict_raw(X_nan, n_jobs=N_JOBS), expected)


@pytest.mark.parametrize("init, match", [
    ("linear", "a TreeEnsemble starts each output from a constant"),
    ("forest", "average of 3 trees"),
    ("poisson_hgb", "'sklearn_exp' transform"),
    ("stratified", "a TreeEnsemble starts each output from a constant"),
    ("hgb_classifier", "a TreeEnsemble starts each output from a constant"),
    ("forest_classifier", "a TreeEnsemble starts each output from a constant"),
])
def test_gradient_boosting_inits_refused(init, match):
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(34)
    X, y = tree_data(rng, n=150)
    regressor_inits = {
        "linear": LinearRegression(),
        "forest": RandomForestRegressor(n_estimators=3, random_state=0),
        "poisson_hgb": HistGradientBoostingRegressor(loss="poisson", max_iter=2),
    }
    if init in regressor_inits:
        model = GradientBoostingRegressor(n_estimators=2, init=regressor_inits[init])
        model.fit(X, np.abs(y) + 0.1)
    else:
        classifier_inits = {
            "stratified": DummyClassifier(strategy="stratified", random_state=0),
            "hgb_classifier": HistGradientBoostingClassifier(max_iter=2),
            "forest_classifier": RandomForestClassifier(n_estimators=2, random_state=0),
        }
        model = GradientBoostingClassifier(n_estimators=2, init=classifier_inits[init])
        model.fit(X, labels_of(y, 2))
    with pytest.raises(ValueError, match=match) as info:
        from_sklearn(model)
    assert "Refit with one of these" in str(info.value)


def test_dispatch_and_persistence(tmp_path):
    rng = np.random.default_rng(35)
    X, y = tree_data(rng, n=200)
    models = [GradientBoostingClassifier(n_estimators=3, random_state=0).fit(X, labels_of(y, 4)),
              RandomForestRegressor(n_estimators=3, random_state=0).fit(X, np.c_[y, -y])]
    for i, model in enumerate(models):
        ens = to_tree_ensemble(model)
        ens.save(tmp_path / f"m{i}.json")
        loaded = TreeEnsemble.load(tmp_path / f"m{i}.json")
        assert loaded.equals(ens)
        qs = QuickScorerPredictor.from_file(tmp_path / f"m{i}.json", n_jobs=N_JOBS)
        out = model.predict_proba(X) if is_classifier(model) else model.predict(X)
        np.testing.assert_array_equal(loaded.predict(X, n_jobs=N_JOBS), out)
        np.testing.assert_array_equal(qs.predict_raw(X), ens.predict_raw(X, n_jobs=N_JOBS))
    from sklearn.linear_model import LinearRegression

    with pytest.raises(TypeError, match="RandomForestRegressor.*LinearRegression"):
        to_tree_ensemble(LinearRegression().fit(X, y))
    with pytest.raises(NotFittedError):
        from_sklearn(ExtraTreesClassifier())


def test_dataframe_feature_names():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(36)
    X, y = tree_data(rng, n=200)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    model = GradientBoostingRegressor(n_estimators=4, random_state=0).fit(df, y)
    ens = from_sklearn(model)
    assert ens.feature_names == ["a", "b", "c"]
    qs = QuickScorerPredictor.from_model(model, n_jobs=N_JOBS)
    np.testing.assert_array_equal(qs.predict(df), model.predict(df))


# --------------------------------------------------------------------------- randomized
TREE_ESTIMATORS = [*TREE_MODELS, "GradientBoostingRegressor", "GradientBoostingClassifier"]
INPUT_KINDS = ["float64", "float32", "float16", "int8", "uint8", "int16", "uint16", "int32",
               "uint32", "int64", "uint64"]
# (centre, half-width) of each training column, per integer input kind: whole ranges, float32
# rounding boundaries (2**24 + k), and large values where float32 is coarse (int64 near 2**60:
# rounding straight to float32 and rounding through float64 differ).
INT_COLUMNS = {
    "int8": [(0, 127), (-60, 30), (60, 30)],
    "uint8": [(128, 127), (10, 10), (240, 15)],
    "int16": [(0, 32767), (1000, 50), (-2000, 50)],
    "uint16": [(32768, 32767), (50, 50), (65000, 500)],
    "int32": [(0, 2**31 - 1), (2**24, 8), (2**30, 2**9)],
    "uint32": [(2**31, 2**31 - 1), (2**24, 8), (2**31 + 2**30, 2**9)],
    "int64": [(0, 2**62), (2**24, 8), (2**60, 2**40)],
    "uint64": [(2**63, 2**62), (2**24, 8), (2**63 + 2**61, 2**42)],
}


def random_training_data(kind, rng, n, nan_frac):
    if kind in INT_COLUMNS:
        dtype = np.dtype(kind)
        X = np.column_stack([
            np.array([c + int(d) for d in rng.integers(-w, w + 1, size=n, dtype=np.int64)],
                     dtype=dtype) for c, w in INT_COLUMNS[kind]])
    else:
        # float16 inputs: a column around 2048, where float16's spacing is 2
        boundary = 2048.0 if kind == "float16" else 2.0**24
        X = np.c_[3 * rng.normal(size=n), boundary + rng.integers(-40, 41, n),
                  rng.normal(size=n) * 1e-3]
        if nan_frac:
            X[rng.random(X.shape) < nan_frac] = np.nan
    return X, rng.normal(size=n)


@settings(deadline=None, max_examples=60)
@given(
    estimator=st.sampled_from(TREE_ESTIMATORS),
    input_kind=st.sampled_from(INPUT_KINDS),
    max_depth=st.sampled_from([None, 1, 3]),
    min_samples_leaf=st.sampled_from([1, 4]),
    n_classes=st.integers(2, 4),
    n_targets=st.integers(1, 2),
    weighted=st.booleans(),
    option=st.integers(0, 3),
    nan_frac=st.sampled_from([0.0, 0.1]),
    specials=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_tree_models_on_adversarial_inputs(estimator, input_kind, max_depth,
                                                   min_samples_leaf, n_classes, n_targets,
                                                   weighted, option, nan_frac, specials, seed):
    """Estimator x parameters x input dtype: each model's outputs on edge inputs of that dtype
    (thresholds and their neighbours, integers around thresholds near 2**24 and 2**60, NaN,
    +-inf, values beyond float32) equal scikit-learn's on the same object."""
    rng = np.random.default_rng(seed)
    boosting = estimator.startswith("GradientBoosting")
    X, y = random_training_data(input_kind, rng, 120, 0.0 if boosting else nan_frac)
    params = {"max_depth": max_depth, "min_samples_leaf": min_samples_leaf, "random_state": 0}
    if boosting:
        params["n_estimators"] = 4
        params["init"] = [None, "zero", None, None][option]
        params["subsample"] = [1.0, 1.0, 0.7, 1.0][option]
        if estimator == "GradientBoostingRegressor":
            params["loss"] = REGRESSION_LOSSES[option]
        elif n_classes == 2 and option == 3:
            params["loss"] = "exponential"
        model = (GradientBoostingRegressor if estimator.endswith("Regressor")
                 else GradientBoostingClassifier)(**params)
    else:
        model = TREE_MODELS[estimator]().set_params(**params)
        if "n_estimators" in model.get_params():
            model.set_params(n_estimators=3, bootstrap=option % 2 == 0,
                             max_features=[1.0, "sqrt", 1, 2][option])
    classifier = is_classifier(model)
    if classifier:
        y = labels_of(y, n_classes)
        if option == 1 and not boosting:
            model.set_params(class_weight="balanced")
    elif n_targets == 2 and not boosting:
        y = np.c_[y, rng.normal(size=y.size)]
    fit_params = {"sample_weight": rng.random(y.shape[0]) + 0.1} if weighted else {}
    model.fit(X, y, **fit_params)
    ens = from_sklearn(model)
    X_test = edge_rows(ens, X, rng, np.dtype(input_kind), n_mixed=60)
    if specials and X_test.dtype.kind == "f":
        pick = rng.random(X_test.shape)
        X_test[pick < 0.05] = np.inf
        X_test[(pick >= 0.05) & (pick < 0.1)] = -np.inf
        if X_test.dtype == np.float64:
            X_test[(pick >= 0.1) & (pick < 0.13)] = -1e39
        if not boosting:  # GradientBoosting refuses NaN (see the test above)
            X_test[pick > 0.93] = np.nan
    assert X_test.dtype == np.dtype(input_kind)
    assert_exact_with_infinities(model, X_test)
