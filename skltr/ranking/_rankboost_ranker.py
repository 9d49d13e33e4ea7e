"""``RankBoostRanker``: RankBoost with integral-histogram threshold weak rankers.

A thin scikit-learn front-end over :func:`skltr._rankboost.boosting.boost` (the algorithm and
its linear-time pair weights are described there); the fitted model is one
:class:`~skltr.trees.TreeEnsemble` of stumps, scored, saved and loaded like the GBDT's.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._device import resolve_device
from ._ensemble_ranker import EnsembleRanker

__all__ = ["RankBoostRanker"]


class RankBoostRanker(EnsembleRanker):
    """RankBoost (Freund et al., 2003) with binary threshold weak rankers on binned features.

    Each round reweights the *crucial pairs* of every query (two documents with different
    labels) towards those the model still orders wrongly, and adds the stump
    ``alpha * [x_f > theta]`` (missing values on the side that helps most) whose weighted
    pair agreement ``|r|`` is largest, with ``alpha = 0.5 ln((1 + r) / (1 - r))``. Pair
    weights are never materialised: a round costs one pass over the rows plus one histogram
    of the binned features (the integral-histogram weak learner of Wang et al.'s CUDA
    RankBoost).

    Parameters
    ----------
    n_estimators : int, default=300
        Rounds (one stump each).
    n_thresholds : int, default=255
        Candidate thresholds per feature: the features are binned once into at most this
        many bins (count-balanced cut points, as the GBDT's), and a stump splits between two
        bins or separates missing values from the rest.
    pair_weighting : {"query", "pair"}, default="query"
        Initial weight of the crucial pairs: every query the same total (times its mean row
        weight), or every pair the same (large queries weigh more; RankLib's RankBoost).
    eval_at : int or list of int, default=10
        NDCG cut-offs recorded on the eval sets each round; the first drives early stopping
        and :meth:`score`.
    early_stopping : bool, default=False
        Stop after ``n_iter_no_change`` rounds without NDCG gain on the first eval set, or on
        ``validation_fraction`` of the training queries held out when there is none.
    validation_fraction : float in (0, 1), default=0.1
    n_iter_no_change : int, default=10
    device : {"cpu", "cuda", "cuda:N", "auto"}, default="cpu"
        Where the rounds run. On a GPU every stage of a round stays on the device and the
        host reads one stump a round; the stumps are the CPU's, unless two candidate stumps'
        ``|r|`` agree to about 1e-18 (CUDA's ``exp`` may round the last bit of a
        potential differently). Needs the ``gpu`` extra (CuPy).
    n_jobs : int or None, default=None
        Threads (``None``: all of numba's threads).
    random_state : int, RandomState or None, default=None
        Seeds the binning sample and the validation split.
    verbose : int, default=0
        > 0 shows a progress bar.

    Attributes
    ----------
    ensemble_ : TreeEnsemble
        The stumps, with their weights as leaf values (0 on the ``x <= theta`` side).
    n_estimators_ : int
        Stumps kept (the best round's with early stopping).
    evals_result_ : dict
        ``{eval set name: {"ndcg@k": [one value per round]}}``.
    best_iteration_ : int or None
    feature_importances_ : ndarray of shape (``n_features_in_``,)
        Sum of ``|alpha|`` per feature over the kept stumps, normalised.

    Examples
    --------
    >>> from skltr import RankBoostRanker
    >>> from skltr.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=100, docs_per_query=20, random_state=0)
    >>> ranker = RankBoostRanker(n_estimators=50, random_state=0).fit(X, y, qid=qid)
    >>> ranker.n_estimators_
    50
    >>> bool(ranker.score(X, y, qid=qid) > 0.5)
    True
    """

    _parameter_constraints = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "n_thresholds": [Interval(Integral, 2, 255, closed="both")],
        "pair_weighting": [StrOptions({"query", "pair"})],
        "eval_at": [Interval(Integral, 1, None, closed="left"), list, tuple],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "device": [str],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }
    _allow_inf = False  # as the GBDT: +-inf would bin with the extreme finite values
    _fit_X_dtypes = (np.float64, np.float32)
    _accept_sparse = True

    def __init__(self, *, n_estimators=300, n_thresholds=255, pair_weighting="query",
                 eval_at=10, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=10, device="cpu", n_jobs=None, random_state=None,
                 verbose=0):
        self.n_estimators = n_estimators
        self.n_thresholds = n_thresholds
        self.pair_weighting = pair_weighting
        self.eval_at = eval_at
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, *, qid=None, sample_weight=None, eval_set=None):
        """Fit the ranker.

        Parameters
        ----------
        X : array-like or scipy CSR / CSC matrix of shape (n_samples, n_features)
            NaN marks a missing value; +-inf is refused.
        y : array-like of shape (n_samples,)
            Relevance labels (any real numbers: only their order within a query matters).
        qid : array-like of shape (n_samples,)
            Query id of each row, any order.
        sample_weight : array-like of shape (n_samples,), default=None
            A query's pairs weigh its mean row weight.
        eval_set : list of (X, y, qid), default=None
            Scored after every round (``evals_result_``); the first drives early stopping.

        Returns
        -------
        self
        """
        return super().fit(X, y, qid=qid, sample_weight=sample_weight, eval_set=eval_set)

    def _fit(self, data, eval_set=None):
        from .._engine.rounds import EvalData, hold_out  # noqa: PLC0415
        from .._numba_cache import announce_first_compile  # noqa: PLC0415
        from .._rankboost.boosting import RankBoostParams, boost  # noqa: PLC0415

        self._validate_params()
        eval_at = self._eval_at_list()
        device = resolve_device(self.device, estimator=type(self).__name__)
        announce_first_compile()
        evals = [EvalData(f"valid_{i}", *parts)
                 for i, parts in enumerate(self._check_eval_set(eval_set))]
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        X, y, w, group_ptr = data.X, data.y, data.sample_weight, data.group_ptr
        if self.early_stopping and not evals:
            (X, y, w, group_ptr), evals, _ = hold_out(X, y, w, group_ptr,
                                                      self.validation_fraction, seed)
        names = getattr(self, "feature_names_in_", None)
        params = RankBoostParams(
            n_estimators=self.n_estimators, n_thresholds=self.n_thresholds,
            pair_weighting=self.pair_weighting, eval_at=tuple(eval_at),
            n_iter_no_change=self.n_iter_no_change if self.early_stopping else None,
            seed=seed, verbose=self.verbose,
            feature_names=None if names is None else list(names), n_jobs=self.n_jobs)
        if device.is_gpu:  # imports CuPy
            from .._rankboost.kernels_cuda import boost as boost_gpu  # noqa: PLC0415

            result = boost_gpu(X, y, group_ptr, w, params, evals, device_index=device.index)
        else:
            result = boost(X, y, group_ptr, w, params, evals)
        return self._set_fitted(result, device)
