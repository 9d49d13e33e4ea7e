"""The RankBoost loop: potentials -> integral histogram -> best stump -> scores, per round.

RankBoost (Freund, Iyer, Schapire and Singer, 2003) over the crucial pairs of every query,
with binary threshold weak rankers ``h(d) = [x_f(d) > theta]`` on binned features (the M3.int
weak learner of Wang et al.'s CUDA RankBoost)::

    X (grouped by query)  --BinMapper(max_bins=n_thresholds)-->  X_binned (once)
    each query's rows sorted by label (once); D_1: uniform over a query's crucial pairs
    round t:  pi(d)   from per-query sums of exp(+-H) by label     (skltr._cpu.rankboost)
              hist[f, bin] = sum of pi over the rows in the bin     (WEIGHT, fixed point)
              r(f, b, q_def) by suffix sums; the largest |r| wins  (best_stump)
              alpha = 0.5 ln((1 + r) / (1 - r));  H += alpha * h   (a stump, bins -> raw)
              Rounds.record: NDCG@k of the eval sets, early stopping
    Rounds.result: the stumps -> one TreeEnsemble

Pair weights are never materialised: ``D_t(a, b)`` is proportional to ``D_1(a, b) exp(H(a) -
H(b))``, so a round costs O(n) besides the histogram. ``pair_weighting="query"`` gives every
query the same total initial weight (times its mean row weight), ``"pair"`` every crucial pair
the same weight (so large queries weigh more).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numba
import numpy as np

from .._cpu.histogram import build_histogram
from .._cpu.rankboost import best_stump, pair_log_sums, potentials
from .._engine.binned_tree import stump
from .._engine.binning import BinMapper
from .._engine.histogram import HIST_PAD_BINS, WEIGHT, histogram_tasks
from .._engine.rounds import Rounds, binning_seed, evaluators, progress
from ..utils._threads import numba_threads

__all__ = ["RankBoostParams", "boost", "initial_log_weights", "R_MAX"]

#: Largest |r| used for alpha: a stump that orders every remaining pair (|r| = 1) would get
#: an infinite weight; capped, alpha is at most 0.5 ln((2 - 1e-10) / 1e-10) = 11.9.
R_MAX = 1.0 - 1e-10


@dataclass(frozen=True)
class RankBoostParams:
    """What the RankBoost loop needs besides the data (the estimator fills it)."""

    n_estimators: int
    n_thresholds: int
    pair_weighting: str = "query"
    eval_at: tuple = (10,)
    n_iter_no_change: int | None = None
    seed: int = 0
    verbose: int = 0
    feature_names: list | None = None
    n_jobs: int | None = None


def crucial_pairs(y, group_ptr):
    """Crucial pairs per query: ``(n**2 - sum of n_label**2) / 2`` (pairs of unequal label)."""
    out = np.zeros(group_ptr.size - 1, dtype=np.float64)
    for q in range(out.size):
        _, counts = np.unique(y[group_ptr[q]:group_ptr[q + 1]], return_counts=True)
        n = counts.sum()
        out[q] = (n * n - np.sum(counts * counts)) / 2.0
    return out


def initial_log_weights(y, group_ptr, sample_weight, pair_weighting):
    """``log c_q``: the log initial weight of each crucial pair of query ``q`` (-inf without
    pairs), so that the initial weights sum to 1."""
    pairs = crucial_pairs(y, group_ptr)
    sizes = np.diff(group_ptr)
    w = (np.ones(sizes.size) if sample_weight is None
         else np.add.reduceat(sample_weight, group_ptr[:-1]) / sizes)  # mean row weight
    has = (pairs > 0) & (w > 0)
    if not has.any():
        return np.full(sizes.size, -np.inf)
    mass = w * (1.0 if pair_weighting == "query" else pairs)  # each query's total mass
    with np.errstate(divide="ignore"):
        log_c = np.log(mass) - np.log(mass[has].sum()) - np.log(np.where(has, pairs, 1.0))
    return np.where(has, log_c, -np.inf)


def _lap(stages, name, t):
    """Add the time since ``t`` to ``stages[name]``; return now."""
    now = time.perf_counter()
    stages[name] += now - t
    return now


def _label_order(y, group_ptr):
    """Each query's rows sorted by label (stable), as one array of row indices."""
    qid = np.repeat(np.arange(group_ptr.size - 1), np.diff(group_ptr))
    return np.lexsort((y, qid)).astype(np.int64)


