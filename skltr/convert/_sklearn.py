"""scikit-learn HistGradientBoosting model -> :class:`~skltr.trees.TreeEnsemble`, reproducing
its predictions bit for bit.

scikit-learn's ``_raw_predict`` starts every output from ``_baseline_prediction`` and adds the
leaf value of each tree (``_predictors[iteration][k]``) in float64, iteration by iteration.
A numeric node sends NaN along ``missing_go_to_left`` and other values left when
``x <= num_threshold``, in double. The converter maps::

    TreePredictor.nodes (one record per node)   TreeEnsemble (per node)
    left / right (local, root 0)             -> left / right   (-1 on leaves)
    feature_idx                              -> feature        (original column, see below)
    num_threshold                            -> threshold      (decision "<=")
    missing_go_to_left                       -> DEFAULT_LEFT, missing type NaN
    value (leaves)                           -> value
    is_categorical, raw_left_cat_bitsets     -> CATEGORICAL | CAT_INVALID_DEFAULT + bitsets
    _baseline_prediction                     -> base_score
    k-th predictor of each iteration         -> tree_output k

Split-on-NaN nodes: scikit-learn gives them ``num_threshold = +inf`` (every non-NaN value goes
left, NaN right). A TreeEnsemble needs finite thresholds, so such a node becomes an *empty*
category set with ``CAT_SET_RIGHT``: NaN follows the default direction and every other value,
not being in the (empty) set, goes left -- the same routing, exactly.

Categorical features. When categorical features are present, scikit-learn first sends ``X``
through ``_preprocessor``: a ``ColumnTransformer`` that ordinal-encodes the categorical
columns (unknown values -> NaN) and moves them in front of the numeric ones. The trees see
the encoded, reordered columns. The converter folds that step into the ensemble, so that it
reads the original ``X``: feature indices are mapped back to the original columns, and each
category set is re-coded from encoder codes to the category values themselves. A split then
routes

* the training categories of its left set left, the other training categories right;
* NaN, negative values, and every value that is not a training category (unknown) along the
  missing-value direction, as scikit-learn's encoder (unknown -> NaN) and predictor
  (negative -> missing) do. To send unknowns the missing way on both sides, a node whose
  missing values go left stores its *right* set with ``CAT_SET_RIGHT``.

This needs categories that are non-negative integers below 2**24 (integer-coded columns given
by index or mask, or pandas categoricals whose categories are such integers); other categories
(strings, negative or fractional numbers) raise a ``ValueError``: encode them as integers before
fitting.
"""

from __future__ import annotations

import numpy as np

from ..trees._ensemble import NodeFlags, TreeEnsemble

__all__ = ["from_sklearn"]

#: Largest category value (exclusive) the converter accepts: bitsets grow with the value.
MAX_CATEGORY = 1 << 24

_NAN_TYPE = np.uint8(NodeFlags.MISSING_NAN << NodeFlags.MISSING_SHIFT)

# link of the loss -> output transform (what predict / predict_proba apply to _raw_predict)
_LINKS = {
    "IdentityLink": "identity",
    "LogLink": "sklearn_exp",
    "LogitLink": "sigmoid",
    "MultinomialLogit": "sklearn_softmax",
}


