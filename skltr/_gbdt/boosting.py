"""The boosting loop of ``GPUHistGBDTRanker``: rounds of gradients -> tree -> score update.

Host orchestration only; no scikit-learn here (the estimator validates, this module trusts its
inputs). One call of :func:`boost` does, in order::

    X (grouped by query)  --BinMapper.fit/transform-->  X_binned (uint8, once)
    eval sets             --same BinMapper-->           eval X_binned
    scores = init_score
    round t:  objective.gradients(scores, ...) -> grad, hess           (all training rows)
              [subsample: the rows of a random subset of queries]
              [colsample_bytree: a random subset of features]
              TreeGrower(X_binned, grad, hess, ...).grow() -> GrownTree
              train scores += leaf values (grower's row -> leaf map, or predict_binned)
              eval scores  += predict_binned(tree, eval X_binned)
              record NDCG@k of every eval set (one kernel call per cut-off)
              early stopping on the first eval set's first cut-off
    trees[:best] -> GrownTree.to_node_arrays(bin_mapper) -> one TreeEnsemble

Randomness (query subsample, feature subsample, the validation split) comes from
``numpy.random.default_rng([seed, stream, round])`` so that every round's draw depends only on
``seed`` and the round number, never on threads or on what earlier rounds drew.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._dtypes import G_H_DTYPE, Y_DTYPE

__all__ = ["EvalData", "BoostingResult", "NDCGEvaluator", "boost", "split_queries"]

# Stream identifiers of the random generators (the second word of every seed sequence), so
# that the query subsample, the feature subsample and the validation split never share draws.
_STREAM_VALIDATION = 1
_STREAM_SUBSAMPLE = 2
_STREAM_COLSAMPLE = 3
_STREAM_BINNING = 4


@dataclass
class EvalData:
    """One evaluation set, rows grouped by query (query ``q`` is ``group_ptr[q]:[q+1]``)."""

    name: str
    X: np.ndarray
    y: np.ndarray
    group_ptr: np.ndarray
    sample_weight: np.ndarray | None = None


@dataclass
class BoostingResult:
    """What :func:`boost` returns.

    ``evals_result`` maps eval-set name -> ``"ndcg@k"`` -> one value per round run (LightGBM's
    ``evals_result_`` layout). ``best_iteration`` is the 1-based number of the round with the
    best monitored score when early stopping ran (the ensemble keeps that many trees), else
    None. ``split_gain`` / ``split_count`` are per-feature totals over the kept trees.
    """

    ensemble: object
    evals_result: dict
    best_iteration: int | None
    n_rounds_run: int
    split_gain: np.ndarray
    split_count: np.ndarray
    bin_mapper: object
    timings: dict = field(default_factory=dict)


class NDCGEvaluator:
    """NDCG@k of one fixed set of queries for many score vectors: the per-round eval metric.

    It is :func:`skltr.metrics.ndcg_score` with its validation, grouping and gains done once:
    each call is one run of the metric kernel per cut-off (parallel over queries). Ties are
    averaged and all-zero queries count 1.0, as ``ndcg_score``'s defaults (and so as the
    ranker's ``score``).
    """

    def __init__(self, y, group_ptr, eval_at, *, gain="exp2", sample_weight=None):
        from ..metrics import _ranking  # noqa: PLC0415 - metrics compile lazily

        sizes = np.diff(group_ptr)
        qid = np.repeat(np.arange(sizes.size), sizes)  # already grouped: no reordering
        self._ranking = _ranking
        self._grouped = _ranking._Grouped(y, np.zeros(len(y)), qid, sample_weight)
        self._gains = _ranking._gains(self._grouped, gain)
        self.eval_at = [int(k) for k in eval_at]
        self.names = [f"ndcg@{k}" for k in self.eval_at]

    def __call__(self, scores) -> list[float]:
        r = self._ranking
        self._grouped.y_score = np.ascontiguousarray(scores, dtype=np.float64)
        out = []
        for k in self.eval_at:
            per_query = r._run(r._kernels.NDCG, self._grouped, values=self._gains, k=k,
                               ties="average", zero_relevance="one", single_document="include")
            out.append(r._finish(per_query, self._grouped, False, "ndcg"))
        return out


def inf_error() -> ValueError:
    """The error of a training X with +-inf (the estimators refuse it: see ``reject_inf``)."""
    return ValueError("Input X contains infinity (+inf or -inf), which this ranker refuses: "
                      "use NaN for a missing value, or a large finite value.")


def _rng(seed, stream, round_=0):
    return np.random.default_rng([int(seed), int(stream), int(round_)])


def split_queries(group_ptr, fraction, seed):
    """Hold out ``ceil(fraction * n_queries)`` whole queries (at least 1, at most all but 1).

    Returns boolean row masks ``(train, validation)``; deterministic given ``seed``.
    """
    n_queries = group_ptr.size - 1
    n_val = min(max(int(np.ceil(fraction * n_queries)), 1), n_queries - 1)
    held_out = np.zeros(n_queries, dtype=bool)
    held_out[_rng(seed, _STREAM_VALIDATION).permutation(n_queries)[:n_val]] = True
    val_rows = np.repeat(held_out, np.diff(group_ptr))
    return ~val_rows, val_rows


def _query_subsample_rows(group_ptr, fraction, seed, round_):
    """Rows (sorted) of a random ``fraction`` of the queries for this round, or None for all."""
    n_queries = group_ptr.size - 1
    if fraction >= 1.0:
        return None
    n_take = max(int(round(fraction * n_queries)), 1)
    chosen = np.zeros(n_queries, dtype=bool)
    chosen[_rng(seed, _STREAM_SUBSAMPLE, round_).permutation(n_queries)[:n_take]] = True
    return np.flatnonzero(np.repeat(chosen, np.diff(group_ptr)))


def _feature_subsample(n_features, fraction, seed, round_):
    """A boolean mask of ``max(1, round(fraction * n_features))`` features, or None for all."""
    if fraction >= 1.0:
        return None
    n_take = max(int(round(fraction * n_features)), 1)
    mask = np.zeros(n_features, dtype=bool)
    mask[_rng(seed, _STREAM_COLSAMPLE, round_).permutation(n_features)[:n_take]] = True
    return mask


# --------------------------------------------------------------------------------------------
# The seams to the other stages. Each stage is reached through one small function here, so
# that the GPU path (or a change of a stage's signature) touches one place.
# --------------------------------------------------------------------------------------------


def _fit_bin_mapper(X, max_bins, seed, n_jobs):
    from .binning import BinMapper  # noqa: PLC0415

    seed = int(_rng(seed, _STREAM_BINNING).integers(2**31 - 1))
    mapper = BinMapper(max_bins=max_bins, random_state=seed, n_threads=n_jobs)
    return mapper, mapper.fit_transform(X)


class _Grower:
    """Grows the trees of one fit with the mapper's bin layout, reusing histogram buffers."""

    def __init__(self, X_binned, mapper, tree_params, communicator, n_jobs):
        self.X_binned, self.mapper = X_binned, mapper
        self.params, self.communicator, self.n_jobs = tree_params, communicator, n_jobs
        # Made once per fit: the grower's partition kernel reads the transpose,
        # and the pool keeps histogram pages warm across trees (gbdt_internals.rst).
        self.X_binned_T = np.ascontiguousarray(X_binned.T)
        self.pool = None

    def __call__(self, grad, hess, rows, feature_mask):
        from .grower import TreeGrower  # noqa: PLC0415

        m = self.mapper
        grower = TreeGrower(self.X_binned, grad, hess, n_bins=m.n_bins,
                            missing_bin=m.missing_bin, has_missing=m.has_missing, rows=rows,
                            feature_mask=feature_mask, communicator=self.communicator,
                            pool=self.pool, X_binned_T=self.X_binned_T,
                            n_threads=self.n_jobs, **self.params)
        tree = grower.grow()
        self.pool = grower.pool
        return tree


