"""Learning to rank from clicks: the two position-bias models of LambdaMART.

Clicks are biased by the position a document was shown at: a relevant document shown at
position 8 is clicked less often than the same document at position 0, because fewer users
look that far. Two remedies, one per peer library, both learned jointly with the trees:

``"unbiased"`` -- Unbiased LambdaMART (Hu et al., "Unbiased LambdaMART: An Unbiased Pairwise
    Learning-to-Rank Algorithm", WWW 2019) as XGBoost 3.x computes it (``rank:ndcg`` with
    ``lambdarank_unbiased=True``): each pair (clicked ``h``, unclicked ``l``) is weighted by
    ``1 / (t+[pos_h] * t-[pos_l])``; after every round the propensities are re-estimated from
    the pairs' costs (``t+[p] = (L+[p] / L+[0]) ** (1 / (1 + bias_norm))``, same for ``t-``).
    ``t+`` is the examination propensity of position ``p`` relative to position 0. The
    cost of a pair in the update is XGBoost's: ``|delta NDCG| * log(1 + exp(s_h - s_l))``,
    the logistic loss of the *reversed* pair (XGBoost ports the authors' LightGBM code,
    whose sigmoid is the other tail); ``tests/test_clicks.py`` shows XGBoost's second-round
    ``ti+`` follow from it and not from the paper's.
``"unbiased_paper"`` -- the same with the cost as the paper writes it, the pair's own loss
    ``log(1 + exp(-(s_h - s_l)))``. On ``benchmarks/clicks.py``'s simulated clicks it
    estimated the propensities 3-4x less accurately and ranked worse than ``"unbiased"``
    (docs/user_guide/clicks.rst), hence not the default form.
``"additive"`` -- LightGBM 4.x ``Dataset(position=...)``: a learned score ``b[p]`` is added to
    every document shown at position ``p`` while the gradients are computed (the trees learn
    relevance, ``b`` the position's pull); one Newton step per position and round, with
    ``lambdarank_position_bias_regularization`` as an L2 penalty.

Per round (both devices, and every worker of a Dask fit; the CUDA twin is
:mod:`skltr._gbdt.objectives_cuda`)::

    unbiased:  gradients(scores; t+, t-) -> grad, hess, li_row, lj_row   (one pass, per query)
               position_sums(li_row, lj_row) -> L+, L-                  (host, O(rows))
               propensities_from_sums(L+, L-) -> t+, t-
    additive:  gradients(scores + b[position]) -> grad, hess
               position_sums(grad, hess) -> sums, rows per position     (host, O(rows))
               additive_bias_step(sums) -> b

The per-position sums are exact, rounded once (:func:`position_sums`,
:mod:`skltr._cpu.exact_sum`): integer superaccumulators, which a Dask fit's workers
all-reduce as int64 before rounding. A sum then does not depend on the order of the rows
nor on which worker holds which query, so the CPU, the GPU (which copies ``li_row`` /
``lj_row`` or ``grad`` / ``hess`` to the host once per round: 16 or 8 bytes per row) and any
number of Dask workers estimate the same propensities bit for bit.

:class:`PositionBias` holds the parameters; :class:`PositionEstimate` the estimate a fit
updates (read back by the estimator as ``position_bias_``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._cpu import exact_sum
from .._cpu import objectives as _kernels

__all__ = ["PositionBias", "PositionEstimate", "MODES", "MAX_ADDITIVE_POSITIONS",
           "position_sums"]

#: The position-bias models (``GPUHistGBDTRanker(position_bias=...)``).
MODES = ("unbiased", "unbiased_paper", "additive")
#: XGBoost's cap on the positions Unbiased LambdaMART tracks without truncation.
XGBOOST_MAX_POSITIONS = 32
#: The most positions the additive form tracks by default (one bias each); larger displayed
#: positions need ``lambdarank_num_positions`` set.
MAX_ADDITIVE_POSITIONS = 10_000


@dataclass(frozen=True)
class PositionBias:
    """The position-bias model of a fit.

    Attributes
    ----------
    mode : {"unbiased", "unbiased_paper", "additive"}
    num_positions : int or None
        Positions tracked (0 .. num_positions - 1). None: ``"unbiased"`` tracks
        ``min(truncation_level, max position + 1)`` (XGBoost's top-k rule), ``"additive"``
        every position shown (LightGBM).
    bias_norm : float
        Unbiased LambdaMART's regularisation exponent ``p`` (XGBoost's
        ``lambdarank_bias_norm``): propensities are the cost ratios to the power
        ``1 / (1 + p)``.
    regularization : float
        L2 penalty of the additive biases (LightGBM's
        ``lambdarank_position_bias_regularization``).
    learning_rate : float
        Step of the additive biases' Newton update (LightGBM uses its ``learning_rate``).
    """

    mode: str
    num_positions: int | None = None
    bias_norm: float = 1.0
    regularization: float = 0.0
    learning_rate: float = 0.1

    def n_tracked(self, position, truncation_level) -> int:
        """Positions tracked for a fit on displayed positions ``position`` (int64)."""
        shown = int(position.max()) + 1 if position.size else 1
        if self.num_positions is not None:
            return int(self.num_positions)
        if self.unbiased:
            return max(1, min(int(truncation_level), shown))
        return shown

    @property
    def unbiased(self) -> bool:
        """Unbiased LambdaMART (either cost), rather than the additive form."""
        return self.mode != "additive"

    @property
    def xgboost_cost(self) -> bool:
        return self.mode == "unbiased"

    @property
    def regularizer(self) -> float:
        """XGBoost's ``Regularizer()``: the exponent ``1 / (1 + bias_norm)``."""
        return 1.0 / (1.0 + self.bias_norm)


