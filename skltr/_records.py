"""Named records that cross from the engines to the kernels, on both devices.

numba kernels take these NamedTuples as arguments (types fixed by the constructors below)
and unpack them once, outside their hot loops (``docs/devguide.rst``, numba: arrays taken
out of a record inside a loop cost reference counting); the CUDA wrappers unpack the same
fields into launch arguments. Model: scikit-learn's ``SplitInfo`` and ``Splitter``
(``ensemble/_hist_gradient_boosting``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["SplitConstants", "SplitInfo", "SplitWork", "split_constants", "split_work",
           "monotone_directions", "CategoricalConstants", "categorical_constants",
           "CategoricalRows", "CategoricalFound", "CategoricalTasks",
           "NodeArrays", "Routing", "QSTables", "node_arrays", "routing", "qs_tables"]


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
    #: monotone constraints: the kernels then read the per-feature directions (their
    #: ``monotone`` argument, kept out of this record: a record holding an array and
    #: captured by a parallel loop made the CPU split search 20% slower on 16 threads)
    has_monotone: bool


def split_constants(*, missing_bin, inv_scale_g, inv_scale_h, reg_lambda, reg_alpha,
                    min_child_weight, min_samples_leaf, min_split_gain, count_shift,
                    hessian_counts, monotone=None) -> SplitConstants:
    """A :class:`SplitConstants` with Python scalars of fixed types (one numba signature);
    ``monotone``: the per-feature directions (see :func:`monotone_directions`), or None."""
    return SplitConstants(int(missing_bin), float(inv_scale_g), float(inv_scale_h),
                          float(reg_lambda), float(reg_alpha), float(min_child_weight),
                          int(min_samples_leaf), float(min_split_gain), int(count_shift),
                          bool(hessian_counts),
                          monotone is not None and bool(np.any(np.asarray(monotone) != 0)))


def monotone_directions(monotone, n_features) -> np.ndarray:
    """The split kernels' ``monotone`` argument: int8 per feature (zeros for None)."""
    if monotone is None:
        return np.zeros(n_features, np.int8)
    return np.ascontiguousarray(monotone, dtype=np.int8)


class CategoricalConstants(NamedTuple):
    """LightGBM's controls of categorical splits (``skltr._cpu.split_categorical``)."""

    max_cat_to_onehot: int
    max_cat_threshold: int
    cat_smooth: float
    cat_l2: float
    min_data_per_group: int


def categorical_constants(categorical) -> CategoricalConstants:
    """The :class:`CategoricalConstants` of a ``CategoricalParams`` (fixed scalar types)."""
    k = categorical
    return CategoricalConstants(int(k.max_cat_to_onehot), int(k.max_cat_threshold),
                                float(k.cat_smooth), float(k.cat_l2),
                                int(k.min_data_per_group))


class CategoricalRows(NamedTuple):
    """Where a batched categorical split search (``skltr._cpu.split_categorical.
    best_categorical_splits``) finds the categorical features in the histogram rows it is
    given: the byte features' rows, and each wide feature's first row and row count
    (``skltr._engine.wide_categorical``)."""

    narrow_rows: np.ndarray   # int64: rows of the byte categorical features, increasing
    row_feature: np.ndarray   # int64 per row: its feature number (-1: not a byte one)
    row_n_bins: np.ndarray    # int32 per row: its feature's bins (0: not a byte one)
    wide_row0: np.ndarray     # int64 per wide feature
    wide_n_rows: np.ndarray   # int64 per wide feature
    wide_n_bins: np.ndarray   # int32 per wide feature: its codes
    wide_ids: np.ndarray      # int64 per wide feature: its feature number


class CategoricalFound(NamedTuple):
    """Best categorical splits, one per entry (a node of a batch, or a task of the fused
    child search). Flat arrays, so that numba's parallel loops may take them."""

    ints: np.ndarray   # int64, shape (m, 3): feature (-1: none), left_count, many-vs-many
    gain: np.ndarray   # float64, shape (m,)
    sums: np.ndarray   # histogram dtype, shape (m, 2): the left side's gradient and hessian
    bits: np.ndarray   # uint64, shape (m, n_words): the left bins


