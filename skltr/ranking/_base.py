"""The ranker base class every skltr estimator stands on.

It fixes the scikit-learn contract once:

* ``fit(X, y, *, qid, sample_weight=None, **kw)`` with one per-row ``qid``; rows are grouped
  inside by a stable sort and outputs come back in the caller's order.
* ``qid`` is requested by default for ``fit`` and ``score``, so with
  ``sklearn.set_config(enable_metadata_routing=True)`` Pipelines, ``GridSearchCV`` and
  ``cross_validate`` route it (and split it per fold) without extra code.
* ``fit`` is transactional: when it raises, the estimator's previous fitted state is restored.
* ``score`` is the mean NDCG at the estimator's ``eval_at`` cut-off.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..utils._model_io import ModelFileError, VersionedPickleMixin
from ..utils._qid import group_by_qid
from ..utils.validation import check_ranking_X, check_ranking_y

_ROUTING_HINT = (
    "score() needs qid, the query id of every row. Pass it directly "
    "(ranker.score(X, y, qid=qid)); inside GridSearchCV, cross_validate or a Pipeline, turn "
    "on scikit-learn's metadata routing with sklearn.set_config(enable_metadata_routing=True) "
    "and pass qid to fit (search.fit(X, y, qid=qid)): skltr rankers and scorers request it by "
    "default."
)


def first_cutoff(eval_at) -> int | None:
    """The cut-off ``score`` uses: ``eval_at`` itself, or its first entry when a list."""
    if eval_at is None:
        return None
    if isinstance(eval_at, (list, tuple, np.ndarray)):
        return int(eval_at[0])
    return int(eval_at)


class RankerMixin:
    """Mixin for learning-to-rank estimators (put it left of ``BaseEstimator``).

    Subclasses implement ``_fit(data, **fit_params)`` on validated
    :class:`~skltr.utils.validation.RankingData` and ``_predict(X)`` on validated X. Class
    attributes tune the shared validation: ``_allow_nan``, ``_allow_inf`` and
    ``_integer_labels``, and ``_accept_sparse`` (default False: scipy sparse ``X`` raises;
    True: ``fit`` and ``predict`` take a CSR or CSC matrix as it is, ``_fit`` then sees
    ``data.X`` as CSR and ``_predict`` the CSR or CSC matrix, so both must handle it).
    ``_missing_qid = "single_query"`` lets a *test-only* subclass run
    scikit-learn's generic checks, which call ``fit(X, y)`` without qid. ``_fit_X_dtypes``
    lists the dtypes ``fit`` accepts X in without a copy; ``_fit_checks_inf()`` lets ``_fit``
    take over the search for +-inf in X.
    """

    _estimator_type = "ranker"
    _allow_nan = True
    _allow_inf = False
    _integer_labels = False
    _accept_sparse = False
    _missing_qid = "raise"
    #: dtypes ``fit`` keeps X in (``validate_data``'s list rule); others convert to the first.
    _fit_X_dtypes = (np.float64,)

    __metadata_request__fit = {"qid": True}
    __metadata_request__score = {"qid": True}

    def __init_subclass__(cls, **kwargs):
        # A LightGBM / XGBoost name given to the constructor or to fit (num_leaves=,
        # group=) is answered with skltr's name (skltr.ranking._peer_names), not only
        # Python's bare "unexpected keyword argument".
        super().__init_subclass__(**kwargs)
        for method, kind in (("__init__", "param"), ("fit", "fit")):
            if method in cls.__dict__:
                setattr(cls, method, _naming_unknown_arguments(cls.__dict__[method], kind))

    def set_params(self, **params):
        """Set parameters (scikit-learn's ``set_params``); a LightGBM or XGBoost name is
        answered with skltr's."""
        from ._peer_names import unknown_argument_message  # noqa: PLC0415

        valid = self.get_params(deep=True)
        for key in params:
            name = key.partition("__")[0]
            if "__" not in key and name not in valid:
                raise ValueError(unknown_argument_message(
                    type(self).__name__, name, valid) + " (in set_params or a parameter grid)")
        return super().set_params(**params)

    def _validate_params(self):
        """scikit-learn's parameter check, with skltr's value named where a LightGBM or
        XGBoost value was given (``objective="rank:ndcg"``)."""
        from sklearn.utils._param_validation import InvalidParameterError  # noqa: PLC0415

        from ._peer_names import invalid_value_hint  # noqa: PLC0415

        try:
            super()._validate_params()
        except InvalidParameterError as exc:
            for name, value in self.get_params(deep=False).items():
                hint = invalid_value_hint(name, value) if isinstance(
                    value, (str, int, float)) else ""
                if hint and f"{name!r} parameter" in str(exc):
                    raise InvalidParameterError(f"{exc} {hint}") from None
            raise

    def fit(self, X, y, *, qid=None, sample_weight=None, **fit_params):
        """Fit the ranker.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rankers with ``_accept_sparse`` also take a scipy CSR or CSC matrix.
        y : array-like of shape (n_samples,)
            Relevance label of each row (higher is more relevant).
        qid : array-like of shape (n_samples,)
            Query id of each row, any order and any dtype (ints or strings); rows of a query
            need not be contiguous. Group sizes (LightGBM's ``group=``) convert with
            :func:`skltr.utils.group_sizes_to_qid`.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weight of each row.
        **fit_params
            Estimator-specific options (e.g. ``eval_set``).

        Returns
        -------
        self
        """
        from ..utils.validation import check_ranking_fit_data  # noqa: PLC0415

        saved = dict(self.__dict__)
        try:
            if hasattr(self, "_parameter_constraints"):
                self._validate_params()
            # A subclass whose _fit refuses +-inf itself (the GPU ranker: in its binning
            # kernels) spares the host pass over X's values that would look for them.
            allow_inf = self._allow_inf or (self._allow_nan and self._fit_checks_inf())
            data = check_ranking_fit_data(
                self, X, y, qid, sample_weight, allow_nan=self._allow_nan,
                allow_inf=allow_inf, integer_labels=self._integer_labels,
                missing_qid=self._missing_qid, dtype=list(self._fit_X_dtypes),
                accept_sparse=self._accept_sparse)
            self._fit(data, **fit_params)
        except BaseException:
            # A failed fit leaves the previous fitted state untouched.
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        return self

    def _fit_checks_inf(self) -> bool:
        """True when ``_fit`` itself raises on +-inf in X, so ``fit``'s validation skips it.

        Only consulted when ``_allow_inf`` is False and ``_allow_nan`` True (then the
        validation's only pass over X's values is the search for infinities).
        """
        return False

    def predict(self, X):
        """Relevance scores, one per row, in the order of ``X``. Higher ranks first.

        Scores are comparable only within a query; ranking a query means sorting its rows
        by descending score. Rankers with ``_accept_sparse`` also take a scipy CSR or CSC
        matrix.
        """
        X = self._predict_X(X)
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        return self._predict(X)

    def _predict_X(self, X):
        """``X`` checked as ``predict`` checks it, against the fitted state."""
        check_is_fitted(self)
        # X stays in a dtype fit keeps (float32 read as it is: the scoring kernels take
        # it, exactly, so a float32 X is not copied, and a first run compiles the scoring
        # kernels once for the dtype the data came in rather than also for float64)
        return check_ranking_X(self, X, reset=False, allow_nan=self._allow_nan,
                               allow_inf=self._allow_inf, ensure_min_samples=0,
                               accept_sparse=self._accept_sparse,
                               dtype=list(self._fit_X_dtypes))

    def score(self, X, y, *, qid=None, sample_weight=None):
        """Mean NDCG over queries at the cut-off ``eval_at`` (see :func:`skltr.metrics.ndcg_score`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        qid : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Row weights; a query weighs the mean of its rows' weights.

        Returns
        -------
        float
        """
        if qid is None and self._missing_qid != "single_query":
            raise ValueError(_ROUTING_HINT)
        return self._score_predictions(self.predict(X), y, qid, sample_weight)

    def _score_predictions(self, y_pred, y, qid, sample_weight):
        """:meth:`score` of the predictions ``y_pred``."""
        from ..metrics import ndcg_score  # noqa: PLC0415 - metrics compile lazily

        if qid is None:
            qid = np.zeros(len(y), dtype=np.int64)
        y_true = check_ranking_y(y, y_pred.shape[0])
        return float(ndcg_score(y_true, y_pred, qid=qid, k=first_cutoff(self._score_cutoff()),
                                sample_weight=sample_weight))

    def _score_cutoff(self):
        return getattr(self, "eval_at", 10)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = None  # neither classifier nor regressor: CV must not stratify
        tags.target_tags.required = True
        tags.target_tags.single_output = True
        tags.input_tags.allow_nan = self._allow_nan
        tags.input_tags.sparse = self._accept_sparse
        return tags


def _naming_unknown_arguments(func, kind):
    """``func`` (a constructor or ``fit`` without ``**kwargs``), raising the
    :func:`~skltr.ranking._peer_names.unknown_argument_message` ``TypeError`` for a keyword
    argument it does not take; its signature is unchanged (``inspect.signature`` follows
    ``__wrapped__``, so scikit-learn still reads the parameters)."""
    params = inspect.signature(func).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return func
    known = frozenset(name for name in params if name != "self")

    @functools.wraps(func)
    def checked(self, *args, **kwargs):
        for name in kwargs:
            if name not in known:
                from ._peer_names import unknown_argument_message  # noqa: PLC0415

                raise TypeError(unknown_argument_message(type(self).__name__, name, known,
                                                         kind=kind))
        return func(self, *args, **kwargs)

    return checked


class BaseRanker(VersionedPickleMixin, RankerMixin, BaseEstimator):
    """Base class of skltr rankers: the mixins in the right order, ready to subclass."""

    def _check_eval_set(self, eval_set, *, integer_labels=False):
        """Validate ``eval_set``; return ``(X, y, group_ptr, None)`` per set, rows grouped."""
        if eval_set is None:
            return []
        if not isinstance(eval_set, (list, tuple)) or (
                len(eval_set) == 3 and not isinstance(eval_set[0], (list, tuple))):
            raise ValueError(
                "eval_set must be a list of (X, y, qid) tuples, e.g. eval_set=[(X_val, y_val, "
                "qid_val)]; got " + _describe(eval_set) + ".")
        out = []
        for i, item in enumerate(eval_set):
            if not isinstance(item, (list, tuple)) or len(item) != 3:
                n = len(item) if isinstance(item, (list, tuple)) else None
                raise ValueError(
                    f"eval_set[{i}] must be an (X, y, qid) tuple"
                    + (f"; got {n} items" if n is not None else f"; got {_describe(item)}")
                    + ". Rankers need the query id of every evaluation row.")
            X_e, y_e, qid_e = item
            if qid_e is None:
                raise ValueError(f"eval_set[{i}] has qid=None; pass the query id of every "
                                 f"row: eval_set=[(X_val, y_val, qid_val)].")
            try:
                # in a dtype fit keeps, as the training X: a float32 eval set is binned
                # by the kernel the training rows compiled (the same bins as its float64
                # copy's), not by a second float64 signature of it
                X_e = check_ranking_X(self, X_e, reset=False, allow_nan=self._allow_nan,
                                      allow_inf=self._allow_inf, accept_sparse=True,
                                      dtype=list(self._fit_X_dtypes))
                if getattr(X_e, "format", None) == "csc":  # grouped by rows below
                    X_e = X_e.tocsr()
                y_e = check_ranking_y(y_e, X_e.shape[0],
                                      integer_labels=integer_labels)
                groups = group_by_qid(qid_e, X_e.shape[0])
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"eval_set[{i}]: {exc}") from exc
            if not groups.is_sorted:
                X_e, y_e = X_e[groups.order], y_e[groups.order]
            out.append((X_e, y_e, groups.group_ptr, None))
        return out


