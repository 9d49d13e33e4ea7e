"""How a :class:`~skltr.trees.TreeEnsemble` reads the values it is given.

Each source library reads a caller's input its own way before any tree sees it, and a score
can only equal the library's own if skltr reads the input the same way. The rules are
properties of the model, recorded by its converter and applied here on every backend
(traversal, QuickScorer, and the GPU backends when they come).

Arrays: ``TreeEnsemble.input_rule``
-----------------------------------

``"float64"``
    Every numeric dtype is converted to float64 (skltr's own models; scikit-learn's
    HistGradientBoosting, whose ``predict`` validates ``X`` as float64).
``"float32"``
    Every value is rounded to float32 from its own dtype (XGBoost; scikit-learn's decision
    trees and the forests and gradient boosting built on them, which validate ``X`` as
    float32). An int64 goes straight to float32, as the libraries cast it, not through
    float64 (the two differ above 2**53).
``"float32_unless_float"``
    float32 and float64 arrays are read as they are; every other dtype is rounded to float32
    first (LightGBM's ``predict`` on a NumPy array: ``np.float32`` unless the array is
    already float32 or float64).

The kernels always take float64 (a float32 value is exact in float64), so after the rule the
values are widened to float64.

Infinities: :func:`refuses_inf`
-------------------------------

skltr's own rankers validate ``X`` as scikit-learn's ``validate_data`` with
``ensure_all_finite="allow-nan"``: NaN is a missing value, +-inf an error ("Input X contains
infinity"). An ensemble that came from them (``source["library"] == "skltr"``: fitted by a
skltr ranker, or read from a file one wrote) refuses +-inf the same way on every path
(arrays, DataFrames, sparse matrices, the GPU's CuPy input), so that no score stands where
the model's own ``predict`` has none. XGBoost, LightGBM and scikit-learn's
HistGradientBoosting read +-inf as ordinary values (the largest / smallest), and so do their
ensembles; scikit-learn's decision trees, forests and GradientBoosting refuse +-inf in their
own ``predict``, which their ensembles do not reproduce (``skltr.convert._sklearn``).

pandas DataFrames: ``TreeEnsemble.frame_rule``
----------------------------------------------

A DataFrame is read column by column, category columns included, by its own function
(:func:`frame_input`), kept apart from the array path:

``"numpy"``
    Column names must match ``feature_names``; each column is read from its own dtype under
    ``input_rule``; category columns are refused (skltr's own models, scikit-learn).
``"lightgbm"``
    LightGBM's ``_data_from_pandas``: the frame's category columns, in order, are re-coded to
    the training categories ``pandas_categorical`` (pandas ``set_categories``: a value not
    among them, and NaN, become a NaN code; there must be as many category columns as
    training lists); then the whole frame is converted to one dtype,
    ``np.result_type(*column dtypes, np.float32)``, which is float32 only when every column is
    exactly representable in float32 -- so every value reads as its float64 value.
``"xgboost"``
    XGBoost's ``_transform_pandas_df`` and C++ re-coder: numeric columns are rounded to float32
    one by one; when the model stored training categories (``categories``), each feature must
    be a category column exactly when it was one in training, with the same kind of category
    index (strings, or the same integer dtype), and every category of the column's dtype must
    be a training category (XGBoost refuses the frame otherwise); codes are re-coded to the
    training codes, NaN stays missing. A model without stored categories reads a category
    column's own codes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FRAME_RULES", "INPUT_RULES", "cast_input_values", "check_no_inf", "frame_input",
           "is_dataframe", "model_input", "refuses_inf"]

#: Values a ``TreeEnsemble.input_rule`` may take (see the module docstring).
INPUT_RULES = ("float64", "float32", "float32_unless_float")

#: Values a ``TreeEnsemble.frame_rule`` may take (see the module docstring).
FRAME_RULES = ("numpy", "lightgbm", "xgboost")

#: XGBoost's category index types, by the ``type`` code its JSON model stores for integer
#: categories (``Json::ValueKind`` of the typed array); string categories store offsets.
XGB_CATEGORY_TYPES = {9: "int8", 10: "uint8", 11: "int16", 12: "uint16", 13: "int32",
                      14: "uint32", 15: "int64", 16: "uint64"}


def cast_input_values(values: np.ndarray, rule: str) -> np.ndarray:
    """Apply ``rule`` to a numeric array of any shape; return float64 (no copy when possible).

    Used on dense arrays and on the stored values of sparse matrices alike.
    """
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise ValueError(f"X must be numeric; got dtype {values.dtype}.")
    if rule == "float64":
        return values.astype(np.float64, copy=False)
    if rule == "float32" or (rule == "float32_unless_float"
                             and values.dtype not in (np.float32, np.float64)):
        # beyond float32's range a value becomes +-inf, as in the libraries' own C casts;
        # NumPy would warn about the overflow on every such call
        with np.errstate(over="ignore"):
            return values.astype(np.float32, copy=False).astype(np.float64)
    if rule == "float32_unless_float":
        return values.astype(np.float64, copy=False)
    raise ValueError(f"unknown input_rule {rule!r}; expected one of {INPUT_RULES}.")


def refuses_inf(ensemble) -> bool:
    """True when the model's source refuses +-inf in ``X`` (skltr's own models; see the
    module docstring)."""
    return (ensemble.source or {}).get("library") == "skltr"


def inf_error(row: int | None = None, column: int | None = None) -> ValueError:
    """The error of an ``X`` holding +-inf for a model that refuses it: scikit-learn's
    message (what the skltr rankers' own ``predict`` raises), the place, and the fix."""
    where = "" if row is None else f" (first at row {row}, column {column})"
    return ValueError(
        f"Input X contains infinity or a value too large for dtype('float64'){where}. This "
        f"model comes from a skltr ranker, whose predict refuses +-inf (NaN is read as "
        f"missing); replace infinities with NaN or with finite values.")


def check_no_inf(ensemble, values, *, row_of=None) -> None:
    """Raise :func:`inf_error` when ``ensemble`` refuses +-inf and ``values`` holds one.

    ``values`` is a dense 2-D float array (the place is its row and column), or the stored
    values of a CSR matrix with ``row_of(k)`` giving the row and column of entry ``k``.
    """
    if not refuses_inf(ensemble):
        return
    values = np.asarray(values)
    if values.dtype.kind != "f" or values.size == 0:
        return
    # One pass with no temporary array decides the usual case (a skltr ranker's predict has
    # refused +-inf already): a finite sum has no inf. NaN (missing) or an overflowing sum
    # needs the element-wise look.
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(values.sum(dtype=np.float64)):
            return
    bad = np.isinf(values)
    if not bad.any():
        return
    if row_of is not None:
        raise inf_error(*row_of(int(np.argmax(bad.ravel()))))
    if values.ndim == 2:
        row, column = np.unravel_index(int(np.argmax(bad)), values.shape)
        raise inf_error(int(row), int(column))
    raise inf_error()


def model_input(ensemble, X, *, kernel_casts=False) -> np.ndarray:
    """Dense 2-D ``X`` as the float64, C-contiguous array the kernels read, after the
    ensemble's input rule. Checks the shape against ``ensemble.n_features``, and refuses
    +-inf where the model's source does (:func:`refuses_inf`).

    A pandas DataFrame is read by :func:`frame_input` (the ensemble's ``frame_rule``).

    ``kernel_casts=True``: the caller's kernels take float32 as well as float64 arrays and
    round every value to float32 themselves when ``ensemble.precision == "float32"`` (the
    CPU kernels' ``f32_inputs``). Then a float32 array is passed on as it is (every rule
    keeps a float32 value, and it is exact in float64), and so is a float64 array under the
    ``"float32"`` rule of a float32-precision model -- read in place when C-contiguous. The
    converted copy would hold the same values, made by one or two serial NumPy passes over
    X: on many cores the largest serial step of a scoring call.
    """
    if is_dataframe(X):
        out = frame_input(ensemble, X)
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}.")
        if X.shape[1] != ensemble.n_features:
            from ..utils.validation import feature_count_hint  # noqa: PLC0415

            raise ValueError(
                f"X has {X.shape[1]} features, but the ensemble was built for "
                f"{ensemble.n_features}. {feature_count_hint(X.shape[1], ensemble.n_features)}"
                .rstrip()
            )
        # (a float64 one not for a model refusing +-inf: a finite float64 can round to inf,
        # which the check below must see)
        as_is = kernel_casts and (X.dtype == np.float32 or (
            X.dtype == np.float64 and ensemble.precision == "float32"
            and ensemble.input_rule == "float32" and not refuses_inf(ensemble)))
        out = np.ascontiguousarray(X if as_is else cast_input_values(X, ensemble.input_rule))
    check_no_inf(ensemble, out)
    return out


