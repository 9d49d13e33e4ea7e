"""Per-query ranking metrics on ragged queries: NDCG, DCG, MAP, MRR, ERR, precision@k.

Every function takes **per-row** arrays, as the rankers do: ``y_true`` (relevance grade of
each row), ``y_score`` (predicted score of each row) and ``qid`` (query id of each row, in
any order and of any orderable dtype). The metric is computed for each query and averaged
over queries::

    row       0    1    2    3    4    5
    qid       b    a    b    a    a    c        any order, ints / strings / floats
    y_true    2    0    1    3    0    0
    y_score   .9   .1   .5   .7   .7   .3
              |                              group_by_qid: stable sort on qid
              v
    query a: rows 1 3 4    query b: rows 0 2    query c: row 5
    per-query values [v_a, v_b, v_c] (sorted unique qid order) -> mean, or the array

Design principle: **every default is invariant to the order of rows within a query.**
Shuffling the rows (together with their qid) never changes a metric computed with default
arguments. This is why tied scores are, by default, either averaged over all their orderings
(``ties="average"`` for NDCG, DCG and precision@k, as scikit-learn's ``ndcg_score``) or
broken against the model (``ties="pessimistic"`` for MAP, MRR and ERR: among tied scores the
less relevant documents come first, so a constant scorer cannot look good). The
order-dependent rule ``ties="stable"`` (tied rows keep their order within the query) is
available on request.

Queries whose value is undefined or meaningless follow explicit policies
(``zero_relevance``, ``single_document``); skipped queries get NaN in the per-query output
and are left out of the mean. Nothing is silently dropped: if every query is skipped the
mean is NaN and an ``UndefinedMetricWarning`` is emitted.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from .._dtypes import Y_DTYPE
from ..utils import group_by_qid
from . import _kernels

__all__ = [
    "ndcg_score",
    "dcg_score",
    "average_precision_score",
    "map_score",
    "mrr_score",
    "err_score",
    "precision_at_k",
]

_ZERO_VALUES = {"one": 1.0, "zero": 0.0, "skip": np.nan}
_TIES = {
    "stable": _kernels.TIES_STABLE,
    "average": _kernels.TIES_AVERAGE,
    "pessimistic": _kernels.TIES_PESSIMISTIC,
    "optimistic": _kernels.TIES_OPTIMISTIC,
}
_K_NONE = np.iinfo(np.int64).max  # "no cutoff": min(k, n_docs) is then n_docs


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


def _params(ties, zero_relevance, **extra):
    """The ``validate_params`` constraints of a metric with these tie and zero policies."""
    return {"y_true": ["array-like"], "y_score": ["array-like"], "qid": ["array-like", None],
            "k": [Interval(Integral, 1, None, closed="left"), None],
            "sample_weight": ["array-like", None], "return_per_query": ["boolean"],
            "ties": [StrOptions(set(ties))], "zero_relevance": [StrOptions(set(zero_relevance))],
            "single_document": [StrOptions({"include", "skip"})], **extra}


_GAIN = [StrOptions({"exp2", "linear"})]
_THRESHOLD = [Interval(Real, 0, None, closed="neither")]


def _k_value(k):
    """``k`` for the kernels (None: no cut-off). scikit-learn's ``Interval(Integral)`` lets
    ``True`` through; a bool is refused here."""
    if k is None:
        return _K_NONE
    if isinstance(k, (bool, np.bool_)):
        raise ValueError(f"k must be a positive int (the number of top-ranked documents) or "
                         f"None for all documents; got {k!r}.")
    return int(k)


def _as_1d_float(y, name):
    if hasattr(y, "get") and type(y).__module__.startswith("cupy"):
        y = y.get()
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D with one value per row; got shape {arr.shape}. skltr metrics "
            f"take per-row arrays plus a per-row qid (not scikit-learn's 2-D "
            f"(n_queries, n_docs) layout)."
        )
    if arr.dtype.kind not in "biuf":
        try:
            arr = arr.astype(Y_DTYPE)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be numeric; got dtype {arr.dtype}.") from exc
    return arr.astype(Y_DTYPE, copy=False)


def _check_finite(arr, name):
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(
            f"{name} contains {float(arr[row])!r} at row {row} (first non-finite value); "
            f"every row needs a finite value."
        )


def _check_qid_length(qid, n_samples):
    arr = np.asarray(qid)
    if arr.ndim == 1 and arr.shape[0] != n_samples:
        msg = (
            f"qid has {arr.shape[0]} entries but y_true has {n_samples}; qid must hold one "
            f"query id per row."
        )
        if arr.dtype.kind in "iu" and arr.size and int(arr.sum()) == n_samples:
            msg += (
                " Its values sum to the number of rows, so it looks like per-query group "
                "sizes: convert them with skltr.utils.group_sizes_to_qid(sizes)."
            )
        raise ValueError(msg)


class _Grouped:
    """Validated inputs in query-grouped order."""

    def __init__(self, y_true, y_score, qid, sample_weight):
        y_true = _as_1d_float(y_true, "y_true")
        y_score = _as_1d_float(y_score, "y_score")
        n = y_true.shape[0]
        if y_score.shape[0] != n:
            raise ValueError(
                f"y_true has {n} entries but y_score has {y_score.shape[0]}; both need one "
                f"value per row."
            )
        if n == 0:
            raise ValueError("y_true and y_score are empty; metrics need at least one row.")
        _check_finite(y_true, "y_true")
        _check_finite(y_score, "y_score")
        if (y_true < 0).any():
            row = int(np.argmax(y_true < 0))
            raise ValueError(
                f"y_true contains the negative label {float(y_true[row])!r} at row {row}; "
                f"ranking labels are relevance grades >= 0."
            )
        if sample_weight is not None:
            sample_weight = _as_1d_float(sample_weight, "sample_weight")
            if sample_weight.shape[0] != n:
                raise ValueError(
                    f"sample_weight has {sample_weight.shape[0]} entries but y_true has {n}; "
                    f"it needs one weight per row."
                )
            _check_finite(sample_weight, "sample_weight")
            if (sample_weight < 0).any():
                row = int(np.argmax(sample_weight < 0))
                raise ValueError(
                    f"sample_weight contains the negative weight {float(sample_weight[row])!r} at "
                    f"row {row}; weights must be >= 0."
                )

        self.order = None  # None: the grouped order is the caller's order
        if qid is None:
            group_ptr = np.array([0, n], dtype=np.int64)
            unique_qid = np.zeros(1, dtype=np.int64)
        else:
            _check_qid_length(qid, n)
            groups = group_by_qid(qid, n)
            group_ptr, unique_qid = groups.group_ptr, groups.unique_qid
            if not groups.is_sorted:
                self.order = groups.order
                y_true = y_true[groups.order]
                y_score = y_score[groups.order]
                if sample_weight is not None:
                    sample_weight = sample_weight[groups.order]
        sizes = np.diff(group_ptr)

        self.y_true = np.ascontiguousarray(y_true)
        self.y_score = np.ascontiguousarray(y_score)
        self.group_ptr = group_ptr.astype(np.int64, copy=False)
        self.unique_qid = unique_qid
        self.max_size = int(sizes.max())
        if sample_weight is None:
            self.query_weight = None
        else:  # a query's weight is the mean of its rows' weights
            self.query_weight = np.add.reduceat(sample_weight, group_ptr[:-1]) / sizes

    def caller_row(self, i):
        """Row number in the caller's order of grouped row ``i`` (for error messages)."""
        return int(i if self.order is None else self.order[i])


