"""XGBoost model -> :class:`~skltr.trees.TreeEnsemble`, reproducing XGBoost's CPU predictions bit
for bit.

The converter reads XGBoost's JSON model document (``Booster.save_raw("json")``, a ``.json``
file, or a ``.ubj`` file decoded by the bounded UBJSON reader of ``_ubjson.py``), so
converting a file needs no XGBoost installation. XGBoost itself is imported only when an
XGBoost object is passed. Every field of a document is checked as it is read (types, sizes,
index ranges, finite values): a corrupt file ends in a ``ValueError`` naming the tree and
node, never in a wrong model.

What makes the result exact (``/work/shared/docs/FORMATS.md``)::

    XGBoost JSON (per tree)                     TreeEnsemble (per node)
    left_children / right_children (-1 leaf) -> left / right            (local indices)
    split_indices                            -> feature                 (-1 on leaves)
    split_conditions (leaf value at leaves)  -> threshold = float32(.)  (decision "<")
                                                value     = float32(.)  (leaves only)
    default_left                             -> NodeFlags.DEFAULT_LEFT, missing type NaN
    split_type == 1, categories*             -> CATEGORICAL | CAT_SET_RIGHT + uint32 bitsets
    tree_info                                -> tree_output             (class / target)
    weight_drop (dart)                       -> tree_weight
    learner_model_param.base_score           -> base_score, objective's prob-to-margin in float32

Inputs are rounded to float32 before every comparison (``precision="float32"``) and the raw
score is accumulated in float32 in tree order, starting from the base margin
(``sum_dtype="float32"``), as XGBoost's CPU predictor does.
"""

from __future__ import annotations

import json
import math
import numbers
import os

import numpy as np
from numba import njit

from .. import _numba_cache  # noqa: F401 - kernel caches outside the package
from ..trees._ensemble import TreeEnsemble, rounds_in
from ..trees._input import XGB_CATEGORY_TYPES
from ..utils._model_io import model_file_errors
from ._checks import as_int, float_array, int_array
from ._xgboost_trees import (_CORRUPT, _MAX_FEATURES, _MULTI_OUTPUT_MSG, _convert_trees,
                             _dict_or_empty, _get, _str)
from ._ubjson import read_ubjson

__all__ = ["from_xgboost"]

# objective -> (output transform, base-score link, extra provenance).
# The link turns XGBoost's ``base_score`` (stored in output space) into a margin exactly as
# the objective's ``ProbToMargin`` does, in float32: "logit" -logf(1/p - 1), "log" logf(p),
# "identity" p. The transforms are the float32 formulas of XGBoost's ``PredTransform``.
_OBJECTIVES = {
    "reg:squarederror": ("identity", "identity", {}),
    "reg:linear": ("identity", "identity", {}),  # pre-1.0 alias of reg:squarederror
    "reg:squaredlogerror": ("identity", "identity", {}),
    "reg:pseudohubererror": ("identity", "identity", {}),
    "reg:absoluteerror": ("identity", "identity", {}),
    "reg:quantileerror": ("identity", "identity", {}),
    "reg:logistic": ("xgb_sigmoid", "logit", {}),
    "binary:logistic": ("xgb_sigmoid", "logit", {}),
    "binary:logitraw": ("identity", "identity", {}),  # 3.x: base_score already a margin
    # predict() returns 1.0 where the margin is > 0 and 0.0 elsewhere: a step the front-end
    # applies, like argmax for multi:softmax.
    "binary:hinge": ("identity", "identity", {"predict": "margin>0"}),
    "count:poisson": ("xgb_exp", "log", {}),
    "reg:gamma": ("xgb_exp", "log", {}),
    "reg:tweedie": ("xgb_exp", "log", {}),
    "survival:cox": ("xgb_exp", "log", {}),
    "survival:aft": ("xgb_exp", "log", {}),
    "multi:softprob": ("xgb_softmax", "identity", {}),
    # predict() returns the argmax class of the margins; the probabilities are softprob's.
    "multi:softmax": ("xgb_softmax", "identity", {"predict": "argmax"}),
    "rank:pairwise": ("identity", "identity", {}),
    "rank:ndcg": ("identity", "identity", {}),
    "rank:map": ("identity", "identity", {}),
}

