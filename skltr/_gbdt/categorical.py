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

from .._cpu.split_categorical import best_categorical_split
from .._engine.wide_categorical import NARROW_WORDS, words
from .._records import SplitInfo

__all__ = ["CategoricalParams", "feature_indices", "resolve", "with_categorical",
           "with_wide_categorical"]


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


def with_categorical(res, node, hist, features, n_bins, mask, constants, k, feature_ids=None,
                     n_words=NARROW_WORDS):
    """The better of a node's numeric split ``res`` (a ``SplitInfo``, feature -1 for none)
    and its best categorical split: the higher gain, ties to the lower feature (the numeric
    search's rule). One decision for both devices: the GPU grower passes the categorical
    features' histograms copied to the host.

    ``hist``: the node's histogram (``features`` index its first axis, ``feature_ids`` maps
    them to feature numbers; None: they are); ``n_bins`` / ``mask`` indexed as ``hist``;
    ``constants``: ``SplitConstants``; ``k``: ``CategoricalConstants``; ``n_words``: uint64
    words of the left set (:func:`skltr._engine.wide_categorical.words`).
    """
    bits = np.empty(n_words, np.uint64)  # the kernel clears it
    f, gain, gl, hl, cl, many = best_categorical_split(
        hist, features, n_bins, mask, node.sum_g, node.sum_h, node.count, node.lo, node.hi,
        constants, k, bits)
    if f < 0:
        return res
    f = int(f if feature_ids is None else feature_ids[f])
    if res.feature >= 0 and (gain < res.gain or (gain == res.gain and res.feature < f)):
        return res
    return SplitInfo(f, gain, -1, False, gl, hl, cl, bits, k.cat_l2 if many else 0.0)


def with_wide_categorical(res, node, hist, wide, mask, constants, k, first_row=0):
    """:func:`with_categorical` over the wide categorical features of ``wide``
    (a :class:`~skltr._engine.wide_categorical.WideCategorical`), each one's histogram rows
    searched as one row of its codes; ``mask`` as the node's feature mask; ``hist`` holds
    the node histogram's rows from ``first_row`` on (the GPU copies the wide rows alone)."""
    for w, f in enumerate(wide.features):
        if mask[f]:
            res = with_categorical(res, node, wide.view(hist, w, first_row), _FIRST,
                                   wide.n_bins[w:w + 1],
                                   _ALLOWED, constants, k, feature_ids=(int(f),),
                                   n_words=words(wide.n_bins[w]))
    return res


_FIRST = np.zeros(1, np.int64)
_ALLOWED = np.ones(1, np.bool_)


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
