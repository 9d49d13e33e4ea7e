"""Objectives of the GBDT engine: parameters, label validation, dispatch to the kernels.

``make_objective(name, ...)`` returns an :class:`Objective` (the class registered under
``name`` in ``OBJECTIVES``) with the two methods the boosting loop calls
(``docs/gbdt_internals.rst``)::

    obj = make_objective("lambdarank", truncation_level=10)
    base = obj.init_score(y, group_ptr, sample_weight)       # validates y once; 0.0 here
    for it in range(n_rounds):
        obj.gradients(scores, y, group_ptr, sample_weight, grad, hess, it)   # in place

``y``, ``scores`` and ``sample_weight`` are in query-grouped order (query ``q`` owns rows
``group_ptr[q]:group_ptr[q + 1]``); ``grad`` / ``hess`` are float32 arrays (``G_H_DTYPE``)
that are overwritten. The loops live in :mod:`skltr._cpu.objectives` (YetiRank's in
:mod:`skltr._cpu.yetirank`).

========================  ===========================================  ==========================
skltr                     LightGBM 4.x                                 XGBoost 3.x
========================  ===========================================  ==========================
``"lambdarank"``          ``objective="lambdarank"``,                  ``rank:ndcg`` (close, not
                          ``lambdarank_truncation_level``,             equal: XGBoost's delta is
                          ``lambdarank_norm``, ``sigmoid``             the NDCG change of a swap)
``"rank_pairwise"``       --                                           ``rank:pairwise`` with
                                                                       ``lambdarank_pair_method=
                                                                       "topk"``
``"rank_xendcg"``         ``objective="rank_xendcg"``,                 --
                          ``objective_seed``
``"yetirank"``            -- (CatBoost: ``loss_function="YetiRank"``,  --
                          ``permutations``, ``decay``)
``"regression"``          ``objective="regression"`` (L2)              ``reg:squarederror``
========================  ===========================================  ==========================

Learning from clicks: ``"lambdarank"`` takes a
:class:`~skltr._gbdt.position_bias.PositionBias` (``position_bias=``; XGBoost's
``lambdarank_unbiased`` or LightGBM's ``Dataset(position=...)``) and is then bound to the
fit's display positions with :meth:`LambdaRank.at_positions`.

Sample weights (per row): the ranking objectives scale a query's gradients and hessians by
the **mean of its rows' weights** (the policy of :mod:`skltr.metrics`); LightGBM multiplies
each row by its own weight and XGBoost takes one weight per query (and rescales all of them
to mean 1). All three agree when weights are constant within each query, up to XGBoost's
global rescaling. ``"regression"`` weighs each row by its own weight.

``OBJECTIVES`` maps each name to its class (scikit-learn's ``_LOSSES`` pattern), the one
registry of both devices: each class names its CUDA twin (``cuda_gradients``, in
:mod:`skltr._gbdt.objectives_cuda`); ``bind`` / ``make_cuda_gradients`` give both the same
``gradients(scores, grad, hess, iteration)``. Speed
against LightGBM's objectives: ``benchmarks/objectives_cpu.py`` and ``docs/gbdt_internals.rst``.
"""

from __future__ import annotations

import copy
import numbers

import numpy as np

from .._dtypes import G_H_DTYPE, QID_DTYPE, Y_DTYPE
from .._cpu import objectives as _kernels
from .._cpu import yetirank as _yetirank
from .position_bias import AdditiveRound, PositionEstimate, UnbiasedRound

__all__ = ["Objective", "BoundGradients", "make_objective", "OBJECTIVES"]

#: LightGBM 4.x's default ``lambdarank_truncation_level``.
LIGHTGBM_TRUNCATION_LEVEL = 30
#: The largest label whose gain ``2**label`` is finite in float64.
MAX_EXP2_LABEL = 1023
#: The largest gradient magnitude allowed: float32's range with room for the sums of a
#: quantised histogram's scale (a power of two below it).
_GRADIENT_LIMIT = float(np.finfo(G_H_DTYPE).max) / 2.0 ** 8