# --------------------------------------------------------------------------- DataFrames
def is_dataframe(X) -> bool:
    """True for a pandas DataFrame (without importing pandas when it is not loaded)."""
    import sys  # noqa: PLC0415

    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(X, pd.DataFrame)


def frame_input(ensemble, df) -> np.ndarray:
    """A pandas DataFrame as the float64, C-contiguous array the kernels read, read as the
    model's source library reads it (``ensemble.frame_rule``, module docstring).

    Raises
    ------
    ValueError
        When the columns' names or count differ from the model's, a column has a dtype the
        source library refuses, or (XGBoost) a category column does not match the training
        categories.
    """
    if df.ndim != 2:
        raise ValueError(f"X must be 2-D; got a DataFrame of shape {df.shape}.")
    _check_frame_columns(ensemble, df)
    rule = ensemble.frame_rule
    if rule == "lightgbm":
        out = _lightgbm_frame(ensemble, df)
    elif rule == "xgboost":
        out = _xgboost_frame(ensemble, df)
    elif rule == "numpy":
        out = _numpy_frame(ensemble, df)
    else:
        raise ValueError(f"unknown frame_rule {rule!r}; expected one of {FRAME_RULES}.")
    return np.ascontiguousarray(out, dtype=np.float64)


def _frame_names(ensemble, df) -> list[str]:
    names = [str(c) for c in df.columns]
    if ensemble.frame_rule == "lightgbm":
        # LightGBM stores feature names with every space replaced by '_'.
        names = [n.replace(" ", "_") for n in names]
    return names