def _run(
    metric, grouped, *, values=None, k=None, ties, threshold=1.0, zero_relevance,
    single_document,
):
    discount = (
        1.0 / np.log2(np.arange(2, grouped.max_size + 2, dtype=np.float64))
        if metric in (_kernels.DCG, _kernels.NDCG)
        else np.empty(0, dtype=np.float64)
    )
    if values is None:
        values = grouped.y_true
    out = np.empty(len(grouped.group_ptr) - 1, dtype=np.float64)
    _kernels.per_query_metric(
        int(metric),
        grouped.y_true,
        np.ascontiguousarray(values, dtype=np.float64),
        grouped.y_score,
        grouped.group_ptr,
        discount,
        int(k),
        int(_TIES[ties]),
        float(threshold),
        float(_ZERO_VALUES[zero_relevance]),
        bool(single_document == "skip"),
        out,
    )
    return out


def _finish(per_query, grouped, return_per_query, name):
    if return_per_query:
        return per_query, grouped.unique_qid
    return mean_over_queries(per_query, grouped.query_weight, name, stacklevel=4)


def mean_over_queries(per_query, query_weight, name, stacklevel=3) -> float:
    """The (``query_weight``-weighted) mean of a metric's per-query values, NaN skipped.

    What every metric function returns; NaN (with an ``UndefinedMetricWarning``) when no
    query counts.
    """
    valid = ~np.isnan(per_query)
    if not valid.any():
        warnings.warn(
            f"{name}: every query was skipped by the zero_relevance / single_document "
            f"policies; the mean is undefined and NaN is returned.",
            UndefinedMetricWarning,
            stacklevel=stacklevel,
        )
        return float("nan")
    if query_weight is None:
        return float(np.mean(per_query[valid]))
    w = query_weight[valid]
    total = w.sum()
    if total == 0:
        warnings.warn(
            f"{name}: the queries that were not skipped have total sample_weight 0; the "
            f"weighted mean is undefined and NaN is returned.",
            UndefinedMetricWarning,
            stacklevel=stacklevel,
        )
        return float("nan")
    return float(np.dot(w, per_query[valid]) / total)