_NO_WEIGHTS = np.empty(0, dtype=Y_DTYPE)  # "unweighted" for the kernels
_ALL_PAIRS = np.iinfo(np.int64).max  # a truncation level that no query reaches
#: CatBoost's defaults of YetiRank's ``permutations`` and ``decay``.
YETIRANK_PERMUTATIONS = 10
YETIRANK_DECAY = 0.85


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------


def _first(mask):
    return int(np.argmax(mask)), int(mask.sum())


def _check_finite(arr, name):
    bad = ~np.isfinite(arr)
    if bad.any():
        row, count = _first(bad)
        raise ValueError(
            f"{name} has {count} non-finite value(s) (first: {float(arr[row])!r} at row {row}); "
            f"every row needs a finite value."
        )


def _check_grades(y, objective):
    """Labels must be relevance grades 0, 1, 2, ... (integers >= 0)."""
    negative = y < 0
    if negative.any():
        row, count = _first(negative)
        raise ValueError(
            f"{objective} needs relevance grades >= 0, but y has {count} negative label(s) "
            f"(first: {float(y[row])!r} at row {row}). Shift or re-encode the labels (e.g. "
            f"np.unique(y, return_inverse=True)[1] maps them to 0, 1, 2, ... in order), or use "
            f"objective='rank_pairwise', which only compares labels."
        )
    fractional = y != np.floor(y)
    if fractional.any():
        row, count = _first(fractional)
        raise ValueError(
            f"{objective} needs integer relevance grades (as LightGBM), but y has {count} "
            f"fractional label(s) (first: {float(y[row])!r} at row {row}). Round them, re-encode "
            f"them with np.unique(y, return_inverse=True)[1], or use "
            f"objective='rank_pairwise', which accepts any real labels."
        )


def _check_exp2_gains(y, group_ptr, objective, gain_offset):
    """``2**label - gain_offset`` and each query's sum of them must stay finite."""
    too_big = y > MAX_EXP2_LABEL
    if too_big.any():
        row, count = _first(too_big)
        raise ValueError(
            f"{objective} with exponential gain needs labels <= {MAX_EXP2_LABEL} (2**label "
            f"overflows float64 beyond), but y has {count} larger label(s) (first: "
            f"{float(y[row])!r} at row {row}). Use gain='linear' (lambdarank), or re-encode the "
            f"labels with np.unique(y, return_inverse=True)[1]."
        )
    if y.size and y.max() > 1000:  # only then can a query's sum of gains overflow
        with np.errstate(over="ignore"):
            sums = np.add.reduceat(np.exp2(y) - gain_offset, group_ptr[:-1])
        if np.isinf(sums).any():
            q = int(np.argmax(np.isinf(sums)))
            raise ValueError(
                f"{objective}: the exponential gains of query {q} (rows {group_ptr[q]} to "
                f"{group_ptr[q + 1] - 1}) sum beyond the float64 range; use gain='linear' or "
                f"smaller labels."
            )


def _check_group_ptr(group_ptr, n):
    group_ptr = np.ascontiguousarray(group_ptr, dtype=QID_DTYPE)
    if (group_ptr.ndim != 1 or group_ptr.size < 2 or group_ptr[0] != 0 or group_ptr[-1] != n
            or (np.diff(group_ptr) < 1).any()):
        raise ValueError(
            f"group_ptr must be increasing query boundaries from 0 to the number of rows "
            f"({n}) with no empty query; got {group_ptr!r}."
        )
    return group_ptr


def _as_float64(arr, name):
    arr = np.ascontiguousarray(arr, dtype=Y_DTYPE)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with one value per row; got shape {arr.shape}.")
    return arr


def _check_out(arr, name, n):
    if not (isinstance(arr, np.ndarray) and arr.dtype == G_H_DTYPE and arr.shape == (n,)
            and arr.flags.c_contiguous and arr.flags.writeable):
        raise ValueError(
            f"{name} must be a writeable C-contiguous {np.dtype(G_H_DTYPE).name} array of "
            f"shape ({n},) (it is filled in place)."
        )


# --------------------------------------------------------------------------------------------
# objectives
# --------------------------------------------------------------------------------------------


