"""Continued training: a fit that starts from a fitted model's trees and scores (issue #29).

``GPUHistGBDTRanker.fit(..., init_model=...)`` and ``warm_start=True`` hand the boosting loop
a :class:`Continuation`: the starting model's trees, which the fitted ensemble keeps first,
and its raw scores of the training (and eval) rows, which the rounds start from instead of
the objective's constant. Its rounds are numbered on from the starting model's, so the
random draws of round ``k`` (query and feature subsamples, ``rank_xendcg``) are those of
round ``k`` of one long fit, and a model continued for ``m`` rounds from ``n`` is the
``n + m``-round model bit for bit when the settings are deterministic: the scores a fit adds
tree by tree are the scores the trees give (the base score, then each tree's value, added in
order -- the traversal kernel's arithmetic), and the same ``random_state`` bins the same
rows into the same cuts.

The starting model must read its inputs by the rules of skltr's trees (``x <= threshold`` in
float64, NaN missing, one output summed in float64): a skltr ranker, its ``TreeEnsemble`` or
its saved JSON model, or a LightGBM model converted by :mod:`skltr.convert` (the same rules
but for non-float inputs: :func:`_from_lightgbm`). An XGBoost model (``float32(x) <
threshold``, float32 sums) has its trees rewritten to skltr's rules with the same routing of
every input (:func:`_from_xgboost`); its rounds start from XGBoost's own scores.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from .._dtypes import NodeFlags

__all__ = ["Continuation", "continuation_from", "append_trees"]

#: the rules a starting model must share with the trees a skltr fit grows
_SKLTR_RULES = {"decision": "<=", "precision": "float64", "sum_dtype": "float64",
                "input_rule": "float64", "frame_rule": "numpy", "n_outputs": 1,
                "average_output": False, "output_transform": "identity"}


@dataclass(frozen=True)
class Continuation:
    """What a continued fit starts from.

    Attributes
    ----------
    ensemble : TreeEnsemble
        The starting model; its trees come first in the fitted ensemble.
    split_gain, split_count : ndarray of shape (n_features,)
        Its per-feature split statistics (gains are zero for a bare ``TreeEnsemble``, which
        does not store them).
    """

    ensemble: object
    split_gain: np.ndarray
    split_count: np.ndarray
    #: the model whose scores the rounds start from, when not ``ensemble`` (an XGBoost
    #: model: its own float32 sums; ``ensemble`` holds its trees in skltr's rules)
    scored_by: object = None

    @property
    def n_rounds(self) -> int:
        """Rounds already done: the next round's number."""
        return self.ensemble.n_trees

    @property
    def base_score(self) -> float:
        return float(self.ensemble.base_score[0])

    def scores(self, X, n_jobs=None) -> np.ndarray:
        """The starting model's raw scores of ``X`` (host float64; a CuPy ``X`` is copied to
        the host), by traversal: the base score, then the trees added in order."""
        from ..trees._sparse_input import is_sparse  # noqa: PLC0415
        from ..trees._traversal import predict_raw  # noqa: PLC0415

        if hasattr(X, "__cuda_array_interface__") and hasattr(X, "get"):
            X = X.get()
        if X.shape[0] == 0:
            return np.zeros(0, np.float64)
        if self.scored_by is not None and is_sparse(X):
            raise ValueError("continuing an XGBoost model needs a dense X: XGBoost reads an "
                             "entry absent from a sparse row as missing, skltr's trees as "
                             "0.0, so the two would score such rows differently. Pass "
                             "X.toarray().")
        model = self.ensemble if self.scored_by is None else self.scored_by
        return np.ascontiguousarray(predict_raw(model, X, n_jobs=n_jobs), dtype=np.float64)