@dataclass
class PositionEstimate:
    """What a fit learns about the positions, updated in place every round.

    ``tplus`` / ``tminus``: Unbiased LambdaMART's propensities of clicked / unclicked
    documents (start at 1: the first round is plain LambdaMART); ``bias``: the additive
    scores (start at 0). The arrays of the other mode are empty.
    """

    tplus: np.ndarray = field(default_factory=lambda: np.empty(0))
    tminus: np.ndarray = field(default_factory=lambda: np.empty(0))
    bias: np.ndarray = field(default_factory=lambda: np.empty(0))

    @classmethod
    def start(cls, mode, k) -> PositionEstimate:
        if mode != "additive":
            return cls(tplus=np.ones(k), tminus=np.ones(k))
        return cls(bias=np.zeros(k))


def position_sums(columns, position, k, communicator=None):
    """The exact sums of each of ``columns`` per position ``0 .. k - 1`` over the fit's rows,
    rounded once; and the rows per position.

    Every column is accumulated exactly (:mod:`skltr._cpu.exact_sum`), the accumulators of a
    distributed fit's workers are all-reduced as int64 (exact, in any order), and each sum is
    rounded to the nearest float64 once: the same bits on any device, for any number of
    workers and any assignment of queries to them.

    Parameters
    ----------
    columns : sequence of ndarray of float64 or float32, shape (n_rows,)
        This process's rows (query-grouped; rows shown at ``position >= k`` are skipped).
    position : ndarray of int64, shape (n_rows,)
    k : int
        Positions tracked.
    communicator : object with ``allreduce_sum`` / ``allreduce_max``, optional
        A distributed fit's (``world > 1``); None: one process holds every row.

    Returns
    -------
    sums : list of ndarray of float64, shape (k,)
        One per column.
    count : ndarray of int64, shape (k,)
        Rows shown at each position.
    """
    acc = np.zeros((len(columns), k, exact_sum.WIDTH), dtype=np.int64)
    for c, values in enumerate(columns):
        exact_sum.add_by_key(values, position, acc[c])
    if communicator is not None and getattr(communicator, "world", 1) > 1:
        acc = _allreduce_accumulators(acc, communicator)
    sums = [np.empty(k) for _ in columns]
    for c, out in enumerate(sums):
        exact_sum.to_float64(acc[c], out)
    return sums, acc[0, :, exact_sum.COUNT].copy()


def _allreduce_accumulators(acc, communicator):
    """The sum over the workers of their accumulators ``acc``, sending only the limbs some
    worker uses (one 2-word ``allreduce_max`` finds them): gradients' and costs' exponents
    span a few of the 67 limbs, so a round's reduction stays small even for the additive
    form's thousands of positions. Each worker's limbs are normalised (``|limb| <= 2**31``),
    so the int64 sum cannot overflow."""
    first, stop = exact_sum.used_limbs(acc)
    # none used: (0, 0) -> (-LIMBS, 0) so that the maximum picks any other worker's window
    span = np.array([-(first if stop else exact_sum.LIMBS), stop], dtype=np.int64)
    span = communicator.allreduce_max(span)
    first, stop = int(-span[0]), int(span[1])
    first = min(first, stop)
    counters = slice(exact_sum.LIMBS, exact_sum.WIDTH)
    part = np.concatenate([acc[..., first:stop], acc[..., counters]], axis=-1)
    part = communicator.allreduce_sum(np.ascontiguousarray(part))
    out = np.zeros_like(acc)
    out[..., first:stop] = part[..., :stop - first]
    out[..., counters] = part[..., stop - first:]
    return out


class UnbiasedRound:
    """The host step of Unbiased LambdaMART shared by both devices and by a distributed
    fit's workers: the row costs' exact sums per position (:func:`position_sums`) and the new
    propensities (:func:`skltr._cpu.objectives.propensities_from_sums`)."""

    def __init__(self, spec: PositionBias, position, estimate: PositionEstimate,
                 communicator=None):
        self.regularizer = spec.regularizer
        self.position = position
        self.estimate = estimate
        self.communicator = communicator

    def update(self, li_row, lj_row):
        k = self.estimate.tplus.shape[0]
        (li, lj), _ = position_sums((li_row, lj_row), self.position, k, self.communicator)
        _kernels.propensities_from_sums(li, lj, self.regularizer, self.estimate.tplus,
                                        self.estimate.tminus)


class AdditiveRound:
    """The host step of the additive form shared by both devices and by a distributed fit's
    workers: one Newton step per position from the exact sums of the round's (float32)
    gradients (:func:`position_sums`, :func:`skltr._cpu.objectives.additive_bias_step`)."""

    def __init__(self, spec: PositionBias, position, estimate: PositionEstimate,
                 communicator=None):
        self.learning_rate = spec.learning_rate
        self.regularization = spec.regularization
        self.position = position
        self.estimate = estimate
        self.communicator = communicator

    def update(self, grad, hess):
        k = self.estimate.bias.shape[0]
        (g, h), count = position_sums((grad, hess), self.position, k, self.communicator)
        _kernels.additive_bias_step(g, h, count, self.learning_rate, self.regularization,
                                    self.estimate.bias)