class Objective:
    """A training objective: an initial score and per-row gradients / hessians.

    Build instances with :func:`make_objective`. Subclasses set ``name``, ``is_ranking`` and
    implement ``_check_labels`` and ``_gradients``.
    """

    name = ""
    #: The class of :mod:`skltr._gbdt.objectives_cuda` that computes it on the GPU.
    cuda_gradients = ""
    #: Ranking objectives need queries and start from a score of 0.
    is_ranking = True
    #: Labels must be relevance grades 0, 1, 2, ... (gains are computed from them).
    graded = False
    #: The gains this objective can use.
    gains = ("exp2", "linear")
    #: Its kernel reads a :class:`~skltr._cpu.objectives.QueryMemo` (the pair objectives).
    keeps_memo = False

    @classmethod
    def from_params(cls, *, gain, truncation_level, sigmoid, normalize, random_state,
                    permutations, decay):
        """The objective from the estimator's (validated) parameters; unused ones ignored."""
        return cls()

    def validate(self, y, group_ptr, sample_weight=None):
        """Check labels (and weights) for this objective; raise a ValueError naming the fix.

        Row numbers in messages are positions in the arrays given (query-grouped order when
        called by the boosting loop). Called by :meth:`init_score`; the estimator may call
        it earlier on the caller's arrays.
        """
        y = _as_float64(y, "y")
        group_ptr = _check_group_ptr(group_ptr, y.shape[0])
        _check_finite(y, "y")
        self._check_labels(y, group_ptr)
        if sample_weight is not None:
            sample_weight = _as_float64(sample_weight, "sample_weight")
            if sample_weight.shape != y.shape:
                raise ValueError(
                    f"sample_weight has {sample_weight.shape[0]} entries but y has "
                    f"{y.shape[0]}; it needs one weight per row."
                )
            _check_finite(sample_weight, "sample_weight")
            negative = sample_weight < 0
            if negative.any():
                row, count = _first(negative)
                raise ValueError(
                    f"sample_weight has {count} negative weight(s) (first: "
                    f"{float(sample_weight[row])!r} at row {row}); weights must be >= 0."
                )
        self._check_gradient_range(y, group_ptr, sample_weight)

    def _check_gradient_range(self, y, group_ptr, sample_weight):
        """Gradients and hessians are float32 (as in LightGBM and XGBoost): refuse labels and
        weights whose gradients could overflow it instead of training on infinities.

        A ranking gradient is at most the row's weight times its query's size (each pair adds
        at most 1); :class:`Regression` bounds its own (``w * |score - y|``).
        """
        if sample_weight is None or not sample_weight.size:
            return
        largest = float(sample_weight.max()) * float(np.diff(group_ptr).max())
        if largest > _GRADIENT_LIMIT:
            row = int(np.argmax(sample_weight))
            raise ValueError(
                f"sample_weight is too large for float32 gradients: weight "
                f"{float(sample_weight[row])!r} at row {row} times its query's size could "
                f"give gradients up to {largest:.3g}, beyond {_GRADIENT_LIMIT:.3g}. Rescale "
                f"the weights (only their ratios matter).")

    def init_score(self, y, group_ptr, sample_weight):
        """Validate the labels and return the constant initial raw score (a float)."""
        self.validate(y, group_ptr, sample_weight)
        return 0.0

    def gradients(self, scores, y, group_ptr, sample_weight, grad, hess, iteration, *,
                  query_index=None):
        """Write the gradients and hessians at ``scores`` into ``grad`` / ``hess``.

        Parameters
        ----------
        scores : array of shape (n_rows,)
            Current raw scores (converted to float64 if needed).
        y : array of shape (n_rows,)
            Labels, already validated by :meth:`init_score` / :meth:`validate`.
        group_ptr : int array of shape (n_queries + 1,)
            Query boundaries (ignored by ``"regression"``).
        sample_weight : array of shape (n_rows,) or None
        grad, hess : float32 arrays of shape (n_rows,)
            Overwritten.
        iteration : int
            0-based boosting round (only ``"rank_xendcg"`` and ``"yetirank"`` use it, for
            their random draws).
        query_index : int array of shape (n_queries,), optional
            Index of each query of ``group_ptr`` in the whole training set, when
            ``group_ptr`` holds a shard of it (``rank_xendcg`` and ``yetirank`` seed their
            draws by it);
            None: ``arange(n_queries)``.
        """
        scores = _as_float64(scores, "scores")
        y = _as_float64(y, "y")
        n = y.shape[0]
        if scores.shape[0] != n:
            raise ValueError(f"scores has {scores.shape[0]} entries but y has {n}.")
        _check_out(grad, "grad", n)
        _check_out(hess, "hess", n)
        weights = _NO_WEIGHTS if sample_weight is None else _as_float64(sample_weight,
                                                                         "sample_weight")
        group_ptr = np.ascontiguousarray(group_ptr, dtype=QID_DTYPE)
        if query_index is None:
            query_index = np.arange(group_ptr.size - 1, dtype=QID_DTYPE)
        self._gradients(scores, y, group_ptr, weights, grad, hess, int(iteration),
                        np.ascontiguousarray(query_index, dtype=QID_DTYPE),
                        _kernels.QueryMemo.none())

    def bind(self, y, group_ptr, sample_weight=None, query_index=None) -> BoundGradients:
        """This objective on one training set (host arrays converted once): the CPU twin of
        :func:`skltr._gbdt.objectives_cuda.make_cuda_gradients`."""
        return BoundGradients(self, y, group_ptr, sample_weight, query_index)

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"make_objective({self.name!r}{', ' if params else ''}{params})"

    def _params(self):
        return {}


