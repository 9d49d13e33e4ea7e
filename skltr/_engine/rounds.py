"""What every boosting loop shares: random streams, subsamples, eval sets, the round log.

A boosting loop (the GBDT's :mod:`skltr._gbdt.boosting`, on every device, RankBoost's
:mod:`skltr._rankboost.boosting`, and the next rankers' loops) draws its randomness here,
keeps its trees, metric history and early stopping in a :class:`Rounds`, and returns the
:class:`BoostingResult` that :meth:`Rounds.result` builds.

Randomness (query subsample, feature subsample, the validation split, the binning sample)
comes from ``numpy.random.default_rng([seed, stream, round])``: every draw depends only on
``seed``, its stream and the round number, never on threads or on what earlier rounds drew.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..metrics import NDCGEvaluator
from .binned_tree import binned_trees_to_ensemble

__all__ = ["EvalData", "BoostingResult", "Rounds", "rng", "binning_seed", "evaluators",
           "split_queries", "hold_out", "sub_group_ptr",
           "query_subsample_rows", "feature_subsample", "progress", "inf_error",
           "STREAM_VALIDATION", "STREAM_SUBSAMPLE", "STREAM_COLSAMPLE", "STREAM_BINNING"]

# Stream identifiers of the random generators (the second word of every seed sequence), so
# that the query subsample, the feature subsample and the validation split never share draws.
STREAM_VALIDATION = 1
STREAM_SUBSAMPLE = 2
STREAM_COLSAMPLE = 3
STREAM_BINNING = 4


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
    """What a boosting loop returns (:meth:`Rounds.result`).

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


def inf_error() -> ValueError:
    """The error of a training X with +-inf (the estimators refuse it: see ``reject_inf``)."""
    return ValueError("Input X contains infinity (+inf or -inf), which this ranker refuses: "
                      "use NaN for a missing value, or a large finite value.")


def rng(seed, stream, round_=0):
    """The generator of one (seed, stream, round): independent of threads and earlier draws."""
    return np.random.default_rng([int(seed), int(stream), int(round_)])


def binning_seed(seed) -> int:
    """The BinMapper's seed of a fit (the same on every device and loop: the same cuts)."""
    return int(rng(seed, STREAM_BINNING).integers(2**31 - 1))


def evaluators(eval_sets, eval_at, gain="exp2"):
    """One :class:`~skltr.metrics.NDCGEvaluator` per eval set (rows grouped by query)."""
    return [NDCGEvaluator(e.y, qid=np.repeat(np.arange(e.group_ptr.size - 1),
                                             np.diff(e.group_ptr)),
                          eval_at=eval_at, gain=gain, sample_weight=e.sample_weight)
            for e in eval_sets]


def split_queries(group_ptr, fraction, seed):
    """Hold out ``ceil(fraction * n_queries)`` whole queries (at least 1, at most all but 1).

    Returns boolean row masks ``(train, validation)``; deterministic given ``seed``. Raises
    ValueError for fewer than 2 queries (early stopping without an eval set: nothing to hold
    out).
    """
    n_queries = group_ptr.size - 1
    if n_queries < 2:
        raise ValueError(
            f"early_stopping=True without an eval_set holds out validation_fraction "
            f"of the queries, but the training data has {n_queries} query; pass "
            f"eval_set=[(X_val, y_val, qid_val)] or set early_stopping=False.")
    n_val = min(max(int(np.ceil(fraction * n_queries)), 1), n_queries - 1)
    held_out = np.zeros(n_queries, dtype=bool)
    held_out[rng(seed, STREAM_VALIDATION).permutation(n_queries)[:n_val]] = True
    val_rows = np.repeat(held_out, np.diff(group_ptr))
    return ~val_rows, val_rows


