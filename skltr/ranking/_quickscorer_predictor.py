"""``QuickScorerPredictor``: fast, exact scoring of any supported tree ensemble.

A scikit-learn meta-estimator: it fits a clone of ``model`` (routing ``qid`` to rankers) or
wraps an already fitted model (:meth:`from_model`, :meth:`from_file`), converts it once to a
:class:`~skltr.trees.TreeEnsemble`, lays it out for the chosen backend, and then predicts what
the source model's own ``predict`` returns.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_is_fitted

from .._device import Device, resolve_device
from ..trees._backends import BACKENDS, get_backend
from ..utils._model_io import VersionedPickleMixin
from ._ensemble_ranker import _on, load_gpu_backends
from ._explain import ExplainMixin
from ._export import ExportMixin
from ..utils._qid import group_by_qid
from ..trees._input import frame_input, is_dataframe
from ..utils.validation import check_ranking_X

__all__ = ["QuickScorerPredictor"]

_BACKENDS = ("auto", *BACKENDS)


def _fit_source(model, X, y, qid, fit_params):
    """Fit ``model`` with ``qid`` passed the way its library expects."""
    if qid is None:
        return model.fit(X, y, **fit_params)
    module = type(model).__module__.split(".")[0]
    name = type(model).__name__
    if module == "skltr":  # skltr rankers take a per-row qid and group rows themselves
        return model.fit(X, y, qid=qid, **fit_params)
    if module not in ("xgboost", "lightgbm") or "Ranker" not in name:
        return model.fit(X, y, **fit_params)  # pointwise models do not use qid
    # XGBoost and LightGBM rankers need each query's rows contiguous: sort stably by qid,
    # after checking that y, qid and sample_weight have one entry per row of X (a longer or
    # shorter array would be cut or misread by the reordering).
    n = _num_samples(X)
    if y is None:
        raise ValueError(f"{name} needs y, the relevance label of every row; got y=None.")
    if _num_samples(y) != n:
        raise ValueError(f"y has {_num_samples(y)} entries but X has {n} rows; pass one "
                         f"relevance label per row.")
    groups = group_by_qid(qid, n)
    order = groups.order
    Xs, ys = _safe_indexing(X, order), _safe_indexing(np.asarray(y), order)
    params = dict(fit_params)
    if params.get("sample_weight") is not None:
        weight = _row_weights(params["sample_weight"], n)[order]
        if module == "xgboost":
            weight = _query_weights(weight, groups)
        params["sample_weight"] = weight
    if module == "xgboost":
        return model.fit(Xs, ys, qid=groups.codes[order], **params)
    return model.fit(Xs, ys, group=groups.sizes, **params)


def _row_weights(sample_weight, n: int) -> np.ndarray:
    """``sample_weight`` as a 1-D float64 array of one finite weight per row, checked."""
    w = np.asarray(sample_weight.get() if hasattr(sample_weight, "__cuda_array_interface__")
                   else sample_weight)
    if w.ndim != 1 or w.shape[0] != n:
        what = f"{w.shape[0]} entries" if w.ndim == 1 else f"shape {w.shape}"
        raise ValueError(f"sample_weight has {what} but X has {n} rows; pass one weight per "
                         f"row (a 1-D array of length {n}).")
    if w.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must be numeric; got dtype {w.dtype}.")
    w = w.astype(np.float64)
    if not np.isfinite(w).all():
        raise ValueError(f"sample_weight contains NaN or inf (first at row "
                         f"{int(np.flatnonzero(~np.isfinite(w))[0])}).")
    return w


def _query_weights(grouped, groups) -> np.ndarray:
    """XGBoost's ranking weights are one per query: the per-row weights ``grouped`` (rows in
    query order) when they are constant within every query, as one weight per query."""
    starts = groups.group_ptr[:-1]
    per_query = grouped[starts]
    differs = grouped != np.repeat(per_query, groups.sizes)
    if differs.any():
        q = int(np.searchsorted(groups.group_ptr, int(np.argmax(differs)), side="right")) - 1
        raise ValueError(
            f"XGBoost ranking takes one weight per query, but sample_weight varies within "
            f"query {groups.unique_qid[q]!r}; give every row of a query the same weight "
            f"(e.g. sample_weight = query_weight[qid]), or use a ranker that weighs rows "
            f"(LGBMRanker, skltr's rankers).")
    return per_query


def _source_has(name):
    return lambda self: hasattr(getattr(self, "source_model_", None) or self.model, name)


#: Training rows whose node visits order the GPU layout in ``fit`` (visits are counted on the
#: CPU; 20,000 rows give the order of the whole set on the benchmark's models).
CALIBRATION_ROWS = 20_000


class QuickScorerPredictor(ExplainMixin, ExportMixin, VersionedPickleMixin, MetaEstimatorMixin,
                           BaseEstimator):
    """Score a tree ensemble with QuickScorer (or plain traversal), reproducing its predictions.

    Parameters
    ----------
    model : estimator, optional
        An unfitted XGBoost / LightGBM / scikit-learn tree model (HistGradientBoosting,
        GradientBoosting, RandomForest, ExtraTrees, DecisionTree) or skltr tree model,
        fitted (as a clone) by :meth:`fit`. Use :meth:`from_model` or :meth:`from_file` for a
        model that is already fitted.
    device : {"cpu", "cuda", "cuda:N", "auto"}, default="cpu"
        Where the model is scored. On a GPU the tables live in GPU memory; NumPy, pandas and
        scipy input is sent there (after the source library's input rules, on the host) and
        the scores come back as NumPy; a CuPy array is read where it is and the scores stay
        on the GPU (CuPy). The scores are the CPU backends', bit for bit.
    backend : {"auto", "quickscorer", "traversal"}, default="auto"
        ``"quickscorer"`` (trees with more than 64 leaves are traversed one by one inside the
        same kernel), ``"traversal"`` (node-by-node walk), or ``"auto"``. On the CPU
        ``"auto"`` is QuickScorer unless most trees have more than 64 leaves
        (``choose_backend`` in ``skltr/trees/_backends.py``). On a GPU, ``"traversal"``
        measures its placements of rows and nodes per batch size, ``"quickscorer"`` is
        GPU-QuickScorer, and ``"auto"`` measures both per batch size and keeps the fastest
        (``placements_``). The QuickScorer method is reported to be patented in some
        jurisdictions; ``"traversal"`` avoids it.
    n_jobs : int, optional
        Threads (None: all of numba's threads).
    tree_block : int, optional
        Trees per QuickScorer block (CPU). None: sized from the CPU's L2 cache per core when
        the model is compiled (``cpu_tree_block`` in ``skltr/trees/_quickscorer.py``).

    Attributes
    ----------
    ensemble_ : TreeEnsemble
    source_model_ : estimator or None
        The fitted source model (None when loaded from a file).
    backend_ : str
        The backend in use (``"quickscorer"``, ``"traversal"``; on a GPU ``"gpu_auto"``,
        ``"gpu_traversal"``, ``"gpu_quickscorer"``).
    placements_ : dict
        GPU only: ``{batch size class: strategy}`` chosen so far by measurement (size class
        ``ceil(log2(rows))``; strategies ``"direct"``, ``"shared_data"``,
        ``"shared_forest"``, ``"shared_both"``, ``"split_rows"``, ``"split_trees"``,
        ``"quickscorer"``; see ``skltr/_gpu/traversal.py``).
    node_visits_ : ndarray of int64
        Present after :meth:`calibrate`: rows of the calibration data through each node.
    layout_nbytes_ : int
        Size of the backend's tables in bytes (0 for traversal).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Present when the source model recorded feature names: a fitted model's
        ``feature_names_in_``, or the names a model file holds (:meth:`from_file`; not
        LightGBM's ``Column_0, Column_1, ...`` of a model fitted on an array).
    classes_ : ndarray
        Present when the source is a classifier.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import HistGradientBoostingRegressor
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(200, 4)), rng.normal(size=200)
    >>> hgb = HistGradientBoostingRegressor(max_iter=5).fit(X, y)
    >>> qs = QuickScorerPredictor.from_model(hgb)
    >>> bool(np.array_equal(qs.predict(X), hgb.predict(X)))
    True
    """

    _parameter_constraints = {
        "model": "no_validation",
        "device": [str],
        "backend": [StrOptions(set(_BACKENDS))],
        "n_jobs": [None, Integral],
        "tree_block": [None, Interval(Integral, 1, None, closed="left")],
    }
    __metadata_request__fit = {"qid": True}

    def __init__(self, model=None, *, device="cpu", backend="auto", n_jobs=None,
                 tree_block=None):
        self.model = model
        self.device = device
        self.backend = backend
        self.n_jobs = n_jobs
        self.tree_block = tree_block

    # ------------------------------------------------------------------ building
    def fit(self, X, y=None, *, qid=None, **fit_params):
        """Fit a clone of ``model`` on ``X, y`` (``qid`` routed to rankers) and compile it (on
        a GPU, then :meth:`calibrate` on up to ``CALIBRATION_ROWS`` evenly spaced rows of
        ``X``)."""
        if self.model is None:
            raise ValueError(
                "QuickScorerPredictor.fit needs model=<an unfitted tree model>; to wrap a model "
                "that is already fitted use QuickScorerPredictor.from_model(fitted)."
            )
        self._validate_params()
        source = _fit_source(clone(self.model), X, y, qid, fit_params)
        self._compile(source)
        if self._device().is_gpu:  # Tahoe's node order, from the training rows
            self.calibrate(X, max_rows=CALIBRATION_ROWS)
        return self

    @classmethod
    def from_model(cls, fitted, **params) -> "QuickScorerPredictor":
        """Wrap an already fitted model (or TreeEnsemble) without refitting it."""
        predictor = cls(model=None if _is_ensemble(fitted) else fitted, **params)
        predictor._validate_params()
        predictor._compile(fitted)
        return predictor

    @classmethod
    def from_file(cls, path, **params) -> "QuickScorerPredictor":
        """Load a skltr, XGBoost (.json/.ubj) or LightGBM (text) model file."""
        from ..convert import load_model  # noqa: PLC0415

        return cls.from_model(load_model(path), **params)

    def _compile(self, source):
        from ..convert import to_tree_ensemble  # noqa: PLC0415
        from .._numba_cache import announce_first_compile  # noqa: PLC0415

        announce_first_compile()
        device = resolve_device(self.device, estimator=type(self).__name__)
        if device.is_gpu:
            load_gpu_backends()
        if isinstance(self.n_jobs, int) and self.n_jobs == 0:
            raise ValueError("n_jobs must be a non-zero integer or None; got 0.")
        ensemble = to_tree_ensemble(source)
        backend = get_backend(self.backend, ensemble, device.kind)
        with _on(device):
            layout = (backend.layout(ensemble) if device.is_gpu
                      else backend.layout(ensemble, tree_block=self.tree_block))
        # Assign fitted state only once everything above has succeeded.
        self.ensemble_ = ensemble
        self.source_model_ = None if _is_ensemble(source) else source
        self.backend_ = backend.name
        self.device_ = device  # a Device
        self.layout_ = layout
        self.layout_nbytes_ = backend.table_bytes(layout)
        if hasattr(self, "node_visits_"):  # a new model: the old calibration does not apply
            del self.node_visits_
        self.n_features_in_ = ensemble.n_features
        if hasattr(source, "feature_names_in_") or not _is_ensemble(source):
            names = getattr(source, "feature_names_in_", None)  # the fitted model's own
        else:  # a TreeEnsemble (from_file): the names its file recorded
            from ..trees._input import _model_names  # noqa: PLC0415

            names = _model_names(ensemble)
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        if isinstance(source, BaseEstimator) and is_classifier(source) and hasattr(
                source, "classes_"):
            self.classes_ = np.asarray(source.classes_)
        elif hasattr(self, "classes_"):
            del self.classes_

    # ------------------------------------------------------------------ prediction
    def _validated(self, X):
        check_is_fitted(self, "ensemble_")
        if _is_cupy(X):
            if self._device().is_gpu:
                return X  # read where it is; the GPU backend checks its shape and dtype
            X = X.get()  # a CPU backend: read it on the host
        if is_dataframe(X):
            return self._validated_frame(X)
        # Keep X's own dtype: the ensemble's input_rule decides how each dtype is read. CSR
        # and CSC pass as they are: the backends densify blocks of rows, absent entries
        # standing for what the source library reads them as (ensemble_.absent_value).
        return check_ranking_X(self, X, reset=False, allow_nan=True, allow_inf=True,
                               ensure_min_samples=0, dtype="numeric", accept_sparse=True)

    def _validated_frame(self, X):
        """DataFrame branch: read as the source library reads a DataFrame (category columns
        re-coded to the training categories, one dtype rule per library), with the column
        names checked against the model's (``TreeEnsemble.frame_rule``)."""
        return frame_input(self.ensemble_, X)

    def predict_raw(self, X):
        """Raw scores (margins), exactly as the source library's raw / margin output.

        ``X`` may be a scipy CSR or CSC matrix (so may that of :meth:`predict`,
        :meth:`predict_proba` and :meth:`decision_function`): an entry it leaves out means
        what it means to the source library -- 0.0 for LightGBM, scikit-learn and skltr,
        missing for XGBoost -- and an explicitly stored 0.0 is the value 0.0. It is scored a
        block of rows at a time, never densified whole.
        """
        X = self._validated(X)
        with _on(self._device()):
            return BACKENDS[self.backend_].predict_raw(self.ensemble_, self.layout_, X,
                                                       self.n_jobs)

    def _device(self):
        return getattr(self, "device_", None) or Device("cpu", 0)

    def _explain_inputs(self, X):
        """``predict_contribs``' inputs: X read as ``predict_raw`` reads it (the source
        library's input rules), on the predictor's device."""
        X = self._validated(X)
        return self.ensemble_, X, str(self._device()), self.n_jobs

    def calibrate(self, X, *, max_rows=None):
        """Order the GPU layout by how often rows like ``X`` visit each node.

        The child that more rows of ``X`` take is stored right after its parent (Tahoe's
        visit-frequency order), so the common path of a walk reads consecutive nodes. Scores
        are unchanged, bit for bit; only their speed depends on ``X``. GPU only.

        Parameters
        ----------
        X : array-like, CuPy array, DataFrame or sparse matrix
            Calibration rows (training rows, or a sample of the traffic to score).
        max_rows : int, optional
            Count the visits of at most this many evenly spaced rows of ``X`` (all if None).

        Returns
        -------
        self
        """
        check_is_fitted(self, "ensemble_")
        if not self._device().is_gpu:
            raise ValueError("calibrate orders the GPU layout; this predictor scores on the "
                             "CPU. Use device='cuda' to score on a GPU.")
        from ..trees._traversal import node_visits  # noqa: PLC0415

        X = self._validated(X.get() if _is_cupy(X) else X)
        if max_rows is not None and X.shape[0] > max_rows:
            X = X[np.linspace(0, X.shape[0] - 1, max_rows).astype(np.intp)]
        visits = node_visits(self.ensemble_, X, n_jobs=self.n_jobs)
        with _on(self._device()):
            layout = BACKENDS[self.backend_].layout(self.ensemble_, visits=visits)
        self.layout_, self.node_visits_ = layout, visits
        return self

    @property
    def placements_(self):
        check_is_fitted(self, "ensemble_")
        return dict(getattr(self.layout_, "choices", {}))

    def _transformed(self, X):
        from ..trees._transforms import apply_transform  # noqa: PLC0415

        raw = self.predict_raw(X)  # checks fitted state first
        if _is_cupy(raw):  # the transforms are the host's exact ones; the result goes back
            return _like(raw, apply_transform(self.ensemble_, raw.get()))
        return apply_transform(self.ensemble_, raw)

    def predict(self, X):
        """What the source model's ``predict`` returns: scores, values, or class labels
        (a CuPy array for CuPy input on a GPU)."""
        rule = getattr(getattr(self, "ensemble_", None), "source", {}).get("predict")
        if rule in ("raw>=0", "argmax_raw"):  # labels from the margins (GradientBoosting)
            raw = self.predict_raw(X)
            host = raw.get() if _is_cupy(raw) else raw
            index = (host >= 0).astype(np.intp) if rule == "raw>=0" else np.argmax(host, axis=1)
            return _like(raw, self.classes_[index] if hasattr(self, "classes_")
                         else index.astype(host.dtype))
        out = self._transformed(X)
        host = out.get() if _is_cupy(out) else out
        if hasattr(self, "classes_"):
            return _like(out, self.classes_[np.argmax(_two_columns(host), axis=1)])
        if self.ensemble_.source.get("predict") == "argmax":
            return _like(out, np.argmax(host, axis=1).astype(host.dtype))
        return out

    @available_if(lambda self: hasattr(self, "classes_"))
    def predict_proba(self, X):
        """Class probabilities (classifiers only), as the source's ``predict_proba``."""
        out = self._transformed(X)
        return _like(out, _two_columns(out.get() if _is_cupy(out) else out))

    @available_if(_source_has("decision_function"))
    def decision_function(self, X):
        """Raw margins, as the source's ``decision_function``."""
        return self.predict_raw(X)

    def __sklearn_tags__(self):
        # fit hands X to the model: it accepts what the model's fit accepts; a predictor
        # without a model (from_model, from_file) takes CSR / CSC and NaN in predict
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        if self.model is not None and hasattr(self.model, "__sklearn_tags__"):
            # a scikit-learn-style estimator; a fitted Booster or TreeEnsemble has no tags
            from sklearn.utils import get_tags  # noqa: PLC0415

            inner = get_tags(self.model).input_tags
            tags.input_tags.allow_nan = inner.allow_nan
            tags.input_tags.sparse = inner.sparse
        return tags


def _is_cupy(a) -> bool:
    return hasattr(a, "__cuda_array_interface__") and hasattr(a, "get")


def _like(ref, host):
    """``host`` (NumPy) on the device of ``ref``: a CuPy array when ``ref`` is one (numeric
    results only; class labels of object dtype stay NumPy)."""
    if _is_cupy(ref) and np.asarray(host).dtype.kind in "biuf":
        from .._gpu.arrays import to_device  # noqa: PLC0415 - imports CuPy

        return to_device(host)
    return host


def _is_ensemble(obj) -> bool:
    from ..trees import TreeEnsemble  # noqa: PLC0415

    return isinstance(obj, TreeEnsemble)


def _two_columns(prob):
    """Binary sources give P(class 1) per row; scikit-learn API wants both columns."""
    if prob.ndim == 1:
        return np.column_stack([prob.dtype.type(1) - prob, prob])
    return prob
