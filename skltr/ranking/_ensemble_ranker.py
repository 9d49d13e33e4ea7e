"""``EnsembleRanker``: what every ranker whose fitted model is one ``TreeEnsemble`` shares.

Prediction through the scoring backends (tables built on the first ``predict``, never
pickled), ``to_tree_ensemble``, feature importances from the split statistics of the kept
trees, and the versioned JSON model file (``save_model`` / ``load_model``). A subclass's
``_fit`` runs its boosting loop and hands the :class:`~skltr._engine.rounds.BoostingResult`
to :meth:`EnsembleRanker._set_fitted`.
"""

from __future__ import annotations

import contextlib
import operator
import os
from numbers import Integral

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._device import Device, names_gpu, resolve_device
from ..trees._backends import get_backend
from ..trees._ensemble import rounds_in
from ..utils._model_io import (ModelFileError, load_document, model_file_errors,
                                read_document, save_document)
from ._base import BaseRanker, first_cutoff, jsonable_params, ranker_from_params
from ._explain import ExplainMixin
from ._export import ExportMixin
from ._fitted_state import (fitted_dict, read_evals_result, read_int, read_names,
                            read_numbers, read_str)

__all__ = ["EnsembleRanker"]

_DOC_KIND = "TreeEnsemble"  # the model file is a TreeEnsemble document plus an "estimator" entry


class _LayoutCache:
    """Holder of the QuickScorer tables, built on the first ``predict`` and never pickled.

    The estimator keeps one holder from ``fit`` on, so filling it does not change the
    estimator's ``__dict__`` during ``predict`` (scikit-learn checks that it does not).
    """

    __slots__ = ("key", "backend", "layout", "subset")

    def __init__(self):
        self.key = self.backend = self.layout = None  # key: (ensemble, device)
        self.subset = None  # (begin, end, those trees' ensemble, the model's): iteration_range

    def __eq__(self, other):  # every cache is as good as any other: compare models, not caches
        return isinstance(other, _LayoutCache)

    __hash__ = None

    def __reduce__(self):
        return (_LayoutCache, ())  # pickled empty: the tables are rebuilt lazily


def load_gpu_backends():
    """Import the GPU scoring backends, which register themselves in
    ``skltr.trees._backends.BACKENDS`` (imports CuPy)."""
    from .._gpu import traversal  # noqa: F401, PLC0415


def _scoring_device(fitted_on):
    """Where a model fitted on ``fitted_on`` scores: on that GPU when CuPy and the GPU are
    here (the scores are the CPU's, bit for bit), else on the CPU (e.g. a model fitted on a
    GPU machine and loaded on a laptop)."""
    if not names_gpu(fitted_on):
        return Device("cpu", 0)
    try:
        device = resolve_device(str(fitted_on))
        load_gpu_backends()
        return device
    except (ImportError, RuntimeError, ValueError):
        return Device("cpu", 0)


def _on(device):
    """The CuPy device context of a GPU ``device``; nothing for the CPU."""
    if not device.is_gpu:
        return contextlib.nullcontext()
    from .._gpu.arrays import device_context  # noqa: PLC0415 - imports CuPy

    return device_context(device.index)