def continuation_from(init_model, *, n_features, objective, feature_names=None,
                      what="init_model") -> Continuation:
    """The :class:`Continuation` of ``init_model``: a fitted ``GPUHistGBDTRanker``, a
    ``TreeEnsemble``, the path of a skltr JSON model, or a LightGBM model (a Booster or a
    fitted ``LGBMRanker``, converted); checked against the fit's feature count, objective and
    feature names (``what`` names the parameter in the errors)."""
    from ..trees import TreeEnsemble  # noqa: PLC0415

    gain = count = None
    trained_with = scored_by = None
    if isinstance(init_model, (str, os.PathLike)):
        init_model = TreeEnsemble.load(init_model)
    if isinstance(init_model, TreeEnsemble):
        ensemble = init_model
        trained_with = ensemble.source.get("objective")
    elif hasattr(init_model, "ensemble_") and hasattr(init_model, "_split_gain"):
        ensemble = init_model.ensemble_
        gain, count = init_model._split_gain, init_model._split_count
        # the model's record, not the estimator's parameter (warm_start after set_params)
        trained_with = ensemble.source.get("objective", getattr(init_model, "objective", None))
    elif type(init_model).__module__.split(".")[0] in ("lightgbm", "xgboost"):
        from ..convert import to_tree_ensemble  # noqa: PLC0415

        ensemble = to_tree_ensemble(init_model)  # a Booster or a fitted scikit-learn wrapper
    elif hasattr(init_model, "fit") and not hasattr(init_model, "ensemble_"):
        raise ValueError(f"{what} is an unfitted {type(init_model).__name__}: fit it first, "
                         f"or pass its fitted model.")
    else:
        raise TypeError(f"{what} must be a fitted GPUHistGBDTRanker, a skltr TreeEnsemble, "
                        f"the path of a skltr JSON model or a LightGBM model; got "
                        f"{type(init_model).__name__}.")
    library = ensemble.source.get("library")
    if library == "lightgbm":
        ensemble, trained_with = _from_lightgbm(ensemble, what)
    elif library == "xgboost":
        scored_by = ensemble
        ensemble, trained_with = _from_xgboost(ensemble, what)
    elif library not in (None, "skltr"):
        raise ValueError(
            f"{what} is a model converted from {library}: continuing it is not supported. "
            f"Its trees read inputs by {library}'s rules (decision {ensemble.decision!r}, "
            f"{ensemble.precision} comparisons, {ensemble.sum_dtype} sums), which the trees "
            f"skltr grows do not share (LightGBM and XGBoost models can be continued); train "
            f"the skltr "
            f"model from scratch, or continue it with {library} itself.")
    differ = {k: getattr(ensemble, k) for k, v in _SKLTR_RULES.items()
              if getattr(ensemble, k) != v}
    if ensemble.absent_value != 0.0 or not np.isnan(ensemble.missing_value):
        differ["absent/missing values"] = (ensemble.absent_value, ensemble.missing_value)
    if differ:
        raise ValueError(f"{what} reads its inputs by other rules than the trees skltr grows "
                         f"({differ}; skltr's: {_SKLTR_RULES}): its trees cannot be continued "
                         f"in one ensemble.")
    if ensemble.n_features != n_features:
        raise ValueError(f"{what} reads {ensemble.n_features} features, but X has "
                         f"{n_features}: continue a model on data with its features.")
    if trained_with is not None and trained_with != objective:
        raise ValueError(f"{what} was trained with objective={trained_with!r}, but this fit "
                         f"uses objective={objective!r}: continue it with its objective.")
    names = ensemble.feature_names
    if names is not None and feature_names is not None and \
            list(names) != [str(n) for n in feature_names]:
        raise ValueError(f"{what} was trained on features {list(names)[:5]}..., but X's "
                         f"columns are {[str(n) for n in feature_names][:5]}...: the same "
                         f"features in the same order are needed.")
    if gain is None:
        internal = ensemble.left >= 0
        count = np.bincount(ensemble.feature[internal], minlength=n_features)
        gain = np.zeros(n_features)
    return Continuation(ensemble, np.asarray(gain, np.float64).copy(),
                        np.asarray(count, np.int64).copy(), scored_by)


#: XGBoost objectives and the skltr objective that continues them
_XGBOOST_OBJECTIVES = {"rank:ndcg": "lambdarank", "rank:pairwise": "rank_pairwise",
                       "reg:squarederror": "regression"}


def _from_xgboost(ensemble, what):
    """An XGBoost model as a starting model in skltr's rules, and its objective.

    XGBoost sends ``x`` left when ``float32(x) < t``. For every double ``x`` that is exactly
    ``x <= d``, ``d`` the largest double whose float32 rounding is below ``t``
    (:func:`float32_below`): the trees route every input as XGBoost's do, in skltr's rule
    (``x <= threshold`` in float64). XGBoost sums the leaf values in float32, skltr in
    float64: the rounds start from XGBoost's own scores (``Continuation.scored_by``), and the
    continued model's scores of the XGBoost rounds differ from XGBoost's by that float32
    rounding only (about 1e-7 of the score; tested). Refused: categorical splits, a
    ``missing`` value other than NaN, more than one output, a transformed output.
    """
    if np.any((ensemble.flags & NodeFlags.CATEGORICAL) != 0):
        raise ValueError(f"{what} is an XGBoost model with categorical splits: continuing it "
                         f"is not supported (XGBoost re-codes categories by its own stored "
                         f"categories). Continue it with XGBoost, or fit skltr's ranker anew "
                         f"with categorical_features.")
    if not np.isnan(ensemble.missing_value):
        raise ValueError(f"{what} is an XGBoost model with missing={ensemble.missing_value}: "
                         f"skltr's trees read NaN as missing; retrain it with missing=NaN "
                         f"(XGBoost's default) to continue it.")
    if ensemble.n_outputs != 1 or ensemble.output_transform != "identity":
        raise ValueError(f"{what} is an XGBoost model with {ensemble.n_outputs} outputs and "
                         f"the {ensemble.output_transform!r} output: only single-output "
                         f"ranking or regression models can be continued.")
    internal = ensemble.left >= 0
    threshold = ensemble.threshold.copy()
    threshold[internal] = float32_below(threshold[internal])
    objective = str(ensemble.source.get("objective") or "")
    converted = replace(ensemble, threshold=threshold, decision="<=", precision="float64",
                        sum_dtype="float64", input_rule="float64", frame_rule="numpy",
                        absent_value=0.0, categories=None)
    return converted, _XGBOOST_OBJECTIVES.get(objective, objective or None)


