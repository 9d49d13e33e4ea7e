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

One loop for both devices: the round's four stages are methods of a kernels object, the
CPU back-end :class:`skltr._rankboost.kernels_cpu.CPURoundKernels` (numba) or the CUDA one
:class:`skltr._rankboost.kernels_cuda.GPURoundKernels` (the same stumps from the same
potentials), which also times them (``timings_``). The loop imports no device code besides
the CPU back-end (its default); the CUDA one comes in through ``kernels``.

Pair weights are never materialised: ``D_t(a, b)`` is proportional to ``D_1(a, b) exp(H(a) -
H(b))``, so a round costs O(n) besides the histogram. ``pair_weighting="query"`` gives every
query the same total initial weight (times its mean row weight), ``"pair"`` every crucial pair
the same weight (so large queries weigh more).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._engine.binned_tree import stump
from .._engine.rounds import Rounds, evaluators, progress
from ..trees._traversal import node_visits
from ..utils._threads import numba_threads
from .kernels_cpu import CPURoundKernels

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
    sizes = np.diff(group_ptr)
    qid = np.repeat(np.arange(sizes.size), sizes)
    ys = np.asarray(y)[_label_order(y, group_ptr)]  # runs of one label within each query
    new_run = np.r_[True, (ys[1:] != ys[:-1]) | (qid[1:] != qid[:-1])] if ys.size else []
    run_size = np.diff(np.r_[np.flatnonzero(new_run), ys.size])
    same = np.bincount(qid[new_run], weights=run_size.astype(np.float64) ** 2,
                       minlength=sizes.size)  # sum of n_label**2: exact below 2**53
    return (sizes.astype(np.float64) ** 2 - same) / 2.0


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


def _label_order(y, group_ptr):
    """Each query's rows sorted by label (stable), as one array of row indices."""
    qid = np.repeat(np.arange(group_ptr.size - 1), np.diff(group_ptr))
    return np.lexsort((y, qid)).astype(np.int64)


#: The stages of a round, in the order they run (``timings_`` keys).
STAGES = ("potentials_s", "histogram_s", "best_stump_s", "update_s")


def boost(X, y, group_ptr, sample_weight, params: RankBoostParams, eval_sets=(),
          kernels=CPURoundKernels):
    """Run the RankBoost rounds; see the module docstring.

    ``X`` (float64 / float32, or CSR / CSC), ``y`` and ``sample_weight`` are grouped by query
    (``group_ptr``). ``kernels``: the class of the device's round kernels
    (:class:`~skltr._rankboost.kernels_cpu.CPURoundKernels`, or
    :class:`skltr._rankboost.kernels_cuda.GPURoundKernels` under the GPU's device context:
    :func:`skltr._rankboost.kernels_cuda.boost`). Returns a
    :class:`~skltr._engine.rounds.BoostingResult`.
    """
    p = params
    t0 = time.perf_counter()
    with numba_threads(p.n_jobs):
        k = kernels(X, [e.X for e in eval_sets], p)
    mapper = k.mapper
    binning_s = time.perf_counter() - t0
    n_features = X.shape[1]
    y = np.ascontiguousarray(y, dtype=np.float64)
    log_c = initial_log_weights(y, group_ptr, sample_weight, p.pair_weighting)
    if not np.isfinite(log_c).any():
        warnings.warn("no query has two documents of different labels (no crucial pair): "
                      "RankBoost has nothing to learn and scores every row the same.",
                      UserWarning, stacklevel=6)  # boost, _fit, RankerMixin.fit, fit, its check
    evals_ = evaluators(eval_sets, p.eval_at)
    rounds, bar = progress(range(p.n_estimators), p.verbose, "rankboost")
    log = Rounds(n_features, [e.name for e in eval_sets], evals_, p.n_iter_no_change, bar)
    try:
        with numba_threads(p.n_jobs):
            k.start(y, group_ptr, log_c, _label_order(y, group_ptr))
            for it in rounds:
                with k.stage("potentials_s"):
                    k.potentials()
                with k.stage("histogram_s"):
                    k.histogram()
                with k.stage("best_stump_s"):
                    f, b, q_def, r = k.best_stump()
                r = float(np.clip(r, -R_MAX, R_MAX))
                alpha = 0.5 * np.log((1.0 + r) / (1.0 - r))
                f, b = max(f, 0), max(b, 0)  # no feature: r = 0, a stump of weight 0
                with k.stage("update_s"):
                    k.add_stump(f, b, q_def, alpha)
                log.add_tree(stump(f, b, not q_def, 0.0, alpha, mapper.missing_bin,
                                   gain=abs(alpha)))
                if eval_sets and log.record(it, [ev(s) for ev, s in zip(
                        evals_, k.eval_scores(f, b, q_def, alpha))]):
                    break
                if abs(r) == 0.0:  # no stump orders any remaining pair better than chance
                    break
    finally:
        if bar is not None:
            bar.close()
    boosting_s = time.perf_counter() - t0 - binning_s
    stages = dict.fromkeys(STAGES, 0.0) | k.stage_seconds()
    result = log.result(mapper, 0.0, source={"library": "skltr", "estimator": "RankBoostRanker",
                                             "pair_weighting": p.pair_weighting},
                        feature_names=p.feature_names,
                        timings={"binning_s": binning_s, "boosting_s": boosting_s, **stages})
    # TreeSHAP's cover: the training rows on each side of every stump
    Xb = getattr(k, "Xb", None)
    if isinstance(Xb, np.ndarray):  # the CPU's binned rows: counted, no traversal kernel
        result.ensemble.cover = stump_cover(log.trees[:result.ensemble.n_trees], Xb,
                                            mapper.missing_bin)
    else:
        result.ensemble.cover = node_visits(result.ensemble, X,
                                            n_jobs=p.n_jobs).astype(np.float64)
    return result


def stump_cover(trees, X_binned, missing_bin):
    """The training rows through each node (root, left, right) of the stumps ``trees``, from
    the binned rows ``X_binned``: what :func:`~skltr.trees._traversal.node_visits` counts on
    the raw rows, as float64 -- a stump's raw test is exactly "bin <= b" (the binning's cut
    values are its thresholds), NaN in the missing bin going the default way -- without
    compiling the traversal kernel on a first run (1 s of CPU)."""
    n = X_binned.shape[0]
    cumulative = {}
    cover = np.empty(3 * len(trees), dtype=np.float64)
    for t, tree in enumerate(trees):
        f, b = int(tree.feature[0]), int(tree.bin_threshold[0])
        if f not in cumulative:
            cumulative[f] = np.cumsum(np.bincount(X_binned[:, f], minlength=missing_bin + 1))
        c = cumulative[f]
        left = int(c[min(b, missing_bin - 1)])  # the non-missing rows of bins <= b
        if tree.default_left[0]:
            left += int(c[missing_bin] - c[missing_bin - 1])
        cover[3 * t:3 * t + 3] = (n, left, n - left)
    return cover
