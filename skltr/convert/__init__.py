"""Turn fitted tree models from other libraries into a :class:`~skltr.trees.TreeEnsemble`.

``from_xgboost``, ``from_lightgbm`` and ``from_sklearn`` reproduce the source library's raw
predictions exactly (see ``docs/model_format.rst`` for the semantics they map onto).
``from_sklearn`` takes scikit-learn's decision trees, random forests, extra trees,
GradientBoosting and HistGradientBoosting models. XGBoost and LightGBM are optional: they are
imported only when one of their objects is converted. :func:`to_tree_ensemble` picks the
converter from the object (or file) it is given.
"""

from __future__ import annotations

import os

from ..trees import TreeEnsemble

__all__ = ["from_xgboost", "from_lightgbm", "from_sklearn", "to_tree_ensemble", "load_model"]


def from_xgboost(model, **kwargs) -> TreeEnsemble:
    """See :func:`skltr.convert._xgboost.from_xgboost`."""
    from ._xgboost import from_xgboost as impl  # noqa: PLC0415

    return impl(model, **kwargs)


def from_lightgbm(model, **kwargs) -> TreeEnsemble:
    """See :func:`skltr.convert._lightgbm.from_lightgbm`."""
    from ._lightgbm import from_lightgbm as impl  # noqa: PLC0415

    return impl(model, **kwargs)


def from_sklearn(model, **kwargs) -> TreeEnsemble:
    """See :func:`skltr.convert._sklearn.from_sklearn`."""
    from ._sklearn import from_sklearn as impl  # noqa: PLC0415

    return impl(model, **kwargs)


def _library_of(model) -> str | None:
    module = type(model).__module__.split(".")[0]
    return module if module in ("xgboost", "lightgbm", "sklearn", "skltr") else None


def load_model(path) -> TreeEnsemble:
    """Read a model file: a skltr JSON document, an XGBoost ``.json``/``.ubj`` model or a
    LightGBM text model, recognised by content.

    Raises
    ------
    ModelFileError
        A ``ValueError`` naming the file and the reason when it is truncated, corrupt or of
        no known kind (the parser's error is its ``__cause__``). A missing file raises
        ``FileNotFoundError``.
    """
    from ..utils._model_io import ModelFileError, load_document, model_file_errors  # noqa: PLC0415

    path = os.fspath(path)
    with model_file_errors(path):
        with open(path, "rb") as fh:
            first = fh.read(2)
        # UBJSON: '{' then a key's length marker (or an optimised object's '$' / '#'), where
        # JSON has a blank or '"'.
        if path.endswith(".ubj") or (first[:1] == b"{" and first[1:2] in (
                b"i", b"U", b"I", b"l", b"L", b"$", b"#")):
            return from_xgboost(path)
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
        if not head.strip():
            raise ModelFileError(path, "the file is empty")
        if head.lstrip().startswith("{"):
            doc = load_document(path)  # ModelFileError when it is not a JSON object
            if doc.get("format") == "skltr-model":
                return TreeEnsemble.from_document(doc)
            if "learner" in doc:
                return from_xgboost(doc)
            raise ModelFileError(path, "JSON but neither a skltr nor an XGBoost model")
        if head.startswith("tree\n") or "\nversion=v" in head[:200]:
            return from_lightgbm(path)
    raise ModelFileError(
        path, "cannot tell what model it holds: expected a skltr JSON model, an XGBoost "
              ".json/.ubj model or a LightGBM text model (model_to_string / save_model)")


def to_tree_ensemble(model) -> TreeEnsemble:
    """Convert any supported fitted model (or model file path) to a TreeEnsemble.

    Supported: :class:`TreeEnsemble` (returned as is), skltr tree estimators
    (``to_tree_ensemble()``), XGBoost Boosters and scikit-learn wrappers, LightGBM Boosters
    and wrappers, scikit-learn ``DecisionTreeRegressor`` / ``Classifier`` (and
    ``ExtraTreeRegressor`` / ``Classifier``), ``RandomForestRegressor`` / ``Classifier``,
    ``ExtraTreesRegressor`` / ``Classifier``, ``GradientBoostingRegressor`` / ``Classifier``
    and ``HistGradientBoostingRegressor`` / ``Classifier`` (see
    :func:`skltr.convert._sklearn.from_sklearn`), and file paths (see :func:`load_model`).
    """
    if isinstance(model, TreeEnsemble):
        return model
    if isinstance(model, (str, os.PathLike)):
        return load_model(model)
    if hasattr(model, "to_tree_ensemble"):
        return model.to_tree_ensemble()
    library = _library_of(model)
    if library == "xgboost":
        return from_xgboost(model)
    if library == "lightgbm":
        return from_lightgbm(model)
    if library == "sklearn":
        return from_sklearn(model)
    raise TypeError(
        f"cannot convert a {type(model).__module__}.{type(model).__name__}: supported are "
        f"XGBoost and LightGBM models, scikit-learn decision trees, random forests, extra "
        f"trees, GradientBoosting and HistGradientBoosting models, skltr tree models, "
        f"TreeEnsemble objects and model files."
    )