def _describe(obj) -> str:
    return f"{type(obj).__name__}" + (f" of length {len(obj)}" if hasattr(obj, "__len__") else "")


def ranker_from_params(cls, params, path, *, hint):
    """An unfitted ``cls`` from the hyper-parameters stored in model file ``path``, checked as
    ``fit`` checks them (``_parameter_constraints``).

    A parameter the file lacks (written by an older skltr) takes its current default; one
    this skltr does not know (a newer skltr, or an edited file) is an error rather than
    silently dropped, since refitting the loaded estimator would then train another model.
    ``hint`` ends that error's message.
    """
    if not isinstance(params, dict):
        raise ModelFileError(path, f"its estimator state has no 'params' object (got "
                                   f"{type(params).__name__}); the file is corrupt")
    known = cls().get_params()
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ModelFileError(
            path, f"it stores hyper-parameter(s) {unknown} that {cls.__name__} of this skltr "
                  f"does not have (a newer skltr wrote it, or it was edited); {hint}")
    for key, value in params.items():
        default = known[key]
        if isinstance(value, bool) and isinstance(default, (int, float)) and not isinstance(
                default, bool):
            # JSON true/false where a number belongs: Python would read it as 1 / 0
            raise ModelFileError(path, f"stored hyper-parameter {key} is {value!r}, not a "
                                       f"number; the file is corrupt")
    ranker = cls(**params)
    try:
        ranker._validate_params()
    except ValueError as exc:
        raise ModelFileError(path, f"invalid stored hyper-parameter: {exc}") from exc
    return ranker


def jsonable_params(params: dict) -> dict:
    """Estimator parameters as JSON values (a RandomState instance is not reproducible);
    arrays and tuples become lists, NumPy scalars Python ones, at any depth."""
    return {key: (None if isinstance(value, np.random.RandomState) else _jsonable(value))
            for key, value in params.items()}


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list, np.ndarray)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value