def _assemble(trees, mapper, base_score, *, feature_names, objective_name):
    """All kept trees as one TreeEnsemble (``decision="<="``, float64 thresholds)."""
    from .grower import grown_trees_to_ensemble  # noqa: PLC0415

    return grown_trees_to_ensemble(
        trees, mapper, base_score, feature_names=feature_names,
        source={"library": "skltr", "estimator": "GPUHistGBDTRanker",
                "objective": objective_name})


class _Rounds:
    """What a boosting loop keeps round by round, its early stopping and its result.

    Shared by this module's loop and the GPU loop (:func:`skltr._gpu.boosting.boost`), so
    that both record the same history, stop on the same rule and return the same
    :class:`BoostingResult`. Per round the loop calls :meth:`add_tree`, then, when there are
    eval sets, :meth:`record` with every set's metric values, which says whether to stop.
    """

    def __init__(self, n_features, eval_names, evaluators, n_iter_no_change, bar=None):
        self.n_features = n_features
        self.names = list(eval_names)
        self.evaluators = list(evaluators)
        self.n_iter_no_change = n_iter_no_change
        self.bar = bar
        self.history = {name: {m: [] for m in ev.names}
                        for name, ev in zip(self.names, self.evaluators)}
        self.trees, self.gains, self.counts = [], [], []
        self.best_score, self.best_round = -np.inf, -1

    def add_tree(self, tree):
        """Keep the round's tree and its per-feature split gains and counts."""
        self.trees.append(tree)
        internal = np.asarray(tree.left) >= 0
        split_features = np.asarray(tree.feature)[internal]
        self.gains.append(np.bincount(split_features, weights=np.asarray(tree.gain)[internal],
                                      minlength=self.n_features))
        self.counts.append(np.bincount(split_features, minlength=self.n_features))

    def record(self, it, values) -> bool:
        """Record round ``it``'s metrics (one list per eval set); True means stop now.

        The first eval set's first metric is monitored: a strict improvement (as LightGBM's
        early stopping) makes ``it`` the best round; ``n_iter_no_change`` rounds without one
        stop the loop.
        """
        for name, ev, vals in zip(self.names, self.evaluators, values):
            for metric, value in zip(ev.names, vals):
                self.history[name][metric].append(value)
        monitored = self.history[self.names[0]][self.evaluators[0].names[0]][-1]
        if self.bar is not None:
            self.bar.set_postfix({f"{self.names[0]} {self.evaluators[0].names[0]}":
                                  f"{monitored:.5f}"})
        if monitored > self.best_score:
            self.best_score, self.best_round = monitored, it
        elif self.n_iter_no_change is not None and it - self.best_round >= self.n_iter_no_change:
            return True
        return False

    def result(self, mapper, base_score, *, feature_names, objective_name, timings):
        """The kept trees (up to the best round under early stopping) as a BoostingResult."""
        n_run = len(self.trees)
        early = self.n_iter_no_change is not None and bool(self.names)
        n_keep = self.best_round + 1 if early and self.best_round >= 0 else n_run
        ensemble = _assemble(self.trees[:n_keep], mapper, base_score,
                             feature_names=feature_names, objective_name=objective_name)
        nf = self.n_features
        return BoostingResult(
            ensemble=ensemble, evals_result=self.history,
            best_iteration=n_keep if early else None, n_rounds_run=n_run,
            split_gain=np.sum(self.gains[:n_keep], axis=0) if n_keep else np.zeros(nf),
            split_count=(np.sum(self.counts[:n_keep], axis=0) if n_keep
                         else np.zeros(nf, dtype=np.int64)).astype(np.int64),
            bin_mapper=mapper, timings=timings,
        )