def _gains(grouped, gain):
    y_true = grouped.y_true
    if gain == "linear":
        return y_true
    with np.errstate(over="ignore"):
        gains = np.exp2(y_true) - 1.0
    if np.isinf(gains).any():
        i = int(np.argmax(np.isinf(gains)))
        raise ValueError(
            f"y_true has label {float(y_true[i])!r} at row {grouped.caller_row(i)}: with "
            f"gain='exp2' its gain 2**label - 1 overflows float64 (labels up to 1023 are "
            f"representable). Use gain='linear' for labels this large."
        )
    return gains


def _check_gain_sums(grouped, gains):
    # a query's (ideal) DCG is at most the sum of its gains; refuse rather than return inf/NaN
    with np.errstate(over="ignore"):
        sums = np.add.reduceat(gains, grouped.group_ptr[:-1])
    if np.isinf(sums).any():
        q = int(np.argmax(np.isinf(sums)))
        raise ValueError(
            f"the gains of query {grouped.unique_qid[q]!r} sum beyond the float64 range with "
            f"gain='exp2'; use gain='linear' for labels this large."
        )


_COMMON_PARAMS = """\
    y_true : array-like of shape (n_samples,)
        Relevance grade of each row (non-negative).
    y_score : array-like of shape (n_samples,)
        Predicted score of each row; higher means ranked higher.
    qid : array-like of shape (n_samples,), default=None
        Query id of each row (ints, strings or floats without NaN, in any order). ``None``
        means that all rows form one query.
    k : int, default=None
        Only the top ``k`` ranked documents of each query count; ``None`` means all of them.
        A ``k`` larger than a query's size counts all its documents.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of each row. A query's weight is the mean of its rows' weights,
        and the result is the weighted mean over queries.
    return_per_query : bool, default=False
        Return ``(per_query_values, unique_qid)`` instead of the mean."""

_COMMON_RETURNS = """\
    score : float or tuple of (ndarray, ndarray)
        The (weighted) mean over the queries that are not skipped; NaN with an
        ``UndefinedMetricWarning`` if every query is skipped. With ``return_per_query=True``:
        ``(values, unique_qid)``, the value of each query (NaN where skipped) and its id, in
        sorted unique-qid order (``unique_qid`` is ``[0]`` when ``qid=None``)."""

_SINGLE_DOC = """\
    single_document : {"include", "skip"}, default="include"
        Whether queries with a single document are included or skipped (NaN per query,
        left out of the mean)."""


def _fill_doc(func):
    func.__doc__ = (
        func.__doc__.replace("    {common_params}", _COMMON_PARAMS)
        .replace("    {common_returns}", _COMMON_RETURNS)
        .replace("    {single_document}", _SINGLE_DOC)
    )
    return func