class BoundGradients:
    """An objective bound to one training set: ``gradients(scores, grad, hess, iteration)``
    (:meth:`Objective.bind`); the arguments of :meth:`Objective.gradients`."""

    def __init__(self, objective, y, group_ptr, sample_weight, query_index):
        self.objective = objective
        self.y = _as_float64(y, "y")
        self.group_ptr = np.ascontiguousarray(group_ptr, dtype=QID_DTYPE)
        self.weights = _NO_WEIGHTS if sample_weight is None else _as_float64(
            sample_weight, "sample_weight")
        self.query_index = np.ascontiguousarray(
            np.arange(self.group_ptr.size - 1) if query_index is None else query_index,
            dtype=QID_DTYPE)
        #: what the pair kernels keep from round to round
        #: (:class:`skltr._cpu.objectives.QueryMemo`); none for the other objectives
        self.memo = (_kernels.QueryMemo.start(self.group_ptr) if objective.keeps_memo
                     else _kernels.QueryMemo.none())

    def gradients(self, scores, grad, hess, iteration=0):
        """Fill ``grad`` / ``hess`` (float32) at ``scores`` (float64)."""
        self.objective._gradients(scores, self.y, self.group_ptr, self.weights, grad, hess,
                                  int(iteration), self.query_index, self.memo)