def from_sklearn(model) -> TreeEnsemble:
    """Convert a fitted scikit-learn HistGradientBoosting model to a TreeEnsemble, exactly.

    ``TreeEnsemble.predict_raw(X)`` equals the model's ``_raw_predict(X)`` (what ``predict``
    uses) bit for bit, and ``TreeEnsemble.predict(X)`` equals ``predict(X)`` for regressors
    and ``predict_proba(X)[:, 1]`` (binary) or ``predict_proba(X)`` (multiclass) for
    classifiers, to the last ulp.

    Parameters
    ----------
    model : HistGradientBoostingRegressor or HistGradientBoostingClassifier
        Fitted; early-stopped models keep only their ``n_iter_`` iterations, all of which
        are converted.

    Returns
    -------
    TreeEnsemble
        ``decision="<="``, ``precision="float64"``, ``sum_dtype="float64"``,
        ``base_score`` = ``_baseline_prediction``; one output per class for multiclass
        classifiers. Transforms: ``"identity"`` (squared_error, absolute_error, quantile),
        ``"sklearn_exp"`` (poisson, gamma), ``"sigmoid"`` (binary log_loss), ``"sklearn_softmax"``
        (multiclass log_loss). ``source`` records the library version, the loss and, for
        classifiers, ``classes`` and ``predict``: ``"proba>0.5"`` (binary: ``classes[1]``
        where ``predict`` is above 0.5) or ``"argmax"`` (multiclass), which is how the
        classifier's ``predict`` picks its labels.

    Raises
    ------
    TypeError
        If ``model`` is not a HistGradientBoosting estimator.
    ValueError
        If categorical features have categories other than non-negative integers below
        2**24 (module docstring), or the loss's link is unknown.
    sklearn.exceptions.NotFittedError
        If ``model`` is not fitted.

    Notes
    -----
    Categorical inputs that are not exactly a training category are "unknown" for
    scikit-learn. The ensemble reads categorical inputs through ``trunc``, so a fractional
    input such as ``3.7`` is read as category 3, where scikit-learn treats it as unknown
    (missing direction). Integer-valued inputs, NaN, negative values and values beyond the
    training categories route exactly as in scikit-learn.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import HistGradientBoostingRegressor
    >>> from skltr.convert._sklearn import from_sklearn
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X[:, 0] + X[:, 1] ** 2
    >>> reg = HistGradientBoostingRegressor(max_iter=10).fit(X, y)
    >>> ens = from_sklearn(reg)
    >>> ens.n_trees
    10
    >>> bool(np.array_equal(ens.predict(X), reg.predict(X)))
    True
    """
    from sklearn.ensemble import (  # noqa: PLC0415
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
    )
    from sklearn.utils.validation import check_is_fitted  # noqa: PLC0415

    if not isinstance(model, HistGradientBoostingRegressor | HistGradientBoostingClassifier):
        raise TypeError(
            f"from_sklearn converts HistGradientBoostingRegressor and "
            f"HistGradientBoostingClassifier models; got {type(model).__module__}."
            f"{type(model).__name__}."
        )
    check_is_fitted(model)
    import sklearn  # noqa: PLC0415

    n_features = int(model.n_features_in_)
    k = int(model.n_trees_per_iteration_)
    link = type(model._loss.link).__name__
    if link not in _LINKS:
        raise ValueError(f"loss {model.loss!r} has link {link}, whose inverse a TreeEnsemble "
                         f"does not know.")
    transform = _LINKS[link]
    if transform == "sklearn_softmax" and k < 2:
        raise ValueError("a multinomial model with one tree per iteration cannot be converted.")

    original_column, categories = _preprocessing(model, n_features)
    known_bitsets, f_idx_map = model._bin_mapper.make_known_categories_bitsets()

    parts = []
    bitsets: list[np.ndarray] = []
    n_bitset_words = 0
    for iteration in model._predictors:
        if len(iteration) != k:
            raise ValueError(f"an iteration holds {len(iteration)} trees; expected {k}.")
        for predictor in iteration:
            part, words = _convert_tree(predictor, original_column, categories, known_bitsets,
                                        f_idx_map, n_bitset_words)
            parts.append(part)
            bitsets.extend(words)
            n_bitset_words += sum(w.size for w in words)
    sizes = np.array([p["feature"].size for p in parts], dtype=np.int64)
    arrays = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    n_trees = len(parts)

    source = {
        "library": "sklearn",
        "version": sklearn.__version__,
        "estimator": type(model).__name__,
        "loss": str(model.loss),
        "n_iter": int(model.n_iter_),
    }
    classes = getattr(model, "classes_", None)
    if classes is not None:
        # predict() returns classes[argmax(predict_proba)]: for one output that is
        # classes[1] where the probability is > 0.5 (exactly: p > 1 - p), else classes[0].
        source["classes"] = np.asarray(classes).tolist()
        source["predict"] = "proba>0.5" if k == 1 else "argmax"
    feature_names = getattr(model, "feature_names_in_", None)
    return TreeEnsemble(
        tree_ptr=np.concatenate([[0], np.cumsum(sizes)]),
        **arrays,
        n_features=n_features,
        cat_bitsets=(np.concatenate(bitsets) if bitsets else np.zeros(0)).astype(np.uint32),
        tree_output=(np.arange(n_trees) % k).astype(np.int32),
        tree_weight=np.ones(n_trees),
        base_score=np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1),
        n_outputs=k,
        decision="<=",
        precision="float64",
        sum_dtype="float64",
        average_output=False,
        output_transform=transform,
        transform_params={"scale": 1.0} if transform == "sigmoid" else {},
        feature_names=None if feature_names is None else list(feature_names),
        source=source,
    )