# --------------------------------------------------------------------------------------------
# public metrics
# --------------------------------------------------------------------------------------------


@validate_params(_params(("average", "stable"), ("one", "zero", "skip"), gain=_GAIN),
                 prefer_skip_nested_validation=True)
@_fill_doc
def ndcg_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    sample_weight=None,
    return_per_query=False,
    gain="exp2",
    ties="average",
    zero_relevance="one",
    single_document="include",
):
    """Normalized discounted cumulative gain, averaged over queries.

    ``NDCG@k = DCG@k / IDCG@k`` where ``DCG@k = sum_{rank r <= k} gain(rel_r) / log2(r + 1)``
    and ``IDCG@k`` is the DCG@k of the ideal ordering (labels in decreasing order).

    Parameters
    ----------
    {common_params}
    gain : {"exp2", "linear"}, default="exp2"
        ``"exp2"``: gain ``2**label - 1`` (LightGBM, XGBoost), computed in float64 with no
        cap on the label: gains are integer-exact up to label 53 and rounded to float64 (a
        relative error below 1e-16) beyond; a label above 1023 overflows float64 and raises a
        ValueError (use ``"linear"`` then). ``"linear"``: gain ``label`` (scikit-learn).
        Non-integer labels are allowed with either gain.
    ties : {"average", "stable"}, default="average"
        ``"average"``: documents with tied scores get the expected DCG over all orderings of
        the ties, exactly as scikit-learn's ``ndcg_score(ignore_ties=False)``, including a
        tie group that straddles the cutoff ``k``. ``"stable"``: ties keep the row order
        within the query.
    zero_relevance : {"one", "zero", "skip"}, default="one"
        Value for queries whose labels are all zero (ideal DCG is 0, so NDCG is 0/0):
        ``"one"`` scores them 1.0 (LightGBM and XGBoost), ``"zero"`` scores them 0.0
        (scikit-learn), ``"skip"`` leaves them out of the mean (NaN per query).
    {single_document}

    Returns
    -------
    {common_returns}

    See Also
    --------
    dcg_score : The unnormalised DCG.
    sklearn.metrics.ndcg_score : Same metric on 2-D (n_queries, n_docs) arrays.

    Examples
    --------
    >>> from skltr.metrics import ndcg_score
    >>> y_true = [3, 2, 0, 1, 0]
    >>> y_score = [0.9, 0.2, 0.5, 0.4, 0.1]
    >>> qid = [1, 1, 1, 2, 2]
    >>> round(ndcg_score(y_true, y_score, qid=qid), 4)
    0.9779
    >>> values, queries = ndcg_score(y_true, y_score, qid=qid, return_per_query=True)
    >>> values.round(4).tolist(), queries.tolist()
    ([0.9558, 1.0], [1, 2])
    >>> round(ndcg_score(y_true, y_score, qid=qid, k=1), 4)
    1.0
    """
    k = _k_value(k)
    grouped = _Grouped(y_true, y_score, qid, sample_weight)
    gains = _gains(grouped, gain)
    if gain == "exp2":
        _check_gain_sums(grouped, gains)
    per_query = _run(
        _kernels.NDCG, grouped, values=gains, k=k, ties=ties, zero_relevance=zero_relevance,
        single_document=single_document,
    )
    return _finish(per_query, grouped, return_per_query, "ndcg_score")


@validate_params(_params(("average", "stable"), ("zero", "skip"), gain=_GAIN),
                 prefer_skip_nested_validation=True)