#: Outputs a model may declare beyond its trees and base scores (see _convert_document).
_MAX_OUTPUTS_WITHOUT_TREES = 1 << 16

# --------------------------------------------------------------------------- public API
def from_xgboost(model, *, iteration_range=None, dart_predict=None) -> TreeEnsemble:
    """Convert an XGBoost tree model to a :class:`~skltr.trees.TreeEnsemble`, exactly.

    ``TreeEnsemble.predict_raw`` then equals XGBoost's CPU ``predict(..., output_margin=True)``
    bit for bit (float32), and ``TreeEnsemble.predict`` equals ``predict`` for the
    probability-like objectives (logistic, softprob, poisson / gamma / tweedie).

    Parameters
    ----------
    model : xgboost.Booster, XGBModel, str, os.PathLike, bytes or dict
        A Booster; a fitted scikit-learn wrapper (``XGBRanker``, ``XGBRegressor``,
        ``XGBClassifier``, ...); a path to a model saved as ``.json`` or ``.ubj`` (UBJSON);
        the bytes of either format (``Booster.save_raw()``); or the parsed JSON document.
        Files, bytes and dicts are read without XGBoost.
    iteration_range : tuple of (int, int), optional
        Boosting rounds ``[begin, end)`` to keep, as XGBoost's ``predict(iteration_range=)``;
        ``end == 0`` means the last round. By default a scikit-learn wrapper with early
        stopping keeps rounds ``[0, best_iteration + 1)`` (what its ``predict`` uses), and
        everything else keeps all rounds (what ``Booster.predict`` uses).
    dart_predict : {"inplace", "dmatrix"}, optional
        Which of XGBoost's two dart predictions to reproduce (only dart models differ; see
        Notes): ``"inplace"``, what the scikit-learn wrappers' ``predict`` and
        ``Booster.inplace_predict`` return, or ``"dmatrix"``, what ``Booster.predict(DMatrix)``
        returns. By default ``"inplace"`` for a scikit-learn wrapper and ``"dmatrix"`` for
        everything else (a Booster, a file, bytes, a dict).

    Returns
    -------
    TreeEnsemble
        ``decision="<"``, ``precision="float32"``, ``sum_dtype="float32"``; one output per
        class (``multi:*``) or target; ``missing_value`` is the wrapper's ``missing=``
        sentinel (rounded to float32, as XGBoost compares it), NaN otherwise. ``source``
        records the library, version, objective and the rounds kept; ``source["predict"]``
        is ``"argmax"`` for ``multi:softmax`` and ``"margin>0"`` for ``binary:hinge``, whose
        ``predict`` returns labels rather than the transformed scores.

    Raises
    ------
    ValueError
        For models that are not plain tree ensembles: ``gblinear``, multi-output trees
        (``multi_strategy="multi_output_tree"``), split types other than numerical and
        categorical, objectives whose base score or transform is unknown.
    ImportError
        Never for files; only if an XGBoost object is passed without XGBoost importable.

    Notes
    -----
    Inputs are compared as float32 (float64 inputs are rounded to nearest first), ``x <
    threshold`` goes left, NaN follows the node's default direction and ±inf are ordinary
    values. In a categorical node the categories of the set go right; NaN follows the
    default direction; negative values, values of 2**24 and above and categories not in the
    set go left; fractional values are truncated. The raw score is accumulated in float32,
    ``base + t0 + t1 + ...`` in tree order, like XGBoost's CPU predictor (its GPU predictor
    adds the base last and may differ by an ulp).

    Dart models: XGBoost 3.2's ``Dart::PredictBatchImpl`` (``Booster.predict(DMatrix)``) adds
    ``float32(leaf * w)`` tree by tree to the base; ``Dart::InplacePredict`` (scikit-learn
    ``predict``, ``inplace_predict``) predicts each tree *with* the base, subtracts it again
    and adds ``float32(float32(float32(base + leaf) - base) * w)``. The two differ in the last
    bits. ``"inplace"`` folds ``float32(float32(base + leaf) - base)`` into the leaf values
    (``tree_weight`` stays ``w``), so both orders are exact with the same kernels;
    ``source["dart_predict"]`` records the choice. XGBoost 3.3 and later save dart models as
    ``gbtree`` with the weights in the tree model, and both of their predict paths follow the
    ``"dmatrix"`` arithmetic: such files are read that way whatever ``dart_predict`` says.

    Inputs are read as XGBoost reads them: every array value rounded to float32 from its own
    dtype (``input_rule="float32"``); a DataFrame column by column (``frame_rule="xgboost"``),
    its category columns re-coded to the training categories stored in the model
    (``categories``); a DataFrame's column names must equal ``feature_names``.

    Examples
    --------
    >>> import numpy as np
    >>> import xgboost as xgb
    >>> from skltr.convert._xgboost import from_xgboost
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> clf = xgb.XGBClassifier(n_estimators=5, max_depth=3, n_jobs=1).fit(X, y)
    >>> ens = from_xgboost(clf)
    >>> ens.output_transform, ens.n_trees
    ('xgb_sigmoid', 5)
    >>> margin = clf.get_booster().predict(xgb.DMatrix(X), output_margin=True)
    >>> bool(np.array_equal(ens.predict_raw(X), margin))
    True
    >>> bool(np.array_equal(ens.predict(X), clf.predict_proba(X)[:, 1]))
    True

    A saved model converts without XGBoost::

        ens = from_xgboost("model.json")   # or "model.ubj"
    """
    if dart_predict is None:
        dart_predict = "inplace" if hasattr(model, "get_booster") else "dmatrix"
    if dart_predict not in ("inplace", "dmatrix"):
        raise ValueError(f"dart_predict={dart_predict!r}; expected 'inplace' (scikit-learn "
                         f"predict, inplace_predict) or 'dmatrix' (Booster.predict(DMatrix)).")
    if iteration_range is not None:
        try:
            iteration_range = tuple(int(v) for v in iteration_range)
        except (TypeError, ValueError):
            raise ValueError(f"iteration_range={iteration_range!r}; expected (begin, end), two "
                             f"integers.") from None
        if len(iteration_range) != 2:
            raise ValueError(f"iteration_range={iteration_range!r}; expected (begin, end).")
    if isinstance(model, (str, os.PathLike)):
        # A file: every error names it (ModelFileError).
        with model_file_errors(model):
            return _convert(model, iteration_range, dart_predict)
    return _convert(model, iteration_range, dart_predict)


