"""LightGBM model -> :class:`~skltr.trees.TreeEnsemble`, reproducing LightGBM's predictions bit
for bit.

The converter parses LightGBM's text model format (``Booster.model_to_string()``, or a file
written by ``save_model``), so converting a string or a file needs no LightGBM installation.
LightGBM itself is imported only when a LightGBM object is passed.

What makes the result exact (``/work/shared/docs/FORMATS.md``)::

    LightGBM text model (per tree)              TreeEnsemble (per node)
    internal node i (0 .. num_leaves-2)      -> local node i            (root = 0)
    leaf j (child ~j)                        -> local node num_leaves-1+j
    split_feature                            -> feature
    threshold (double)                       -> threshold               (decision "<=")
    decision_type bits 0-3                   -> flags bits 0-3
    cat_boundaries / cat_threshold           -> cat_bitsets (uint32 words), CAT_TRUNC_FIRST
    leaf_value (shrinkage included)          -> value
    internal_count, leaf_count               -> cover (TreeSHAP's data counts)
    num_tree_per_iteration K                 -> tree j adds to output j % K
    average_output                           -> average_output          (random forest)
    objective=                               -> output_transform

Inputs are compared in double, trees are summed in float64 in tree order from 0.

Two corrections are folded into the node arrays because LightGBM's C API changes the input
before any tree sees it:

* Dense rows pass through ``RowPairFunctionFromDenseMatric``, which keeps a value only when
  ``|x| > kZeroThreshold`` (or x is NaN); dropped values read as ``+0.0``. ``kZeroThreshold``
  is ``1e-35f``, a float32 literal: ``1.0000000180025095e-35`` as a double. A numeric
  threshold ``t`` in ``[-kZeroThreshold, kZeroThreshold)`` therefore routes the whole band
  ``|x| <= kZeroThreshold`` like 0: it is replaced by an equivalent threshold outside the band
  (``kZeroThreshold`` when 0 goes left, the double below ``-kZeroThreshold`` otherwise).
* Categorical nodes: LightGBM sends NaN right whatever the default direction, casts to
  ``int`` before the negativity test (``-0.5`` is category 0) and sends negative and
  out-of-``int`` values right (the x86 conversion of a double >= 2**31 gives ``INT_MIN``).
  The converter clears ``DEFAULT_LEFT`` and sets ``CAT_TRUNC_FIRST`` on these nodes.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from ..trees._ensemble import NodeFlags, TreeEnsemble
from ..utils._model_io import model_file_errors
from ._checks import as_int

__all__ = ["from_lightgbm"]

#: Ends the messages about a malformed field.
_CORRUPT = "the model text is corrupt or was not written by LightGBM"
#: Feature indices are int32 (``skltr._dtypes.NODE_INDEX_DTYPE``).
_MAX_FEATURE_IDX = 2**31 - 2

#: LightGBM's ``kZeroThreshold`` (``const double kZeroThreshold = 1e-35f;``).
K_ZERO_THRESHOLD = float(np.float32(1e-35))
_BELOW_ZERO_BAND = float(np.nextafter(-K_ZERO_THRESHOLD, -np.inf))

# objective name (first token of the ``objective=`` line) -> output transform. LightGBM's
# ConvertOutput: identity by default; sigmoid(s * x) for binary (and per class for
# multiclassova), softmax for multiclass, exp for the log-link regressions.
_IDENTITY = {"regression", "regression_l2", "l2", "mean_squared_error", "mse", "l2_root",
             "root_mean_squared_error", "rmse", "regression_l1", "l1", "mean_absolute_error",
             "mae", "huber", "fair", "quantile", "mape", "mean_absolute_percentage_error",
             "lambdarank", "rank_xendcg", "xendcg", "xe_ndcg", "xe_ndcg_mart", "xendcg_mart",
             "custom", "none", "null", "na"}
# objectives whose ConvertOutput is sign(x) * x**2 when the ``sqrt`` flag is on
_SQRT_CAPABLE = {"regression", "regression_l1", "huber", "fair", "quantile", "mape"}
_EXP = {"poisson", "gamma", "tweedie"}
_SIGMOID = {"binary", "cross_entropy", "xentropy"}
_SOFTMAX = {"multiclass", "softmax"}
_OVA = {"multiclassova", "multiclass_ova", "ova", "ovr"}


# --------------------------------------------------------------------------- public API
def from_lightgbm(model, *, num_iteration=None) -> TreeEnsemble:
    """Convert a LightGBM tree model to a :class:`~skltr.trees.TreeEnsemble`, exactly.

    ``TreeEnsemble.predict_raw`` then equals LightGBM's ``predict(X, raw_score=True)`` bit for
    bit (float64), and ``TreeEnsemble.predict`` equals ``predict(X)`` to the last ulp.

    Parameters
    ----------
    model : lightgbm.Booster, LGBMModel, str, os.PathLike or bytes
        A Booster; a fitted scikit-learn wrapper (``LGBMRanker``, ``LGBMRegressor``,
        ``LGBMClassifier``); the text model itself (``Booster.model_to_string()``, as str or
        bytes); or the path of a text model file (``Booster.save_model``). Strings and files
        are parsed without LightGBM.
    num_iteration : int, optional
        Number of boosting iterations to keep, as LightGBM's ``predict(num_iteration=)``:
        ``<= 0`` keeps all, larger than the model keeps all. By default a Booster or a
        scikit-learn wrapper keeps ``best_iteration`` when it is set (early stopping), which
        is what their ``predict`` uses; a model string or file keeps all iterations (a
        reloaded model has no best iteration).

    Returns
    -------
    TreeEnsemble
        ``decision="<="``, ``precision="float64"``, ``sum_dtype="float64"``, base score 0
        (``boost_from_average`` is folded into the first tree by LightGBM); one output per
        class when ``num_tree_per_iteration > 1``. ``source`` records the library, the model
        format version, the objective line and the iterations kept; ``pandas_categorical``
        holds LightGBM's training categories of a model trained on a DataFrame.

    Raises
    ------
    ValueError
        For linear trees (``linear_tree=True``), objectives whose output transform a
        TreeEnsemble cannot express (``regression`` with ``reg_sqrt=True``, whose ``predict``
        returns ``sign(x) * x**2``; ``cross_entropy_lambda``; unknown objectives), and
        malformed model text.

    Notes
    -----
    * Objectives: regression / L1 / huber / fair / quantile / mape / lambdarank /
      rank_xendcg / custom objectives -> ``"identity"``; ``binary sigmoid:s`` and
      ``cross_entropy`` -> ``"sigmoid"`` with ``transform_params={"scale": s}``;
      ``multiclass`` -> ``"softmax"``; ``multiclassova`` -> ``"sigmoid"`` applied to every
      class independently (LightGBM's ``predict`` does not normalise the classes);
      poisson / gamma / tweedie -> ``"exp"``.
    * Random-forest models (``boosting="rf"``) set ``average_output``: ``predict`` equals
      LightGBM's ``predict`` (the mean of the trees, then the transform), and ``predict_raw``
      is the mean as well. LightGBM's own ``predict(raw_score=True)`` returns the *sum* of the
      trees in this mode; ``predict_raw`` equals that sum divided by the number of iterations,
      bit for bit (the division LightGBM does in ``predict``).
    * Inputs are read as LightGBM's ``predict`` reads them. Arrays: float32 and float64 as
      they are, every other dtype through float32 (``input_rule="float32_unless_float"``).
      DataFrames (``frame_rule="lightgbm"``): the category columns, in order, are re-coded to
      the training categories (``pandas_categorical``; a category not among them, and NaN,
      read as missing), then the frame is read as one NumPy array of
      ``np.result_type(*dtypes, np.float32)`` -- an int64 column reads as float64, where an
      int64 *array* reads as float32. On an array, a categorical feature's value is its code.
    * ``feature_names`` are LightGBM's (spaces replaced by ``_``); a DataFrame's column names
      must match them, except for a model fitted on an array (names ``Column_0``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> import lightgbm as lgb
    >>> from skltr.convert._lightgbm import from_lightgbm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> clf = lgb.LGBMClassifier(n_estimators=5, num_leaves=7, verbose=-1).fit(X, y)
    >>> ens = from_lightgbm(clf)
    >>> ens.output_transform, ens.n_trees
    ('sigmoid', 5)
    >>> bool(np.array_equal(ens.predict_raw(X), clf.predict(X, raw_score=True)))
    True
    >>> bool(np.array_equal(ens.predict(X), clf.predict_proba(X)[:, 1]))
    True

    A saved model converts without LightGBM::

        ens = from_lightgbm("model.txt")
    """
    if isinstance(model, (str, os.PathLike)) and not (
            isinstance(model, str) and _looks_like_model_text(model)):
        # A file: every error names it (ModelFileError).
        with model_file_errors(model):
            return _convert(model, num_iteration)
    return _convert(model, num_iteration)


def _convert(model, num_iteration) -> TreeEnsemble:
    text, default_iteration, extra_source = _read_model(model)
    if num_iteration is None:
        num_iteration = default_iteration
    parsed = _parse_model_text(text)
    return _build_ensemble(parsed, num_iteration=num_iteration, extra_source=extra_source)


def _decode(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start}); it is "
                         f"corrupt or not a LightGBM text model.") from None


# --------------------------------------------------------------------------- input reading
def _read_model(model):
    """(model text, default num_iteration, extra provenance) of whatever ``model`` is."""
    if isinstance(model, bytes | bytearray):
        return _decode(bytes(model), "the model bytes"), None, {}
    if isinstance(model, str) and _looks_like_model_text(model):
        return model, None, {}
    if isinstance(model, str | os.PathLike):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise ValueError(
                f"{path!r} is neither a LightGBM text model nor the path of an existing file."
            )
        with open(path, "rb") as fh:
            return _decode(fh.read(), repr(path)), None, {"path": path}
    module = type(model).__module__.split(".")[0]
    if module == "lightgbm":
        import lightgbm  # noqa: PLC0415 - only for LightGBM objects

        if isinstance(model, lightgbm.LGBMModel):
            booster = model.booster_  # raises LGBMNotFittedError on an unfitted estimator
        elif isinstance(model, lightgbm.Booster):
            booster = model
        else:
            raise TypeError(
                f"cannot convert a lightgbm {type(model).__name__}: expected a Booster or a "
                f"fitted LGBMRanker / LGBMRegressor / LGBMClassifier."
            )
        best = getattr(booster, "best_iteration", -1)
        text = booster.model_to_string(num_iteration=-1)
        extra = {"lightgbm_version": lightgbm.__version__}
        classes = getattr(model, "classes_", None) if isinstance(
            model, lightgbm.LGBMModel) else None
        if classes is not None:
            extra["classes"] = np.asarray(classes).tolist()
        return text, (best if best and best > 0 else None), extra
    raise TypeError(
        f"from_lightgbm expects a lightgbm Booster or scikit-learn wrapper, a LightGBM text "
        f"model (str or bytes) or the path of one; got {type(model).__module__}."
        f"{type(model).__name__}."
    )


def _looks_like_model_text(s: str) -> bool:
    head = s.lstrip()[:200]
    return head.startswith("tree\n") or head.startswith("tree\r\n") or (
        "\n" in s and "version=" in head)


# --------------------------------------------------------------------------- text parsing
def _parse_model_text(text: str) -> dict:
    """Split a LightGBM text model into its header, its trees and the pandas categories."""
    lines = text.lstrip().splitlines()
    if not lines or lines[0].strip() != "tree":
        raise ValueError("not a LightGBM text model: the first line must be 'tree' (as written "
                         "by Booster.model_to_string() or save_model).")
    header: dict = {}
    flags: set = set()
    trees: list[dict] = []
    current = None
    pandas_categorical = None
    ended = False
    for lineno, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        if not line:
            continue
        if line == "end of trees":
            ended = True
            current = None
            continue
        if ended:
            if line.startswith("pandas_categorical:"):
                pandas_categorical = _parse_pandas_categorical(line, lineno)
            continue
        key, sep, value = line.partition("=")
        if key == "Tree":
            try:
                index = int(value)
            except ValueError:
                raise ValueError(f"line {lineno}: bad tree header {line!r}.") from None
            if index != len(trees):
                raise ValueError(f"line {lineno}: expected Tree={len(trees)}, found {line!r}; the "
                                 f"model text is truncated or corrupt.")
            current = {}
            trees.append(current)
        elif current is not None:
            current[key] = value
        elif sep:
            header[key] = value
        else:
            flags.add(key)
    if not ended:
        raise ValueError("the LightGBM model text has no 'end of trees' line; it is truncated.")
    return {"header": header, "flags": flags, "trees": trees,
            "pandas_categorical": pandas_categorical}


def _parse_pandas_categorical(line: str, lineno: int):
    value = line.partition(":")[2].strip()
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        raise ValueError(f"line {lineno}: pandas_categorical is not valid JSON.") from None


def _checked_pandas_categorical(value):
    """LightGBM's ``pandas_categorical`` (None: the model was not trained on a DataFrame)."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(c, list) for c in value):
        raise ValueError("pandas_categorical in the LightGBM model text is not a list of lists; "
                         "the text is corrupt.")
    return value


def _int(header: dict, key: str, default=None, *, lo=None, hi=None, where="header") -> int:
    """Integer entry ``key=`` of the header (or of a tree: ``where="tree 3"``) in
    ``[lo, hi]``."""
    if key not in header:
        if default is None:
            raise ValueError(f"the LightGBM model {where} lacks '{key}='; {_CORRUPT}.")
        return default
    return as_int(header[key].strip(), f"{where} {key}=", lo=lo, hi=hi, corrupt=_CORRUPT)


def _array(tree: dict, key: str, dtype, t: int, count: int | None = None) -> np.ndarray:
    text = tree.get(key)
    if text is None:
        if count == 0:
            return np.zeros(0, dtype=dtype)
        raise ValueError(f"tree {t} lacks '{key}='; the model text is corrupt.")
    parts = text.split()
    try:
        if dtype is np.float64:
            # Python's float() rounds correctly; LightGBM writes 17 significant digits, so
            # every double comes back bit for bit.
            arr = np.array([float(p) for p in parts], dtype=np.float64)
        else:
            arr = np.array([int(p) for p in parts], dtype=dtype)
    except ValueError:
        raise ValueError(f"tree {t}: '{key}=' holds a value that is not a number.") from None
    if count is not None and arr.size != count:
        raise ValueError(f"tree {t}: '{key}=' has {arr.size} entries, expected {count}; "
                         f"{_CORRUPT}.")
    return arr


# --------------------------------------------------------------------------- conversion
def _output_transform(objective: str | None, n_outputs: int):
    """(output_transform, transform_params) of a LightGBM ``objective=`` line."""
    if objective is None:  # custom objective: LightGBM's predict returns the raw score
        return "identity", {}
    tokens = objective.split()
    name = tokens[0]
    params = dict(tok.split(":", 1) for tok in tokens[1:] if ":" in tok)
    bare = {tok for tok in tokens[1:] if ":" not in tok}
    if "sqrt" in bare and name in _SQRT_CAPABLE:
        raise ValueError(
            f"objective {objective!r}: with reg_sqrt=True LightGBM's predict returns "
            f"sign(x) * x**2 of the raw score, a transform a TreeEnsemble cannot express. "
            f"The raw scores would convert exactly, but predict would be wrong; retrain "
            f"without reg_sqrt or convert a model whose outputs you transform yourself."
        )
    if name in _IDENTITY:
        return "identity", {}
    if name in _EXP:
        return "exp", {}
    if name in _SIGMOID or name in _OVA:
        scale = 1.0
        if name not in ("cross_entropy", "xentropy") and "sigmoid" in params:
            try:
                scale = float(params["sigmoid"])
            except ValueError:
                scale = float("nan")
            if not math.isfinite(scale):
                raise ValueError(f"objective {objective!r}: the sigmoid scale "
                                 f"{params['sigmoid']!r} is not a finite number; {_CORRUPT}.")
        return "sigmoid", {"scale": scale}
    if name in _SOFTMAX:
        if n_outputs < 2:
            raise ValueError(f"objective {objective!r} with {n_outputs} tree(s) per "
                             f"iteration: softmax needs >= 2 classes.")
        return "softmax", {}
    if name in ("cross_entropy_lambda", "xentlambda"):
        raise ValueError(
            f"objective {objective!r}: LightGBM's predict returns log(1 + exp(x)), a "
            f"transform a TreeEnsemble cannot express."
        )
    raise ValueError(f"unknown LightGBM objective {objective!r}; cannot tell its output "
                     f"transform.")


def _build_ensemble(parsed: dict, *, num_iteration, extra_source: dict) -> TreeEnsemble:
    header, trees = parsed["header"], parsed["trees"]
    n_features = _int(header, "max_feature_idx", lo=0, hi=_MAX_FEATURE_IDX) + 1
    k = _int(header, "num_tree_per_iteration", _int(header, "num_class", 1, lo=1), lo=1)
    if "tree_sizes" in header:
        # LightGBM's loader splits the text by these byte counts; a count that disagrees
        # with the trees found means lost or extra trees.
        sizes = header["tree_sizes"].split()
        if len(sizes) != len(trees):
            raise ValueError(f"the header's tree_sizes= lists {len(sizes)} trees but the text "
                             f"holds {len(trees)}; it is truncated or corrupt.")
    if len(trees) % k:
        raise ValueError(f"the model has {len(trees)} trees, not a multiple of "
                         f"num_tree_per_iteration={k}; the text is truncated or corrupt.")
    n_iter_total = len(trees) // k
    n_iter = n_iter_total
    if num_iteration is not None and int(num_iteration) > 0:
        n_iter = min(int(num_iteration), n_iter_total)
    if n_iter == 0:
        raise ValueError("the LightGBM model has no trees.")
    trees = trees[: n_iter * k]
    objective = header.get("objective")
    transform, transform_params = _output_transform(objective, k)
    average_output = "average_output" in parsed["flags"]

    parts = [_convert_tree(tree, t, n_features) for t, tree in enumerate(trees)]
    sizes = np.array([p["feature"].size for p in parts], dtype=np.int64)
    tree_ptr = np.concatenate([[0], np.cumsum(sizes)])
    bitset_sizes = np.array([p["bitsets"].size for p in parts], dtype=np.int64)
    bitset_base = np.concatenate([[0], np.cumsum(bitset_sizes)])[:-1]
    arrays = {name: np.concatenate([p[name] for p in parts])
              for name in ("feature", "threshold", "left", "right", "value", "flags",
                           "cat_nwords")}
    arrays["cat_offset"] = np.concatenate(
        [np.where(p["cat_nwords"] > 0, p["cat_offset"] + base, 0)
         for p, base in zip(parts, bitset_base)])
    cat_bitsets = np.concatenate([p["bitsets"] for p in parts]).astype(np.uint32)
    # TreeSHAP covers: LightGBM's own TreeSHAP weighs branches by data counts
    cover = (np.concatenate([p["cover"] for p in parts])
             if all(p["cover"] is not None for p in parts) else None)

    names = header.get("feature_names", "").split()
    feature_names = names if len(names) == n_features else None
    source = {
        "library": "lightgbm",
        "version": header.get("version"),
        "objective": objective,
        "num_iteration": n_iter,
        "num_iterations_in_model": n_iter_total,
        "num_tree_per_iteration": k,
        **extra_source,
    }
    return TreeEnsemble(
        tree_ptr=tree_ptr,
        **arrays,
        n_features=n_features,
        cat_bitsets=cat_bitsets,
        tree_output=(np.arange(len(trees)) % k).astype(np.int32),
        tree_weight=np.ones(len(trees)),
        base_score=np.zeros(k),
        n_outputs=k,
        decision="<=",
        precision="float64",
        input_rule="float32_unless_float",  # LightGBM's predict: np.float32 unless float
        frame_rule="lightgbm",  # _data_from_pandas: category re-coding, one target dtype
        pandas_categorical=_checked_pandas_categorical(parsed["pandas_categorical"]),
        sum_dtype="float64",
        average_output=average_output,
        output_transform=transform,
        transform_params=transform_params,
        feature_names=feature_names,
        source=source,
        cover=cover,
    ).check_score_range()


def _counts(tree: dict, t: int, n_internal: int, n_leaves: int):
    """``internal_count`` then ``leaf_count`` as one cover array (None when absent)."""
    if "leaf_count" not in tree or (n_internal and "internal_count" not in tree):
        return None
    leaf = _array(tree, "leaf_count", np.float64, t, n_leaves)
    internal = _array(tree, "internal_count", np.float64, t, n_internal) if n_internal else (
        np.zeros(0))
    cover = np.concatenate([internal, leaf])
    return cover if np.all(np.isfinite(cover) & (cover >= 0)) else None


def _convert_tree(tree: dict, t: int, n_features: int) -> dict:
    """Node arrays of one tree, local indices: internal nodes first, then the leaves."""
    if tree.get("is_linear", "0").strip() not in ("", "0"):
        raise ValueError(
            f"tree {t} is a linear tree (linear_tree=True): its leaves hold linear models, "
            f"which a TreeEnsemble cannot represent. Retrain without linear_tree to convert."
        )
    n_leaves = _int(tree, "num_leaves", lo=1, where=f"tree {t}")
    n_internal = n_leaves - 1
    n_nodes = n_internal + n_leaves
    # Parsed and counted before anything of n_nodes entries is allocated: the text bounds it.
    leaf_value = _array(tree, "leaf_value", np.float64, t, n_leaves)
    if not np.isfinite(leaf_value).all():
        j = int(np.flatnonzero(~np.isfinite(leaf_value))[0])
        raise ValueError(f"tree {t}: leaf {j} has the value {leaf_value[j]}; leaf values must "
                         f"be finite; {_CORRUPT}.")
    if "shrinkage" in tree:  # informational (the leaves include it), but a number
        try:
            shrinkage = float(tree["shrinkage"])
        except ValueError:
            shrinkage = math.nan
        if not math.isfinite(shrinkage):
            raise ValueError(f"tree {t}: shrinkage={tree['shrinkage']!r:.40} is not a finite "
                             f"number; {_CORRUPT}.")
    feature = np.full(n_nodes, -1, dtype=np.int32)
    threshold = np.zeros(n_nodes, dtype=np.float64)
    left = np.full(n_nodes, -1, dtype=np.int32)
    right = np.full(n_nodes, -1, dtype=np.int32)
    value = np.zeros(n_nodes, dtype=np.float64)
    flags = np.zeros(n_nodes, dtype=np.uint8)
    cat_offset = np.zeros(n_nodes, dtype=np.int64)
    cat_nwords = np.zeros(n_nodes, dtype=np.int32)
    value[n_internal:] = leaf_value
    bitsets = np.zeros(0, dtype=np.uint32)
    if n_internal:
        split_feature = _array(tree, "split_feature", np.int64, t, n_internal)
        thr = _array(tree, "threshold", np.float64, t, n_internal)
        decision_type = _array(tree, "decision_type", np.int64, t, n_internal)
        children = [_array(tree, name, np.int64, t, n_internal)
                    for name in ("left_child", "right_child")]
        if np.any((split_feature < 0) | (split_feature >= n_features)):
            node = int(np.flatnonzero((split_feature < 0) | (split_feature >= n_features))[0])
            raise ValueError(f"tree {t}, node {node} splits on feature {split_feature[node]}, "
                             f"outside [0, {n_features}) (max_feature_idx); {_CORRUPT}.")
        for name, child, out in zip(("left_child", "right_child"), children, (left, right)):
            # >= 0: an internal node; < 0: leaf ~child
            bad = (child >= n_internal) | (~child >= n_leaves)
            if np.any(bad):
                node = int(np.flatnonzero(bad)[0])
                raise ValueError(f"tree {t}, node {node}: {name} {child[node]} is outside the "
                                 f"tree's {n_internal} internal nodes and {n_leaves} leaves; "
                                 f"{_CORRUPT}.")
            out[:n_internal] = np.where(child >= 0, child, n_internal + ~child)
        feature[:n_internal] = split_feature
        # bits 0-3 only, and missing type (bits 2-3) 0, 1 or 2: 0..11 are the valid values
        bad = (decision_type < 0) | (decision_type >= 12)
        if bad.any():
            node = int(np.flatnonzero(bad)[0])
            raise ValueError(f"tree {t}, node {node}: decision_type {decision_type[node]} is "
                             f"not a LightGBM decision type (bits 0-3, missing type 0-2); "
                             f"{_CORRUPT}.")
        dt = decision_type.astype(np.uint8)
        categorical = (dt & NodeFlags.CATEGORICAL) != 0
        # numeric nodes: LightGBM's bits as they are, thresholds folded (module docstring)
        num = ~categorical
        node_flags = dt.copy()
        node_thr = thr.copy()
        node_thr[num], node_flags[num] = _numeric_nodes(thr[num], dt[num], t)
        # categorical nodes: NaN goes right; int cast before the negativity test
        if np.any(categorical):
            num_cat = _int(tree, "num_cat", 0, lo=1, where=f"tree {t}")
            boundaries = _array(tree, "cat_boundaries", np.int64, t, num_cat + 1)
            bitsets = _array(tree, "cat_threshold", np.int64, t)
            if np.any(bitsets < 0) or np.any(bitsets > 0xFFFFFFFF):
                raise ValueError(f"tree {t}: cat_threshold holds values outside uint32.")
            bitsets = bitsets.astype(np.uint32)
            # A categorical threshold is the index of the node's category set.
            cat_thr = thr[categorical]
            if np.any((cat_thr < 0) | (cat_thr >= num_cat) | (cat_thr != np.trunc(cat_thr))):
                raise ValueError(f"tree {t}: a categorical threshold is not the index of one "
                                 f"of the tree's {num_cat} category sets; {_CORRUPT}.")
            cat_idx = cat_thr.astype(np.int64)
            if np.any(np.diff(boundaries) < 0) \
                    or boundaries[0] != 0 or boundaries[-1] != bitsets.size:
                raise ValueError(f"tree {t}: categorical thresholds do not match "
                                 f"cat_boundaries / cat_threshold; the text is corrupt.")
            idx = np.flatnonzero(categorical)
            cat_offset[idx] = boundaries[cat_idx]
            cat_nwords[idx] = boundaries[cat_idx + 1] - boundaries[cat_idx]
            node_thr[categorical] = 0.0
            node_flags[categorical] = (
                (dt[categorical] & ~np.uint8(NodeFlags.DEFAULT_LEFT))
                | np.uint8(NodeFlags.CAT_TRUNC_FIRST))
        threshold[:n_internal] = node_thr
        flags[:n_internal] = node_flags
    return {"feature": feature, "threshold": threshold, "left": left, "right": right,
            "value": value, "flags": flags, "cat_offset": cat_offset, "cat_nwords": cat_nwords,
            "bitsets": bitsets, "cover": _counts(tree, t, n_internal, n_leaves)}


def _numeric_nodes(thr: np.ndarray, dt: np.ndarray, t: int):
    """Thresholds and flags of numeric nodes with LightGBM's input zeroing folded in.

    LightGBM reads every ``|x| <= kZeroThreshold`` as +0.0 before routing. A threshold in
    ``[-kZeroThreshold, kZeroThreshold)`` is moved out of that band to the equivalent value:
    ``kZeroThreshold`` when the band goes left, the double below ``-kZeroThreshold`` when it
    goes right. For missing type Zero the band follows the default direction instead of
    ``0 <= t``; the same two values route it there. Thresholds of +inf (every non-NaN value
    goes left) become an empty category set read as "not in the set goes left", which keeps
    the node exact without an infinite threshold (``TreeEnsemble`` requires finite ones).
    """
    thr = thr.copy()
    flags = dt.copy()
    missing = (dt >> NodeFlags.MISSING_SHIFT) & 3
    if np.any(missing > NodeFlags.MISSING_NAN):
        raise ValueError(f"tree {t}: a decision_type has missing type 3, unknown to LightGBM.")
    default_left = (dt & NodeFlags.DEFAULT_LEFT) != 0
    band = (thr >= -K_ZERO_THRESHOLD) & (thr < K_ZERO_THRESHOLD)
    zero_goes_left = np.where(missing == NodeFlags.MISSING_ZERO, default_left, thr >= 0)
    thr[band & zero_goes_left] = K_ZERO_THRESHOLD
    thr[band & ~zero_goes_left] = _BELOW_ZERO_BAND
    if np.any(np.isnan(thr) | (thr == -np.inf)):
        raise ValueError(f"tree {t} has a NaN or -inf threshold; cannot convert it.")
    pos_inf = thr == np.inf
    if np.any(pos_inf):
        # NaN type: non-NaN left, NaN by default. None type: NaN reads 0, all left. Zero type
        # with default left: all left. Zero type with default right cannot be expressed.
        zero_right = pos_inf & (missing == NodeFlags.MISSING_ZERO) & ~default_left
        if np.any(zero_right):
            raise ValueError(f"tree {t} has a +inf threshold on a zero-as-missing node "
                             f"with default right; cannot convert it.")
        all_left = pos_inf & ((missing != NodeFlags.MISSING_NAN) | default_left)
        flags[pos_inf] = (np.uint8(NodeFlags.CATEGORICAL | NodeFlags.CAT_SET_RIGHT)
                          | np.where(all_left[pos_inf], np.uint8(NodeFlags.DEFAULT_LEFT),
                                     np.uint8(0))).astype(np.uint8)
        thr[pos_inf] = 0.0
    return thr, flags
