"""Named records that cross from the engines to the kernels, on both devices.

numba kernels take these NamedTuples as arguments (fields are read by name, types fixed by
the constructors below); the CUDA wrappers unpack the same fields into launch arguments.
Model: scikit-learn's ``SplitInfo`` and ``Splitter`` (``ensemble/_hist_gradient_boosting``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["SplitConstants", "SplitInfo", "SplitWork", "split_constants", "split_work"]


class SplitConstants(NamedTuple):
    """What every split search of one tree shares.

    ``inv_scale_g`` / ``inv_scale_h`` turn histogram units into gradient units (1.0 for
    float histograms); ``count_shift`` is the two-word layout's ``K`` (0 otherwise);
    ``hessian_counts`` checks ``min_samples_leaf`` on LightGBM's hessian-estimated counts.
    """

    missing_bin: int
    inv_scale_g: float
    inv_scale_h: float
    reg_lambda: float
    reg_alpha: float
    min_child_weight: float
    min_samples_leaf: int
    min_split_gain: float
    count_shift: int
    hessian_counts: bool


def split_constants(*, missing_bin, inv_scale_g, inv_scale_h, reg_lambda, reg_alpha,
                    min_child_weight, min_samples_leaf, min_split_gain, count_shift,
                    hessian_counts) -> SplitConstants:
    """A :class:`SplitConstants` with Python scalars of fixed types (one numba signature)."""
    return SplitConstants(int(missing_bin), float(inv_scale_g), float(inv_scale_h),
                          float(reg_lambda), float(reg_alpha), float(min_child_weight),
                          int(min_samples_leaf), float(min_split_gain), int(count_shift),
                          bool(hessian_counts))


class SplitWork(NamedTuple):
    """Per-feature work arrays of a split search: each feature's best candidate."""

    gain: np.ndarray      # float64
    bin: np.ndarray       # int32
    left: np.ndarray      # bool: default (missing) direction left
    left_g: np.ndarray    # histogram dtype
    left_h: np.ndarray    # histogram dtype
    left_count: np.ndarray  # int64


def split_work(n_features, hist_dtype) -> SplitWork:
    return SplitWork(np.empty(n_features, np.float64), np.empty(n_features, np.int32),
                     np.empty(n_features, np.bool_), np.empty(n_features, hist_dtype),
                     np.empty(n_features, hist_dtype), np.empty(n_features, np.int64))


class SplitInfo(NamedTuple):
    """The best split of a node, as both devices' split searches return it.

    ``left_g`` / ``left_h`` are in histogram units; ``left_count`` is the left child's rows
    (meaningless for one-word histograms, where the grower takes the partition's count).
    """

    feature: int
    gain: float
    bin: int
    default_left: bool
    left_g: object
    left_h: object
    left_count: int