def float32_below(t):
    """The largest double ``d`` with ``float32(d) < t``, for float32 values ``t`` (array).

    Then ``float32(x) < t`` exactly when ``x <= d``, for every double ``x``: the threshold of
    XGBoost's test in skltr's. ``d`` lies just below the midpoint of ``t`` and the float32
    before it (at the midpoint itself when round-half-to-even sends it down); each candidate
    is checked by rounding and stepped by one double until the bound is tight.
    """
    t = np.asarray(t, dtype=np.float64)
    t32 = t.astype(np.float32)
    if not np.array_equal(t32.astype(np.float64), t, equal_nan=True):
        raise ValueError("XGBoost thresholds must be float32 values")
    prev = np.nextafter(t32, np.float32(-np.inf)).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.where(np.isfinite(prev), prev + (t - prev) / 2.0, t)
    for _ in range(4):  # at most a step or two either way
        with np.errstate(over="ignore"):
            below = d.astype(np.float32) < t32
            up = np.nextafter(d, np.inf)
            up_below = up.astype(np.float32) < t32
        d = np.where(~below, np.nextafter(d, -np.inf), np.where(up_below, up, d))
    with np.errstate(over="ignore"):
        ok = (d.astype(np.float32) < t32) & ~(np.nextafter(d, np.inf).astype(np.float32) < t32)
    if not np.all(ok | ~np.isfinite(t)):
        raise AssertionError("float32_below did not converge")
    return d


def _from_lightgbm(ensemble, what):
    """A LightGBM model as a starting model, and its objective.

    LightGBM's trees compare ``x <= threshold`` in float64, route missing values per node
    and sum in float64, as skltr's do; they differ only in how inputs that are not float32
    or float64 are read (through float32) and how DataFrames are read. The rankers hand the
    trees float32 or float64 rows, so the starting scores are LightGBM's own, and the
    continued model reads every input by skltr's rules (integers up to 2**24 alike).
    Its categorical splits route category codes as LightGBM does (the node flags keep its
    rules), beside skltr's own; a model trained on a DataFrame's category columns
    (``pandas_categorical``) is refused: LightGBM re-codes those columns by its stored
    categories, which skltr's front-end does not read for a starting model.
    """
    if ensemble.pandas_categorical:
        raise ValueError(f"{what} is a LightGBM model trained on a DataFrame's category "
                         f"columns (pandas_categorical): continuing it is not supported. "
                         f"Train the LightGBM model on the category codes (an array, or "
                         f"integer columns), or fit skltr's ranker anew with "
                         f"categorical_features.")
    objective = str(ensemble.source.get("objective") or "").split()
    return (replace(ensemble, input_rule="float64", frame_rule="numpy"),
            objective[0] if objective else None)


def append_trees(first, more):
    """One ensemble: the trees of ``first``, then those of ``more`` (same rules; ``first``'s
    base score, which ``more``'s must equal)."""
    if not np.array_equal(first.base_score, more.base_score):
        raise AssertionError("the appended trees were grown from another base score")
    lo = int(first.tree_ptr[-1])
    joined = {name: np.concatenate([getattr(first, name), getattr(more, name)])
              for name in ("feature", "threshold", "left", "right", "value", "flags",
                           "cat_nwords", "tree_output", "tree_weight")}
    return replace(
        more, **joined,
        tree_ptr=np.concatenate([first.tree_ptr, more.tree_ptr[1:] + lo]),
        # the appended categorical nodes' sets follow the first ensemble's
        cat_offset=np.concatenate([first.cat_offset, np.where(
            (more.flags & NodeFlags.CATEGORICAL) != 0,
            more.cat_offset + first.cat_bitsets.size, more.cat_offset)]),
        cat_bitsets=np.concatenate([first.cat_bitsets, more.cat_bitsets]),
        cover=(None if first.cover is None or more.cover is None
               else np.concatenate([first.cover, more.cover])),
        transform_params=dict(more.transform_params), source=dict(more.source))
