"""Explanations for the estimators: ``predict_contribs`` / ``predict_interactions`` methods
and :func:`explain`, which wraps them in a ``shap.Explanation`` for shap's plots.

The numbers come from :meth:`skltr.trees.TreeEnsemble.predict_contribs` (exact
path-dependent TreeSHAP); an estimator validates ``X`` as its ``predict`` does and names the
ensemble and device (:meth:`ExplainMixin._explain_inputs`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ExplainMixin", "explain"]


class ExplainMixin:
    """``predict_contribs`` and ``predict_interactions`` for estimators holding one
    ``TreeEnsemble``; a subclass defines ``_explain_inputs(X) -> (ensemble, X, device,
    n_jobs)``, reading ``X`` as its ``predict`` reads it."""

    def predict_contribs(self, X):
        """SHAP values of every feature for every row, by exact TreeSHAP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Validated as ``predict`` validates it (feature names and count included).

        Returns
        -------
        ndarray of shape (n_samples, n_features + 1)
            XGBoost's ``pred_contribs`` layout: one column per feature, the expected value
            (base score included) last; each row sums to the raw score. Models with several
            outputs give (n_samples, n_outputs, n_features + 1).
        """
        ensemble, X, device, n_jobs = self._explain_inputs(X)
        return ensemble.predict_contribs(X, device=device, n_jobs=n_jobs)

    def predict_interactions(self, X):
        """SHAP interaction values, shape (n_samples, n_features + 1, n_features + 1):
        XGBoost's ``pred_interactions`` layout (main effects on the diagonal, half of each
        pairwise interaction off it, the expected value at ``[-1, -1]``)."""
        ensemble, X, device, n_jobs = self._explain_inputs(X)
        return ensemble.predict_interactions(X, device=device, n_jobs=n_jobs)


def _contribs_of(model, X):
    """``predict_contribs`` of ``model`` on ``X`` and the model's feature names."""
    from ..trees import TreeEnsemble  # noqa: PLC0415

    if isinstance(model, TreeEnsemble):
        return model.predict_contribs(X), model.feature_names
    if hasattr(model, "predict_contribs"):  # a skltr estimator (the rule ranker refuses)
        contribs = model.predict_contribs(X)
        names = getattr(model, "feature_names_in_", None)
        return contribs, None if names is None else [str(n) for n in names]
    from ..convert import to_tree_ensemble  # noqa: PLC0415

    ens = to_tree_ensemble(model)
    return ens.predict_contribs(X), ens.feature_names


def explain(model, X, *, output=None):
    """SHAP values of ``model`` on ``X`` as a ``shap.Explanation``, ready for shap's plots.

    Parameters
    ----------
    model : skltr ranker, QuickScorerPredictor, TreeEnsemble, or a fitted XGBoost /
        LightGBM / scikit-learn tree model (converted with
        :func:`skltr.convert.to_tree_ensemble`)
    X : array-like or pandas DataFrame, shape (n_samples, n_features)
        Read as the model's ``predict`` reads it.
    output : int, optional
        For models with several outputs (multi-class), the output to explain; None keeps
        them all (values of shape (n_samples, n_features, n_outputs), shap's layout).

    Returns
    -------
    shap.Explanation
        ``values`` the SHAP values, ``base_values`` the expected value of each row, ``data``
        the input values, ``feature_names`` the model's (or the DataFrame's) column names.

    Raises
    ------
    ImportError
        When the ``shap`` package is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from skltr import GPUHistGBDTRanker, explain
    >>> from skltr.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=20, docs_per_query=10, n_features=4, n_informative=3,
    ...                          random_state=0)
    >>> ranker = GPUHistGBDTRanker(n_estimators=10, random_state=0).fit(X, y, qid=qid)
    >>> exp = explain(ranker, X[:5])  # doctest: +SKIP
    >>> bool(np.allclose(exp.values.sum(1) + exp.base_values, ranker.predict(X[:5])))
    ... # doctest: +SKIP
    True
    """
    try:
        import shap  # noqa: PLC0415
    except ImportError as exc:
        raise ImportError("skltr.explain returns a shap.Explanation and needs the shap package:"
                          " pip install shap (or use predict_contribs, which returns plain "
                          "arrays).") from exc
    contribs, names = _contribs_of(model, X)
    if getattr(X, "columns", None) is not None:
        names = [str(c) for c in X.columns]
        data = np.asarray(X.to_numpy(dtype=np.float64, na_value=np.nan)
                          if all(str(t) != "category" for t in X.dtypes)
                          else X.apply(lambda c: c.cat.codes if str(c.dtype) == "category"
                                       else c).to_numpy(dtype=np.float64))
    elif hasattr(X, "toarray"):
        data = X.toarray()
    else:
        data = np.asarray(X)
    if contribs.ndim == 3:  # (n, outputs, features + 1) -> shap's (n, features, outputs)
        if output is not None:
            contribs = contribs[:, int(output)]
        else:
            return shap.Explanation(values=np.moveaxis(contribs[:, :, :-1], 1, 2),
                                    base_values=contribs[:, :, -1], data=data,
                                    feature_names=names)
    return shap.Explanation(values=contribs[:, :-1], base_values=contribs[:, -1], data=data,
                            feature_names=names)