@_fill_doc
def dcg_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    sample_weight=None,
    return_per_query=False,
    gain="exp2",
    ties="average",
    zero_relevance="zero",
    single_document="include",
):
    """Discounted cumulative gain, averaged over queries.

    ``DCG@k = sum_{rank r <= k} gain(rel_r) / log2(r + 1)``.

    Parameters
    ----------
    {common_params}
    gain : {"exp2", "linear"}, default="exp2"
        ``"exp2"``: gain ``2**label - 1``, computed in float64 with no cap on the label:
        gains are integer-exact up to label 53 and rounded to float64 beyond; a label above
        1023 overflows float64 and raises a ValueError (use ``"linear"`` then).
        ``"linear"``: gain ``label`` (scikit-learn's ``dcg_score``).
    ties : {"average", "stable"}, default="average"
        ``"average"``: expected DCG over all orderings of tied scores (scikit-learn's
        ``dcg_score(ignore_ties=False)``). ``"stable"``: ties keep the row order within the
        query.
    zero_relevance : {"zero", "skip"}, default="zero"
        Queries whose labels are all zero have DCG 0 whatever the ranking: ``"zero"`` keeps
        them (value 0.0), ``"skip"`` leaves them out of the mean (NaN per query). ``"one"`` is
        not offered: DCG is not normalised, so 1.0 would not be a DCG value.
    {single_document}

    Returns
    -------
    {common_returns}

    See Also
    --------
    ndcg_score : DCG divided by the ideal DCG.

    Examples
    --------
    >>> from skltr.metrics import dcg_score
    >>> y_true = [3, 2, 0, 1, 0]
    >>> y_score = [0.9, 0.2, 0.5, 0.4, 0.1]
    >>> qid = [1, 1, 1, 2, 2]
    >>> values, _ = dcg_score(y_true, y_score, qid=qid, return_per_query=True)
    >>> values.round(4).tolist()
    [8.5, 1.0]
    >>> round(dcg_score(y_true, y_score, qid=qid, gain="linear"), 4)
    2.5
    """
    k = _k_value(k)
    grouped = _Grouped(y_true, y_score, qid, sample_weight)
    gains = _gains(grouped, gain)
    if gain == "exp2":
        _check_gain_sums(grouped, gains)
    per_query = _run(
        _kernels.DCG, grouped, values=gains, k=k, ties=ties, zero_relevance=zero_relevance,
        single_document=single_document,
    )
    return _finish(per_query, grouped, return_per_query, "dcg_score")


@validate_params(_params(("pessimistic", "optimistic", "stable"), ("one", "zero", "skip"),
                         relevance_threshold=_THRESHOLD), prefer_skip_nested_validation=True)
@_fill_doc
def average_precision_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    sample_weight=None,
    return_per_query=False,
    relevance_threshold=1,
    ties="pessimistic",
    zero_relevance="one",
    single_document="include",
):
    """Average precision per query; its mean over queries is MAP (alias ``map_score``).

    A document is relevant when its label is ``>= relevance_threshold``. With ``R`` relevant
    documents in the query::

        AP@k = sum_{relevant docs at rank r <= k} precision@r  /  min(k, R)

    (``min(k, R)`` is ``R`` when ``k=None``), so AP@k is 1.0 when the top ``min(k, R)`` ranks
    are all relevant.

    Parameters
    ----------
    {common_params}
    relevance_threshold : float, default=1
        Labels ``>= relevance_threshold`` are relevant; must be > 0.
    ties : {"pessimistic", "optimistic", "stable"}, default="pessimistic"
        How documents with tied scores are ordered: ``"pessimistic"`` puts lower labels
        first (a constant scorer cannot look good), ``"optimistic"`` higher labels first,
        ``"stable"`` keeps the row order within the query.
    zero_relevance : {"one", "zero", "skip"}, default="one"
        Value for queries without any relevant document (AP is 0/0): 1.0 (LightGBM's MAP),
        0.0, or skipped (NaN per query, left out of the mean).
    {single_document}

    Returns
    -------
    {common_returns}

    Examples
    --------
    >>> from skltr.metrics import average_precision_score
    >>> y_true = [1, 0, 1, 0, 1]
    >>> y_score = [0.9, 0.8, 0.3, 0.5, 0.5]
    >>> qid = [7, 7, 7, 8, 8]
    >>> values, _ = average_precision_score(y_true, y_score, qid=qid, return_per_query=True)
    >>> values.round(4).tolist()
    [0.8333, 0.5]
    >>> round(average_precision_score(y_true, y_score, qid=qid), 4)
    0.6667
    >>> round(average_precision_score(y_true, y_score, qid=qid, ties="optimistic"), 4)
    0.9167
    """
    k = _k_value(k)
    threshold = float(relevance_threshold)
    grouped = _Grouped(y_true, y_score, qid, sample_weight)
    per_query = _run(
        _kernels.AVERAGE_PRECISION, grouped, k=k, ties=ties, threshold=threshold,
        zero_relevance=zero_relevance, single_document=single_document,
    )
    return _finish(per_query, grouped, return_per_query, "average_precision_score")


