"""Categorical input of the GBDT ranker: pandas ``category`` columns in, category codes out.

A DataFrame's ``category`` columns that are categorical features (``"from_dtype"``, or named /
indexed in ``categorical_features``) are replaced by their codes (float, NaN for missing)
before validation (a dask DataFrame partition by partition); their categories are kept (the
ranker's ``_pandas_categories``, saved in its JSON model), and a DataFrame given later (eval
sets, ``predict``) is coded against them, as LightGBM's ``pandas_categorical`` does: a
category unknown at fit becomes missing (it goes right at every categorical split, with NaN).
Every categorical column's values are then checked (whole numbers in ``[0, 2**31 - 1)`` or
NaN: :func:`skltr._engine.binning.check_categorical_values`).
"""

from __future__ import annotations

import numpy as np

from .._engine.binning import check_categorical_values
from .._gbdt.categorical import feature_indices

__all__ = ["encode_fit_frame", "encode_frame", "encode_eval_sets", "check_categorical_columns",
           "jsonable_categories", "read_categories"]

#: Most categories of one stored column read back from a model file (untrusted input).
_MAX_STORED_CATEGORIES = 1 << 24


def _is_frame(X):
    return hasattr(X, "dtypes") and hasattr(X, "columns") and hasattr(X, "iloc")


def _category_columns(X):
    return [j for j, dt in enumerate(X.dtypes) if getattr(dt, "name", None) == "category"]


def encode_fit_frame(X, spec, start=None):
    """``(X, spec, categories)`` for a fit.

    ``spec``: the estimator's ``categorical_features``; ``"from_dtype"`` becomes the indices
    of a DataFrame's category columns (None for any other X). Category columns that are
    categorical are replaced by their codes; ``categories`` maps their positions to their
    categories (a list), empty when there are none. ``start``: the categories of the model
    the fit continues (its trees read those codes), kept for the columns it has. A dask
    DataFrame is coded partition by partition; its category columns must have known
    categories (``X.categorize()``).
    """
    if not _is_frame(X):
        return X, (None if isinstance(spec, str) else spec), {}
    spec, chosen = _chosen_columns(X, spec)
    _refuse_text_categories(X, chosen)
    if not chosen:
        return X, spec, {}
    categories = {}
    for j in chosen:
        dtype = X.dtypes.iloc[j]
        if hasattr(X, "map_partitions") and not X.iloc[:, j].cat.known:
            raise ValueError(
                f"column {X.columns[j]!r} is a dask category column whose categories are "
                f"unknown; call X = X.categorize(columns=[{X.columns[j]!r}]) before fit.")
        categories[j] = list(start[j]) if start and j in start else list(dtype.categories)
    if hasattr(X, "map_partitions"):  # dask: coded on the workers, the same codes
        return (X.map_partitions(encode_frame, categories,
                                 meta=encode_frame(X._meta, categories)), spec, categories)
    return encode_frame(X, categories), spec, categories


def _refuse_text_categories(X, chosen):
    """A category column left out of ``categorical_features`` is read as numbers: one whose
    categories are not numbers is refused here, with what to do (numpy's own error names no
    column)."""
    for j in _category_columns(X):
        cats = getattr(X.dtypes.iloc[j], "categories", None)
        if j not in chosen and cats is not None and cats.dtype.kind not in "biuf":
            raise ValueError(
                f"column {X.columns[j]!r} is a pandas category column of non-numeric "
                f"categories that is not in categorical_features: add it to "
                f"categorical_features (categorical_features='from_dtype' takes every "
                f"category column), or encode it as numbers.")


def _chosen_columns(X, spec):
    """``(spec, chosen)``: ``"from_dtype"`` resolved, and the category columns of ``X`` that
    are categorical features (by dtype, or listed in ``spec`` by index, mask or name)."""
    cat_cols = _category_columns(X)
    if isinstance(spec, str) and spec == "from_dtype":
        return cat_cols or None, cat_cols
    try:  # the fit's own rule; a bad value is refused there, with this same check's message
        listed = feature_indices(spec, X.shape[1], [str(c) for c in X.columns])
    except (TypeError, ValueError):
        return spec, []
    return spec, [j for j in cat_cols if j in listed]


