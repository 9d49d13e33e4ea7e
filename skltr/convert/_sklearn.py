"""scikit-learn tree models -> :class:`~skltr.trees.TreeEnsemble`, reproducing ``predict``,
``predict_proba`` and ``decision_function`` bit for bit.

Converted: ``DecisionTreeRegressor`` / ``DecisionTreeClassifier`` (and their subclasses
``ExtraTreeRegressor`` / ``ExtraTreeClassifier``), ``RandomForestRegressor`` /
``RandomForestClassifier``, ``ExtraTreesRegressor`` / ``ExtraTreesClassifier``,
``GradientBoostingRegressor`` / ``GradientBoostingClassifier`` and
``HistGradientBoostingRegressor`` / ``HistGradientBoostingClassifier``.

Decision trees, forests and GradientBoosting
--------------------------------------------
All of them validate ``X`` as float32 (``sklearn.tree._tree.DTYPE``; NumPy's ``astype``
rounding, integers straight to float32) and walk a tree (``Tree.apply``, and
``predict_stages`` for GradientBoosting) with, at node ``n``: NaN goes to the side
``missing_go_to_left[n]`` names; any other ``x`` goes left when ``double(x) <=
threshold[n]``, a float64 threshold (a midpoint of two float32 training values, computed in
double: usually *not* a float32 value). The ensembles therefore read inputs with
``input_rule="float32"`` and compare with ``precision="float64"``, ``decision="<="``:
exactly that arithmetic. (``precision="float32"`` would also be exact -- the QuickScorer
layout rounds ``<=`` thresholds down to float32, which routes float32 inputs the same way --
but float64 states the rule as scikit-learn applies it.) An entry absent from a CSR row is
0.0 (``absent_value=0.0``), as in scikit-learn's sparse walk. The mapping of ``tree_``::

    sklearn.tree._tree.Tree             TreeEnsemble (one copy of the tree per value column)
    children_left / children_right   -> left / right          (-1 on leaves in both)
    feature  (-2 on leaves)          -> feature               (-1 on leaves)
    threshold                        -> threshold             (float64, decision "<=")
    missing_go_to_left               -> DEFAULT_LEFT, missing type NaN
    threshold +inf (split on NaN)    -> empty category set with CAT_SET_RIGHT
    value[:, o, c]                   -> value of the copy for target o / class c

A TreeEnsemble leaf holds one number, so a tree whose leaves hold several (one per class,
or one per target of a multi-output regressor) becomes one copy of the tree per number,
each adding to its own output. A split-on-NaN node (threshold ``+inf``: every non-NaN value
left, NaN to the missing side) becomes an empty category set read with ``CAT_SET_RIGHT``,
as for HistGradientBoosting below.

The arithmetic, per estimator (``raw`` is what ``TreeEnsemble.predict_raw`` returns):

* ``DecisionTreeRegressor``: ``predict = value[leaf, o, 0]``: one tree per target, base 0.
* ``DecisionTreeClassifier``: ``predict_proba = value[leaf, 0, :n_classes]`` (scikit-learn
  stores class fractions in ``value``): one tree per class, identity transform;
  ``predict = classes_[argmax(predict_proba)]``.
* ``RandomForest*`` / ``ExtraTrees*``: scikit-learn adds the trees' ``predict`` /
  ``predict_proba`` to zeros, tree after tree in ``estimators_`` order, in float64, then
  divides by ``len(estimators_)``: ``average_output=True``. With ``n_jobs > 1`` scikit-learn
  adds the trees in the order its threads finish, so its own result may move by an ulp from
  call to call; the ensemble reproduces the sequential order (``n_jobs=None``).
* ``GradientBoosting*``: ``raw = init + sum over stages i (in order) of learning_rate *
  value[leaf]`` of ``estimators_[i, k]`` for output ``k``, in float64 (``predict_stages``):
  ``tree_weight = learning_rate``, ``base_score`` = the init's raw prediction. The init may
  be a constant (the default ``DummyRegressor`` / ``DummyClassifier(strategy="prior")`` of
  each loss, any ``DummyRegressor``, a ``DummyClassifier`` with strategy ``"prior"``,
  ``"most_frequent"`` or ``"constant"``), evaluated once with scikit-learn's own
  ``_raw_predict_init``; ``"zero"``; a single-output decision tree, whose leaves become the
  first tree(s) of the ensemble (for classifiers each leaf holds scikit-learn's
  ``link(clip(predict_proba))`` of that leaf, computed by scikit-learn's own
  ``_init_raw_predictions``); or, for regressors, any regressor this module converts to a
  plain sum of trees (``GradientBoostingRegressor``, ``HistGradientBoostingRegressor`` with
  an identity link), whose trees come first. Other inits raise a ``ValueError``. Outputs:
  regressors ``"identity"``; binary ``log_loss`` ``"sigmoid"`` (``expit(raw)``);
  ``exponential`` ``"sigmoid"`` with ``scale=2`` (``expit(2 * raw)``); multiclass
  ``"sklearn_softmax"`` with ``{"order": "C"}`` (``softmax`` of the C-ordered raw scores:
  the row sums of 8 or more classes depend on the memory order). Labels come from the raw
  scores: ``classes_[raw >= 0]`` (binary, ``source["predict"] = "raw>=0"``) or
  ``classes_[argmax(raw)]`` (``"argmax_raw"``), not from the probabilities.

What scikit-learn allows and a TreeEnsemble cannot express raises a ``ValueError`` that says
so: multi-output classifiers (``predict_proba`` is a list of arrays), classifiers fitted on
a single class, GradientBoosting inits other than the above.

scikit-learn refuses some inputs that the ensemble accepts: infinite values and values
beyond float32's range (they round to infinity) everywhere, and NaN for GradientBoosting
and for trees whose criterion or splitter does not support missing values. The ensemble
routes infinities as the largest / smallest values and NaN along ``missing_go_to_left``
(the side each tree recorded; for trees fitted without NaN, the side that received more
training samples).

HistGradientBoosting
--------------------
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

_SUPPORTED = ("DecisionTreeRegressor, DecisionTreeClassifier, ExtraTreeRegressor, "
              "ExtraTreeClassifier, RandomForestRegressor, RandomForestClassifier, "
              "ExtraTreesRegressor, ExtraTreesClassifier, GradientBoostingRegressor, "
              "GradientBoostingClassifier, HistGradientBoostingRegressor and "
              "HistGradientBoostingClassifier")


def _sklearn_version() -> str:
    import sklearn  # noqa: PLC0415

    return sklearn.__version__


def from_sklearn(model) -> TreeEnsemble:
    """Convert a fitted scikit-learn tree model to a TreeEnsemble, exactly.

    ``TreeEnsemble.predict_raw(X)`` equals the model's raw scores bit for bit:
    ``predict`` (regressors; one column per target for multi-output regressors),
    ``predict_proba`` (decision trees and forests: one output per class),
    ``decision_function`` (GradientBoostingClassifier) or ``_raw_predict``
    (HistGradientBoosting). ``TreeEnsemble.predict(X)`` applies the model's link:
    it equals ``predict`` for regressors, ``predict_proba`` for trees, forests and multiclass
    boosting, and ``predict_proba(X)[:, 1]`` for binary boosting. The module docstring
    gives the arithmetic of each estimator.

    Parameters
    ----------
    model : fitted scikit-learn estimator
        ``DecisionTreeRegressor`` / ``Classifier`` (``ExtraTreeRegressor`` / ``Classifier``
        included), ``RandomForestRegressor`` / ``Classifier``, ``ExtraTreesRegressor`` /
        ``Classifier``, ``GradientBoostingRegressor`` / ``Classifier`` or
        ``HistGradientBoostingRegressor`` / ``Classifier``.

    Returns
    -------
    TreeEnsemble
        ``decision="<="``, ``precision="float64"``, ``sum_dtype="float64"``;
        ``input_rule="float32"`` for the models built on ``sklearn.tree`` (they validate
        ``X`` as float32) and ``"float64"`` for HistGradientBoosting. ``source`` records
        the library version, the estimator and, for classifiers, ``classes`` and
        ``predict``: how the classifier's ``predict`` picks its label, ``"argmax"`` (of the
        probabilities), ``"proba>0.5"``, ``"raw>=0"`` or ``"argmax_raw"`` (of the raw
        scores).

    Raises
    ------
    TypeError
        If ``model`` is not one of the estimators above.
    ValueError
        If the model holds something a TreeEnsemble cannot express: a multi-output or
        single-class classifier, a GradientBoosting ``init`` that is neither a constant, a
        decision tree nor a sum of trees, HistGradientBoosting categories that are not
        integers in ``[0, 2**24)``.
    sklearn.exceptions.NotFittedError
        If ``model`` is not fitted.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor
    >>> from skltr.convert._sklearn import from_sklearn
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X[:, 0] + X[:, 1] ** 2
    >>> forest = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(X, y)
    >>> ens = from_sklearn(forest)
    >>> ens.n_trees, ens.average_output, ens.input_rule
    (5, True, 'float32')
    >>> bool(np.array_equal(ens.predict(X), forest.predict(X)))
    True
    >>> gbc = GradientBoostingClassifier(n_estimators=10, random_state=0).fit(X, y > 1)
    >>> ens = from_sklearn(gbc)
    >>> bool(np.array_equal(ens.predict_raw(X), gbc.decision_function(X)))
    True
    >>> bool(np.array_equal(ens.predict(X), gbc.predict_proba(X)[:, 1]))
    True
    """
    from sklearn.ensemble import (  # noqa: PLC0415
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: PLC0415
    from sklearn.utils.validation import check_is_fitted  # noqa: PLC0415

    converters = (
        ((HistGradientBoostingRegressor, HistGradientBoostingClassifier),
         _from_hist_gradient_boosting),
        ((GradientBoostingRegressor, GradientBoostingClassifier), _from_gradient_boosting),
        ((RandomForestRegressor, RandomForestClassifier, ExtraTreesRegressor,
          ExtraTreesClassifier), _from_forest),
        ((DecisionTreeRegressor, DecisionTreeClassifier), _from_decision_tree),
    )
    for classes, convert in converters:
        if isinstance(model, classes):
            check_is_fitted(model)
            return convert(model)
    raise TypeError(
        f"from_sklearn converts {_SUPPORTED}; got {type(model).__module__}."
        f"{type(model).__name__}. For another scikit-learn model, train one of these "
        f"instead (or XGBoost / LightGBM, which skltr also converts)."
    )


# --------------------------------------------------------------------------- sklearn.tree
def _tree_nodes(tree):
    """Node arrays of one ``sklearn.tree._tree.Tree`` without leaf values, and its leaf mask.

    Leaves get feature -1 and children -1; a numeric node sends NaN to the side of
    ``missing_go_to_left``; a split-on-NaN node (threshold +inf) becomes an empty category
    set read with ``CAT_SET_RIGHT``: NaN follows the default side, every other value (not in
    the empty set) goes left, as ``x <= inf`` does.
    """
    left = np.asarray(tree.children_left, dtype=np.int64)
    right = np.asarray(tree.children_right, dtype=np.int64)
    leaf = left < 0
    if np.any(leaf != (right < 0)):
        raise ValueError("a scikit-learn tree node has exactly one child; cannot convert it.")
    threshold = np.where(leaf, 0.0, tree.threshold).astype(np.float64)
    flags = np.where(leaf, np.uint8(0), _NAN_TYPE).astype(np.uint8)
    flags[~leaf & np.asarray(tree.missing_go_to_left, dtype=bool)] |= np.uint8(
        NodeFlags.DEFAULT_LEFT)
    nan_split = ~leaf & (threshold == np.inf)
    flags[nan_split] |= np.uint8(NodeFlags.CATEGORICAL | NodeFlags.CAT_SET_RIGHT)
    threshold[nan_split] = 0.0
    if np.any(~leaf & ~np.isfinite(threshold)):
        bad = threshold[~leaf & ~np.isfinite(threshold)][0]
        raise ValueError(f"a scikit-learn tree node has threshold {bad}; only finite and +inf "
                         f"(split on NaN) thresholds are known.")
    n = left.size
    nodes = {
        "feature": np.where(leaf, -1, tree.feature).astype(np.int32),
        "threshold": threshold,
        "left": np.where(leaf, -1, left).astype(np.int32),
        "right": np.where(leaf, -1, right).astype(np.int32),
        "flags": flags,
        "cat_offset": np.zeros(n, dtype=np.int64),
        "cat_nwords": np.zeros(n, dtype=np.int32),
        # TreeSHAP's cover, as shap.TreeExplainer reads a scikit-learn tree
        "cover": np.asarray(tree.weighted_n_node_samples, dtype=np.float64),
    }
    return nodes, leaf


class _Trees:
    """Trees collected in the order the source adds them, with their output and weight."""

    def __init__(self):
        self.parts: list[dict] = []
        self.outputs: list[int] = []
        self.weights: list[float] = []
        self.cat_bitsets = np.zeros(0, dtype=np.uint32)

    def add(self, nodes, leaf, values, output: int, weight: float = 1.0) -> None:
        part = dict(nodes)
        part["value"] = np.where(leaf, values, 0.0).astype(np.float64)
        self.parts.append(part)
        self.outputs.append(output)
        self.weights.append(weight)

    def add_ensemble(self, ens: TreeEnsemble) -> None:
        """Append every tree of ``ens`` (which must come first if it has category sets)."""
        if ens.cat_bitsets.size:
            if self.cat_bitsets.size:
                raise ValueError("only the first ensemble added may hold category sets.")
            self.cat_bitsets = ens.cat_bitsets
        names = ("feature", "threshold", "left", "right", "value", "flags", "cat_offset",
                 "cat_nwords", "cover")
        cover = ens.cover if ens.cover is not None else np.full(ens.n_nodes, np.nan)
        for t in range(ens.n_trees):
            lo, hi = int(ens.tree_ptr[t]), int(ens.tree_ptr[t + 1])
            self.parts.append({name: (cover if name == "cover" else getattr(ens, name))[lo:hi]
                               for name in names})
            self.outputs.append(int(ens.tree_output[t]))
            self.weights.append(float(ens.tree_weight[t]))

    def ensemble(self, *, n_features, n_outputs, base_score=None, **scalars) -> TreeEnsemble:
        sizes = np.array([p["feature"].size for p in self.parts], dtype=np.int64)
        arrays = {name: np.concatenate([p[name] for p in self.parts])
                  for name in self.parts[0]}
        if not np.all(np.isfinite(arrays["cover"])):  # a part without covers (NaN)
            arrays["cover"] = None
        return TreeEnsemble(
            tree_ptr=np.concatenate([[0], np.cumsum(sizes)]),
            **arrays,
            n_features=n_features,
            cat_bitsets=self.cat_bitsets,
            tree_output=np.asarray(self.outputs, dtype=np.int32),
            tree_weight=np.asarray(self.weights, dtype=np.float64),
            base_score=np.zeros(n_outputs) if base_score is None else base_score,
            n_outputs=n_outputs,
            decision="<=",
            precision="float64",
            sum_dtype="float64",
            input_rule="float32",
            absent_value=0.0,
            **scalars,
        )


def _source(model, **extra) -> dict:
    source = {"library": "sklearn", "version": _sklearn_version(),
              "estimator": type(model).__name__}
    source.update(extra)
    return source


def _feature_names(model):
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def _check_classifier(model) -> int:
    """Number of classes of a single-output tree / forest classifier; refuses the others."""
    name = type(model).__name__
    if int(model.n_outputs_) != 1:
        raise ValueError(
            f"{name} was fitted on a 2-D y with {model.n_outputs_} outputs: its predict_proba "
            f"is a list of one array per output, which a TreeEnsemble (one vector of outputs "
            f"per row, read as one set of class probabilities) cannot represent. Fit one "
            f"single-output classifier per column of y and convert each."
        )
    n_classes = int(np.atleast_1d(model.n_classes_)[0])
    if n_classes < 2:
        raise ValueError(
            f"{name} was fitted on a single class ({np.asarray(model.classes_).tolist()}): "
            f"its predict_proba has one column, which a converted classifier would read as "
            f"P(class 1) of a binary model. Every prediction of this model is that class; "
            f"fit on at least two classes to convert it."
        )
    return n_classes


def _add_tree(trees: _Trees, estimator, n_classes: int | None) -> None:
    """One scikit-learn tree: a copy per class (classifiers) or per target (regressors)."""
    tree = estimator.tree_
    nodes, leaf = _tree_nodes(tree)
    value = np.asarray(tree.value, dtype=np.float64)  # (n_nodes, n_outputs, max_n_classes)
    if n_classes is None:
        for o in range(value.shape[1]):
            trees.add(nodes, leaf, value[:, o, 0], o)
    else:
        for c in range(n_classes):
            trees.add(nodes, leaf, value[:, 0, c], c)


def _tree_model_ensemble(model, estimators, *, average: bool) -> TreeEnsemble:
    from sklearn.base import is_classifier  # noqa: PLC0415

    classifier = is_classifier(model)
    n_classes = _check_classifier(model) if classifier else None
    n_outputs = n_classes if classifier else int(model.n_outputs_)
    trees = _Trees()
    for estimator in estimators:
        _add_tree(trees, estimator, n_classes)
    extra = {"n_estimators": len(estimators)} if average else {}
    if classifier:
        # predict() is classes_[argmax(predict_proba)], the proba being these outputs
        extra.update(classes=np.asarray(model.classes_).tolist(), predict="argmax")
    return trees.ensemble(
        n_features=int(model.n_features_in_), n_outputs=n_outputs, average_output=average,
        output_transform="identity", feature_names=_feature_names(model),
        source=_source(model, **extra))


def _from_decision_tree(model) -> TreeEnsemble:
    """DecisionTree / ExtraTree: ``predict`` (regression) or ``predict_proba`` is the leaf's
    value row, ``tree_.value[leaf]``: one tree per target or class, base 0."""
    return _tree_model_ensemble(model, [model], average=False)


def _from_forest(model) -> TreeEnsemble:
    """RandomForest / ExtraTrees: the trees' outputs summed in order, then divided by
    ``len(estimators_)`` (``average_output``)."""
    return _tree_model_ensemble(model, list(model.estimators_), average=True)


# --------------------------------------------------------------------------- GradientBoosting
def _from_gradient_boosting(model) -> TreeEnsemble:
    """GradientBoosting: the init's raw prediction plus ``learning_rate * value[leaf]`` of
    every stage tree, stage by stage, in float64 (``predict_stages``)."""
    from sklearn.base import is_classifier  # noqa: PLC0415

    classifier = is_classifier(model)
    k = int(model.n_trees_per_iteration_)
    n_features = int(model.n_features_in_)
    loss = type(model._loss).__name__
    link = type(model._loss.link).__name__
    if not classifier:
        if link != "IdentityLink":
            raise ValueError(f"loss {model.loss!r} has link {link}; a GradientBoostingRegressor "
                             f"is expected to have an identity link.")
        transform, params = "identity", {}
    elif loss == "HalfBinomialLoss" and link == "LogitLink":
        transform, params = "sigmoid", {"scale": 1.0}        # expit(raw)
    elif loss == "ExponentialLoss" and link == "HalfLogitLink":
        transform, params = "sigmoid", {"scale": 2.0}        # expit(2 * raw)
    elif loss == "HalfMultinomialLoss" and link == "MultinomialLogit" and k > 1:
        transform, params = "sklearn_softmax", {"order": "C"}  # softmax(C-ordered raw)
    else:
        raise ValueError(f"loss {model.loss!r} ({loss}, link {link}) with {k} trees per "
                         f"stage has no output transform in a TreeEnsemble.")
    trees = _Trees()
    base_score, init_desc = _gradient_boosting_init(model, trees, k, n_features)
    learning_rate = float(model.learning_rate)
    estimators = model.estimators_
    if estimators.ndim != 2 or estimators.shape[1] != k:
        raise ValueError(f"estimators_ has shape {estimators.shape}; expected (n_stages, {k}).")
    for stage in range(estimators.shape[0]):
        for output in range(k):
            tree = estimators[stage, output].tree_
            nodes, leaf = _tree_nodes(tree)
            trees.add(nodes, leaf, np.asarray(tree.value, dtype=np.float64)[:, 0, 0], output,
                      learning_rate)
    extra = {"loss": str(model.loss), "learning_rate": learning_rate,
             "n_estimators": int(estimators.shape[0]), "init": init_desc}
    if classifier:
        # predict(): classes_[decision_function >= 0] (binary) or classes_[argmax] -- of the
        # raw scores, which can differ from the probabilities' where expit / softmax round
        # two raw scores to one probability.
        extra.update(classes=np.asarray(model.classes_).tolist(),
                     predict="raw>=0" if k == 1 else "argmax_raw")
    return trees.ensemble(
        n_features=n_features, n_outputs=k, base_score=base_score, average_output=False,
        output_transform=transform, transform_params=params,
        feature_names=_feature_names(model), source=_source(model, **extra))


class _LeafProba:
    """Stands in for a tree classifier: ``predict_proba`` returns the rows of its leaves."""

    def __init__(self, rows):
        self.rows = rows

    def predict_proba(self, X):
        return self.rows


def _gradient_boosting_init(model, trees: _Trees, k: int, n_features: int):
    """Base score of a GradientBoosting model and a description of its init; adds an init
    made of trees to ``trees`` (first, before the stages)."""
    from sklearn.base import is_classifier  # noqa: PLC0415
    from sklearn.dummy import DummyClassifier, DummyRegressor  # noqa: PLC0415
    from sklearn.ensemble._gb import _init_raw_predictions  # noqa: PLC0415
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: PLC0415

    init = model.init_
    classifier = is_classifier(model)
    if isinstance(init, str) and init == "zero":
        return np.zeros(k), "zero"
    constant = isinstance(init, DummyRegressor) or (
        isinstance(init, DummyClassifier)
        and init.strategy in ("prior", "most_frequent", "constant"))
    if constant:
        # A constant init: evaluate scikit-learn's own init step (predict, clip, link) on a
        # few rows; every row gives the same raw prediction.
        probe = np.random.default_rng(0).normal(size=(16, n_features)).astype(np.float32)
        raw = np.asarray(model._raw_predict_init(probe), dtype=np.float64)
        if raw.shape != (16, k) or np.any(raw != raw[0]):
            raise ValueError(f"init={init!r} did not give one constant raw prediction per "
                             f"output; cannot convert it.")
        return raw[0].copy(), repr(init)
    what = f"{type(model).__name__}(init={type(init).__name__}(...))"
    if classifier and isinstance(init, DecisionTreeClassifier):
        n_classes = _check_classifier(init)
        if n_classes != int(model.n_classes_):
            raise ValueError(f"{what}: the init has {n_classes} classes, the model "
                             f"{model.n_classes_}; cannot convert it.")
        tree = init.tree_
        nodes, leaf = _tree_nodes(tree)
        ids = np.flatnonzero(leaf)
        proba = np.asarray(tree.value, dtype=np.float64)[ids, 0, :n_classes]
        # scikit-learn's own init step on the leaves' probabilities: clip, link
        raw = np.asarray(_init_raw_predictions(None, _LeafProba(proba), model._loss, True),
                         dtype=np.float64)
        if raw.shape != (ids.size, k):
            raise ValueError(f"{what}: unexpected init shape {raw.shape}; cannot convert it.")
        for output in range(k):
            values = np.zeros(leaf.size)
            values[ids] = raw[:, output]
            trees.add(nodes, leaf, values, output)
        return np.zeros(k), repr(init)
    if not classifier and isinstance(init, (DecisionTreeRegressor, *_sum_of_trees_types())):
        ens = from_sklearn(init)
        reason = _not_a_plain_sum(ens)
        if reason is None:
            trees.add_ensemble(ens)
            return ens.base_score.copy(), repr(init)
        raise ValueError(f"{what} cannot be converted: the init's prediction {reason}. "
                         + _INIT_HELP)
    raise ValueError(f"{what} cannot be converted: a TreeEnsemble starts each output from a "
                     f"constant and adds trees. " + _INIT_HELP)


_INIT_HELP = (
    "Convertible inits: None (the default DummyRegressor / DummyClassifier(strategy='prior')),"
    " 'zero', a DummyRegressor, a DummyClassifier with strategy 'prior', 'most_frequent' or "
    "'constant', a single-output DecisionTreeRegressor / DecisionTreeClassifier, or for "
    "regressors a GradientBoostingRegressor or a HistGradientBoostingRegressor with an "
    "identity link. Refit with one of these (or add the init's predictions to the converted "
    "model's yourself)."
)


def _sum_of_trees_types():
    from sklearn.ensemble import (  # noqa: PLC0415
        ExtraTreesRegressor,
        GradientBoostingRegressor,
        HistGradientBoostingRegressor,
        RandomForestRegressor,
    )

    return (GradientBoostingRegressor, HistGradientBoostingRegressor, RandomForestRegressor,
            ExtraTreesRegressor)


def _not_a_plain_sum(ens: TreeEnsemble) -> str | None:
    """Why a regressor init's ensemble is not ``base + tree, tree, ...`` (None if it is)."""
    if ens.n_outputs != 1:
        return f"has {ens.n_outputs} outputs, not one"
    if ens.output_transform != "identity":
        return f"goes through the {ens.output_transform!r} transform"
    if ens.average_output and ens.n_trees > 1:
        return (f"is the average of {ens.n_trees} trees (the sum rounded, then divided), "
                f"which does not continue as a sum")
    if ens.decision != "<=" or ens.precision != "float64" or ens.sum_dtype != "float64" or (
            not np.isnan(ens.missing_value)):
        return "reads its inputs differently"
    return None


# --------------------------------------------------------------------------- HistGradientBoosting
def _from_hist_gradient_boosting(model) -> TreeEnsemble:
    """HistGradientBoosting: ``_baseline_prediction`` plus every predictor's leaf value,
    iteration by iteration, in float64; see the module docstring."""
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
        "version": _sklearn_version(),
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
            "value": value, "flags": flags, "cat_offset": cat_offset, "cat_nwords": cat_nwords,
            # TreeSHAP's cover: the node's training count, as shap.TreeExplainer reads it
            "cover": np.asarray(nodes["count"], dtype=np.float64)}
    return part, words