#: Mean average precision: the same function as :func:`average_precision_score`.
map_score = average_precision_score


@validate_params(_params(("pessimistic", "optimistic", "stable"), ("one", "zero", "skip"),
                         relevance_threshold=_THRESHOLD), prefer_skip_nested_validation=True)
@_fill_doc
def mrr_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    sample_weight=None,
    return_per_query=False,
    relevance_threshold=1,
    ties="pessimistic",
    zero_relevance="one",
    single_document="include",
):
    """Reciprocal rank of the first relevant document, averaged over queries (MRR).

    A document is relevant when its label is ``>= relevance_threshold``. A query scores
    ``1 / rank`` of its best-ranked relevant document, or 0 if none is in the top ``k``.

    Parameters
    ----------
    {common_params}
    relevance_threshold : float, default=1
        Labels ``>= relevance_threshold`` are relevant; must be > 0.
    ties : {"pessimistic", "optimistic", "stable"}, default="pessimistic"
        How documents with tied scores are ordered: ``"pessimistic"`` puts lower labels
        first, ``"optimistic"`` higher labels first, ``"stable"`` keeps the row order within
        the query.
    zero_relevance : {"one", "zero", "skip"}, default="one"
        Value for queries without any relevant document (no first relevant rank): 1.0,
        0.0, or skipped (NaN per query, left out of the mean).
    {single_document}

    Returns
    -------
    {common_returns}

    Examples
    --------
    >>> from skltr.metrics import mrr_score
    >>> y_true = [0, 1, 0, 2, 0, 0]
    >>> y_score = [0.9, 0.3, 0.5, 0.1, 0.8, 0.8]
    >>> qid = ["q1", "q1", "q1", "q2", "q2", "q2"]
    >>> values, _ = mrr_score(y_true, y_score, qid=qid, return_per_query=True)
    >>> values.round(4).tolist()
    [0.3333, 0.3333]
    >>> round(mrr_score(y_true, y_score, qid=qid, k=2), 4)
    0.0
    """
    k = _k_value(k)
    threshold = float(relevance_threshold)
    grouped = _Grouped(y_true, y_score, qid, sample_weight)
    per_query = _run(
        _kernels.RECIPROCAL_RANK, grouped, k=k, ties=ties, threshold=threshold,
        zero_relevance=zero_relevance, single_document=single_document,
    )
    return _finish(per_query, grouped, return_per_query, "mrr_score")


@validate_params(_params(("pessimistic", "optimistic", "stable"), ("one", "zero", "skip"),
                         max_grade=[Interval(Real, None, None, closed="neither"), None]),
                 prefer_skip_nested_validation=True)
