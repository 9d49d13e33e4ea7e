"""The fit recipe of the GBDT ranker: what a fit decides between validated data and the loop.

``GPUHistGBDTRanker`` (one process) and ``skltr.dask`` (a driver and its workers) check and
lay out their rows differently, yet must train the same model on the same rows, bit for bit.
So every decision a fit makes from the hyper-parameters is made here, once, for both:

* :func:`check_device` -- what the chosen back-end cannot do, raised before any work, and
  :func:`check_growth` -- what symmetric growth and ``random_strength`` do not support;
* :func:`plan_fit` -- early stopping on or off, the seed of every random draw (one draw
  from ``random_state``), whether training queries are held out for early stopping, the
  objective and the typed :class:`~skltr._gbdt.params.BoostParams`, as a :class:`FitPlan`.
  The held-out queries are then drawn from ``plan.seed`` by
  :func:`skltr._engine.rounds.hold_out` (rows at hand) or
  :func:`~skltr._engine.rounds.split_queries` (row masks: the Dask driver's layout), and
  :func:`warn_auto_hold_out` says so when ``early_stopping="auto"`` chose it;
* :func:`start_score` and ``BoostParams.bin_mapper`` -- what a distributed fit's driver
  computes once from all training rows for its workers (:class:`~skltr._engine.shard.Shard`);
* :func:`boost_on` -- the boosting loop on the fit's device;
* :func:`warn_if_no_split` -- the model that scores every row the same.

The hyper-parameters are the estimator's ``get_params(deep=False)`` (validated by the
estimator: ``_parameter_constraints``). The front-ends keep their input checks, the eval
sets and the fitted attributes; ``skltr.dask`` keeps data placement, the gather of the cut
sample and the launch of the workers.

The front-ends call the two warnings from their fitting method and say how many frames lie
between it and the user's call (``above``): ``GPUHistGBDTRanker._fit`` runs under
``RankerMixin.fit`` and ``GPUHistGBDTRanker.fit`` and the check of its keyword arguments
(3: ``skltr.ranking._base``), ``DaskGPUHistGBDTRanker._fit_dask`` under its ``fit`` and that
check (2), so that both warnings point at the user's line.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from ..utils._threads import numba_threads
from .boosting import boost
from .categorical import resolve as resolve_categorical
from .constraints import resolve as resolve_constraints
from .objectives import make_objective
from .params import BoostParams, TreeParams
from .position_bias import PositionBias

__all__ = ["FitPlan", "check_device", "check_growth", "plan_fit", "fit_objective",
           "warn_auto_hold_out", "start_score", "boost_on", "warn_if_no_split"]

#: "auto" early stopping turns on above this many training rows (scikit-learn's
#: HistGradientBoosting uses the same threshold).
_AUTO_EARLY_STOPPING_ROWS = 10_000
_NO_LIMIT = int(np.iinfo(np.int32).max)
#: ``max_depth`` of symmetric trees when it is None (CatBoost's default ``depth``)
SYMMETRIC_DEFAULT_DEPTH = 6


@dataclass(frozen=True)
class FitPlan:
    """The decisions of one fit, made before any row is binned (:func:`plan_fit`).

    Attributes
    ----------
    seed : int
        Seed of every random draw of the fit: the binning sample, the query and feature
        subsamples, the validation split, ``rank_xendcg``, ``yetirank``.
    early_stopping : bool
        Whether the rounds stop early (``early_stopping="auto"`` resolved).
    hold_out : bool
        Whether ``validation_fraction`` of the training queries are held out to monitor
        (early stopping without an eval set).
    objective : Objective
        From :func:`fit_objective`.
    params : BoostParams
        What the boosting loop reads.
    """

    seed: int
    early_stopping: bool
    hold_out: bool
    objective: object
    params: BoostParams


def check_device(hp, is_gpu):
    """Raise, before any work, for what the CUDA back-end does not do: float histograms
    (its determinism rests on integer sums)."""
    if is_gpu and hp["hist_mode"] != "quantised":
        raise NotImplementedError(
            f"hist_mode={hp['hist_mode']!r} is not implemented with device={hp['device']!r}: "
            f"the GPU always sums quantised gradients; use hist_mode='quantised' (the "
            f"default) on the GPU, or device='cpu'.")


def check_growth(hp, *, is_gpu, distributed=False):
    """Raise ValueError, before any work, for what ``growth="symmetric"`` (and
    ``random_strength``, its split noise) is not implemented with: GPU workers of a Dask
    fit, another growth policy; the constraints and categorical features are refused by
    :func:`plan_fit` once resolved."""
    symmetric = hp["growth"] == "symmetric"
    if hp.get("random_strength", 0.0) > 0 and not symmetric:
        raise ValueError(f"random_strength={hp['random_strength']!r} is only implemented "
                         f"with growth='symmetric'; got growth={hp['growth']!r}. Use "
                         f"growth='symmetric', or random_strength=0.")
    if not symmetric:
        return
    if is_gpu and distributed:
        raise ValueError(f"growth='symmetric' is not implemented on the GPU workers of "
                         f"DaskGPUHistGBDTRanker (device={hp['device']!r}) yet; use "
                         f"device='cpu' workers, or growth='depthwise' / 'leafwise'.")


def _check_symmetric(monotone, interaction, categorical):
    """The resolved constraints and categorical features symmetric growth refuses."""
    for name, value in (("monotone_constraints", monotone),
                        ("interaction_constraints", interaction),
                        ("categorical_features", categorical)):
        if value is not None:
            raise ValueError(f"growth='symmetric' does not support {name} (a level's one "
                             f"split cannot follow per-node limits); set {name}=None, or use "
                             f"growth='depthwise' or 'leafwise'.")


def plan_fit(hp, *, n_rows, n_queries, has_eval_sets, eval_at, feature_names=None,
             reject_inf=False, n_features=None) -> FitPlan:
    """The :class:`FitPlan` of a fit on ``n_rows`` training rows in ``n_queries`` queries.

    Parameters
    ----------
    hp : mapping
        The estimator's hyper-parameters (``get_params(deep=False)``).
    n_rows, n_queries : int
        Of the whole training set (before any hold-out).
    has_eval_sets : bool
        Whether ``fit`` was given eval sets (then none are held out).
    eval_at : list of int
        The checked NDCG cut-offs.
    feature_names : array-like of str or None
        Recorded in the model.
    reject_inf : bool
        The loop refuses +-inf in X (the front-end skipped that check).
    n_features : int
        Of X: the constraints are checked against it (:func:`skltr._gbdt.constraints.resolve`).

    Returns
    -------
    FitPlan
        Draws once from ``hp["random_state"]`` (an instance advances).
    """
    if hp["early_stopping"] == "auto":
        early = n_rows > _AUTO_EARLY_STOPPING_ROWS and (has_eval_sets or n_queries >= 2)
    else:
        early = bool(hp["early_stopping"])
    (monotone, method), interaction = resolve_constraints(hp, n_features, feature_names)
    categorical = resolve_categorical(hp, n_features, feature_names, monotone)
    if hp["growth"] == "symmetric":
        _check_symmetric(monotone, interaction, categorical)
    seed = int(check_random_state(hp["random_state"]).randint(np.iinfo(np.int32).max))
    tree = _tree_params(hp, monotone, method, interaction, categorical)
    return FitPlan(seed=seed, early_stopping=early, hold_out=early and not has_eval_sets,
                   objective=fit_objective(hp, seed),
                   params=_boost_params(hp, seed, early, eval_at, feature_names, reject_inf,
                                        tree))


def fit_objective(hp, seed):
    """The objective of the hyper-parameters ``hp``, its randomness seeded by ``seed``."""
    return make_objective(name=hp["objective"], gain=hp["gain"],
                          truncation_level=hp["lambdarank_truncation_level"],
                          random_state=seed, position_bias=_position_bias(hp),
                          permutations=hp["yetirank_permutations"],
                          decay=hp["yetirank_decay"])


def _position_bias(hp):
    """The :class:`~skltr._gbdt.position_bias.PositionBias` of ``hp`` (None: graded labels;
    front-ends without the parameter, the Dask ranker, have none)."""
    mode = hp.get("position_bias")
    if mode is None:
        return None
    return PositionBias(mode=mode, num_positions=hp["lambdarank_num_positions"],
                        bias_norm=float(hp["lambdarank_bias_norm"]),
                        regularization=float(hp["lambdarank_position_bias_regularization"]),
                        learning_rate=float(hp["learning_rate"]))


def _tree_params(hp, monotone, monotone_method, interaction, categorical) -> TreeParams:
    symmetric = hp["growth"] == "symmetric"
    depth = hp["max_depth"]
    if symmetric and depth is None:
        depth = SYMMETRIC_DEFAULT_DEPTH
    return TreeParams(
        # None: no leaf limit (max_depth, min_samples_leaf and the gains bound the tree);
        # symmetric trees have 2**max_depth leaves whatever max_leaves says
        max_leaves=_NO_LIMIT if hp["max_leaves"] is None or symmetric else hp["max_leaves"],
        max_depth=depth, growth=hp["growth"],
        min_child_weight=hp["min_child_weight"], min_samples_leaf=hp["min_samples_leaf"],
        min_samples_leaf_counts=hp["min_samples_leaf_counts"],
        reg_lambda=hp["reg_lambda"], reg_alpha=hp["reg_alpha"],
        min_split_gain=hp["min_split_gain"], learning_rate=hp["learning_rate"],
        hist_mode=hp["hist_mode"], monotone=monotone, monotone_method=monotone_method,
        interaction=interaction, categorical=categorical,
        random_strength=hp.get("random_strength", 0.0))


def _boost_params(hp, seed, early, eval_at, feature_names, reject_inf,
                  tree_params) -> BoostParams:
    return BoostParams(
        objective_name=hp["objective"], n_estimators=hp["n_estimators"],
        max_bins=hp["max_bins"], tree=tree_params, subsample=hp["subsample"],
        colsample_bytree=hp["colsample_bytree"], eval_at=tuple(eval_at),
        gain=hp["gain"], n_iter_no_change=hp["n_iter_no_change"] if early else None,
        seed=seed, verbose=hp["verbose"],
        feature_names=None if feature_names is None else list(feature_names),
        n_jobs=hp["n_jobs"], reject_inf=reject_inf)


def warn_auto_hold_out(hp, group_ptr, val_mask, *, above):
    """Say that ``early_stopping="auto"`` held queries out of training, and how to avoid it.

    Nothing for ``early_stopping=True`` (asked for). ``group_ptr``: of the whole training
    set; ``val_mask``: its held-out rows; ``above``: frames between the caller and the
    user's call.
    """
    if hp["early_stopping"] != "auto":
        return
    n_rows, n_queries = int(group_ptr[-1]), group_ptr.size - 1
    n_val = int(np.count_nonzero(val_mask[group_ptr[:-1]]))  # whole queries are held out
    warnings.warn(
        f"early_stopping='auto' turned early stopping on ({n_rows} training rows > "
        f"{_AUTO_EARLY_STOPPING_ROWS}) and held {n_val} of the {n_queries} training queries "
        f"out of training (validation_fraction={hp['validation_fraction']}) to stop after "
        f"n_iter_no_change={hp['n_iter_no_change']} rounds without NDCG gain on them; this "
        f"can cost test NDCG. Pass early_stopping=False (the default) to train on every "
        f"query, or eval_set=[(X_val, y_val, qid_val)] to monitor a validation set of your "
        f"own.", UserWarning,
        stacklevel=3 + above)


def start_score(objective, y, group_ptr, sample_weight) -> float:
    """The constant score every row starts from: the objective's, of all training labels."""
    return float(objective.init_score(y, group_ptr, sample_weight))


def boost_on(device, X, y, group_ptr, sample_weight, objective, params, eval_sets=(),
             communicator=None, shard=None, continuation=None):
    """Run the boosting loop (:func:`skltr._gbdt.boosting.boost`) on ``device`` (a resolved
    :class:`~skltr._device.Device`), numba running ``params.n_jobs`` threads meanwhile;
    ``continuation``: the model it continues (:mod:`skltr._gbdt.continuation`)."""
    with numba_threads(params.n_jobs):
        return boost(X, y, group_ptr, sample_weight, objective, params, eval_sets,
                     device=device, communicator=communicator, shard=shard,
                     continuation=continuation)


def warn_if_no_split(result, *, above):
    """Warn when no tree of ``result`` (a ``BoostingResult``) split: a constant model
    (``above``: frames between the caller and the user's call)."""
    if not np.any(np.diff(result.ensemble.tree_ptr) > 1):
        warnings.warn(
            "no tree found a split: every gradient was zero or no split met min_samples_leaf"
            " / min_child_weight / min_split_gain (e.g. all labels of every query are "
            "equal, or every query has a single document); the model scores every row "
            "the same.", UserWarning,
            stacklevel=3 + above)