class LambdaRank(Objective):
    """LambdaMART for NDCG, as LightGBM 4.x ``objective="lambdarank"``.

    See :func:`skltr._cpu.objectives.lambdarank_gradients`. LightGBM parameters:
    ``lambdarank_truncation_level`` = ``truncation_level`` (default 30),
    ``lambdarank_norm`` = ``normalize``, ``sigmoid`` = ``sigmoid``; ``gain="exp2"`` is
    LightGBM's default ``label_gain`` (``2**i - 1``) without its limit of 31 grades, and
    ``gain="linear"`` is ``label_gain=[0, 1, 2, ...]``. Differences: the sigmoid is exact
    (LightGBM: a lookup table), per-row weights are averaged per query.
    """

    name = "lambdarank"
    cuda_gradients = "PairGradients"
    graded = True
    keeps_memo = True

    @classmethod
    def from_params(cls, *, gain, truncation_level, sigmoid, normalize, random_state,
                    permutations, decay):
        level = LIGHTGBM_TRUNCATION_LEVEL if truncation_level is None else truncation_level
        return cls(gain, level, sigmoid, normalize)

    def __init__(self, gain, truncation_level, sigmoid, normalize):
        self.gain = gain
        self.truncation_level = truncation_level
        self.sigmoid = sigmoid
        self.normalize = normalize
        #: :class:`~skltr._gbdt.position_bias.PositionBias` or None (graded labels)
        self.position_bias = None
        #: displayed positions (int64, query-grouped) and their estimate, set per fit
        self.position = None
        self.estimate = None
        #: a Dask worker's communicator: the per-position sums are all-reduced (None: local)
        self.communicator = None

    def _params(self):
        params = {"gain": self.gain, "truncation_level": self.truncation_level,
                  "sigmoid": self.sigmoid, "normalize": self.normalize}
        if self.position_bias is not None:
            params["position_bias"] = self.position_bias
        return params

    def with_position_bias(self, spec):
        """A copy learning from clicks with the position-bias model ``spec``
        (:class:`~skltr._gbdt.position_bias.PositionBias`); :meth:`at_positions` then binds
        it to a fit's displayed positions."""
        obj = copy.copy(self)
        obj.position_bias = spec
        return obj

    def at_positions(self, position, *, n_tracked=None, communicator=None):
        """A copy for one fit on rows shown at ``position`` (int64 >= 0, one per row in
        query-grouped order, validated by the estimator), holding a fresh estimate
        (``estimate``, updated in place by every round's gradients).

        ``n_tracked``: the positions tracked (None: from ``position``, by
        :meth:`~skltr._gbdt.position_bias.PositionBias.n_tracked`). A Dask worker holds a
        share of the rows: it passes the number the driver computed from all of them, and
        its ``communicator``, through which every round's per-position sums are all-reduced
        (:func:`~skltr._gbdt.position_bias.position_sums`).
        """
        assert self.position_bias is not None
        obj = copy.copy(self)
        obj.position = np.ascontiguousarray(position, dtype=np.int64)
        k = (self.position_bias.n_tracked(obj.position, self.truncation_level)
             if n_tracked is None else int(n_tracked))
        obj.estimate = PositionEstimate.start(self.position_bias.mode, k)
        obj.communicator = communicator
        return obj

    def host_round(self):
        """The host step of the position-bias model shared by both devices and a Dask fit's
        workers (:class:`~skltr._gbdt.position_bias.UnbiasedRound` or ``AdditiveRound``)."""
        kind = UnbiasedRound if self.position_bias.unbiased else AdditiveRound
        return kind(self.position_bias, self.position, self.estimate, self.communicator)

    def _check_labels(self, y, group_ptr):
        _check_grades(y, self.name)
        if self.gain == "exp2":
            _check_exp2_gains(y, group_ptr, self.name, 1.0)

    def _gradients(self, scores, y, group_ptr, weights, grad, hess, iteration, query_index,
                   memo):
        if self.position_bias is None:
            _kernels.lambdarank_gradients(
                scores, y, group_ptr, weights, self.gain == "exp2", self.truncation_level,
                self.sigmoid, self.normalize, grad, hess, memo,
            )
            return
        # learning from clicks: the gradients at this round's estimate, then its update
        assert self.position is not None and self.position.shape == y.shape, \
            "at_positions() binds the objective to the fit's rows first"
        host = self.host_round()
        if self.position_bias.unbiased:
            li_row = np.empty(y.shape[0])
            lj_row = np.empty(y.shape[0])
            _kernels.unbiased_lambdarank_gradients(
                scores, y, group_ptr, weights, self.gain == "exp2", self.truncation_level,
                self.sigmoid, self.normalize, self.position, self.estimate.tplus,
                self.estimate.tminus, li_row, lj_row, grad, hess, memo,
                self.position_bias.xgboost_cost)
            host.update(li_row, lj_row)
        else:
            shifted = np.empty_like(scores)
            _kernels.shift_by_position(scores, self.position, self.estimate.bias, shifted)
            _kernels.lambdarank_gradients(
                shifted, y, group_ptr, weights, self.gain == "exp2", self.truncation_level,
                self.sigmoid, self.normalize, grad, hess, memo)
            host.update(grad, hess)