class CategoricalTasks(NamedTuple):
    """The categorical part of a fused split search of two children
    (``skltr._cpu.split_children.find_child_splits``): a task per byte categorical feature
    and one per wide feature (after them), and the best split of each child per task in the
    last four arrays, laid out as :class:`CategoricalFound`'s (the smaller child's at entry
    ``j``, the larger one's at ``n_tasks + j``). Flat: a parallel loop takes arrays only."""

    features: np.ndarray   # int64, shape (n_features, 2): task (byte categorical; else -1), bins
    wide: np.ndarray       # int64, shape (n_wide, 4): first histogram row, rows, codes, feature
    mask: np.ndarray       # bool per feature: the node may split on it
    ints: np.ndarray       # the entries' CategoricalFound.ints, .gain, .sums, .bits
    gain: np.ndarray
    sums: np.ndarray
    bits: np.ndarray


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
    A categorical split has ``cat_left``, its left bins as 4 uint64 words (``bin`` -1,
    ``default_left`` False: the missing bin goes right), and ``cat_l2``, the L2 its children's
    outputs add (LightGBM's ``cat_l2`` after a many-vs-many split; else 0).
    """

    feature: int
    gain: float
    bin: int
    default_left: bool
    left_g: object
    left_h: object
    left_count: int
    cat_left: object = None
    cat_l2: float = 0.0


# -- scoring ---------------------------------------------------------------------------------


class NodeArrays(NamedTuple):
    """A ``TreeEnsemble``'s node arrays as the scoring kernels read them (QuickScorer takes
    the record; the traversal kernels its fields, in this order)."""

    tree_ptr: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    flags: np.ndarray
    cat_offset: np.ndarray
    cat_nwords: np.ndarray
    cat_bitsets: np.ndarray
    tree_output: np.ndarray
    tree_weight: np.ndarray
    base_score: np.ndarray


class Routing(NamedTuple):
    """How a value is compared and summed: the source library's rules (``TreeEnsemble``).

    ``strict``: ``x < threshold`` goes left (else ``<=``); ``f32_inputs``: inputs are rounded
    to float32 first; ``missing_value`` with ``has_sentinel``: a value standing for missing;
    ``sum_f32``: float32 accumulators (XGBoost); ``average``: trees averaged per output.
    """

    strict: bool
    f32_inputs: bool
    missing_value: float
    has_sentinel: bool
    sum_f32: bool
    average: bool


class QSTables(NamedTuple):
    """The QuickScorer kernel's tables (fields of ``skltr.trees._quickscorer_layout``'s
    ``QuickScorerLayout``; ``tree_block`` an int)."""

    block_tree_ptr: np.ndarray
    block_list_ptr: np.ndarray
    block_cat_ptr: np.ndarray
    list_feature: np.ndarray
    list_mode: np.ndarray
    list_slot: np.ndarray
    used_feature: np.ndarray
    list_node_ptr: np.ndarray
    list_dr_ptr: np.ndarray
    node_thr: np.ndarray
    node_tree: np.ndarray
    node_mask: np.ndarray
    node_byte: np.ndarray
    node_mbytes: np.ndarray
    dr_tree: np.ndarray
    dr_mask: np.ndarray
    dr_byte: np.ndarray
    dr_mbytes: np.ndarray
    cat_node: np.ndarray
    cat_tree: np.ndarray
    cat_mask: np.ndarray
    cat_byte: np.ndarray
    cat_mbytes: np.ndarray
    cat_feature: np.ndarray
    cat_slot: np.ndarray
    tree_is_qs: np.ndarray
    leaf_ptr: np.ndarray
    leaf_scaled: np.ndarray
    leaf_scaled32: np.ndarray
    tree_block: int


def qs_tables(layout) -> QSTables:
    """The :class:`QSTables` of a ``QuickScorerLayout`` (no copies)."""
    return QSTables(*(int(layout.tree_block) if name == "tree_block" else getattr(layout, name)
                      for name in QSTables._fields))


def node_arrays(ensemble) -> NodeArrays:
    """The :class:`NodeArrays` of a ``TreeEnsemble`` (no copies)."""
    e = ensemble
    return NodeArrays(e.tree_ptr, e.feature, e.threshold, e.left, e.right, e.value, e.flags,
                      e.cat_offset, e.cat_nwords, e.cat_bitsets, e.tree_output, e.tree_weight,
                      e.base_score)


def routing(ensemble) -> Routing:
    """The :class:`Routing` of a ``TreeEnsemble`` (scalars of fixed types)."""
    has_sentinel = not np.isnan(ensemble.missing_value)
    f32_inputs = ensemble.precision == "float32"
    missing = ensemble.missing_value if has_sentinel else 0.0
    if f32_inputs:  # inputs are rounded before the sentinel test: round the sentinel too
        missing = float(np.float32(missing))
    return Routing(bool(ensemble.decision == "<"), bool(f32_inputs), float(missing),
                   bool(has_sentinel), bool(ensemble.sum_dtype == "float32"),
                   bool(ensemble.average_output))