def boost(X, y, group_ptr, sample_weight, params: RankBoostParams, eval_sets=()):
    """Run the RankBoost rounds on the CPU; see the module docstring.

    ``X`` (float64 / float32, or CSR / CSC), ``y`` and ``sample_weight`` are grouped by query
    (``group_ptr``). Returns a :class:`~skltr._engine.rounds.BoostingResult`.
    """
    p = params
    t0 = time.perf_counter()
    mapper = BinMapper(max_bins=p.n_thresholds, random_state=binning_seed(p.seed),
                       n_threads=p.n_jobs)
    Xb = mapper.fit_transform(X)
    evals = [(e, mapper.transform(e.X)) for e in eval_sets]
    binning_s = time.perf_counter() - t0
    n, n_features = Xb.shape
    y = np.ascontiguousarray(y, dtype=np.float64)
    log_c = initial_log_weights(y, group_ptr, sample_weight, p.pair_weighting)
    if not np.isfinite(log_c).any():
        warnings.warn("no query has two documents of different labels (no crucial pair): "
                      "RankBoost has nothing to learn and scores every row the same.",
                      UserWarning, stacklevel=4)
    row_log_c = np.repeat(log_c, np.diff(group_ptr))
    order = _label_order(y, group_ptr)
    H = np.zeros(n)
    log_a, log_b = np.empty(n), np.empty(n)
    log_pairs = np.empty(group_ptr.size - 1)
    pi = np.empty(n, dtype=np.int64)  # fixed point (skltr._cpu.rankboost.PI_SHIFT)
    hist = np.zeros((n_features, mapper.missing_bin + 1 + HIST_PAD_BINS, WEIGHT.n_channels),
                    WEIGHT.dtype)
    rows = np.empty(0, dtype=np.uint32)  # unused: every row
    all_features = np.ones(n_features, dtype=np.bool_)
    f_abs, f_r = np.empty(n_features, np.int64), np.empty(n_features, np.int64)
    f_b, f_q = np.empty(n_features, np.int64), np.empty(n_features, np.int64)
    eval_scores = [np.zeros(e.y.shape[0]) for e, _ in evals]
    evals_ = evaluators(eval_sets, p.eval_at)
    stages = dict.fromkeys(("potentials_s", "histogram_s", "best_stump_s", "update_s"), 0.0)
    rounds, bar = progress(range(p.n_estimators), p.verbose, "rankboost")
    log = Rounds(n_features, [e.name for e, _ in evals], evals_, p.n_iter_no_change, bar)
    try:
        with numba_threads(p.n_jobs):
            tasks = histogram_tasks(numba.get_num_threads(), n_features)
            scratch = np.empty((max(tasks[0] - 1, 1), hist.size), WEIGHT.dtype)
            for it in rounds:
                t = time.perf_counter()
                pair_log_sums(H, y, order, group_ptr, log_a, log_b, log_pairs)
                terms = log_c + log_pairs
                finite = terms[np.isfinite(terms)]
                log_z = (np.logaddexp.reduce(finite) if finite.size else 0.0)
                potentials(H, log_a, log_b, row_log_c, log_z, pi)
                t = _lap(stages, "potentials_s", t)
                build_histogram(Xb, pi, pi, rows, 0, n, False, hist, scratch, *tasks)
                t = _lap(stages, "histogram_s", t)
                f, b, q_def, r = best_stump(hist, mapper.n_bins, all_features,
                                            mapper.missing_bin, f_abs, f_r, f_b, f_q)
                t = _lap(stages, "best_stump_s", t)
                r = float(np.clip(r, -R_MAX, R_MAX))
                alpha = 0.5 * np.log((1.0 + r) / (1.0 - r))
                tree = stump(max(f, 0), max(b, 0), not q_def, 0.0, alpha,
                             mapper.missing_bin, gain=abs(alpha))
                tree.add_to_scores(Xb, H)
                _lap(stages, "update_s", t)
                log.add_tree(tree)
                if evals:
                    values = []
                    for (_, Xe), ev, s in zip(evals, evals_, eval_scores):
                        tree.add_to_scores(Xe, s)
                        values.append(ev(s))
                    if log.record(it, values):
                        break
                if abs(r) == 0.0:  # no stump orders any remaining pair better than chance
                    break
    finally:
        if bar is not None:
            bar.close()
    boosting_s = time.perf_counter() - t0 - binning_s
    return log.result(mapper, 0.0, source={"library": "skltr", "estimator": "RankBoostRanker",
                                           "pair_weighting": p.pair_weighting},
                      feature_names=p.feature_names,
                      timings={"binning_s": binning_s, "boosting_s": boosting_s, **stages})