@_fill_doc
def err_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    sample_weight=None,
    return_per_query=False,
    max_grade=None,
    ties="pessimistic",
    zero_relevance="one",
    single_document="include",
):
    """Expected reciprocal rank (Chapelle et al. 2009), averaged over queries.

    A user scans the ranking and stops at a document of grade ``g`` with probability
    ``R(g) = (2**g - 1) / 2**g_max``::

        ERR@k = sum_{r=1..k} (1 / r) * R_r * prod_{i < r} (1 - R_i)

    Parameters
    ----------
    {common_params}
    max_grade : float, default=None
        ``g_max``. ``None`` uses the largest label in ``y_true`` over **all** queries (so a
        query's value can depend on the other queries' labels: pass the scale's maximum,
        e.g. 4 for 0-4 grades, to make values comparable between data sets). It must be at
        least every label.
    ties : {"pessimistic", "optimistic", "stable"}, default="pessimistic"
        How documents with tied scores are ordered: ``"pessimistic"`` puts lower labels
        first (which minimises ERR over the orderings of each tie group), ``"optimistic"``
        higher labels first, ``"stable"`` keeps the row order within the query.
    zero_relevance : {"one", "zero", "skip"}, default="one"
        Value for queries whose labels are all zero (no document can satisfy the user, ERR
        would be 0 whatever the ranking): 1.0, 0.0, or skipped (NaN per query).
    {single_document}

    Returns
    -------
    {common_returns}

    References
    ----------
    O. Chapelle, D. Metzler, Y. Zhang, P. Grinspan. Expected reciprocal rank for graded
    relevance. CIKM 2009.

    Examples
    --------
    >>> from skltr.metrics import err_score
    >>> y_true = [2, 0, 1]
    >>> y_score = [0.2, 0.9, 0.5]
    >>> # R = [3/4, 0, 1/4]; ranked rows 1, 2, 0: 1/2 * 1/4 + 1/3 * (1 - 1/4) * 3/4
    >>> round(err_score(y_true, y_score), 4)
    0.3125
    >>> round(err_score(y_true, y_score, max_grade=4), 4)
    0.0898
    """
    k = _k_value(k)
    if max_grade is not None:
        max_grade = float(max_grade)
    grouped = _Grouped(y_true, y_score, qid, sample_weight)
    labels = grouped.y_true
    top = float(labels.max())
    if max_grade is None:
        max_grade = top
    elif max_grade < top:
        row = grouped.caller_row(int(np.argmax(labels)))
        raise ValueError(
            f"max_grade={max_grade!r} is below the label {top!r} found in y_true at row "
            f"{row}; max_grade must be >= every label."
        )
    # (2**g - 1) / 2**g_max written so that nothing overflows for large g_max
    stop_prob = np.exp2(labels - max_grade) - np.exp2(-max_grade)
    per_query = _run(
        _kernels.ERR, grouped, values=stop_prob, k=k, ties=ties,
        zero_relevance=zero_relevance, single_document=single_document,
    )
    return _finish(per_query, grouped, return_per_query, "err_score")


@validate_params(_params(("average", "stable"), ("zero", "skip"),
                         relevance_threshold=_THRESHOLD), prefer_skip_nested_validation=True)
@_fill_doc
def precision_at_k(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    sample_weight=None,
    return_per_query=False,
    relevance_threshold=1,
    ties="average",
    zero_relevance="zero",
    single_document="include",
):
    """Fraction of relevant documents among the top ``k`` of each query, averaged.

    A document is relevant when its label is ``>= relevance_threshold``. The denominator is
    ``min(k, n_docs)``, so a query shorter than ``k`` is not penalised for its length and
    ``k=None`` (all documents) is the fraction of relevant documents. (TREC's P@k divides by
    ``k`` instead.)

    Parameters
    ----------
    {common_params}
    relevance_threshold : float, default=1
        Labels ``>= relevance_threshold`` are relevant; must be > 0.
    ties : {"average", "stable"}, default="average"
        ``"average"``: expected precision over all orderings of tied scores, including a tie
        group straddling the cutoff ``k``. ``"stable"``: ties keep the row order within the
        query.
    zero_relevance : {"zero", "skip"}, default="zero"
        Queries without any relevant document have precision 0 whatever the ranking:
        ``"zero"`` keeps them, ``"skip"`` leaves them out of the mean (NaN per query).
    {single_document}

    Returns
    -------
    {common_returns}

    Examples
    --------
    >>> from skltr.metrics import precision_at_k
    >>> y_true = [1, 0, 1, 0]
    >>> y_score = [0.9, 0.8, 0.3, 0.1]
    >>> precision_at_k(y_true, y_score, k=2)
    0.5
    >>> precision_at_k([1, 0, 0], [0.5, 0.5, 0.1], k=1)  # tie: expected 1/2 relevant
    0.5
    """
    k = _k_value(k)
    threshold = float(relevance_threshold)
    grouped = _Grouped(y_true, y_score, qid, sample_weight)
    per_query = _run(
        _kernels.PRECISION, grouped, k=k, ties=ties, threshold=threshold,
        zero_relevance=zero_relevance, single_document=single_document,
    )
    return _finish(per_query, grouped, return_per_query, "precision_at_k")
