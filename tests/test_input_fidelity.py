"""Inputs read exactly as the source library reads them (issue #11, "No silent wrong answers").

Randomised: tiny XGBoost and LightGBM models (drawn parameters) trained on a DataFrame with
integer columns near float32 rounding boundaries (2**24 + k; float32 midpoints at 2**40 ..
2**62, where rounding an int64 through float64 first gives another float32), a float column
with NaN and a category column of strings or of integers; then predicted on drawn inputs --
DataFrames whose columns have other dtypes (int8 .. uint64, float16 .. float64, pandas
nullable types with NA), whose category columns list their categories in another order, hold
unused or unseen categories and NaN, and arrays of every numeric dtype holding the category
codes, ±inf and NaN. Every input goes to the source library's own ``predict`` and, the very
same object, to ``QuickScorerPredictor`` (backends "quickscorer" and "traversal") and
``TreeEnsemble.predict``: the outputs must be identical (max abs diff 0), and where the
library refuses the input skltr must refuse it too, with a ValueError.
"""

import warnings

import numpy as np
import scipy.sparse as sp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
pd = pytest.importorskip("pandas")

from skltr import QuickScorerPredictor  # noqa: E402
from skltr.convert import to_tree_ensemble  # noqa: E402

N_TRAIN = 240
STR_CATS = ["red", "green", "blue", "cyan", "magenta", "yellow"]
INT_CATS = [3, 10, 20, 35, 50, 400]
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
SETTINGS = dict(max_examples=12, suppress_health_check=[HealthCheck.too_slow,
                                                        HealthCheck.data_too_large])


@pytest.fixture(autouse=True)
def _single_openmp_thread():
    # LightGBM's and numba's OpenMP runtimes starve each other on a small machine.
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


# --------------------------------------------------------------------------- data and models
def midpoints(e, rng, size):
    """int64 values on and next to the midpoints between float32 neighbours of [2**e, 2**e+1):
    2**e + (2j + 1) * 2**(e - 24) + d, d in {-1, 0, 1}."""
    j = rng.integers(0, 6, size)
    d = rng.integers(-1, 2, size)
    return (np.int64(2) ** e + (2 * j + 1) * np.int64(2) ** (e - 24) + d).astype(np.int64)


def training_frame(rng, e, cat_kind):
    n = N_TRAIN
    cats = STR_CATS if cat_kind == "str" else INT_CATS
    c = pd.Categorical(np.asarray(cats, dtype=object)[rng.integers(0, 6, n)].tolist(),
                       categories=cats)
    c[rng.random(n) < 0.05] = np.nan
    x = rng.normal(size=n)
    x[rng.random(n) < 0.1] = np.nan
    df = pd.DataFrame({
        "s": rng.integers(0, 120, n).astype(np.int64),
        "x": x,
        "i24": (2**24 + rng.integers(-12, 13, n)).astype(np.int64),
        "big": midpoints(e, rng, n),
        "c": c,
    })
    codes = df["c"].cat.codes.to_numpy()
    # Steps at 2**24 | 2**24 + 1 and at a float32 midpoint put thresholds where reading an
    # integer through float32 (or through float64, near 2**62) moves it to the other side.
    step = np.int64(2) ** e + 5 * np.int64(2) ** (e - 24)
    y = (2.0 * (df["i24"].to_numpy() > 2**24) + 2.0 * (df["big"].to_numpy() >= step)
         + 0.5 * np.nan_to_num(x) + np.isin(codes, [1, 4]) * 1.5 + df["s"].to_numpy() / 60
         + rng.normal(size=n) * 0.05)
    return df, y


