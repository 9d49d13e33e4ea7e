"""Categorical features of a GBDT fit: which features, and LightGBM's controls of their splits.

:func:`resolve` reads the estimator's ``categorical_features`` (scikit-learn's
``HistGradientBoosting*`` forms: indices, a boolean mask, column names; ``"from_dtype"`` is
resolved by the front-end, which alone sees the DataFrame's dtypes, into indices) and the
controls, into one :class:`CategoricalParams` that the binning (which bins are categories),
the split search (``skltr._cpu.split_categorical``) and the tree's assembly read.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from .._cpu.split_categorical import (best_categorical_splits,
                                      best_categorical_splits_parallel, categorical_wins)
from .._engine.wide_categorical import NARROW_WORDS, words
from .._records import (CategoricalFound, CategoricalRows, CategoricalTasks, SplitInfo,
                        categorical_constants)

__all__ = ["CategoricalParams", "CategoricalSearch", "feature_indices", "resolve"]


@dataclass(frozen=True)
class CategoricalParams:
    """Categorical features and how they split (LightGBM's parameters of the same names).

    Attributes
    ----------
    features : tuple of int
        The categorical features, increasing (at least one).
    max_cat_to_onehot : int
        Features of fewer than this many categories (LightGBM counts its "other" bin: at
        most ``max_cat_to_onehot - 1``) split one category against the rest.
    max_cat_threshold : int
        Most categories on the left of a many-vs-many split.
    cat_smooth : float
        Smoothing of the ``G / (H + cat_smooth)`` order, and the least (estimated) rows of
        a category in a node for it to take part in a many-vs-many split.
    cat_l2 : float
        L2 added to ``reg_lambda`` in many-vs-many splits' gains and their children's outputs.
    min_data_per_group : int
        Least rows added to a side between two candidates of a many-vs-many scan, and least
        rows of its right side.
    """

    features: tuple
    max_cat_to_onehot: int
    max_cat_threshold: int
    cat_smooth: float
    cat_l2: float
    min_data_per_group: int

    def __post_init__(self):
        assert self.features and list(self.features) == sorted(set(self.features))
        object.__setattr__(self, "features", tuple(int(f) for f in self.features))

    def mask(self, n_features) -> np.ndarray:
        """Boolean mask of the categorical features."""
        out = np.zeros(n_features, dtype=bool)
        out[list(self.features)] = True
        return out


class CategoricalSearch:
    """The categorical split search of one fit, the same on both devices.

    Per batch of nodes, one numba call (:func:`~skltr._cpu.split_categorical.
    best_categorical_splits`, a node a thread for a batch of several) finds each node's
    best categorical split over the byte and the wide categorical features; :meth:`best`
    keeps it where it beats the node's numeric split: the higher gain, ties to the lower
    feature (the numeric search's rule). The CPU grower passes a node's whole histogram;
    the GPU grower copies the categorical rows of the batch's histograms to the host
    (:attr:`gather_rows`, ``local=True``).

    Parameters
    ----------
    params : CategoricalParams
    n_features : int
    n_bins : ndarray of int32, shape (n_features,)
        Bins of each feature (``BinMapper.n_bins``: a wide feature has 1).
    wide : WideCategorical or None
        The wide categorical features (their histogram rows after the features').
    local : bool
        The histograms given hold the :attr:`gather_rows` only (in that order), not whole
        node histograms.
    """

    def __init__(self, params, n_features, n_bins, wide, local):
        self.k = categorical_constants(params)
        wide_ids = np.zeros(0, np.int64) if wide is None else wide.features
        narrow = np.array([f for f in params.features if f not in wide_ids], np.int64)
        n_wide_rows = 0 if wide is None else wide.hist_rows
        #: the histogram rows a batch needs: the byte categorical features', the wide rows
        self.gather_rows = np.concatenate([narrow, n_features + np.arange(n_wide_rows)])
        first = narrow.size if local else n_features  # where the wide rows start
        n_rows = first + n_wide_rows
        at = np.arange(narrow.size) if local else narrow
        row_feature = np.full(n_rows, -1, np.int64)
        row_feature[at] = narrow
        row_n_bins = np.zeros(n_rows, np.int32)
        row_n_bins[at] = np.asarray(n_bins, np.int32)[narrow]
        self.rows = CategoricalRows(
            at.astype(np.int64), row_feature, row_n_bins,
            (np.zeros(0, np.int64) if wide is None else first + wide.row0 - n_features),
            np.zeros(0, np.int64) if wide is None else wide.n_rows,
            np.zeros(0, np.int32) if wide is None else wide.n_bins, wide_ids)
        self._words = {int(f): NARROW_WORDS for f in narrow}
        if wide is not None:
            self._words.update({int(f): words(b) for f, b in zip(wide.features, wide.n_bins)})
        self.n_words = max(self._words.values())
        #: int64 per feature: the uint64 words of its left sets (0: not categorical)
        self.feature_words = np.zeros(n_features, np.int64)
        for f, n_words in self._words.items():
            self.feature_words[f] = n_words
        self._out = {}  # (batch size, dtype) -> CategoricalFound
        self._tasks = {}  # (mask, dtype) -> CategoricalTasks

    def best(self, results, nodes, hists, masks, mask_row, constants):
        """Each node's split: its numeric split ``results[i]`` (a ``SplitInfo`` or None) or
        its best categorical split, whichever is better (None: neither).

        ``hists``: shape (m, n_rows, n_bins_total, n_channels), the nodes' histograms (or
        their :attr:`gather_rows`); ``masks`` / ``mask_row``: the features node ``i`` may
        split on are ``masks[mask_row[i]]``; ``constants``: the tree's ``SplitConstants``.
        """
        m = len(nodes)
        dtype = hists.dtype
        out = self._out.get((m, dtype))
        if out is None:  # one record per batch size (the CPU's is always 1)
            out = self._out[m, dtype] = self.found(m, dtype)
        sums = np.array([(n.sum_g, n.sum_h, n.count) for n in nodes], dtype)
        bounds = np.array([(n.lo, n.hi) for n in nodes], np.float64)
        # a batch (the GPU's) a node a thread; one node (the CPU's) without a region
        kernel = best_categorical_splits_parallel if m > 1 else best_categorical_splits
        kernel(hists, self.rows, masks, np.asarray(mask_row, np.int64), sums, bounds,
               constants, self.k, out)
        return [self._better(res, out, i) for i, res in enumerate(results)]

    def tasks(self, mask, dtype) -> CategoricalTasks:
        """The categorical tasks of the CPU's fused search of two children
        (:func:`skltr._cpu.split_children.find_child_splits`; whole node histograms of
        ``dtype``) for nodes that may split on the features of ``mask``: a task per byte
        categorical feature, then one per wide feature.

        Made once per mask and dtype, then the same record (a search writes every entry it
        reads), so that a fit's trees share it."""
        key = (np.asarray(mask, bool).tobytes(), np.dtype(dtype))
        tasks = self._tasks.get(key)
        if tasks is None:
            tasks = self._tasks[key] = self._make_tasks(mask, dtype)
        return tasks

    def _make_tasks(self, mask, dtype) -> CategoricalTasks:
        rows = self.rows
        n_narrow = rows.narrow_rows.size
        features = np.full((mask.size, 2), -1, np.int64)
        features[rows.narrow_rows, 0] = np.arange(n_narrow)
        features[rows.narrow_rows, 1] = rows.row_n_bins[rows.narrow_rows]
        wide = np.stack([rows.wide_row0, rows.wide_n_rows, rows.wide_n_bins.astype(np.int64),
                         rows.wide_ids], axis=1).reshape(-1, 4)
        n_tasks = n_narrow + rows.wide_ids.size
        return CategoricalTasks(features, np.ascontiguousarray(wide),
                                np.ascontiguousarray(mask, bool), *self.found(2 * n_tasks, dtype))

    def split_of(self, found, i) -> SplitInfo:
        """The split of entry ``i`` of ``found`` (a :class:`CategoricalFound`, or the
        :class:`CategoricalTasks` of :meth:`tasks`, which holds the same arrays)."""
        f, left_count, many = (int(v) for v in found.ints[i])
        return SplitInfo(f, float(found.gain[i]), -1, False, found.sums[i, 0], found.sums[i, 1],
                         left_count, found.bits[i, :self._words[f]].copy(),
                         self.k.cat_l2 if many else 0.0)

    def found(self, m, dtype):
        """A :class:`CategoricalFound` of ``m`` entries for histograms of ``dtype``."""
        ints = np.zeros((m, 3), np.int64)
        ints[:, 0] = -1
        return CategoricalFound(ints, np.zeros(m, np.float64), np.zeros((m, 2), dtype),
                                np.zeros((m, self.n_words), np.uint64))

    def _better(self, res, out, i):
        num_f, num_gain = (-1, 0.0) if res is None else (res.feature, res.gain)
        if not categorical_wins(num_f, num_gain, int(out.ints[i, 0]), float(out.gain[i])):
            return res
        return self.split_of(out, i)


#: the estimator's parameters of the split controls (its defaults are LightGBM's)
_CONTROLS = ("max_cat_to_onehot", "max_cat_threshold", "cat_smooth", "cat_l2",
             "min_data_per_group")


def resolve(hp, n_features, feature_names=None, monotone=None) -> CategoricalParams | None:
    """The :class:`CategoricalParams` of the hyper-parameters ``hp``, or None when no feature
    is categorical.

    ``hp["categorical_features"]``: None, ``"from_dtype"`` (here: none -- a DataFrame's
    category columns were turned into indices by the front-end), a boolean mask of
    ``n_features``, feature indices, or column names (``feature_names`` needed).
    ``monotone``: the resolved monotone directions (``skltr._gbdt.constraints.resolve``),
    none of which may fall on a categorical feature.

    Raises
    ------
    ValueError
        A mask of the wrong length, an index out of range or repeated, an unknown name, or a
        monotone constraint on a categorical feature.
    """
    features = feature_indices(hp.get("categorical_features"), n_features, feature_names)
    if not features:
        return None
    both = [f for f in features if monotone is not None and monotone[f] != 0]
    if both:
        raise ValueError(f"feature {both[0]} is categorical and has a monotone constraint; a "
                         f"categorical feature has no order to be monotone in. Drop it from "
                         f"monotone_constraints or from categorical_features.")
    return CategoricalParams(features=tuple(features), **{name: hp[name] for name in _CONTROLS})


def feature_indices(spec, n_features, feature_names=None) -> list:
    """The increasing feature indices of a ``categorical_features`` value other than
    ``"from_dtype"`` (None: none), checked; raises ValueError naming what is wrong."""
    if spec is None or (isinstance(spec, str) and spec == "from_dtype"):
        return []
    if isinstance(spec, str):
        raise ValueError(f"categorical_features={spec!r}: expected 'from_dtype', None, a "
                         f"boolean mask, feature indices or column names (a list).")
    values = list(spec)
    if not values:
        return []
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        if len(values) != n_features:
            raise ValueError(f"categorical_features as a boolean mask must have one entry per "
                             f"feature ({n_features}); got {len(values)}.")
        return [i for i, v in enumerate(values) if v]
    if all(isinstance(v, str) for v in values):
        if feature_names is None:
            raise ValueError("categorical_features names columns, but X has no column names; "
                             "pass a DataFrame or give feature indices.")
        names = list(feature_names)
        missing = [v for v in values if v not in names]
        if missing:
            raise ValueError(f"categorical_features names {missing}, not columns of X "
                             f"(columns: {names[:10]}{' ...' if len(names) > 10 else ''}).")
        out = sorted(names.index(v) for v in values)
    elif all(isinstance(v, Integral) and not isinstance(v, (bool, np.bool_)) for v in values):
        bad = [int(v) for v in values if not 0 <= int(v) < n_features]
        if bad:
            raise ValueError(f"categorical_features index {bad[0]} is out of range for X with "
                             f"{n_features} features (indices 0 .. {n_features - 1}).")
        out = sorted(int(v) for v in values)
    else:
        raise ValueError(f"categorical_features must be a boolean mask, feature indices or "
                         f"column names, not a mix; got {values[:5]!r}.")
    if len(set(out)) != len(out):
        raise ValueError("categorical_features lists a feature more than once.")
    return out