def hold_out(X, y, sample_weight, group_ptr, fraction, seed):
    """Hold ``fraction`` of the queries out for early stopping (:func:`split_queries`).

    Returns ``((X, y, sample_weight, group_ptr) of the training queries, [EvalData
    "validation" of the held-out ones], held-out row mask)``; the same queries for the same
    ``seed``.
    """
    w = sample_weight
    train, val = split_queries(group_ptr, fraction, seed)
    evals = [EvalData("validation", X[val], y[val], sub_group_ptr(group_ptr, val),
                      None if w is None else w[val])]
    kept = (X[train], y[train], None if w is None else w[train],
            sub_group_ptr(group_ptr, train))
    return kept, evals, val


def sub_group_ptr(group_ptr, row_mask):
    """group_ptr of the queries whose rows ``row_mask`` keeps (whole queries)."""
    sizes = np.add.reduceat(row_mask.astype(np.int64), group_ptr[:-1]) if (
        group_ptr.size > 1) else np.zeros(0, dtype=np.int64)
    sizes = sizes[sizes > 0]
    ptr = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    return ptr


def query_subsample_rows(group_ptr, fraction, seed, round_, query_index=None, n_queries=None):
    """Rows (sorted) of a random ``fraction`` of the queries for this round, or None for all.

    The draw is over all ``n_queries`` queries of the training set; when ``group_ptr`` holds
    a shard of them (a Dask worker's), ``query_index`` gives each one's index in the whole
    set, so that every worker keeps the queries a one-process fit keeps.
    """
    if fraction >= 1.0:
        return None
    if n_queries is None:
        n_queries = group_ptr.size - 1
    n_take = max(int(round(fraction * n_queries)), 1)
    chosen = np.zeros(n_queries, dtype=bool)
    chosen[rng(seed, STREAM_SUBSAMPLE, round_).permutation(n_queries)[:n_take]] = True
    if query_index is not None:
        chosen = chosen[query_index]
    return np.flatnonzero(np.repeat(chosen, np.diff(group_ptr)))


def feature_subsample(n_features, fraction, seed, round_):
    """A boolean mask of ``max(1, round(fraction * n_features))`` features, or None for all."""
    if fraction >= 1.0:
        return None
    n_take = max(int(round(fraction * n_features)), 1)
    mask = np.zeros(n_features, dtype=bool)
    mask[rng(seed, STREAM_COLSAMPLE, round_).permutation(n_features)[:n_take]] = True
    return mask


def progress(rounds, verbose, desc):
    """``rounds`` wrapped in a tqdm bar when ``verbose > 0``; returns ``(iterable, bar)``."""
    if verbose <= 0:
        return rounds, None
    from tqdm.auto import tqdm  # noqa: PLC0415 - an optional display dependency

    bar = tqdm(rounds, desc=desc, leave=False)
    return bar, bar


class Rounds:
    """What a boosting loop keeps round by round, its early stopping and its result.

    Shared by every boosting loop (the GBDT's CPU and GPU loops; RankBoost next), so that
    they record the same history, stop on the same rule and return the same
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

    def result(self, mapper, base_score, *, source, feature_names, timings):
        """The kept trees (up to the best round under early stopping) as a BoostingResult.

        ``source`` is the ensemble's provenance record (library, estimator, objective).
        """
        n_run = len(self.trees)
        early = self.n_iter_no_change is not None and bool(self.names)
        n_keep = self.best_round + 1 if early and self.best_round >= 0 else n_run
        ensemble = binned_trees_to_ensemble(self.trees[:n_keep], mapper, base_score,
                                            feature_names=feature_names, source=source)
        nf = self.n_features
        return BoostingResult(
            ensemble=ensemble, evals_result=self.history,
            best_iteration=n_keep if early else None, n_rounds_run=n_run,
            split_gain=np.sum(self.gains[:n_keep], axis=0) if n_keep else np.zeros(nf),
            split_count=(np.sum(self.counts[:n_keep], axis=0) if n_keep
                         else np.zeros(nf, dtype=np.int64)).astype(np.int64),
            bin_mapper=mapper, timings=timings,
        )