class RankPairwise(Objective):
    """RankNet (pairwise logistic loss), as XGBoost 3.x ``rank:pairwise`` with top-k pairs.

    See :func:`skltr._cpu.objectives.pairwise_gradients`. Equivalent XGBoost parameters:
    ``objective="rank:pairwise"``, ``lambdarank_pair_method="topk"``,
    ``lambdarank_num_pair_per_sample`` = ``truncation_level`` (``None``: at least the largest
    query size, i.e. all pairs), ``lambdarank_normalization`` = ``normalize``,
    ``lambdarank_score_normalization=False``. Differences: XGBoost's default pair method
    (``"mean"``) samples one random pair per document instead; XGBoost computes scores and
    pair gradients in float32 and takes one weight per query (rescaled to mean 1); the
    ``sigmoid`` steepness (XGBoost: fixed at 1). Labels may be any real numbers: only their
    order matters.
    """

    name = "rank_pairwise"
    cuda_gradients = "PairGradients"
    keeps_memo = True

    @classmethod
    def from_params(cls, *, gain, truncation_level, sigmoid, normalize, random_state,
                    permutations, decay):
        return cls(truncation_level, sigmoid, normalize)

    def __init__(self, truncation_level, sigmoid, normalize):
        self.truncation_level = truncation_level
        self.sigmoid = sigmoid
        self.normalize = normalize

    def _params(self):
        return {"truncation_level": self.truncation_level, "sigmoid": self.sigmoid,
                "normalize": self.normalize}

    def _check_labels(self, y, group_ptr):
        pass  # any finite labels: RankNet only compares them

    def _gradients(self, scores, y, group_ptr, weights, grad, hess, iteration, query_index,
                   memo):
        level = _ALL_PAIRS if self.truncation_level is None else self.truncation_level
        _kernels.pairwise_gradients(
            scores, y, group_ptr, weights, level, self.sigmoid, self.normalize, grad, hess,
            memo,
        )


class RankXENDCG(Objective):
    """XE-NDCG (Bruch et al. 2019), as LightGBM 4.x ``objective="rank_xendcg"``.

    See :func:`skltr._cpu.objectives.xendcg_gradients`. The random gammas are LightGBM's
    own: ``random_state`` (an int) is LightGBM's ``objective_seed``, and at round
    ``iteration`` query ``q`` uses draws ``iteration * n_docs .. (iteration + 1) * n_docs - 1``
    of ``Random(objective_seed + q)``, so the gradients are a function of
    ``(random_state, iteration, q)`` only and equal LightGBM's. Labels: integer grades
    >= 0 (gain ``2**label``, no other gain). Unlike lambdarank, queries whose labels are all
    equal still get gradients (they pull the scores towards equal softmax probabilities);
    single-document queries get zeros.
    """

    name = "rank_xendcg"
    cuda_gradients = "XENDCGGradients"
    graded = True
    gains = ("exp2",)

    @classmethod
    def from_params(cls, *, gain, truncation_level, sigmoid, normalize, random_state,
                    permutations, decay):
        return cls(_seed_from(random_state))

    def __init__(self, seed):
        self.seed = seed

    def _params(self):
        return {"random_state": self.seed}

    def _check_labels(self, y, group_ptr):
        _check_grades(y, self.name)
        _check_exp2_gains(y, group_ptr, self.name, 0.0)

    def _gradients(self, scores, y, group_ptr, weights, grad, hess, iteration, query_index,
                   memo):
        _kernels.xendcg_gradients(scores, y, group_ptr, weights, self.seed, iteration,
                                  query_index, grad,
                                  hess)


