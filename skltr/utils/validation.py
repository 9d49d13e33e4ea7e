"""Input validation shared by every skltr estimator.

One place decides what a ranker accepts, so every estimator gives the same error for the same
mistake. Nothing is silently dropped, clipped or reordered: rows are grouped by a stable sort
on qid (``group_by_qid``) and every output is scattered back to the caller's order.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _check_sample_weight, validate_data

from .._dtypes import Y_DTYPE
from ._qid import QueryGroups, group_by_qid

__all__ = ["check_ranking_X", "check_ranking_y", "check_ranking_fit_data", "RankingData"]

_SPARSE_MSG = (
    "{name} does not accept scipy sparse input yet; densify it with X.toarray(), or use an "
    "estimator that takes CSR / CSC input (GPUHistGBDTRanker, QuickScorerPredictor)."
)


def _is_cupy(a) -> bool:
    return type(a).__module__.split(".")[0] == "cupy"


def check_ranking_X(estimator, X, *, reset: bool, allow_nan: bool = True,
                    allow_inf: bool = False, dtype=np.float64, ensure_min_samples: int = 1,
                    accept_sparse: bool = False):
    """Validate X with scikit-learn's ``validate_data`` plus ranker-specific messages.

    ``reset=True`` (fit) records ``n_features_in_`` / ``feature_names_in_``; ``reset=False``
    (predict) checks the column count and, for DataFrames, that the column names and their
    order match those seen in fit. ``allow_inf`` lets tree models route ±inf as ordinary
    values (largest / smallest) instead of raising.

    ``accept_sparse=True`` lets a scipy CSR or CSC matrix through as it is (its stored
    values checked and converted to ``dtype`` like a dense array's; no dense copy); other
    sparse formats, and matrices with duplicate entries, raise with the fix. Without it any
    sparse input raises TypeError.
    """
    import scipy.sparse as sp  # noqa: PLC0415 - scipy is a dependency; keep import local

    sparse = sp.issparse(X)
    if sparse and not accept_sparse:
        raise TypeError(_SPARSE_MSG.format(name=type(estimator).__name__))
    if sparse:
        from ._sparse import check_sparse  # noqa: PLC0415

        check_sparse(X)
    if _is_cupy(X):
        X = X.get()
    finite = True if not allow_nan else "allow-nan"
    try:
        X = validate_data(estimator, X, reset=reset, dtype=dtype,
                          ensure_all_finite=False if allow_inf else finite,
                          ensure_min_samples=ensure_min_samples,
                          accept_sparse=list(_SPARSE_FORMATS) if sparse else False)
    except ValueError as exc:
        expected = getattr(estimator, "n_features_in_", None)
        hint = "" if reset or expected is None or "features" not in str(exc) else (
            feature_count_hint(getattr(X, "shape", (0, -1))[-1], expected))
        if hint:
            raise ValueError(f"{exc} {hint}") from None
        raise
    values = X.data if sparse else X
    if allow_inf and not allow_nan and np.isnan(values).any():
        raise ValueError(f"X contains NaN, which {type(estimator).__name__} does not accept.")
    return X


def feature_count_hint(n_features: int, expected: int) -> str:
    """The likely cause when X has one column more or fewer than a model expects: a LETOR /
    SVMlight file read with the other feature numbering (``load_letor``'s ``zero_based``), or
    ``""``.

    ``load_letor`` reads files one-based by default (index 1 is column 0), as RankLib and
    scikit-learn's ``load_svmlight_file`` do; LightGBM and XGBoost read index k as column k,
    so a model they trained on a file has one column more (column 0, empty).
    """
    if n_features == expected - 1:
        return (f"One column fewer than the model: if X was read from a LETOR / SVMlight file "
                "with load_letor (one-based by default: index 1 is column 0) and the model "
                "was trained on such a file by LightGBM or XGBoost (index k is column k), "
                f"read it with load_letor(path, zero_based=True, n_features={expected}).")
    if n_features == expected + 1:
        return ("One column more than the model: if X was read from a LETOR / SVMlight file "
                "zero-based (zero_based=True, or 'auto' with an index 0) and the model was "
                "trained on the file read one-based, read it with load_letor(path, "
                "zero_based=False).")
    return ""


#: Sparse formats ``check_ranking_X(accept_sparse=True)`` lets through.
_SPARSE_FORMATS = ("csr", "csc")


def check_ranking_y(y, n_samples: int, *, integer_labels: bool = False) -> np.ndarray:
    """Validate relevance labels: 1-D, one per row, finite; optionally non-negative integers."""
    if y is None:
        raise ValueError("this ranker requires y to be passed, but the target y is None.")
    if _is_cupy(y):
        y = y.get()
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        raise ValueError(
            f"y must be 1-D with one relevance label per row; got shape {y_arr.shape}. "
            f"Ranking has a single target: pass y.ravel() if it is a column vector."
        )
    if y_arr.shape[0] != n_samples:
        raise ValueError(f"y has {y_arr.shape[0]} entries but X has {n_samples} rows.")
    if y_arr.dtype.kind not in "biuf":
        try:
            y_arr = y_arr.astype(Y_DTYPE)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y must be numeric relevance labels; got dtype {y_arr.dtype}."
                             ) from exc
    y_arr = y_arr.astype(Y_DTYPE, copy=False)
    bad = ~np.isfinite(y_arr)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"y contains NaN or inf (first at row {first}: {y_arr[first]}).")
    if integer_labels:
        neg = y_arr < 0
        if neg.any():
            first = int(np.flatnonzero(neg)[0])
            raise ValueError(
                f"relevance labels must be >= 0; y[{first}] = {y_arr[first]}. Shift the "
                f"labels so the least relevant grade is 0."
            )
        frac = y_arr != np.floor(y_arr)
        if frac.any():
            first = int(np.flatnonzero(frac)[0])
            raise ValueError(
                f"relevance labels must be whole numbers (graded relevance 0, 1, 2, ...); "
                f"y[{first}] = {y_arr[first]}. Round or bin the labels first."
            )
    return y_arr


class RankingData:
    """Validated fit inputs, rows grouped by query.

    ``X``, ``y`` and ``sample_weight`` are in *query order*: query ``q`` occupies rows
    ``groups.group_ptr[q]:groups.group_ptr[q + 1]``, queries in sorted-qid order, rows of a
    query in the caller's relative order (a stable sort). Caller row ``groups.order[i]`` is
    grouped row ``i``. Because every ranker trains on this order, a model does not depend on
    how the caller interleaved queries.
    """

    __slots__ = ("X", "y", "sample_weight", "groups")

    def __init__(self, X, y, sample_weight, groups: QueryGroups):
        if not groups.is_sorted:  # one gather; skipped when rows are already grouped
            X, y = X[groups.order], y[groups.order]
            if sample_weight is not None:
                sample_weight = sample_weight[groups.order]
        self.X, self.y, self.sample_weight, self.groups = X, y, sample_weight, groups

    @property
    def group_ptr(self) -> np.ndarray:
        return self.groups.group_ptr


def check_ranking_fit_data(estimator, X, y, qid, sample_weight=None, *, allow_nan=True,
                           allow_inf=False, integer_labels=False, missing_qid="raise",
                           reset=True, dtype=np.float64, accept_sparse=False) -> RankingData:
    """Validate ``fit(X, y, qid=..., sample_weight=...)`` inputs for a ranker.

    ``missing_qid="single_query"`` treats ``qid=None`` as one query (used by the test-only
    subclasses that run scikit-learn's generic estimator checks); the default raises.
    ``dtype`` is passed to ``validate_data``: a list keeps X when its dtype is listed.
    ``accept_sparse=True`` takes a CSR or CSC ``X``; ``RankingData.X`` is then CSR (rows
    are grouped by query and split by rows, which a CSC matrix does one column at a time).
    """
    X = check_ranking_X(estimator, X, reset=reset, allow_nan=allow_nan, allow_inf=allow_inf,
                        dtype=dtype, accept_sparse=accept_sparse)
    if accept_sparse and getattr(X, "format", None) == "csc":
        X = X.tocsr()
    n = X.shape[0]
    y = check_ranking_y(y, n, integer_labels=integer_labels)
    if qid is None and missing_qid == "single_query":
        qid = np.zeros(n, dtype=np.int64)
    groups = group_by_qid(qid, n)
    if sample_weight is not None:
        if _is_cupy(sample_weight):
            sample_weight = sample_weight.get()
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                             ensure_non_negative=True)
    return RankingData(X, y, sample_weight, groups)