# --------------------------------------------------------------------------- preprocessing
def _preprocessing(model, n_features: int):
    """(original column of each preprocessed column, category values per preprocessed column).

    Without a preprocessor the columns are the original ones and a category's value is its
    code. With one, ``categories[j]`` maps encoder code -> original category value.
    """
    pre = getattr(model, "_preprocessor", None)
    if pre is None:
        return np.arange(n_features), {}
    original = np.full(n_features, -1, dtype=np.int64)
    categories: dict[int, np.ndarray] = {}
    for name, transformer, columns in pre.transformers_:
        if name not in pre.output_indices_:
            continue
        out = pre.output_indices_[name]
        if out.stop == out.start:  # e.g. remainder="drop"
            continue
        inputs = _column_indices(columns, n_features)
        if out.stop - out.start != inputs.size:
            raise ValueError(f"the preprocessor's {name!r} step maps {inputs.size} columns to "
                             f"{out.stop - out.start}; cannot follow it.")
        original[out] = inputs
        if name == "encoder":
            for i, cats in enumerate(transformer.categories_):
                categories[out.start + i] = _category_values(cats, inputs[i], model)
    if np.any(original < 0) or np.unique(original).size != n_features:
        raise ValueError("the model's preprocessor does not map its output columns one to one "
                         "onto the input columns; cannot convert it.")
    return original, categories


def _column_indices(columns, n_features: int) -> np.ndarray:
    if isinstance(columns, slice):
        return np.arange(n_features)[columns]
    cols = np.asarray(columns)
    if cols.dtype == bool:
        return np.flatnonzero(cols)
    if cols.dtype.kind in "iu":
        return np.arange(n_features)[cols]
    raise ValueError("the model's preprocessor selects columns by name; cannot follow it.")


def _category_values(cats, column: int, model) -> np.ndarray:
    """Training categories of one column as float64, NaN removed; checked to fit a bitset."""
    cats = np.asarray(cats)
    names = getattr(model, "feature_names_in_", None)
    what = f"categorical column {names[column]!r}" if names is not None else (
        f"categorical column {column}")
    try:
        values = cats.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{what} has non-numeric categories (e.g. {cats[:3].tolist()}). A TreeEnsemble "
            f"reads categories as numbers: encode the column as integer codes >= 0 before "
            f"fitting (and predict with the same codes)."
        ) from None
    values = values[~np.isnan(values)]
    bad = (values < 0) | (values >= MAX_CATEGORY) | (values != np.trunc(values))
    if np.any(bad):
        raise ValueError(
            f"{what} has categories that are not integers in [0, 2**24) (e.g. "
            f"{values[bad][:3].tolist()}); a TreeEnsemble category set cannot hold them. "
            f"Re-code the column as integers 0, 1, 2, ... before fitting."
        )
    return values


# --------------------------------------------------------------------------- trees
def _bits(words: np.ndarray) -> np.ndarray:
    """Positions of the set bits of a uint32 bitset."""
    bits = np.unpackbits(np.ascontiguousarray(words, dtype="<u4").view(np.uint8),
                         bitorder="little")
    return np.flatnonzero(bits)