def _model_names(ensemble):
    """The feature names a frame must carry, or None when the model was fitted without."""
    names = ensemble.feature_names
    if names is None:
        return None
    if ensemble.frame_rule == "lightgbm" and names == [f"Column_{i}" for i in range(len(names))]:
        return None  # LightGBM's names for a model fitted on an array
    return names


def _check_frame_columns(ensemble, df) -> None:
    if df.shape[1] != ensemble.n_features:
        raise ValueError(f"X has {df.shape[1]} columns, but the model was fitted with "
                         f"{ensemble.n_features} features.")
    expected = _model_names(ensemble)
    if expected is None:
        return
    got = _frame_names(ensemble, df)
    if got != expected:
        unexpected = [n for n in got if n not in expected]
        missing = [n for n in expected if n not in got]
        detail = []
        if unexpected:
            detail.append(f"columns not seen in fit: {unexpected[:5]}")
        if missing:
            detail.append(f"columns missing: {missing[:5]}")
        if not detail:
            detail.append("the same columns in another order")
        raise ValueError(
            f"The DataFrame's column names must match the feature names seen in fit, in the "
            f"same order ({'; '.join(detail)}). Select and order the columns with "
            f"X[{expected[:3]}{'...' if len(expected) > 3 else ''}] or pass an array."
        )


def _is_category(dtype) -> bool:
    import pandas as pd  # noqa: PLC0415 - only called with a DataFrame

    return isinstance(dtype, pd.CategoricalDtype)


def _bad_column(col, dtype, fix: str) -> ValueError:
    return ValueError(f"column {col!r} has dtype {dtype}, which this model's source library "
                      f"does not read as a feature; {fix}")