def _convert(model, iteration_range, dart_predict) -> TreeEnsemble:
    doc, missing, default_range = _read_model(model)
    if iteration_range is None:
        iteration_range = default_range
    try:
        return _convert_document(doc, missing=missing, iteration_range=iteration_range,
                                 dart_predict=dart_predict)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        # The checks of _convert_document name what they find wrong; this is the net for a
        # document shaped in a way they do not foresee.
        raise ValueError(f"the XGBoost model document is malformed ({type(exc).__name__}: "
                         f"{exc}); {_CORRUPT}.") from exc


# --------------------------------------------------------------------------- input reading
def _read_model(model):
    """(JSON document, missing sentinel, default iteration range) of any accepted input."""
    if isinstance(model, dict):
        return model, math.nan, None
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _parse_bytes(bytes(model), what="the model bytes"), math.nan, None
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        with open(path, "rb") as fh:
            raw = fh.read()
        return _parse_bytes(raw, what=repr(path)), math.nan, None
    if type(model).__module__.split(".")[0] == "xgboost":
        return _read_xgboost_object(model)
    raise TypeError(
        f"from_xgboost expects an xgboost.Booster, a fitted XGBoost scikit-learn estimator, a "
        f"path to a .json/.ubj model, model bytes or a parsed JSON dict; got "
        f"{type(model).__module__}.{type(model).__name__}."
    )