def fit_model(lib, params, df, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if lib == "xgboost":
            cls = xgb.XGBClassifier if params.pop("binary") else xgb.XGBRegressor
            yy = (y > np.median(y)).astype(int) if cls is xgb.XGBClassifier else y
            return cls(enable_categorical=True, n_jobs=1, max_bin=512, **params).fit(df, yy)
        cls = lgb.LGBMClassifier if params.pop("binary") else lgb.LGBMRegressor
        yy = (y > np.median(y)).astype(int) if cls is lgb.LGBMClassifier else y
        return cls(verbose=-1, n_jobs=1, min_child_samples=2, min_data_per_group=2,
                   cat_smooth=1.0, cat_l2=1.0, max_cat_to_onehot=4, **params).fit(df, yy)


xgb_params = st.fixed_dictionaries({
    "n_estimators": st.integers(1, 5),
    "max_depth": st.integers(2, 5),
    "booster": st.sampled_from(["gbtree", "dart"]),
    "max_cat_to_onehot": st.sampled_from([1, 64]),
    "binary": st.booleans(),
}).map(lambda p: {**p, **({"rate_drop": 0.3} if p["booster"] == "dart" else {})})
lgb_params = st.fixed_dictionaries({
    "n_estimators": st.integers(1, 5),
    "num_leaves": st.integers(2, 15),
    "binary": st.booleans(),
})
models = st.one_of(st.tuples(st.just("xgboost"), xgb_params),
                   st.tuples(st.just("lightgbm"), lgb_params))


# --------------------------------------------------------------------------- comparison
def source_output(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if hasattr(model, "predict_proba"):
            return model.predict_proba(X)
        return model.predict(X)


def skltr_outputs(model, X):
    out = {}
    for backend in ("quickscorer", "traversal"):
        qs = QuickScorerPredictor.from_model(model, backend=backend)
        out[backend] = qs.predict_proba(X) if hasattr(model, "predict_proba") else qs.predict(X)
    ens = to_tree_ensemble(model)
    pred = ens.predict(X)
    if hasattr(model, "predict_proba") and pred.ndim == 1:
        pred = np.column_stack([pred.dtype.type(1) - pred, pred])
    out["TreeEnsemble"] = pred
    return out


def assert_same_as_source(model, X):
    """skltr's outputs equal the source's on the very same object, or both refuse it."""
    try:
        expected = source_output(model, X)
    except Exception as exc:  # noqa: BLE001 - whatever the library raises, skltr must refuse
        for backend in ("quickscorer", "traversal"):
            with pytest.raises(ValueError):
                QuickScorerPredictor.from_model(model, backend=backend).predict(X)
        with pytest.raises(ValueError):
            to_tree_ensemble(model).predict(X)
        return f"refused: {type(exc).__name__}"
    for name, got in skltr_outputs(model, X).items():
        assert got.dtype == expected.dtype, name
        np.testing.assert_array_equal(got, expected, err_msg=f"{name} differs from the source")
    return "equal"


# --------------------------------------------------------------------------- input variants
def cast_int_column(values, dtype):
    """Integer values in ``dtype``'s range (wrapped modulo, as a cast would)."""
    info = np.iinfo(dtype)
    if values.min() >= info.min and values.max() <= info.max:
        return values.astype(dtype)
    span = int(info.max) - int(info.min) + 1
    return ((values.astype(object) - info.min) % span + info.min).astype(dtype)


def numeric_column(values, dtype, rng):
    """An int64 or float64 training column as a column of ``dtype``."""
    if dtype in INT_DTYPES:
        ints = values if values.dtype.kind == "i" else np.round(np.nan_to_num(values)).astype(
            np.int64)
        return cast_int_column(ints, dtype)
    if dtype in FLOAT_DTYPES:
        out = values.astype(dtype)
        if values.dtype.kind == "f":
            out[rng.random(len(out)) < 0.05] = np.inf
            out[rng.random(len(out)) < 0.05] = -np.inf
        return out
    nullable = pd.array(values.astype(np.float64) if dtype == "Float64" else values, dtype=dtype)
    nullable[rng.random(len(values)) < 0.1] = pd.NA
    return nullable


def category_column(col, variant, cat_kind, rng):
    cats = list(col.cat.categories)
    values = np.asarray(col.astype(object))
    if variant == "reordered":
        return col.cat.reorder_categories(cats[::-1])
    if variant == "unused":
        extra = "zzz" if cat_kind == "str" else 999
        return col.cat.add_categories([extra])
    if variant == "unseen":
        extra = "zzz" if cat_kind == "str" else 999
        values = values.copy()
        values[rng.random(len(values)) < 0.2] = extra
        return pd.Series(pd.Categorical(values.tolist(), categories=cats + [extra]))
    if variant == "subset":
        keep = cats[:4]
        values = [v if v in keep else None for v in values]
        return pd.Series(pd.Categorical(values, categories=keep[::-1]))
    if variant == "int32 categories" and cat_kind == "int":
        return pd.Series(pd.Categorical(col.astype(object).tolist(),
                                        categories=pd.Index(cats, dtype="int32")))
    if variant == "as codes":
        codes = col.cat.codes.to_numpy().astype(np.float64)
        codes[codes < 0] = np.nan
        return codes
    return col


frame_variants = st.fixed_dictionaries({
    "s": st.sampled_from(INT_DTYPES + FLOAT_DTYPES + ["Int64", "UInt16"]),
    "x": st.sampled_from(["float16", "float32", "float64", "Float64"]),
    "i24": st.sampled_from(["int32", "int64", "uint32", "uint64", "float32", "float64",
                            "Int64"]),
    "big": st.sampled_from(["int64", "uint64", "float32", "float64"]),
    "c": st.sampled_from(["same", "reordered", "unused", "unseen", "subset",
                          "int32 categories", "as codes"]),
})


def predict_frame(df, variant, cat_kind, rng):
    out = {}
    for name in ("s", "x", "i24", "big"):
        out[name] = numeric_column(df[name].to_numpy(), variant[name], rng)
    out["c"] = category_column(df["c"], variant["c"], cat_kind, rng)
    return pd.DataFrame({k: (v.reset_index(drop=True) if isinstance(v, pd.Series) else v)
                         for k, v in out.items()})


def code_array(df, dtype, rng):
    """The frame as an array of ``dtype`` holding the category codes (and, for floats, NaN,
    ±inf, and codes outside the categories)."""
    codes = df["c"].cat.codes.to_numpy().astype(np.int64)
    wild = rng.random(len(codes)) < 0.1
    codes[wild] = rng.choice([-1, 7, 100], wild.sum())
    if dtype in INT_DTYPES:
        cols = [numeric_column(df[n].to_numpy(), dtype, rng) for n in ("s", "x", "i24", "big")]
        return np.column_stack(cols + [cast_int_column(codes, dtype)])
    cols = [df[n].to_numpy().astype(dtype) for n in ("s", "x", "i24", "big")]
    c = codes.astype(dtype)
    c[rng.random(len(c)) < 0.05] = np.nan
    X = np.column_stack(cols + [c])
    X[rng.random(X.shape) < 0.02] = np.inf
    X[rng.random(X.shape) < 0.02] = -np.inf
    return X


# --------------------------------------------------------------------------- the tests
@settings(**SETTINGS)
@given(model=models, seed=st.integers(0, 2**16), e=st.sampled_from([40, 53, 55, 60, 62]),
       cat_kind=st.sampled_from(["str", "int"]),
       variants=st.lists(frame_variants, min_size=2, max_size=3))
def test_dataframes_read_as_the_source_reads_them(model, seed, e, cat_kind, variants):
    lib, params = model
    rng = np.random.default_rng(seed)
    df, y = training_frame(rng, e, cat_kind)
    fitted = fit_model(lib, dict(params), df, y)
    assert assert_same_as_source(fitted, df) == "equal"
    for variant in variants:
        assert_same_as_source(fitted, predict_frame(df, variant, cat_kind, rng))


@settings(**SETTINGS)
@given(model=models, seed=st.integers(0, 2**16), e=st.sampled_from([40, 53, 55, 60, 62]),
       cat_kind=st.sampled_from(["str", "int"]),
       dtypes=st.lists(st.sampled_from(INT_DTYPES + FLOAT_DTYPES), min_size=2, max_size=4))
def test_arrays_read_as_the_source_reads_them(model, seed, e, cat_kind, dtypes):
    lib, params = model
    rng = np.random.default_rng(seed)
    df, y = training_frame(rng, e, cat_kind)
    fitted = fit_model(lib, dict(params), df, y)
    for dtype in dtypes:
        X = code_array(df, dtype, rng)
        assert assert_same_as_source(fitted, X) == "equal"
        if dtype in ("float32", "float64"):  # the libraries' sparse inputs are float only
            for M in sparse_variants(X, rng):
                outcome = assert_same_as_source(fitted, M)  # equal, or refused by both
                assert outcome == "equal" or M.format == "csc"  # XGBoost: no inf in CSC


def sparse_variants(X, rng):
    """``X`` with about 30% of its values zero as a CSR with the zeros left out (implicit) and
    as a CSC with some zeros stored (explicit) -- the libraries read the two differently."""
    X = X.copy()
    X[rng.random(X.shape) < 0.3] = 0
    rows, cols = np.nonzero((X != 0) | (rng.random(X.shape) < 0.5))
    explicit = sp.csc_matrix((X[rows, cols], (rows, cols)), shape=X.shape)
    return sp.csr_matrix(X), explicit