def _numpy_frame(ensemble, df) -> np.ndarray:
    """Column by column, each from its own dtype under ``input_rule``."""
    out = np.empty(df.shape, dtype=np.float64)
    for j, (col, dtype) in enumerate(zip(df.columns, df.dtypes)):
        if _is_category(dtype):
            raise _bad_column(col, dtype, "encode category columns as numbers (e.g. "
                                          "X[col].cat.codes) before predicting.")
        values = _numeric_column(df.iloc[:, j], col, np.float64)
        out[:, j] = cast_input_values(values, ensemble.input_rule)
    return out


def _numeric_column(series, col, na_dtype) -> np.ndarray:
    """A numeric column (NumPy or pandas nullable dtype) as a NumPy array of its own dtype;
    a nullable column with missing entries becomes ``na_dtype`` with NaN there."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        if dtype.kind not in "biuf":
            raise _bad_column(col, dtype, "convert it to a numeric dtype first.")
        return series.to_numpy()
    numpy_type = getattr(dtype, "numpy_dtype", None)  # pandas nullable Int64, Float32, boolean
    if numpy_type is None or np.dtype(numpy_type).kind not in "biuf":
        raise _bad_column(col, dtype, "convert it to a NumPy numeric dtype first.")
    if series.isna().any():
        return series.to_numpy(dtype=na_dtype, na_value=np.nan)
    return series.to_numpy(dtype=numpy_type)


# --------------------------------------------------------------------------- LightGBM
def _lightgbm_frame(ensemble, df) -> np.ndarray:
    """LightGBM 4's ``_data_from_pandas`` followed by its array rule."""
    if df.shape[0] < 1:
        raise ValueError("LightGBM refuses an empty DataFrame ('Input data must be 2 "
                         "dimensional and non empty'); pass at least one row.")
    data = df.copy(deep=False)
    cat_cols = [j for j, dtype in enumerate(data.dtypes) if _is_category(dtype)]
    training = ensemble.pandas_categorical
    if training is None:
        training = [list(data.iloc[:, j].cat.categories) for j in cat_cols]
    elif len(cat_cols) != len(training):
        raise ValueError(
            f"the DataFrame has {len(cat_cols)} category columns but the LightGBM model was "
            f"trained on {len(training)} (LightGBM: 'train and valid dataset "
            f"categorical_feature do not match'). Give the columns the dtypes they had in "
            f"training.")
    columns = {}
    for j, categories in zip(cat_cols, training):
        col = data.iloc[:, j]
        if list(col.cat.categories) != list(categories):
            col = col.cat.set_categories(categories)
        codes = col.cat.codes
        columns[j] = codes.replace({-1: np.nan})
    for j, codes in columns.items():
        data.isetitem(j, codes)
    dtypes = []
    for col, dtype in zip(data.columns, data.dtypes):
        kind = getattr(dtype, "type", None)
        if not (isinstance(kind, type) and issubclass(kind, (np.integer, np.floating, np.bool_))
                and not issubclass(kind, np.timedelta64)):
            raise _bad_column(col, dtype, "LightGBM reads int, float, bool and category "
                                          "columns only ('pandas dtypes must be int, float or "
                                          "bool').")
        dtypes.append(kind)
    target = np.result_type(*dtypes, np.float32)
    try:
        values = data.to_numpy(dtype=target, copy=False)
    except ValueError:  # nullable columns with missing entries
        values = data.to_numpy(dtype=target, na_value=np.nan)
    return cast_input_values(values, ensemble.input_rule)


# --------------------------------------------------------------------------- XGBoost
def xgb_category_needles(categories) -> list[str]:
    """The byte strings XGBoost's Python package hands its re-coder for a pandas category
    index of strings (``_data_utils.pd_cat_inf``): the UTF-8 bytes of all names joined, cut
    at offsets counted in **characters**. For ASCII names these are the names; XGBoost's own
    cuts of non-ASCII names are reproduced, decoded with ``surrogateescape``."""
    lengths = np.cumsum([0] + [len(s) for s in categories])
    blob = "".join(categories).encode("utf-8")
    return [blob[lengths[k]:lengths[k + 1]].decode("utf-8", "surrogateescape")
            for k in range(len(categories))]