# --------------------------------------------------------------------------------------------
# the loop
# --------------------------------------------------------------------------------------------


def boost(X, y, group_ptr, sample_weight=None, *, objective, objective_name, n_estimators,
          max_bins, tree_params, subsample=1.0, colsample_bytree=1.0, eval_sets=(),
          eval_at=(10,), gain="exp2", n_iter_no_change=None, seed=0, verbose=0,
          feature_names=None, communicator=None, n_jobs=None, device=None,
          reject_inf=False) -> BoostingResult:
    """Run the boosting rounds; see the module docstring.

    Parameters
    ----------
    X : ndarray of float64, shape (n_samples, n_features)
        Training rows grouped by query (NaN allowed: it gets the missing bin).
    y, sample_weight : ndarray of shape (n_samples,)
    group_ptr : ndarray of int64, shape (n_queries + 1,)
    objective : Objective
        From :func:`skltr._gbdt.objectives.make_objective`.
    objective_name : str
        Recorded in the ensemble's ``source``.
    n_estimators : int
        Maximum number of rounds (one tree per round).
    max_bins : int
        Non-missing bins per feature (2..255).
    tree_params : dict
        Keyword arguments of ``TreeGrower`` (leaves, depth, growth, regularisation,
        learning rate, ``hist_mode``).
    subsample : float
        Fraction of the *queries* each tree is grown on.
    colsample_bytree : float
        Fraction of the features each tree may split on.
    eval_sets : sequence of EvalData
        Scored after every round; the first one drives early stopping.
    eval_at : sequence of int
        NDCG cut-offs recorded per round; the first is monitored.
    gain : {"exp2", "linear"}
        Gain of the recorded NDCG.
    n_iter_no_change : int or None
        Stop after this many rounds without a strict improvement of the monitored score
        (LightGBM's ``early_stopping_rounds``); None runs all rounds.
    seed : int
        Seed of every random draw.
    verbose : int
        > 0 shows a tqdm progress bar with the monitored score.
    feature_names : list of str or None
    communicator : object with ``allreduce_sum``, optional
        Passed to the grower; default ``LocalCommunicator()``.
    n_jobs : int or None
        Threads of every kernel (``n_jobs`` semantics). The stages set numba's thread count
        themselves, so it is passed to each rather than set once around the loop.
    device : skltr._device.Device or None
        A CUDA device runs :func:`skltr._gpu.boosting.boost` instead (same parameters and
        result); None or the CPU runs this loop.
    reject_inf : bool
        Raise ValueError when ``X`` or an eval set's ``X`` holds +inf or -inf (otherwise they
        bin as the largest / smallest values). The estimator asks for it when it skipped its
        own host check of X's values: the GPU loop checks while binning, for free.

    Returns
    -------
    BoostingResult
    """
    from .communicator import LocalCommunicator  # noqa: PLC0415

    if device is not None and device.is_gpu:  # the GPU loop (imports CuPy)
        from .._gpu.boosting import boost as boost_gpu  # noqa: PLC0415

        return boost_gpu(X, y, group_ptr, sample_weight, objective=objective,
                         objective_name=objective_name, n_estimators=n_estimators,
                         max_bins=max_bins, tree_params=tree_params, subsample=subsample,
                         colsample_bytree=colsample_bytree, eval_sets=eval_sets,
                         eval_at=eval_at, gain=gain, n_iter_no_change=n_iter_no_change,
                         seed=seed, verbose=verbose, feature_names=feature_names,
                         communicator=communicator, n_jobs=n_jobs,
                         device_index=device.index, reject_inf=reject_inf)
    if reject_inf and any(np.isinf(a).any() for a in [X] + [e.X for e in eval_sets]):
        raise inf_error()
    if communicator is None:
        communicator = LocalCommunicator()
    n_samples, n_features = X.shape
    t0 = time.perf_counter()
    mapper, X_binned = _fit_bin_mapper(X, max_bins, seed, n_jobs)
    evals = [(e, mapper.transform(e.X)) for e in eval_sets]
    binning_s = time.perf_counter() - t0

    # Validates the labels for this objective, then gives the constant start score.
    init = float(objective.init_score(y, group_ptr, sample_weight))
    scores = np.full(n_samples, init, dtype=Y_DTYPE)
    grad = np.empty(n_samples, dtype=G_H_DTYPE)
    hess = np.empty(n_samples, dtype=G_H_DTYPE)
    eval_scores = [np.full(e.y.shape[0], init, dtype=Y_DTYPE) for e, _ in evals]
    evaluators = [NDCGEvaluator(e.y, e.group_ptr, eval_at, gain=gain,
                                sample_weight=e.sample_weight) for e, _ in evals]

    grow = _Grower(X_binned, mapper, tree_params, communicator, n_jobs)
    rounds = range(n_estimators)
    bar = None
    if verbose > 0:
        from tqdm.auto import tqdm  # noqa: PLC0415

        rounds = bar = tqdm(rounds, desc="boosting", leave=False)
    log = _Rounds(n_features, [e.name for e, _ in evals], evaluators, n_iter_no_change, bar)
    try:
        for it in rounds:
            objective.gradients(scores, y, group_ptr, sample_weight, grad, hess, it)
            rows = _query_subsample_rows(group_ptr, subsample, seed, it)
            features = _feature_subsample(n_features, colsample_bytree, seed, it)
            tree = grow(grad, hess, rows, features)
            if rows is None:  # the grower's row -> leaf map: no traversal
                tree.add_to_training_scores(scores)
            else:  # the tree saw only the sampled queries; every row's score moves
                tree.add_to_scores(X_binned, scores, n_jobs)
            # The row -> leaf map is a full column of int32 per tree: drop it once used, or
            # 200 trees on 500k rows would hold 400 MB until the end of the fit.
            tree.leaf_of_row = tree.rows = None
            log.add_tree(tree)
            if not evals:
                continue
            values = []
            for (_, Xb), ev, s in zip(evals, evaluators, eval_scores):
                tree.add_to_scores(Xb, s, n_jobs)
                values.append(ev(s))
            if log.record(it, values):
                break
    finally:
        if bar is not None:
            bar.close()
    boosting_s = time.perf_counter() - t0 - binning_s
    return log.result(mapper, init, feature_names=feature_names, objective_name=objective_name,
                      timings={"binning_s": binning_s, "boosting_s": boosting_s})
