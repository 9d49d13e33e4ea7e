"""from_sklearn: converted HistGradientBoosting models reproduce scikit-learn bit for bit.

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
    from sklearn.ensemble import GradientBoostingRegressor

    with pytest.raises(TypeError, match="HistGradientBoosting"):
        from_sklearn(GradientBoostingRegressor())
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