class EnsembleRanker(ExplainMixin, ExportMixin, BaseRanker):
    """Base of the rankers whose fitted model is one ``TreeEnsemble`` (``ensemble_``).

    Subclasses declare ``eval_at`` among their parameters and set the fitted state with
    :meth:`_set_fitted`.
    """

    def _set_fitted(self, result, device):
        """Fitted attributes from a ``BoostingResult``; returns ``self``."""
        self.ensemble_ = result.ensemble
        self.n_estimators_ = result.ensemble.n_trees
        self.n_iter_ = result.n_rounds_run
        self.best_iteration_ = result.best_iteration
        self.evals_result_ = result.evals_result
        self._split_gain = result.split_gain
        self._split_count = result.split_count
        self.device_ = str(device)
        self.timings_ = result.timings
        self._layout_cache = _LayoutCache()
        return self

    def _eval_at_list(self) -> list[int]:
        ks = self.eval_at if isinstance(self.eval_at, (list, tuple)) else [self.eval_at]
        if not ks or any(isinstance(k, bool) or not isinstance(k, Integral) or k < 1
                         for k in ks):
            raise ValueError(f"eval_at must be a positive int or a non-empty list of positive "
                             f"ints (NDCG cut-offs); got {self.eval_at!r}.")
        return [int(k) for k in ks]

    # ------------------------------------------------------------------ prediction
    def predict(self, X, *, iteration_range=None):
        """Relevance scores, one per row, in the order of ``X``. Higher ranks first.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Rankers with ``_accept_sparse`` also take a scipy CSR or CSC matrix.
        iteration_range : (int, int), optional
            Score with the trees of boosting rounds ``begin .. end - 1`` only, the starting
            score included (XGBoost's ``iteration_range``; ``end=0``: up to the last round
            kept). Default: every kept tree -- after early stopping, the rounds up to
            ``best_iteration_``, as LightGBM's ``predict`` does by default (the later rounds
            are not kept).

        Returns
        -------
        ndarray of shape (n_samples,)
            Scores are comparable only within a query.
        """
        X = self._predict_X(X)
        if X.shape[0] == 0:
            self._trees_in(iteration_range)  # the range is checked all the same
            return np.zeros(0, dtype=np.float64)
        return self._predict(X, self._trees_in(iteration_range))

    def staged_predict(self, X):
        """Scores after each boosting round: a generator of ``n_estimators_`` arrays.

        Round ``k``'s scores (1-based) equal ``predict(X, iteration_range=(0, k))`` bit for
        bit (the starting score, then the trees' values added in order), as scikit-learn's
        ``staged_predict`` of ``HistGradientBoosting*`` gives them. Computed from each
        tree's leaf on the CPU, a block of trees at a time (memory: about 64 MB of leaf
        indices whatever the size of ``X``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Yields
        ------
        ndarray of shape (n_samples,)
        """
        from ..trees._traversal import apply  # noqa: PLC0415

        X = self._predict_X(X)
        ensemble = self.ensemble_
        n = X.shape[0]
        scores = np.full(n, ensemble.base_score[0], dtype=np.float64)
        block = max(1, (1 << 24) // max(n, 1))
        for begin in range(0, ensemble.n_trees, block):
            end = min(ensemble.n_trees, begin + block)
            trees = ensemble.select_trees(begin, end)
            leaves = (apply(trees, X, n_jobs=self.n_jobs) if n else
                      np.zeros((0, end - begin), np.int32))
            for t in range(end - begin):
                node = leaves[:, t].astype(np.int64) + trees.tree_ptr[t]
                # the kernels' arithmetic: score += value * tree weight, in tree order
                scores += trees.value[node] * trees.tree_weight[t]
                yield scores.copy()

    def _trees_in(self, iteration_range):
        """The ensemble of ``iteration_range``'s trees (checked; None: every kept tree).
        The same range gives the same ensemble object, so its scoring tables are reused."""
        ensemble = self.ensemble_
        if iteration_range is None:
            return ensemble
        n = ensemble.n_trees
        try:
            parsed = [operator.index(v) for v in iteration_range]
        except TypeError:
            parsed = None
        if parsed is None or len(parsed) != 2:
            raise ValueError(f"iteration_range={iteration_range!r}: expected (begin, end), "
                             f"two ints (XGBoost's form).")
        begin, end = rounds_in(parsed, n)
        if (begin, end) == (0, n):
            return ensemble
        cache = self._layout_cache
        if cache.subset is None or cache.subset[:2] != (begin, end) or \
                cache.subset[3] is not ensemble:
            cache.subset = (begin, end, ensemble.select_trees(begin, end), ensemble)
        return cache.subset[2]

    def _predict(self, X, ensemble=None):
        cache = self._layout_cache
        ensemble = self.ensemble_ if ensemble is None else ensemble
        device = _scoring_device(getattr(self, "device_", "cpu"))
        if cache.key is None or cache.key[0] is not ensemble or cache.key[1] != device:
            with _on(device):
                backend = get_backend("auto", ensemble, device.kind)
                cache.layout = backend.layout(ensemble)
            cache.backend, cache.key = backend, (ensemble, device)
        with _on(device):
            return cache.backend.predict_raw(ensemble, cache.layout, X, self.n_jobs)

    def _explain_inputs(self, X):
        """What ``predict_contribs`` needs: X validated as ``predict`` validates it."""
        from ..utils.validation import check_ranking_X  # noqa: PLC0415

        check_is_fitted(self, "ensemble_")
        X = check_ranking_X(self, X, reset=False, allow_nan=self._allow_nan,
                            allow_inf=self._allow_inf, ensure_min_samples=0,
                            accept_sparse=self._accept_sparse)
        device = _scoring_device(getattr(self, "device_", "cpu"))
        return self.ensemble_, X, str(device), self.n_jobs

    def to_tree_ensemble(self):
        """The fitted model as a :class:`~skltr.trees.TreeEnsemble` (shared, not a copy)."""
        check_is_fitted(self, "ensemble_")
        return self.ensemble_

    # ------------------------------------------------------------------ importances
    @property
    def feature_importances_(self) -> np.ndarray:
        """Total split gain per feature over the kept trees, normalised to sum to 1 (split
        counts when the estimator's ``importance_type`` is ``"split"``)."""
        return self.feature_importance(getattr(self, "importance_type", "gain"),
                                       normalize=True)

    def feature_importance(self, importance_type="gain", *, normalize=False) -> np.ndarray:
        """Per-feature importance over the kept trees.

        Parameters
        ----------
        importance_type : {"gain", "split"}, default="gain"
            ``"gain"``: total loss reduction of the feature's splits; ``"split"``: how many
            times the feature is split on (LightGBM's ``feature_importance`` types).
        normalize : bool, default=False
            Divide by the total (all zeros when no tree splits).

        Returns
        -------
        ndarray of shape (``n_features_in_``,)
        """
        check_is_fitted(self, "ensemble_")
        if importance_type == "gain":
            values = np.asarray(self._split_gain, dtype=np.float64)
        elif importance_type == "split":
            values = np.asarray(self._split_count, dtype=np.int64)
        else:
            raise ValueError(f"importance_type must be 'gain' or 'split'; got "
                             f"{importance_type!r}.")
        if not normalize:
            return values.copy()
        total = values.sum()
        return values / total if total > 0 else np.zeros(values.shape, dtype=np.float64)

    # ------------------------------------------------------------------ persistence
    def save_model(self, path) -> None:
        """Save the fitted model as a versioned JSON document.

        The file is a :class:`~skltr.trees.TreeEnsemble` document (so ``skltr predict``,
        :meth:`skltr.QuickScorerPredictor.from_file` and :func:`skltr.convert.load_model`
        read it) whose ``meta.estimator`` entry holds this estimator's parameters and fitted
        attributes; :meth:`load_model` restores the estimator. No pickle is involved.
        """
        check_is_fitted(self, "ensemble_")
        doc = self.ensemble_.to_document()
        doc["meta"]["estimator"] = {
            "class": type(self).__name__,
            "params": jsonable_params(self.get_params()),
            "fitted": {
                "n_features_in_": int(self.n_features_in_),
                "feature_names_in_": (None if not hasattr(self, "feature_names_in_")
                                      else [str(n) for n in self.feature_names_in_]),
                "n_iter_": int(self.n_iter_),
                "best_iteration_": self.best_iteration_,
                "evals_result_": self.evals_result_,
                "device_": self.device_,
                "split_gain": [float(v) for v in self._split_gain],
                "split_count": [int(v) for v in self._split_count],
                **self._extra_fitted_state(),
            },
        }
        save_document(doc, path)

    def _extra_fitted_state(self) -> dict:
        """A subclass's fitted state beyond the common one, as JSON values (saved by
        :meth:`save_model`, read back by :meth:`_read_extra_fitted_state`)."""
        return {}

    def _read_extra_fitted_state(self, fitted, path) -> None:
        """Set what :meth:`_extra_fitted_state` saved, checked (raise ModelFileError)."""

    @classmethod
    def load_model(cls, path) -> "EnsembleRanker":
        """Load a ranker written by :meth:`save_model`.

        The stored hyper-parameters are checked as ``fit`` checks them
        (``_parameter_constraints``). A parameter the file lacks (written by an older skltr)
        takes its current default; a parameter this skltr does not know (a newer skltr, or an
        edited file) is an error rather than silently dropped, since refitting the loaded
        estimator would then train another model.

        Raises
        ------
        ModelFileError
            A ``ValueError`` naming the file and the reason: not a skltr model, truncated or
            corrupt, a plain TreeEnsemble without estimator state (wrap those with
            :meth:`skltr.QuickScorerPredictor.from_file`), an invalid or unknown stored
            hyper-parameter, or fitted state that does not match the trees.
        """
        from ..trees import TreeEnsemble  # noqa: PLC0415

        path = os.fspath(path)
        with model_file_errors(path):
            doc = load_document(path)
            meta, _ = read_document(doc, expected_kind=_DOC_KIND)
            state = meta.get("estimator")
            if not isinstance(state, dict) or state.get("class") != cls.__name__:
                raise ModelFileError(
                    path, f"it holds a tree ensemble but no {cls.__name__} state (it was not "
                          f"written by {cls.__name__}.save_model); score it with "
                          f"skltr.QuickScorerPredictor.from_file(path)")
            ranker = _ranker_from_params(cls, state.get("params"), path)
            fitted = fitted_dict(state, path)
            ensemble = TreeEnsemble.from_document(doc)
            n_features = read_int(fitted, "n_features_in_", path, lo=1)
            if ensemble.n_features != n_features:
                raise ModelFileError(
                    path, f"its fitted state does not match: n_features_in_={n_features} "
                          f"but the trees read {ensemble.n_features} features; the file is "
                          f"corrupt or was edited")
            split_gain = read_numbers(fitted, "split_gain", path, n_features)
            split_count = read_numbers(fitted, "split_count", path, n_features, integer=True)
            names = read_names(fitted, "feature_names_in_", path, n_features)
            # Every round adds one tree and early stopping keeps the best round's: the trees
            # kept are at most the rounds run, and exactly best_iteration_ when it is set.
            n_trees = ensemble.n_trees
            n_iter = read_int(fitted, "n_iter_", path, lo=n_trees)
            best = read_int(fitted, "best_iteration_", path, lo=n_trees, hi=n_trees,
                            optional=True)
            ranker.ensemble_ = ensemble
            ranker.n_features_in_ = n_features
            if names is not None:
                ranker.feature_names_in_ = np.asarray(names, dtype=object)
            ranker.n_estimators_ = n_trees
            ranker.n_iter_ = n_iter
            ranker.best_iteration_ = best
            ranker.evals_result_ = read_evals_result(fitted, "evals_result_", path)
            ranker.device_ = read_str(fitted, "device_", path)
            ranker.timings_ = {}
            ranker._split_gain = split_gain
            ranker._split_count = split_count
            ranker._layout_cache = _LayoutCache()
            ranker._read_extra_fitted_state(fitted, path)
        return ranker

    def _score_cutoff(self):
        return first_cutoff(self.eval_at)


def _ranker_from_params(cls, params, path):
    """An unfitted ``cls`` from the hyper-parameters stored in model file ``path``, checked
    (``eval_at`` too)."""
    ranker = ranker_from_params(cls, params, path, hint=(
        "load it with the skltr that wrote it, or score its trees with "
        "skltr.QuickScorerPredictor.from_file(path)"))
    try:
        ranker._eval_at_list()
    except ValueError as exc:
        raise ModelFileError(path, f"invalid stored hyper-parameter: {exc}") from exc
    return ranker
