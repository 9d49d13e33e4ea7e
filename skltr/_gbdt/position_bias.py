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

Per round (both devices; the CUDA twin is :mod:`skltr._gbdt.objectives_cuda`)::

    unbiased:  gradients(scores; t+, t-) -> grad, hess, li_row, lj_row   (one pass, per query)
               update_propensities(li_row, lj_row, position) -> t+, t-   (host, O(rows))
    additive:  gradients(scores + b[position]) -> grad, hess
               update_additive_bias(grad, hess, position) -> b          (host, O(rows))

The per-position sums run sequentially over the rows in query-grouped order on the host, so
both devices estimate the same propensities bit for bit (the GPU copies ``li_row`` /
``lj_row`` or ``grad`` / ``hess`` to the host once per round: 16 or 8 bytes per row).

:class:`PositionBias` holds the parameters; :class:`PositionEstimate` the estimate a fit
updates (read back by the estimator as ``position_bias_``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._cpu import objectives as _kernels

__all__ = ["PositionBias", "PositionEstimate", "MODES", "MAX_ADDITIVE_POSITIONS"]

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


class UnbiasedRound:
    """The host step of Unbiased LambdaMART shared by both devices: the row costs' sums per
    position and the new propensities (:func:`skltr._cpu.objectives.update_propensities`)."""

    def __init__(self, spec: PositionBias, position, estimate: PositionEstimate):
        self.regularizer = spec.regularizer
        self.position = position
        self.estimate = estimate

    def update(self, li_row, lj_row):
        _kernels.update_propensities(li_row, lj_row, self.position, self.regularizer,
                                     self.estimate.tplus, self.estimate.tminus)


class AdditiveRound:
    """The host step of the additive form shared by both devices: one Newton step per
    position from the round's (float32) gradients
    (:func:`skltr._cpu.objectives.update_additive_bias`)."""

    def __init__(self, spec: PositionBias, position, estimate: PositionEstimate):
        self.learning_rate = spec.learning_rate
        self.regularization = spec.regularization
        self.position = position
        self.estimate = estimate

    def update(self, grad, hess):
        _kernels.update_additive_bias(grad, hess, self.position, self.learning_rate,
                                      self.regularization, self.estimate.bias)
