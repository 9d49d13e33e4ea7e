"""Export methods of the fitted estimators: thin calls to the ``TreeEnsemble`` exporters
(:mod:`skltr.trees._export_xgboost` and siblings; docs/user_guide/export.rst).

``ExportMixin`` serves every estimator whose fitted model is one ``TreeEnsemble``
(``ensemble_``); ``NoExportMixin`` gives ``OnDemandRuleRanker`` the same names, each raising
an error that says why there is nothing to export.
"""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from ..trees._export_common import ExportError

__all__ = ["ExportMixin", "NoExportMixin"]


class ExportMixin:
    """``to_xgboost``, ``to_xgboost_dump``, ``to_lightgbm``, ``to_onnx``, ``to_treelite`` of
    the fitted ``ensemble_`` (see the ``TreeEnsemble`` methods of the same names)."""

    def _ensemble_to_export(self):
        check_is_fitted(self, "ensemble_")
        return self.ensemble_

    def to_xgboost(self, path) -> None:
        """Write the model as an XGBoost JSON model file (``xgboost.Booster(model_file=)``)."""
        self._ensemble_to_export().to_xgboost(path)

    def to_xgboost_dump(self, path, *, base_score="fold", feature_names=None) -> None:
        """Write the model as an XGBoost JSON dump (OpenSearch / Elasticsearch LTR plugin,
        Vespa)."""
        self._ensemble_to_export().to_xgboost_dump(path, base_score=base_score,
                                                   feature_names=feature_names)

    def to_lightgbm(self, path, *, format="text") -> None:
        """Write the model as a LightGBM text model, or its ``dump_model()`` JSON
        (``format="json"``, read by Vespa)."""
        self._ensemble_to_export().to_lightgbm(path, format=format)

    def to_onnx(self, path=None, *, input_type="float32", raw_score=False, ml_opset=None):
        """The model as an ONNX tree ensemble (needs ``onnx``); written to ``path`` when
        given."""
        return self._ensemble_to_export().to_onnx(path, input_type=input_type,
                                                  raw_score=raw_score, ml_opset=ml_opset)

    def to_treelite(self):
        """The model as a ``treelite.Model`` (needs ``treelite>=4``)."""
        return self._ensemble_to_export().to_treelite()


class NoExportMixin:
    """The export names of :class:`ExportMixin` on an estimator without a fixed model."""

    _no_export_reason = "this estimator has no fixed tree model to export"

    def _refuse(self, target):
        raise ExportError(target, f"{type(self).__name__}: {self._no_export_reason}.")

    def to_xgboost(self, path) -> None:
        self._refuse("XGBoost JSON")

    def to_xgboost_dump(self, path, *, base_score="fold", feature_names=None) -> None:
        self._refuse("XGBoost JSON dump")

    def to_lightgbm(self, path, *, format="text") -> None:
        self._refuse("LightGBM")

    def to_onnx(self, path=None, *, input_type="float32", raw_score=False, ml_opset=None):
        self._refuse("ONNX")

    def to_treelite(self):
        self._refuse("Treelite")