def _read_xgboost_object(model):
    import xgboost  # noqa: PLC0415 - optional dependency, only for XGBoost objects

    if isinstance(model, xgboost.Booster):
        booster, missing, default_range = model, math.nan, None
    elif hasattr(model, "get_booster"):
        booster = model.get_booster()  # raises NotFittedError on an unfitted estimator
        missing = model.get_params().get("missing", math.nan)
        missing = math.nan if missing is None else float(missing)
        default_range = None
        # XGBModel._get_iteration_range: predict() keeps rounds [0, best_iteration + 1).
        try:
            best = model.best_iteration
        except AttributeError:
            best = None
        if best is not None:
            default_range = (0, int(best) + 1)
    else:
        raise TypeError(
            f"cannot convert a {type(model).__module__}.{type(model).__name__}: expected an "
            f"xgboost.Booster or a fitted XGBoost scikit-learn estimator."
        )
    raw = booster.save_raw(raw_format="json")
    doc = json.loads(bytes(raw).decode("utf-8"))
    return doc, missing, default_range


def _parse_bytes(raw: bytes, *, what: str) -> dict:
    """JSON or UBJSON bytes to a document. Both start with '{'; JSON's next non-blank
    character is '"' or '}', UBJSON's is a length marker."""
    stripped = raw.lstrip()
    if not stripped.startswith(b"{"):
        raise ValueError(
            f"{what} is neither an XGBoost JSON nor an UBJSON model (it does not start with "
            f"'{{'). Save the model with Booster.save_model('model.json') or '.ubj'."
        )
    nxt = stripped[1:].lstrip()[:1]
    if nxt in (b'"', b"}"):
        try:
            return json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ValueError(f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                             f"the file is corrupt or not an XGBoost JSON model") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} is not valid JSON ({exc}); the file is truncated or "
                             f"corrupt") from None
        except RecursionError:
            raise ValueError(f"{what} nests JSON arrays or objects too deeply to be an "
                             f"XGBoost model; the file is corrupt") from None
    return read_ubjson(raw, what=f"{what} (UBJSON)")


# --------------------------------------------------------------------------- conversion
def _base_score(value) -> np.ndarray:
    """XGBoost's base_score as float32: "[4.6E-1]" or "[1E0,2E0]" (3.x vectors), "5E-1"
    (older) or numbers; every entry finite in float32."""
    what = "learner_model_param.base_score"
    if isinstance(value, str):
        if len(value) > 1 << 20:
            raise ValueError(f"{what} is a string of {len(value)} characters; {_CORRUPT}.")
        parts = [p for p in value.strip().strip("[]").split(",") if p.strip()]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"{what} {value[:60]!r} is not a number or a list of numbers; "
                             f"{_CORRUPT}.") from None
    elif isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{what} is {value!r}, not a number; {_CORRUPT}.")
    elif isinstance(value, (numbers.Real, list, np.ndarray)):
        values = float_array(list(np.atleast_1d(value)) if not isinstance(value, np.ndarray)
                             else np.atleast_1d(value), what, corrupt=_CORRUPT)
    else:
        raise ValueError(f"{what} is a {type(value).__name__}, not a number; {_CORRUPT}.")
    with np.errstate(over="ignore"):
        base = np.asarray(values, dtype=np.float64).astype(np.float32)
    if base.size == 0 or not np.all(np.isfinite(base)):
        raise ValueError(f"{what} is {str(value)[:60]!r}: XGBoost's base score must be one or "
                         f"more finite float32 numbers; {_CORRUPT}.")
    return base


@njit(cache=True)
def _logit_f32(p):
    """LogisticRegression::ProbToMargin in float32: ``-logf(1.0f / p - 1.0f)``."""
    out = np.empty_like(p)
    for i in range(p.shape[0]):
        out[i] = -math.log(np.float32(1.0) / p[i] - np.float32(1.0))
    return out


@njit(cache=True)
def _log_f32(p):
    """ProbToMargin of the log-link objectives in float32: ``logf(p)``."""
    out = np.empty_like(p)
    for i in range(p.shape[0]):
        out[i] = math.log(p[i])
    return out


def _base_margin(base: np.ndarray, link: str, objective: str) -> np.ndarray:
    """base_score (float32, output space) -> margin, in float32 like XGBoost."""
    if link == "identity":
        return base
    if link == "logit":
        if np.any((base <= 0) | (base >= 1)):
            raise ValueError(f"base_score {base.tolist()} must lie in (0, 1) for {objective}.")
        return _logit_f32(base)
    if np.any(base <= 0):
        raise ValueError(f"base_score {base.tolist()} must be > 0 for {objective}.")
    return _log_f32(base)



