"""XGBoost model -> :class:`~skltr.trees.TreeEnsemble`, reproducing XGBoost's CPU predictions bit
for bit.

The converter reads XGBoost's JSON model document (``Booster.save_raw("json")``, a ``.json``
file, or a ``.ubj`` file decoded by the small UBJSON reader below), so converting a file needs
no XGBoost installation. XGBoost itself is imported only when an XGBoost object is passed.

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
import os
import struct

import numpy as np
from numba import njit

from .. import _numba_cache  # noqa: F401 - kernel caches outside the package
from ..trees._ensemble import NodeFlags, TreeEnsemble
from ..trees._input import XGB_CATEGORY_TYPES

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

_SPLIT_NUMERICAL = 0
_SPLIT_CATEGORICAL = 1


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
    ``source["dart_predict"]`` records the choice.

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
    doc, missing, default_range = _read_model(model)
    if iteration_range is None:
        iteration_range = default_range
    if dart_predict is None:
        dart_predict = "inplace" if hasattr(model, "get_booster") else "dmatrix"
    if dart_predict not in ("inplace", "dmatrix"):
        raise ValueError(f"dart_predict={dart_predict!r}; expected 'inplace' (scikit-learn "
                         f"predict, inplace_predict) or 'dmatrix' (Booster.predict(DMatrix)).")
    return _convert_document(doc, missing=missing, iteration_range=iteration_range,
                             dart_predict=dart_predict)


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
        return json.loads(raw.decode("utf-8"))
    try:
        return _UBJReader(raw).read()
    except (IndexError, struct.error, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} is not a valid UBJSON XGBoost model: {exc}") from exc


class _UBJReader:
    """Minimal Universal Binary JSON (draft 12) decoder, enough for XGBoost's ``.ubj``.

    Typed numeric arrays (``[$d#<n>...``) come back as big-endian NumPy arrays read in one
    go; float32 values ('d') are kept exactly.
    """

    _FIXED = {
        b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8",
        b"d": ">f4", b"D": ">f8",
    }

    def __init__(self, raw: bytes):
        self.buf = memoryview(raw)
        self.pos = 0

    def read(self):
        value = self._value(self._marker())
        if not isinstance(value, dict):
            raise ValueError("the top-level UBJSON value is not an object")
        return value

    def _take(self, n: int) -> memoryview:
        if self.pos + n > len(self.buf):
            raise ValueError("unexpected end of data")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def _marker(self) -> bytes:
        while True:
            m = bytes(self._take(1))
            if m != b"N":  # no-op
                return m

    def _int(self, marker: bytes) -> int:
        if marker not in (b"i", b"U", b"I", b"l", b"L"):
            raise ValueError(f"expected an integer length, got marker {marker!r}")
        dt = np.dtype(self._FIXED[marker])
        return int(np.frombuffer(self._take(dt.itemsize), dtype=dt)[0])

    def _string(self) -> str:
        n = self._int(self._marker())
        return bytes(self._take(n)).decode("utf-8")

    def _value(self, m: bytes):
        if m in self._FIXED:
            dt = np.dtype(self._FIXED[m])
            v = np.frombuffer(self._take(dt.itemsize), dtype=dt)[0]
            return float(v) if dt.kind == "f" else int(v)
        if m == b"S":
            return self._string()
        if m == b"H":  # high-precision number, as a string
            s = self._string()
            return float(s) if any(c in s for c in ".eE") else int(s)
        if m == b"C":
            return bytes(self._take(1)).decode("latin-1")
        if m == b"T":
            return True
        if m == b"F":
            return False
        if m == b"Z":
            return None
        if m == b"[":
            return self._array()
        if m == b"{":
            return self._object()
        raise ValueError(f"unknown UBJSON marker {m!r} at byte {self.pos - 1}")

    def _container_header(self):
        """Optional ``$type`` and ``#count`` of an optimised container."""
        typ = count = None
        m = self._marker()
        if m == b"$":
            typ = bytes(self._take(1))
            m = self._marker()
            if m != b"#":
                raise ValueError("a typed UBJSON container must give its count")
        if m == b"#":
            count = self._int(self._marker())
            m = None
        return typ, count, m

    def _array(self):
        typ, count, m = self._container_header()
        if count is not None:
            if typ is not None and typ in self._FIXED:
                dt = np.dtype(self._FIXED[typ])
                return np.frombuffer(self._take(dt.itemsize * count), dtype=dt).copy()
            return [self._value(typ if typ is not None else self._marker())
                    for _ in range(count)]
        out = []
        while m != b"]":
            out.append(self._value(m))
            m = self._marker()
        return out

    def _object(self):
        typ, count, m = self._container_header()
        out = {}
        if count is not None:
            for _ in range(count):
                key = self._string()
                out[key] = self._value(typ if typ is not None else self._marker())
            return out
        while m != b"}":
            n = self._int(m)
            key = bytes(self._take(n)).decode("utf-8")
            out[key] = self._value(self._marker())
            m = self._marker()
        return out


# --------------------------------------------------------------------------- conversion
def _float32_list(text) -> np.ndarray:
    """XGBoost's base_score: "[4.6E-1]" (3.x vector), "5E-1" (older) or numbers."""
    if isinstance(text, str):
        parts = [p for p in text.strip().strip("[]").split(",") if p.strip()]
        values = [float(p) for p in parts]
    else:
        values = [float(v) for v in np.atleast_1d(text)]
    return np.asarray(values, dtype=np.float32)


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


def _get(mapping, key, what):
    try:
        return mapping[key]
    except (KeyError, TypeError):
        raise ValueError(
            f"not an XGBoost JSON model: {what} is missing. Save it with "
            f"Booster.save_model('model.json') (or .ubj) or Booster.save_raw('json')."
        ) from None


def _iteration_slice(indptr, iteration_range, n_rounds):
    begin, end = (0, 0) if iteration_range is None else (int(v) for v in iteration_range)
    if end == 0:
        end = n_rounds
    if not 0 <= begin < end <= n_rounds:
        raise ValueError(
            f"iteration_range={tuple(iteration_range)} is outside the model's {n_rounds} "
            f"boosting rounds; give (begin, end) with 0 <= begin < end <= {n_rounds} "
            f"(end=0 means the last round)."
        )
    return begin, end, int(indptr[begin]), int(indptr[end])


def _convert_document(doc: dict, *, missing, iteration_range, dart_predict="dmatrix"
                      ) -> TreeEnsemble:
    learner = _get(doc, "learner", "'learner'")
    params = _get(learner, "learner_model_param", "'learner.learner_model_param'")
    booster = _get(learner, "gradient_booster", "'learner.gradient_booster'")
    booster_name = booster.get("name", "gbtree")
    if booster_name == "gblinear":
        raise ValueError(
            "this XGBoost model uses booster='gblinear', a linear model rather than trees; "
            "skltr converts tree ensembles only. Retrain with booster='gbtree' (or 'dart') or "
            "use the linear model's coefficients directly."
        )
    if booster_name == "dart":
        gbtree = _get(booster, "gbtree", "'gradient_booster.gbtree' (dart)")
        weight_drop = np.asarray(booster.get("weight_drop", []), dtype=np.float32)
    elif booster_name == "gbtree":
        gbtree, weight_drop = booster, None
    else:
        raise ValueError(f"unknown XGBoost booster {booster_name!r}; expected gbtree or dart.")
    model = _get(gbtree, "model", "'gradient_booster.model'")
    trees = _get(model, "trees", "'gradient_booster.model.trees'")
    tparam = model.get("gbtree_model_param", {})
    if str(tparam.get("multi_strategy", "one_output_per_tree")) not in (
            "one_output_per_tree", "0"):
        raise ValueError(_MULTI_OUTPUT_MSG)

    objective = str(_get(learner, "objective", "'learner.objective'").get("name", ""))
    if objective not in _OBJECTIVES:
        raise ValueError(
            f"XGBoost objective {objective!r} is not supported: its base score link and "
            f"output transform are unknown to skltr. Supported: {sorted(_OBJECTIVES)}."
        )
    transform, link, extra = _OBJECTIVES[objective]

    num_class = int(params.get("num_class", 0) or 0)
    num_target = int(params.get("num_target", 1) or 1)
    n_outputs = max(num_class, num_target, 1)
    n_features = int(params.get("num_feature", 0) or 0)
    n_trees_total = len(trees)
    tree_info = np.asarray(model.get("tree_info", np.zeros(n_trees_total)), dtype=np.int64)
    num_parallel_tree = int(tparam.get("num_parallel_tree", 1) or 1)

    indptr = model.get("iteration_indptr")
    if indptr is None or len(indptr) == 0:  # models written before XGBoost 2.0
        per_round = num_parallel_tree * n_outputs
        if n_trees_total % per_round:
            raise ValueError(
                f"the model has {n_trees_total} trees, not a multiple of the {per_round} trees "
                f"per round its parameters imply; the file is corrupt."
            )
        indptr = np.arange(0, n_trees_total + 1, per_round)
    indptr = np.asarray(indptr, dtype=np.int64)
    if indptr[-1] != n_trees_total:
        raise ValueError(f"iteration_indptr ends at {indptr[-1]} but the model has "
                         f"{n_trees_total} trees; the file is corrupt.")
    n_rounds = len(indptr) - 1
    if n_rounds == 0:
        if iteration_range is not None and tuple(iteration_range) not in ((0, 0),):
            raise ValueError(f"iteration_range={tuple(iteration_range)} given for a model "
                             f"without trees.")
        begin = end = t0 = t1 = 0
    else:
        begin, end, t0, t1 = _iteration_slice(indptr, iteration_range, n_rounds)

    # ---- base score (output space) -> margin
    base = _float32_list(params.get("base_score", "0.5"))
    if base.size == 1 and n_outputs > 1:
        base = np.repeat(base, n_outputs)
    if base.size != n_outputs:
        raise ValueError(f"base_score has {base.size} entries for {n_outputs} outputs.")
    base_margin = _base_margin(base, link, objective)

    # ---- trees
    ensemble_arrays = _convert_trees(trees[t0:t1], t0)
    max_feature = ensemble_arrays.pop("max_feature")
    if n_features <= max_feature:
        n_features = max_feature + 1
    n_features = max(n_features, 1)
    tree_output = tree_info[t0:t1]
    if tree_output.size and (tree_output.min() < 0 or tree_output.max() >= n_outputs):
        raise ValueError(f"tree_info refers to outputs outside [0, {n_outputs}).")
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

    feature_names = learner.get("feature_names") or None
    if feature_names is not None and len(feature_names) != n_features:
        feature_names = None
    feature_types = list(learner.get("feature_types") or [])
    version = doc.get("version")
    source = {
        "library": "xgboost",
        "version": ".".join(str(int(v)) for v in version) if version is not None else None,
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
        base_score=base_margin.astype(np.float64),
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
    )


def _fold_inplace_base(value, tree_ptr, tree_base, is_leaf):
    """Leaf values as XGBoost's dart ``InplacePredict`` sees them: each tree is predicted
    with the base margin of its output and the base is subtracted again, in float32:
    ``float32(float32(base + leaf) - base)``. Internal nodes keep 0."""
    base = np.repeat(np.asarray(tree_base, dtype=np.float32), np.diff(tree_ptr))
    leaf = np.asarray(value, dtype=np.float32)
    folded = ((base + leaf) - base).astype(np.float64)  # float32 arithmetic, each step rounded
    return np.where(is_leaf, folded, 0.0)


_MULTI_OUTPUT_MSG = (
    "this XGBoost model has multi-output trees (multi_strategy='multi_output_tree', leaves "
    "holding a vector); a TreeEnsemble holds one value per leaf. Retrain with "
    "multi_strategy='one_output_per_tree' (the default) to convert it."
)


def _convert_trees(trees, first_index: int) -> dict:
    """Per-node arrays of all ``trees`` concatenated (see the module docstring)."""
    sizes = np.empty(len(trees), dtype=np.int64)
    lefts, rights, feats, conds, dlefts, stypes = [], [], [], [], [], []
    covers = []  # sum_hessian per node (TreeSHAP's cover); None where a tree lacks it
    cat_nodes = []  # (global node, categories)
    offset = 0
    for i, tree in enumerate(trees):
        t = first_index + i
        tp = tree.get("tree_param", {})
        if int(tp.get("size_leaf_vector", 1) or 1) > 1:
            raise ValueError(_MULTI_OUTPUT_MSG)
        left = np.asarray(tree["left_children"], dtype=np.int64)
        right = np.asarray(tree["right_children"], dtype=np.int64)
        n = left.size
        split_type = np.asarray(tree.get("split_type", np.zeros(n)), dtype=np.int64)
        bad = (split_type != _SPLIT_NUMERICAL) & (split_type != _SPLIT_CATEGORICAL) & (left >= 0)
        if np.any(bad):
            node = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"tree {t}, node {node} has split_type {int(split_type[node])}; skltr "
                f"represents numerical (0) and categorical (1) XGBoost splits only."
            )
        arrays = [tree["split_indices"], tree["split_conditions"], tree["default_left"],
                  split_type]
        arrays = [np.asarray(a) for a in arrays]
        if n == 0 or any(a.size != n for a in arrays) or right.size != n:
            raise ValueError(f"tree {t}: empty or unequal node arrays; the file is corrupt.")
        hess = tree.get("sum_hessian")
        hess = None if hess is None or len(hess) != n else np.asarray(hess, dtype=np.float64)
        order = None
        if int(tp.get("num_deleted", 0) or 0) > 0:
            left, right, order = _compact(left, right)
            arrays = [a[order] for a in arrays]
            hess = None if hess is None else hess[order]
        covers.append(hess)
        lefts.append(left)
        rights.append(right)
        feats.append(arrays[0].astype(np.int64))
        conds.append(np.asarray(arrays[1], dtype=np.float64))
        dlefts.append(arrays[2].astype(bool))
        stypes.append(arrays[3])
        nodes = np.asarray(tree.get("categories_nodes", []), dtype=np.int64)
        if nodes.size:
            cats = np.asarray(tree["categories"], dtype=np.int64)
            segs = np.asarray(tree["categories_segments"], dtype=np.int64)
            lens = np.asarray(tree["categories_sizes"], dtype=np.int64)
            if order is not None:
                new_id = np.full(len(tree["left_children"]), -1, dtype=np.int64)
                new_id[order] = np.arange(order.size)
                nodes = new_id[nodes]
            for node, seg, size in zip(nodes, segs, lens):
                cat_nodes.append((offset + int(node), cats[seg:seg + size]))
        sizes[i] = left.size
        offset += left.size

    tree_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_nodes = int(tree_ptr[-1])
    cat0 = lambda parts, dt: (np.concatenate(parts).astype(dt) if parts  # noqa: E731
                              else np.zeros(0, dtype=dt))
    left = cat0(lefts, np.int64)
    right = cat0(rights, np.int64)
    feature = cat0(feats, np.int64)
    cond = cat0(conds, np.float64)
    default_left = cat0(dlefts, bool)
    split_type = cat0(stypes, np.int64)

    leaf = left < 0
    internal = ~leaf
    categorical = internal & (split_type == _SPLIT_CATEGORICAL)
    numeric = internal & ~categorical
    # float32 thresholds and leaves, as XGBoost holds them (the JSON prints float32 values).
    cond32 = cond.astype(np.float32).astype(np.float64)
    if np.any(internal & (feature < 0)):
        t, node = _locate(tree_ptr, int(np.flatnonzero(internal & (feature < 0))[0]))
        raise ValueError(f"tree {t}, node {node} splits on a negative feature index.")
    if np.any(numeric & ~np.isfinite(cond32)):
        t, node = _locate(tree_ptr, int(np.flatnonzero(numeric & ~np.isfinite(cond32))[0]))
        raise ValueError(f"tree {t}, node {node} has a non-finite threshold.")

    flags = np.zeros(n_nodes, dtype=np.uint8)
    flags[internal & default_left] |= NodeFlags.DEFAULT_LEFT
    flags[numeric] |= NodeFlags.MISSING_NAN << NodeFlags.MISSING_SHIFT
    flags[categorical] |= NodeFlags.CATEGORICAL | NodeFlags.CAT_SET_RIGHT

    cat_offset = np.zeros(n_nodes, dtype=np.int64)
    cat_nwords = np.zeros(n_nodes, dtype=np.int32)
    words = []
    n_words = 0
    seen = np.zeros(n_nodes, dtype=bool)
    for node, cats in cat_nodes:
        if not categorical[node]:
            t, local = _locate(tree_ptr, node)
            raise ValueError(f"tree {t}, node {local} lists categories but is not a "
                             f"categorical split; the file is corrupt.")
        if cats.size and (cats.min() < 0 or cats.max() >= 1 << 31):
            t, local = _locate(tree_ptr, node)
            raise ValueError(f"tree {t}, node {local} has categories outside [0, 2**31).")
        nw = int(cats.max()) // 32 + 1 if cats.size else 0
        bits = np.zeros(nw, dtype=np.uint32)
        if cats.size:
            np.bitwise_or.at(bits, cats // 32, (np.uint32(1) << (cats % 32).astype(np.uint32)))
        words.append(bits)
        cat_offset[node] = n_words
        cat_nwords[node] = nw
        n_words += nw
        seen[node] = True
    if np.any(categorical & ~seen):
        t, local = _locate(tree_ptr, int(np.flatnonzero(categorical & ~seen)[0]))
        raise ValueError(f"tree {t}, node {local} is categorical but has no category list; "
                         f"the file is corrupt.")

    return {
        "tree_ptr": tree_ptr,
        "feature": np.where(internal, feature, -1),
        "threshold": np.where(numeric, cond32, 0.0),
        "left": left,
        "right": right,
        "value": np.where(leaf, cond32, 0.0),
        "flags": flags,
        "cat_offset": cat_offset,
        "cat_nwords": cat_nwords,
        "cat_bitsets": (np.concatenate(words) if words else np.zeros(0, dtype=np.uint32)),
        "cover": _covers(covers),
        "max_feature": int(feature[internal].max()) if np.any(internal) else -1,
    }


def _covers(covers):
    """The trees' ``sum_hessian`` as one cover array, or None when a tree lacks it or holds a
    value that is not a finite number >= 0 (a model without cover statistics)."""
    if not covers or any(c is None for c in covers):
        return None
    cover = np.concatenate(covers)
    return cover if np.all(np.isfinite(cover) & (cover >= 0)) else None


def _locate(tree_ptr, global_node: int):
    t = int(np.searchsorted(tree_ptr, global_node, side="right") - 1)
    return t, global_node - int(tree_ptr[t])


def _compact(left, right):
    """Renumber the nodes reachable from the root (pruned trees keep deleted nodes)."""
    order = []
    stack = [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if len(order) > left.size:
            raise ValueError("a tree's child links form a cycle; the file is corrupt.")
        if left[node] >= 0:
            stack.append(int(right[node]))
            stack.append(int(left[node]))
    order = np.asarray(order, dtype=np.int64)
    new_id = np.full(left.size, -1, dtype=np.int64)
    new_id[order] = np.arange(order.size)
    new_left = np.where(left[order] >= 0, new_id[np.maximum(left[order], 0)], -1)
    new_right = np.where(right[order] >= 0, new_id[np.maximum(right[order], 0)], -1)
    return new_left, new_right, order


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