class YetiRank(Objective):
    """YetiRank (Gulin et al. 2011), as CatBoost's ``loss_function="YetiRank"``.

    See :func:`skltr._cpu.yetirank.yetirank_gradients`: per query and round,
    ``permutations`` orders by noisy scores, pairs of neighbours weighted by
    ``0.15 * decay**k * |label difference|``, pairwise logistic derivatives averaged over the
    permutations. CatBoost parameters: ``permutations`` (default 10) and ``decay`` (default
    0.85) of the same names. The noise is drawn from a counter-based hash of
    ``(random_state, iteration, q, permutation, document)`` (CatBoost: a generator seeded per
    block of queries), so the draws differ from CatBoost's but have the same distribution.
    Labels: any finite reals (only their differences matter, as in CatBoost); a query's
    weight is the mean of its rows' weights. Queries of one document or of equal labels get
    zeros.
    """

    name = "yetirank"
    cuda_gradients = "YetiRankGradients"

    @classmethod
    def from_params(cls, *, gain, truncation_level, sigmoid, normalize, random_state,
                    permutations, decay):
        return cls(_seed_from(random_state), permutations, decay)

    def __init__(self, seed, permutations=YETIRANK_PERMUTATIONS, decay=YETIRANK_DECAY):
        self.seed = seed
        self.permutations = permutations
        self.decay = decay

    def _params(self):
        return {"random_state": self.seed, "permutations": self.permutations,
                "decay": self.decay}

    def _check_labels(self, y, group_ptr):
        pass  # any finite labels: pair weights are label differences

    def _check_gradient_range(self, y, group_ptr, sample_weight):
        # a document is in at most two pairs of a permutation, each weighing at most
        # 0.15 * (max(y) - min(y)) times its query's weight
        spread = float(y.max() - y.min()) if y.size else 0.0
        weight = float(sample_weight.max()) if sample_weight is not None and y.size else 1.0
        largest = 2.0 * _yetirank.YETIRANK_PAIR_SCALE * spread * weight
        if largest > _GRADIENT_LIMIT or not np.isfinite(largest):
            raise ValueError(
                f"yetirank labels span {float(y.min())!r} to {float(y.max())!r}"
                + (f" with weights up to {weight!r}" if weight != 1.0 else "")
                + f": gradients (0.3 x label spread x weight) could reach {largest:.3g}, "
                f"beyond the float32 range that gradients use ({_GRADIENT_LIMIT:.3g}). "
                f"Rescale y (only label differences matter) or sample_weight.")

    def _gradients(self, scores, y, group_ptr, weights, grad, hess, iteration, query_index,
                   memo):
        _yetirank.yetirank_gradients(scores, y, group_ptr, weights, self.seed, iteration,
                                    query_index, self.permutations, self.decay, grad, hess)


class Regression(Objective):
    """Squared error ``w * (s - y)**2 / 2`` (LightGBM ``regression``, XGBoost
    ``reg:squarederror``): ``grad = w * (s - y)``, ``hess = w``; a pointwise baseline that
    ignores the queries. The initial score is the weighted mean label (LightGBM's
    ``boost_from_average``)."""

    name = "regression"
    cuda_gradients = "RegressionGradients"
    is_ranking = False

    def _check_labels(self, y, group_ptr):
        pass  # any finite labels (their range is checked with the weights)

    def _check_gradient_range(self, y, group_ptr, sample_weight):
        # scores stay within the labels' range, so |score - y| <= max(y) - min(y)
        spread = float(y.max() - y.min()) if y.size else 0.0
        weight = float(sample_weight.max()) if sample_weight is not None and y.size else 1.0
        if spread * weight > _GRADIENT_LIMIT or not np.isfinite(spread):
            raise ValueError(
                f"regression labels span {float(y.min())!r} to {float(y.max())!r}"
                + (f" with weights up to {weight!r}" if weight != 1.0 else "")
                + f": gradients (weight x residual) could reach {spread * weight:.3g}, beyond "
                f"the float32 range that gradients use ({_GRADIENT_LIMIT:.3g}, as in LightGBM "
                f"and XGBoost). Rescale y (and sample_weight) before fitting.")

    def init_score(self, y, group_ptr, sample_weight):
        self.validate(y, group_ptr, sample_weight)
        y = _as_float64(y, "y")
        if sample_weight is None:
            return float(np.mean(y))
        sample_weight = _as_float64(sample_weight, "sample_weight")
        total = sample_weight.sum()
        if total <= 0:
            raise ValueError("sample_weight sums to 0; the weighted mean label is undefined.")
        return float(np.dot(sample_weight, y) / total)

    def _gradients(self, scores, y, group_ptr, weights, grad, hess, iteration, query_index,
                   memo):
        _kernels.regression_gradients(scores, y, weights, grad, hess)


#: name -> objective class: the one list of the GBDT's objectives.
OBJECTIVES = {cls.name: cls for cls in (LambdaRank, RankPairwise, RankXENDCG, YetiRank,
                                         Regression)}