def _iteration_slice(indptr, iteration_range, n_rounds):
    begin, end = rounds_in((0, 0) if iteration_range is None else iteration_range, n_rounds)
    return begin, end, int(indptr[begin]), int(indptr[end])


def _convert_document(doc: dict, *, missing, iteration_range, dart_predict="dmatrix"
                      ) -> TreeEnsemble:
    learner = _get(doc, "learner", "'learner'")
    params = _get(learner, "learner_model_param", "'learner.learner_model_param'")
    booster = _get(learner, "gradient_booster", "'learner.gradient_booster'")
    booster_name = _str(booster.get("name", "gbtree"), "gradient_booster.name")
    if booster_name == "gblinear":
        raise ValueError(
            "this XGBoost model uses booster='gblinear', a linear model rather than trees; "
            "skltr converts tree ensembles only. Retrain with booster='gbtree' (or 'dart') or "
            "use the linear model's coefficients directly."
        )
    if booster_name == "dart":
        gbtree = _get(booster, "gbtree", "'gradient_booster.gbtree' (dart)")
        with np.errstate(over="ignore"):  # a weight beyond float32 becomes inf: refused
            weight_drop = float_array(booster.get("weight_drop", []), "dart weight_drop",
                                      corrupt=_CORRUPT).astype(np.float32)
    elif booster_name == "gbtree":
        gbtree, weight_drop = booster, None
        model = booster.get("model")
        if isinstance(model, dict) and model.get("weight_drop") is not None:
            # XGBoost >= 3.3 saves a dart model as gbtree with the dart weights in its model;
            # its predict and inplace_predict then agree, adding float32(leaf * w) tree by
            # tree to the base (the "dmatrix" arithmetic)
            with np.errstate(over="ignore"):
                weight_drop = float_array(model["weight_drop"], "dart weight_drop",
                                          corrupt=_CORRUPT).astype(np.float32)
            booster_name, dart_predict = "dart", "dmatrix"
    else:
        raise ValueError(f"unknown XGBoost booster {booster_name!r}; expected gbtree or dart.")
    model = _get(gbtree, "model", "'gradient_booster.model'")
    trees = _get(model, "trees", "'gradient_booster.model.trees'", kind=list)
    tparam = _dict_or_empty(model, "gbtree_model_param", "gbtree_model_param")
    if str(tparam.get("multi_strategy", "one_output_per_tree")) not in (
            "one_output_per_tree", "0"):
        raise ValueError(_MULTI_OUTPUT_MSG)

    objective = _str(_get(learner, "objective", "'learner.objective'").get("name", ""),
                     "learner.objective.name")
    if objective not in _OBJECTIVES:
        raise ValueError(
            f"XGBoost objective {objective!r} is not supported: its base score link and "
            f"output transform are unknown to skltr. Supported: {sorted(_OBJECTIVES)}."
        )
    transform, link, extra = _OBJECTIVES[objective]

    n_trees_total = len(trees)
    # ---- base score (output space), read first: its entries bound the outputs
    base = _base_score(params.get("base_score", "0.5"))
    num_class = as_int(params.get("num_class", 0), "learner_model_param.num_class", lo=0,
                       corrupt=_CORRUPT)
    num_target = as_int(params.get("num_target", 1), "learner_model_param.num_target", lo=0,
                        corrupt=_CORRUPT)
    n_outputs = max(num_class, num_target, 1)
    # Every output has a tree or a base score, or there are few: a corrupt count must not
    # allocate gigabytes of base scores.
    if n_outputs > max(n_trees_total, base.size, _MAX_OUTPUTS_WITHOUT_TREES):
        raise ValueError(f"learner_model_param gives {n_outputs} outputs (num_class / "
                         f"num_target) for {n_trees_total} trees; {_CORRUPT}.")
    n_features = as_int(params.get("num_feature", 0), "learner_model_param.num_feature",
                        lo=0, hi=_MAX_FEATURES, corrupt=_CORRUPT)
    tree_info = (int_array(model["tree_info"], "model.tree_info", size=n_trees_total,
                           lo=0, hi=n_outputs - 1, corrupt=_CORRUPT)
                 if "tree_info" in model else np.zeros(n_trees_total, dtype=np.int64))
    num_parallel_tree = as_int(tparam.get("num_parallel_tree", 1),
                               "gbtree_model_param.num_parallel_tree", lo=1,
                               corrupt=_CORRUPT)
    if "num_trees" in tparam:
        as_int(tparam["num_trees"], "gbtree_model_param.num_trees", lo=n_trees_total,
               hi=n_trees_total, corrupt=f"the model has {n_trees_total} trees; {_CORRUPT}")

    indptr = model.get("iteration_indptr")
    if indptr is None or (isinstance(indptr, (list, np.ndarray)) and len(indptr) == 0):
        # models written before XGBoost 2.0
        per_round = num_parallel_tree * n_outputs
        if n_trees_total % per_round:
            raise ValueError(
                f"the model has {n_trees_total} trees, not a multiple of the {per_round} trees "
                f"per round its parameters imply; the file is corrupt."
            )
        indptr = np.arange(0, n_trees_total + 1, per_round)
    indptr = int_array(indptr, "model.iteration_indptr", lo=0, hi=n_trees_total,
                       corrupt=_CORRUPT)
    if indptr[0] != 0 or indptr[-1] != n_trees_total or np.any(np.diff(indptr) < 0):
        raise ValueError(f"iteration_indptr {indptr[:8].tolist()}... does not run from 0 to "
                         f"the model's {n_trees_total} trees in increasing order; the file is "
                         f"corrupt.")
    n_rounds = len(indptr) - 1
    if n_rounds == 0:
        if iteration_range is not None and tuple(iteration_range) not in ((0, 0),):
            raise ValueError(f"iteration_range={tuple(iteration_range)} given for a model "
                             f"without trees.")
        begin = end = t0 = t1 = 0
    else:
        begin, end, t0, t1 = _iteration_slice(indptr, iteration_range, n_rounds)

    # ---- base score (output space) -> margin
    if base.size == 1 and n_outputs > 1:
        base = np.repeat(base, n_outputs)
    if base.size != n_outputs:
        raise ValueError(f"base_score has {base.size} entries for {n_outputs} outputs.")
    base_margin = _base_margin(base, link, objective)

    # ---- trees
    ensemble_arrays = _convert_trees(trees[t0:t1], t0)
    max_feature = ensemble_arrays.pop("max_feature")
    if n_features == 0:  # no num_feature: the splits tell
        n_features = max_feature + 1
    elif max_feature >= n_features:
        t, node = ensemble_arrays.pop("max_feature_at")
        raise ValueError(f"tree {t}, node {node} splits on feature {max_feature}, but the model "
                         f"has num_feature={n_features}; {_CORRUPT}.")
    ensemble_arrays.pop("max_feature_at", None)
    n_features = max(n_features, 1)
    tree_output = tree_info[t0:t1]
    tree_weight = None
    source_extra = {}
    if weight_drop is not None:
        if weight_drop.size != n_trees_total:
            raise ValueError(f"dart weight_drop has {weight_drop.size} weights for "
                             f"{n_trees_total} trees; the file is corrupt.")
        tree_weight = weight_drop[t0:t1].astype(np.float64)
        if dart_predict == "inplace":
            ensemble_arrays["value"] = _fold_inplace_base(
                ensemble_arrays["value"], ensemble_arrays["tree_ptr"],
                base_margin[tree_output], ensemble_arrays["left"] < 0)
        source_extra = {"dart_predict": dart_predict}

    feature_names = _str_list(learner, "feature_names") or None
    if feature_names is not None and len(feature_names) != n_features:
        feature_names = None
    feature_types = _str_list(learner, "feature_types")
    version = doc.get("version")
    if version is not None:
        version = int_array(version, "version", lo=0, corrupt=_CORRUPT)
    source = {
        "library": "xgboost",
        "version": ".".join(str(v) for v in version.tolist()) if version is not None else None,
        "objective": objective,
        "booster": booster_name,
        "iteration_range": [begin, end],
        "num_parallel_tree": num_parallel_tree,
        **source_extra,
        **extra,
    }
    if "c" in feature_types:
        source["feature_types"] = feature_types
    categories = _training_categories(model.get("cats"), n_features)

    if transform == "xgb_softmax" and n_outputs < 2:
        raise ValueError(f"{objective} with num_class={num_class}: softmax needs >= 2 classes.")
    return TreeEnsemble(
        **ensemble_arrays,
        n_features=n_features,
        tree_output=tree_output.astype(np.int32),
        tree_weight=tree_weight,
        base_score=_finite_margin(base_margin, objective),
        n_outputs=n_outputs,
        decision="<",
        precision="float32",
        input_rule="float32",
        absent_value=float("nan"),  # an entry absent from a sparse row is missing
        frame_rule="xgboost",  # column by column to float32, categories re-coded
        categories=categories,
        sum_dtype="float32",
        missing_value=float(np.float32(missing)),
        average_output=False,
        output_transform=transform,
        transform_params={},
        feature_names=feature_names,
        source=source,
    ).check_score_range()


