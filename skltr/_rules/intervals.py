"""Discretisation: every (feature, interval) becomes an item; documents become item codes.

Two ways to cut a feature (``discretization``):

* ``"mdl"`` (the default, as LRAR): Fayyad & Irani's (1993) supervised cuts with the relevance
  levels as classes. A segment of sorted training values is cut at the boundary (between two
  distinct values) of least class entropy if the information gain beats the minimum
  description length criterion, ``gain > (log2(N - 1) + delta) / N`` with ``delta =
  log2(3**k - 2) - (k Ent(S) - k1 Ent(S1) - k2 Ent(S2))``; both halves are cut again. The
  segments are taken breadth first, so ``n_bins`` (when given) keeps the coarsest cuts.
* ``"quantile"``: the count-balanced cuts of the shared :class:`~skltr._engine.binning.
  BinMapper` (``n_bins`` bins), which ignore the labels.

Cuts are midpoints between consecutive distinct training values; a value ``x`` falls in the
interval of the first cut ``>= x`` (``x <= cut`` goes below, as the GBDT's bins).

Missing values (NaN) of a feature that had NaN in training form an item of their own, the
feature's last code (``n_intervals``): "this feature is missing" is evidence like any other.
A NaN in a feature that had none in training has no item (code ``NO_ITEM``): no training
document could support it.

A feature is **used** only if none of its items covers every training document: a single
interval without NaN (a constant feature, or one MDL finds no cut in) would join every
itemset without changing any support, so it adds rules that duplicate others and nothing but
cost. Such features are left out of the items (``Intervals.used``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from .._cpu.binning import map_to_bins
from .._cpu.rules import NO_ITEM, mdl_cuts, xlog2x_table
from .._engine.binning import BinMapper
from ..utils._threads import resolve_n_jobs

__all__ = ["Intervals", "MAX_INTERVALS", "fit_intervals", "transform"]

#: Most intervals of a feature: codes are uint8, the missing item takes code
#: ``n_intervals`` and 255 is ``NO_ITEM``.
MAX_INTERVALS = 254


class Intervals(NamedTuple):
    """The fitted discretisation.

    Feature ``f``'s cuts are ``cut_values[cut_ptr[f]:cut_ptr[f + 1]]`` (``n + 1``
    intervals for ``n`` cuts); ``has_missing[f]``: NaN is an item of ``f``; ``used``: the
    features that make items, ascending.
    """

    cut_ptr: np.ndarray      # int64 (n_features + 1,)
    cut_values: np.ndarray   # float64
    has_missing: np.ndarray  # bool (n_features,)
    used: np.ndarray         # int64 (n_cols,)


def mdl_cut_points(X, level_idx, n_levels, max_intervals=None, n_jobs=None):
    """``(cut_ptr, cut_values)`` of the entropy / MDL cuts of every feature of ``X``.

    ``level_idx``: each row's level (0 .. ``n_levels - 1``); at most ``max_intervals``
    intervals per feature (None: ``MAX_INTERVALS``); ``n_jobs``: threads sorting the features.
    """
    max_cuts = (MAX_INTERVALS if max_intervals is None else int(max_intervals)) - 1
    n, n_features = X.shape
    sorted_vals, sorted_labs = _sorted_columns(X, np.asarray(level_idx, np.int64), n_jobs)
    n_valid = (~np.isnan(X)).sum(axis=0).astype(np.int64)
    cuts = np.empty((n_features, max(max_cuts, 1)), dtype=np.float64)
    n_cuts = np.zeros(n_features, dtype=np.int64)
    mdl_cuts(sorted_vals, sorted_labs, n_valid, n_levels, max_cuts, xlog2x_table(n), cuts,
             n_cuts)
    cut_ptr = np.zeros(n_features + 1, dtype=np.int64)
    cut_ptr[1:] = np.cumsum(n_cuts)
    return cut_ptr, np.ascontiguousarray(cuts[np.arange(cuts.shape[1]) < n_cuts[:, None]])


#: Values above which :func:`_sorted_columns` sorts blocks of features on several threads.
PARALLEL_SORT_MIN_VALUES = 1 << 18


def _sorted_columns(X, level_idx, n_jobs):
    """Each feature's values sorted (stable, NaN last) and its rows' levels in that order:
    ``(n_features, n)`` float64 and int64. Sorted feature by feature from the transposed
    copy (contiguous rows sort faster than strided columns), blocks of features on
    ``n_jobs`` threads for a large ``X`` (numpy's sort releases the GIL): the same arrays
    on any thread count."""
    XT = np.ascontiguousarray(X.T, np.float64)
    vals = np.empty_like(XT)
    labs = np.empty(XT.shape, np.int64)

    def block(lo, hi):
        order = np.argsort(XT[lo:hi], axis=1, kind="stable")
        vals[lo:hi] = np.take_along_axis(XT[lo:hi], order, axis=1)
        labs[lo:hi] = level_idx[order]

    threads = resolve_n_jobs(n_jobs) if XT.size >= PARALLEL_SORT_MIN_VALUES else 1
    if threads <= 1 or XT.shape[0] < 2:
        block(0, XT.shape[0])
        return vals, labs
    cuts = np.linspace(0, XT.shape[0], min(4 * threads, XT.shape[0]) + 1).astype(np.int64)
    with ThreadPoolExecutor(threads) as pool:
        for done in [pool.submit(block, a, b) for a, b in zip(cuts[:-1], cuts[1:])]:
            done.result()  # (raises what a block raised)
    return vals, labs


def fit_intervals(X, level_idx, n_levels, *, discretization, n_bins, seed, n_jobs=None):
    """Cut every feature of ``X`` (float64 or float32, training rows) and choose the used
    features.

    Returns ``(Intervals, codes)``: ``codes`` are the training rows' item codes of the used
    features (uint8, ``(n, n_cols)``), in ``X``'s row order.
    """
    if discretization == "mdl":
        cut_ptr, cut_values = mdl_cut_points(X, level_idx, n_levels, n_bins, n_jobs=n_jobs)
    else:
        mapper = BinMapper(max_bins=10 if n_bins is None else int(n_bins),
                           random_state=seed, n_threads=n_jobs).fit(X)
        cut_ptr, cut_values = mapper.cut_ptr, mapper.cut_values
    has_missing = np.isnan(X).any(axis=0)
    all_features = np.arange(X.shape[1], dtype=np.int64)
    codes = transform(X, Intervals(cut_ptr, cut_values, has_missing, all_features))
    n = X.shape[0]
    # a feature is used unless one of its items holds every training document
    covers_all = np.array([np.bincount(codes[:, f]).max() == n for f in range(X.shape[1])],
                          dtype=bool)
    used = all_features[~covers_all]
    return (Intervals(cut_ptr, cut_values, has_missing, used),
            np.ascontiguousarray(codes[:, used]))


def n_items(intervals):
    """Items of each used feature: its intervals, plus one for NaN if it had any."""
    n_int = np.diff(intervals.cut_ptr)[intervals.used] + 1
    return n_int + intervals.has_missing[intervals.used]


def transform(X, intervals):
    """Item codes (uint8, ``(n_rows, n_cols)``) of the used features of ``X``.

    Interval ``i`` has code ``i``; NaN the code ``n_intervals`` where the feature has a
    missing item, else ``NO_ITEM``.
    """
    used = intervals.used
    cut_ptr = intervals.cut_ptr
    every = used.size == cut_ptr.size - 1      # ``used`` is ascending: every feature
    if every:
        sub_ptr, sub_values = cut_ptr, intervals.cut_values
    else:  # the used features' cuts, gathered in one index
        lengths = np.diff(cut_ptr)[used]
        sub_ptr = np.zeros(used.size + 1, dtype=np.int64)
        sub_ptr[1:] = np.cumsum(lengths)
        sub_values = intervals.cut_values[np.repeat(cut_ptr[used] - sub_ptr[:-1], lengths)
                                          + np.arange(sub_ptr[-1])]
    # float32 and float64 read as they are (float32 values are exact in float64: the same
    # codes), others as float64
    Xu = np.ascontiguousarray(X if every else X[:, used],
                              dtype=None if X.dtype in (np.float32, np.float64) else np.float64)
    codes = np.empty(Xu.shape, dtype=np.uint8)
    map_to_bins(Xu, sub_ptr, np.ascontiguousarray(sub_values, np.float64), NO_ITEM, codes)
    missing_code = np.diff(sub_ptr) + 1  # n_intervals = n_cuts + 1
    for j in np.flatnonzero(intervals.has_missing[used]):
        col = codes[:, j]
        col[col == NO_ITEM] = missing_code[j]
    return codes