def _xgb_codes(col, name, j, entry) -> np.ndarray:
    """Training codes (float, NaN for missing) of category column ``col``, XGBoost's way."""
    cats = col.cat.categories
    codes = col.cat.codes.to_numpy().astype(np.float64)
    codes[codes < 0] = np.nan
    kind = cats.dtype
    numeric = isinstance(kind, np.dtype) and kind.kind in "iuf"
    if numeric and kind.kind == "f":
        raise ValueError(f"column {name!r}: XGBoost refuses category values of a floating "
                         f"point dtype ({kind}); use strings or integers.")
    if not numeric and not all(isinstance(c, str) for c in cats):
        raise ValueError(f"column {name!r}: XGBoost reads categories that are all strings or "
                         f"of one integer dtype; got {kind} categories.")
    if len(cats) == 0 and (not numeric or entry is not None):
        raise ValueError(f"column {name!r} is a category column without categories, which "
                         f"XGBoost refuses.")
    if entry is None:
        return codes  # no training categories: the frame's own codes are read
    got = str(kind) if numeric else "str"
    if got != entry["type"]:
        raise ValueError(
            f"column {name!r} (feature {j}) has {got} categories but the model was trained on "
            f"{entry['type']} categories; XGBoost requires the same category index type. "
            f"Convert with X[{name!r}].cat.rename_categories(...) or astype.")
    values = list(cats) if numeric else xgb_category_needles(list(cats))
    if not numeric and values != entry["values"] and not all(c.isascii() for c in cats):
        # XGBoost cuts the UTF-8 bytes of the names at character offsets: its re-coding of
        # non-ASCII names is only the identity when the frame lists the training categories
        # in training order; otherwise its mapping is not the names' (issue #11 notes).
        raise ValueError(
            f"column {name!r} (feature {j}) has non-ASCII category names listed differently "
            f"from training; XGBoost re-codes such names from garbled byte cuts, so skltr "
            f"cannot reproduce it. List the training categories in training order: "
            f"X[{name!r}].cat.set_categories(training categories).")
    position = {v: k for k, v in enumerate(entry["values"])}
    mapping = np.empty(len(values), dtype=np.float64)
    for k, v in enumerate(values):
        key = int(v) if numeric else v
        if key not in position:
            raise ValueError(
                f"column {name!r} (feature {j}) has the category {cats[k]!r}, which is not "
                f"among the training categories; XGBoost refuses categories it has not seen "
                f"(even unused ones: drop them with X[{name!r}].cat.remove_unused_categories()"
                f" or map the value to NaN).")
        mapping[k] = position[key]
    valid = ~np.isnan(codes)
    codes[valid] = mapping[codes[valid].astype(np.int64)]
    return codes


def _xgboost_frame(ensemble, df) -> np.ndarray:
    """XGBoost 3's ``_transform_pandas_df`` and category re-coding, then float32."""
    out = np.empty(df.shape, dtype=np.float64)
    stored = ensemble.categories  # None: the model holds no training categories
    for j, (name, dtype) in enumerate(zip(df.columns, df.dtypes)):
        col = df.iloc[:, j]
        entry = None if stored is None else stored[j]
        if _is_category(dtype):
            if stored is not None and entry is None:
                raise ValueError(
                    f"column {name!r} (feature {j}) is a category column but the model was "
                    f"trained on it as a numeric feature; XGBoost requires the same kind. "
                    f"Pass it as numbers.")
            out[:, j] = _xgb_codes(col, name, j, entry)
            continue
        if entry is not None:
            raise ValueError(
                f"column {name!r} (feature {j}) has dtype {dtype} but the model was trained on "
                f"it as a category column; XGBoost requires the same kind. Convert it with "
                f"X[{name!r}].astype(pd.CategoricalDtype({entry['values'][:3]}...)).")
        values = _numeric_column(col, name, np.float32)
        out[:, j] = cast_input_values(values, "float32")
    return out