def _str_list(learner, key) -> list:
    value = learner.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"learner.{key} is not a list of strings; {_CORRUPT}.")
    return value


def _finite_margin(margin, objective) -> np.ndarray:
    """The base margin as float64; finite (a base score of 1e-45 has a margin of -inf)."""
    if not np.all(np.isfinite(margin)):
        raise ValueError(f"the base score's margin under {objective} is {margin.tolist()[:4]}, "
                         f"not finite; {_CORRUPT}.")
    return margin.astype(np.float64)


def _fold_inplace_base(value, tree_ptr, tree_base, is_leaf):
    """Leaf values as XGBoost's dart ``InplacePredict`` sees them: each tree is predicted
    with the base margin of its output and the base is subtracted again, in float32:
    ``float32(float32(base + leaf) - base)``. Internal nodes keep 0."""
    base = np.repeat(np.asarray(tree_base, dtype=np.float32), np.diff(tree_ptr))
    leaf = np.asarray(value, dtype=np.float32)
    folded = ((base + leaf) - base).astype(np.float64)  # float32 arithmetic, each step rounded
    return np.where(is_leaf, folded, 0.0)



def _training_categories(cats, n_features):
    """XGBoost's training categories (``model.cats``, stored when the model was trained on a
    DataFrame with category columns) as ``TreeEnsemble.categories``: one entry per feature,
    None for a numeric feature, else ``{"type", "values"}`` in code order. None when the
    model stored no categories (then XGBoost reads a category column's own codes).

    String categories are stored as XGBoost's UTF-8 bytes cut at its offsets, decoded with
    ``surrogateescape`` (see :func:`skltr.trees._input.xgb_category_needles`).
    """
    if cats is None:
        return None
    if not isinstance(cats, dict) or not isinstance(cats.get("enc", []), list):
        raise ValueError("model.cats is not an object with an 'enc' list; the file is corrupt.")
    enc = cats.get("enc", [])
    if not enc:
        return None
    if len(enc) != n_features:
        raise ValueError(f"model.cats has {len(enc)} columns for {n_features} features; the "
                         f"file is corrupt.")
    out = []
    for f, col in enumerate(enc):
        try:
            raw = col.get("values", [])
            values = [int(v) for v in (raw.tolist() if isinstance(raw, np.ndarray) else raw)]
            if "type" in col:
                ctype = XGB_CATEGORY_TYPES[int(col["type"])]
                entry = {"type": ctype, "values": values}
            else:
                offsets = np.asarray(col.get("offsets", []), dtype=np.int64).tolist()
                blob = bytes(v & 0xFF for v in values)
                items = [blob[offsets[k]:offsets[k + 1]].decode("utf-8", "surrogateescape")
                         for k in range(len(offsets) - 1)]
                entry = {"type": "str", "values": items} if items else None
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
            raise ValueError(f"model.cats entry {f} cannot be read ({exc}); the file is "
                             f"corrupt or written by an XGBoost this skltr does not know."
                             ) from None
        if entry is not None and not entry["values"]:
            entry = None
        out.append(entry)
    return out if any(e is not None for e in out) else None