def _seed_from(random_state):
    """An int seed: ints are used as given (LightGBM's ``objective_seed``), anything else
    goes through scikit-learn's ``check_random_state`` and draws one."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        # LightGBM keeps the low 32 bits (an unsigned int state): so do we, which also
        # keeps any Python int inside the kernels' int64
        return int(random_state) % 2**32
    from sklearn.utils import check_random_state  # noqa: PLC0415 - only for non-int seeds

    return int(check_random_state(random_state).randint(0, np.iinfo(np.int32).max))


def make_objective(name, *, gain="exp2", truncation_level=None, sigmoid=1.0, normalize=True,
                   random_state=None, position_bias=None, permutations=YETIRANK_PERMUTATIONS,
                   decay=YETIRANK_DECAY):
    """Build the objective ``name`` with its parameters.

    Parameters
    ----------
    name : str
        A key of ``OBJECTIVES``: "lambdarank", "rank_pairwise", "rank_xendcg", "yetirank",
        "regression".
    gain : {"exp2", "linear"}, default="exp2"
        lambdarank's gain: ``2**label - 1`` (labels up to 1023) or ``label``.
        ``"rank_xendcg"`` accepts only ``"exp2"`` (its class's ``gains``); the others ignore
        it (yetirank's pair weights are label differences).
    truncation_level : int >= 1 or None, default=None
        lambdarank: pairs need a document in the top ``truncation_level`` positions and
        the ideal DCG is cut there; ``None`` is LightGBM's default, 30. rank_pairwise: the
        same pair rule; ``None`` means all pairs.
    sigmoid : float > 0, default=1.0
        Steepness of the pair probability (lambdarank, rank_pairwise).
    normalize : bool, default=True
        lambdarank: LightGBM's ``lambdarank_norm``; rank_pairwise: XGBoost's
        ``lambdarank_normalization``.
    random_state : int, RandomState, Generator or None, default=None
        rank_xendcg's and yetirank's seed (an int is LightGBM's ``objective_seed``; ``None``
        draws one).
    position_bias : PositionBias or None, default=None
        lambdarank only: learn from clicks with this position-bias model
        (:mod:`skltr._gbdt.position_bias`); the objective must then be bound to the
        displayed positions with ``at_positions`` before computing gradients.
    permutations : int >= 1, default=10
        yetirank: noisy orders per query and round (CatBoost's ``permutations``).
    decay : float in [0, 1], default=0.85
        yetirank: weight ratio of a pair of neighbours to the pair above it (CatBoost's
        ``decay``).

    Returns
    -------
    Objective

    Examples
    --------
    >>> import numpy as np
    >>> from skltr._gbdt.objectives import make_objective
    >>> obj = make_objective("lambdarank")
    >>> y = np.array([2.0, 0.0, 1.0]); group_ptr = np.array([0, 3])
    >>> obj.init_score(y, group_ptr, None)
    0.0
    >>> grad = np.empty(3, np.float32); hess = np.empty(3, np.float32)
    >>> obj.gradients(np.zeros(3), y, group_ptr, None, grad, hess, 0)
    >>> bool(grad[0] < 0 < grad[1])  # the best document is pushed up, the worst down
    True
    """
    # The estimator validates its parameters (``_parameter_constraints``, and the gains an
    # objective accepts); direct callers of this engine function get assertions.
    cls = OBJECTIVES[name]
    assert gain in cls.gains, (name, gain)
    assert truncation_level is None or (isinstance(truncation_level, numbers.Integral)
                                        and truncation_level >= 1), truncation_level
    assert np.isfinite(sigmoid) and sigmoid > 0, sigmoid
    assert isinstance(permutations, numbers.Integral) and permutations >= 1, permutations
    assert 0.0 <= decay <= 1.0, decay
    if truncation_level is not None:  # (any larger level means "all pairs" anyway)
        truncation_level = min(int(truncation_level), _ALL_PAIRS)
    objective = cls.from_params(gain=gain, truncation_level=truncation_level,
                                sigmoid=float(sigmoid), normalize=bool(normalize),
                                random_state=random_state, permutations=int(permutations),
                                decay=float(decay))
    if position_bias is not None:
        assert cls is LambdaRank, name
        objective = objective.with_position_bias(position_bias)
    return objective