def encode_frame(X, categories):
    """A DataFrame's categorical columns coded against the fit's ``categories`` (unknown
    categories: NaN); other X unchanged. A dask DataFrame is coded partition by partition."""
    if not categories or not _is_frame(X):
        return X
    if hasattr(X, "map_partitions"):
        return X.map_partitions(encode_frame, categories,
                                meta=encode_frame(X._meta, categories))
    X = X.copy(deep=False)
    for j, cats in categories.items():
        if j >= X.shape[1]:
            break  # the feature count check names the mismatch
        X.isetitem(j, _coded(X.iloc[:, j], cats))
    return X


def encode_eval_sets(eval_set, categories, convert=None):
    """``eval_set`` with the ``X`` of each ``(X, y, qid)`` tuple coded as :func:`encode_frame`
    codes it (``convert`` applied to every part first, when given); anything that is not a
    list / tuple of tuples is returned as it is, for the eval-set checks to refuse."""
    if not isinstance(eval_set, (list, tuple)):
        return eval_set
    out = []
    for part in eval_set:
        if isinstance(part, tuple) and part:
            if convert is not None:
                part = tuple(convert(a) for a in part)
            part = (encode_frame(part[0], categories), *part[1:])
        out.append(part)
    return out


def _coded(col, cats):
    """The codes of column ``col`` in the categories ``cats`` (NaN: missing or unknown)."""
    import pandas as pd  # noqa: PLC0415 - col is a pandas column

    # positions in the fit's categories, -1 for NaN and unknown ones (not
    # pd.Categorical(col, categories=cats), which warns of values outside the categories
    # since pandas 3 and will raise: Pandas4Warning)
    return _codes(pd.Index(cats).get_indexer(col))


def _codes(codes):
    out = np.asarray(codes, dtype=np.float64)
    out[out < 0] = np.nan
    return out


def check_categorical_columns(X, features):
    """Raise ValueError when a categorical column of the validated ``X`` holds a value that
    is not a category code (see the module docstring)."""
    from ..trees._sparse_input import is_sparse  # noqa: PLC0415

    for f in features:
        col = X[:, [f]].toarray().ravel() if is_sparse(X) else X[:, f]
        check_categorical_values(col, int(f))


def jsonable_categories(categories, feature_names):
    """The fit's ``categories`` as a JSON object ``{position: [category, ...]}``; a category
    that JSON cannot hold exactly (not a str, int, float or bool) raises ValueError."""
    out = {}
    for j, cats in categories.items():
        for c in cats:
            if not isinstance(c, (str, int, float, bool, np.integer, np.floating, np.bool_)):
                name = feature_names[j] if feature_names is not None else j
                raise ValueError(f"column {name!r} has the category {c!r} of type "
                                 f"{type(c).__name__}, which a JSON model cannot store; "
                                 f"use strings or numbers as categories, or pickle the model.")
        out[str(j)] = [c.item() if isinstance(c, np.generic) else c for c in cats]
    return out


def read_categories(value, n_features):
    """:func:`jsonable_categories`' object read back, checked; raises ValueError."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("categories_ must be an object")
    out = {}
    for key, cats in value.items():
        if not (isinstance(key, str) and key.isdigit() and int(key) < n_features):
            raise ValueError(f"categories_ has the key {key!r}, not a feature position")
        if (not isinstance(cats, list) or len(cats) > _MAX_STORED_CATEGORIES
                or not all(isinstance(c, (str, int, float, bool)) for c in cats)):
            raise ValueError(f"categories_[{key!r}] must be a list of strings or numbers")
        out[int(key)] = cats
    return out