def _bitset(values: np.ndarray) -> np.ndarray:
    """uint32 words with bit ``v`` set for every value (empty array for no value)."""
    if values.size == 0:
        return np.zeros(0, dtype=np.uint32)
    v = values.astype(np.int64)
    words = np.zeros(int(v.max()) // 32 + 1, dtype=np.uint32)
    np.bitwise_or.at(words, v >> 5, (np.uint32(1) << (v & 31).astype(np.uint32)))
    return words


def _convert_tree(predictor, original_column, categories, known_bitsets, f_idx_map,
                  word_base: int):
    nodes = predictor.nodes
    n = nodes.shape[0]
    leaf = nodes["is_leaf"].astype(bool)
    internal = ~leaf
    feature = np.where(leaf, -1, original_column[nodes["feature_idx"]]).astype(np.int32)
    left = np.where(leaf, -1, nodes["left"].astype(np.int64)).astype(np.int32)
    right = np.where(leaf, -1, nodes["right"].astype(np.int64)).astype(np.int32)
    value = np.where(leaf, nodes["value"], 0.0)
    threshold = np.where(leaf, 0.0, nodes["num_threshold"]).astype(np.float64)
    go_left = nodes["missing_go_to_left"].astype(bool)
    flags = np.where(internal, _NAN_TYPE, np.uint8(0)).astype(np.uint8)
    flags[internal & go_left] |= np.uint8(NodeFlags.DEFAULT_LEFT)
    cat_offset = np.zeros(n, dtype=np.int64)
    cat_nwords = np.zeros(n, dtype=np.int32)
    words: list[np.ndarray] = []

    categorical = internal & nodes["is_categorical"].astype(bool)
    # Split-on-NaN nodes (threshold +inf): an empty category set read with CAT_SET_RIGHT.
    nan_split = internal & ~categorical & (threshold == np.inf)
    flags[nan_split] |= np.uint8(NodeFlags.CATEGORICAL | NodeFlags.CAT_SET_RIGHT)
    threshold[nan_split] = 0.0
    bad = internal & ~categorical & ~np.isfinite(threshold)
    if np.any(bad):
        raise ValueError(f"a node has threshold {threshold[bad][0]}; only finite and +inf "
                         f"(split on NaN) thresholds are known.")

    raw_bitsets = predictor.raw_left_cat_bitsets
    offset = word_base
    for node in np.flatnonzero(categorical):
        j = int(nodes["feature_idx"][node])
        left_codes = _bits(raw_bitsets[nodes["bitset_idx"][node]])
        known_codes = _bits(known_bitsets[f_idx_map[j]])
        right_codes = np.setdiff1d(known_codes, left_codes)
        left_codes = np.intersect1d(left_codes, known_codes)
        if j in categories:
            cats = categories[j]
            if known_codes.size and known_codes.max() >= cats.size:
                raise ValueError("the model's known categories exceed its encoder's "
                                 "categories; cannot convert it.")
            left_values, right_values = cats[left_codes], cats[right_codes]
        else:
            left_values, right_values = left_codes, right_codes
        # Unknown, negative and NaN values follow the missing direction: store the set of
        # the *other* side, so that "not in the set" is that direction.
        node_flags = NodeFlags.CATEGORICAL | NodeFlags.CAT_INVALID_DEFAULT
        if go_left[node]:
            node_flags |= NodeFlags.CAT_SET_RIGHT | NodeFlags.DEFAULT_LEFT
            stored = _bitset(right_values)
        else:
            stored = _bitset(left_values)
        flags[node] = np.uint8(node_flags)
        threshold[node] = 0.0
        cat_offset[node] = offset
        cat_nwords[node] = stored.size
        offset += stored.size
        words.append(stored)
    part = {"feature": feature, "threshold": threshold, "left": left, "right": right,
            "value": value, "flags": flags, "cat_offset": cat_offset, "cat_nwords": cat_nwords}
    return part, words
