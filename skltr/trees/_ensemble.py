"""``TreeEnsemble``: the one device-agnostic representation of every tree model in skltr.

The GBDT ranker, the XGBoost / LightGBM / scikit-learn converters and the QuickScorer
predictor all meet here. A ``TreeEnsemble`` is a set of flat host NumPy arrays, one entry per
node of every tree (struct of arrays), plus a few scalars that fix the arithmetic so that a
source library's predictions can be reproduced bit for bit (``docs/model_format.rst``)::

    tree_ptr  [0,        5,     6, ...]      tree t owns nodes tree_ptr[t] : tree_ptr[t+1]
    node       0  1  2  3  4 | 0 | ...        children are *local* indices (root = 0)
    feature    2 -1  0 -1 -1 |-1 |            -1 marks a leaf
    left       1 -1  3 -1 -1 |-1 |
    right      2 -1  4 -1 -1 |-1 |
    value      .  v  .  v  v | v |            leaf values (0 on internal nodes)

Routing of one input value ``x`` at internal node ``n`` (``flags[n]`` bits below):

* With ``precision="float32"`` ``x`` is rounded to float32 first (XGBoost); thresholds are
  then float32 values stored in float64.
* Then ``x`` equal to ``missing_value`` (when that is not NaN; rounded to float32 too under
  ``precision="float32"``) is treated as NaN: XGBoost's ``missing=`` sentinel, which XGBoost
  compares after rounding, so inputs that round onto the sentinel are missing as well.
* Numeric node, missing type (bits 2-3, LightGBM's encoding):
  ``NONE`` (0): NaN becomes 0.0, then compared; ``ZERO`` (1): NaN becomes 0.0, and
  ``|x| <= float32(1e-35)`` (LightGBM's ``kZeroThreshold = 1e-35f``, 1.0000000180025095e-35 as a
  double) follows the default direction; ``NAN`` (2): NaN follows the default
  direction. Otherwise left when ``x < threshold`` (``decision="<"``) or ``x <= threshold``
  (``decision="<="``).
* Categorical node (bit 0): NaN follows the default direction. A value is *invalid* when it is
  negative (``x < 0``, or ``trunc(x) < 0`` when ``CAT_TRUNC_FIRST`` is set, as LightGBM casts
  first); invalid values follow the default direction when ``CAT_INVALID_DEFAULT`` is set
  (scikit-learn treats them as missing) and are otherwise "not in the set". Category
  ``c = trunc(x)`` is in the set when bit ``c % 32`` of word
  ``cat_bitsets[cat_offset[n] + c // 32]`` is set (``c`` beyond the node's words is not in the
  set). In-set values go left, or right when ``CAT_SET_RIGHT`` is set (XGBoost).

Cover (optional): ``cover[n]`` is the training weight that reached node ``n`` -- the sum of
hessians (XGBoost's ``sum_hessian``, skltr's GBDT), the number of training rows (LightGBM's
``internal_count`` / ``leaf_count``, RankBoost) or the weighted row count (scikit-learn's
``weighted_n_node_samples``). It does not change a prediction; path-dependent TreeSHAP
(``predict_contribs``) reads it as the probability of each branch. ``None``: the model
carries no cover statistics and cannot be explained.

Outputs: tree ``t`` adds ``tree_weight[t] * leaf`` to output ``tree_output[t]``; each output
starts from ``base_score`` and sums in tree order in ``sum_dtype``; ``average_output`` divides
each output's tree sum by its number of trees (random-forest mode) before adding the base.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields, replace

import numpy as np

from .._dtypes import BITSET_DTYPE, LEAF_VALUE_DTYPE, NODE_INDEX_DTYPE, NodeFlags
from ._input import FRAME_RULES, INPUT_RULES
from ..utils._model_io import (load_document, make_document, model_file_errors,
                               read_document, save_document)

__all__ = ["TreeEnsemble", "NodeFlags", "OUTPUT_TRANSFORMS", "rounds_in"]


def rounds_in(iteration_range, n_rounds) -> tuple[int, int]:
    """``(begin, end)`` of XGBoost's ``iteration_range`` over a model of ``n_rounds``
    boosting rounds: ``end=0`` means up to the last; refused unless ``0 <= begin < end <=
    n_rounds``. The one reading of it (the rankers' ``predict``, the XGBoost converter)."""
    begin, end = (int(v) for v in iteration_range)
    end = n_rounds if end == 0 else end
    if not 0 <= begin < end <= n_rounds:
        raise ValueError(
            f"iteration_range={tuple(iteration_range)!r} is outside the model's {n_rounds} "
            f"boosting rounds; give (begin, end) with 0 <= begin < end <= {n_rounds} (end=0 "
            f"means up to the last round).")
    return begin, end


#: Output transforms a TreeEnsemble may name; the exact formulas live in ``_transforms.py``.
#: Category index types of ``TreeEnsemble.categories`` (XGBoost's: strings or one integer type).
_CATEGORY_TYPES = ("str", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                   "uint64")

OUTPUT_TRANSFORMS = ("identity", "sigmoid", "softmax", "exp", "xgb_sigmoid", "xgb_softmax",
                     "xgb_exp", "sklearn_exp", "sklearn_softmax")

#: Feature indices are int32 (NODE_INDEX_DTYPE).
_MAX_FEATURES = 2**31 - 1
_KNOWN_FLAGS = (NodeFlags.CATEGORICAL | NodeFlags.DEFAULT_LEFT | NodeFlags.MISSING_MASK
                | NodeFlags.CAT_SET_RIGHT | NodeFlags.CAT_INVALID_DEFAULT
                | NodeFlags.CAT_TRUNC_FIRST)


def _as_int(value, name: str) -> int:
    """An integer field as int: floats with a fraction, booleans and strings are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise ValueError(f"{name} must be an integer; got {value!r:.60}.")
    return int(value)


def _exact_array(arr, dtype, name: str) -> np.ndarray:
    """``arr`` as a contiguous array of ``dtype``, refusing what the cast would change:
    integers out of the dtype's range (they would wrap), fractional floats for integer
    fields (they would be truncated), and non-numeric data."""
    arr = np.asarray(arr)
    dtype = np.dtype(dtype)
    if arr.dtype == dtype:
        return np.ascontiguousarray(arr)
    if arr.size and arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} holds {arr.dtype} data; expected numbers ({dtype}).")
    if dtype.kind in "iu" and arr.size:
        if arr.dtype.kind == "f":
            finite = np.isfinite(arr)
            if not finite.all() or np.any(arr != np.trunc(arr)):
                raise ValueError(f"{name} holds non-integer values; expected {dtype}.")
        info = np.iinfo(dtype)
        lo, hi = arr.min(), arr.max()
        if lo < info.min or hi > info.max:
            raise ValueError(f"{name} holds {lo if lo < info.min else hi}, outside the "
                             f"range of {dtype}.")
    return np.ascontiguousarray(arr, dtype=dtype)


_NODE_ARRAYS = {
    # name: (dtype, fill value for a leaf)
    "feature": (NODE_INDEX_DTYPE, -1),
    "threshold": (np.float64, 0.0),
    "left": (NODE_INDEX_DTYPE, -1),
    "right": (NODE_INDEX_DTYPE, -1),
    "value": (LEAF_VALUE_DTYPE, 0.0),
    "flags": (np.uint8, 0),
    "cat_offset": (np.int64, 0),
    "cat_nwords": (np.int32, 0),
}


@dataclass(eq=False)
class TreeEnsemble:
    """A fitted tree ensemble as flat arrays: the common currency of skltr.

    Parameters
    ----------
    tree_ptr : ndarray of int64, shape (n_trees + 1,)
        Node range of each tree.
    feature, threshold, left, right, value, flags, cat_offset, cat_nwords : ndarray
        Per-node arrays of shape (n_nodes,), see the module docstring. ``left``/``right``
        are local to the tree.
    n_features : int
        Number of input columns the ensemble reads.
    cat_bitsets : ndarray of uint32
        Category sets of all categorical nodes.
    tree_output : ndarray of int32, shape (n_trees,)
        Output (class) each tree adds to. Defaults to 0.
    tree_weight : ndarray of float64, shape (n_trees,)
        Multiplier of each tree's leaf (dart weights). Defaults to 1.
    base_score : ndarray of float64, shape (n_outputs,)
        Starting value of each output, in margin space.
    n_outputs : int
    decision : {"<", "<="}
        Numeric comparison: left when ``x < thr`` (XGBoost) or ``x <= thr`` (LightGBM, sklearn).
    precision : {"float64", "float32"}
        Inputs rounded to float32 before comparing (XGBoost) or compared in double.
    sum_dtype : {"float64", "float32"}
        Accumulator of the raw score (XGBoost sums in float32).
    missing_value : float
        Input value treated as missing in addition to NaN (NaN: none).
    input_rule : {"float64", "float32", "float32_unless_float"}
        How input values are read before routing, as the source library reads them
        (:mod:`skltr.trees._input`): converted to float64 (skltr, scikit-learn
        HistGradientBoosting), rounded to float32 (XGBoost, scikit-learn trees), or float32
        and float64 arrays as they are and other dtypes through float32 (LightGBM).
    absent_value : float
        What an entry absent from a sparse input row stands for: 0.0 (skltr, LightGBM,
        scikit-learn) or NaN, i.e. missing (XGBoost).
    frame_rule : {"numpy", "lightgbm", "xgboost"}
        How a pandas DataFrame is read, category columns included, as the source library
        reads it (:func:`skltr.trees._input.frame_input`).
    categories : list or None
        XGBoost's training categories, one entry per feature: None for a numeric feature, or
        ``{"type": "str" | "int8" | ... | "uint64", "values": [...]}`` with the categories in
        code order. None when the model stored no categories.
    pandas_categorical : list of lists or None
        LightGBM's ``pandas_categorical``: the training categories of the frame's category
        columns, in column order. None when the model was not trained on a DataFrame.
    average_output : bool
        Random-forest mode: average the trees of each output instead of summing.
    output_transform : str
        One of :data:`OUTPUT_TRANSFORMS`, applied by ``predict``; ``predict_raw`` skips it.
    transform_params : dict
        Parameters of the transform, e.g. ``{"scale": 1.0}`` for a sigmoid.
    feature_names : list of str or None
    source : dict
        Provenance (library, version, objective); informational only.
    cover : ndarray of float64, shape (n_nodes,), or None
        Training weight of each node (hessian sum or row count), read by
        :meth:`predict_contribs`; None when the model has no cover statistics. A child's
        cover need not add up to its parent's (hessians are summed in float), but must be
        finite and >= 0.
    """

    tree_ptr: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    n_features: int
    flags: np.ndarray | None = None
    cat_offset: np.ndarray | None = None
    cat_nwords: np.ndarray | None = None
    cat_bitsets: np.ndarray | None = None
    tree_output: np.ndarray | None = None
    tree_weight: np.ndarray | None = None
    base_score: np.ndarray | None = None
    n_outputs: int = 1
    decision: str = "<="
    precision: str = "float64"
    sum_dtype: str = "float64"
    missing_value: float = float("nan")
    input_rule: str = "float64"
    absent_value: float = 0.0
    frame_rule: str = "numpy"
    categories: list | None = None
    pandas_categorical: list | None = None
    average_output: bool = False
    output_transform: str = "identity"
    transform_params: dict = field(default_factory=dict)
    feature_names: list | None = None
    source: dict = field(default_factory=dict)
    cover: np.ndarray | None = None

    def __post_init__(self):
        self.tree_ptr = _exact_array(self.tree_ptr, np.int64, "tree_ptr")
        self._validate_tree_ptr()
        n_nodes = self.n_nodes
        # Node counts come from tree_ptr: check it against the node arrays given before the
        # missing ones are allocated, so that a corrupt tree_ptr cannot allocate gigabytes.
        for name in _NODE_ARRAYS:
            arr = getattr(self, name)
            if arr is not None:
                arr = _exact_array(arr, _NODE_ARRAYS[name][0], name)
                if arr.shape != (n_nodes,):
                    raise ValueError(f"{name} has shape {arr.shape}; expected ({n_nodes},) "
                                     f"(tree_ptr ends at {n_nodes}).")
                setattr(self, name, arr)
        for name, (dtype, fill) in _NODE_ARRAYS.items():
            if getattr(self, name) is None:
                setattr(self, name, np.full(n_nodes, fill, dtype=dtype))
        n_trees = self.n_trees
        self.n_outputs = _as_int(self.n_outputs, "n_outputs")
        if self.cat_bitsets is None:
            self.cat_bitsets = np.zeros(0, dtype=BITSET_DTYPE)
        self.cat_bitsets = _exact_array(self.cat_bitsets, BITSET_DTYPE, "cat_bitsets")
        if self.tree_output is None:
            self.tree_output = np.zeros(n_trees, dtype=np.int32)
        self.tree_output = _exact_array(self.tree_output, np.int32, "tree_output")
        if self.tree_weight is None:
            self.tree_weight = np.ones(n_trees, dtype=np.float64)
        self.tree_weight = _exact_array(self.tree_weight, np.float64, "tree_weight")
        if self.base_score is None:
            if not 1 <= self.n_outputs <= max(n_trees, 1 << 16):
                raise ValueError(f"n_outputs must lie in [1, max(n_trees, 65536)]; got "
                                 f"{self.n_outputs}.")
            self.base_score = np.zeros(self.n_outputs, dtype=np.float64)
        self.base_score = np.atleast_1d(_exact_array(self.base_score, np.float64,
                                                     "base_score")).copy()
        self.n_features = _as_int(self.n_features, "n_features")
        if self.cover is not None:
            self.cover = np.ascontiguousarray(self.cover, dtype=np.float64)
        self.missing_value = float(self.missing_value)
        self.absent_value = float(self.absent_value)
        self.average_output = bool(self.average_output)
        if self.feature_names is not None:
            self.feature_names = [str(n) for n in self.feature_names]
        self.validate()

    # ------------------------------------------------------------------ structure
    @property
    def n_trees(self) -> int:
        return max(int(self.tree_ptr.size) - 1, 0)

    @property
    def n_nodes(self) -> int:
        return int(self.tree_ptr[-1]) if self.tree_ptr.size else 0

    @property
    def is_leaf(self) -> np.ndarray:
        return self.left < 0

    def n_leaves(self) -> np.ndarray:
        """Number of leaves of each tree."""
        return np.add.reduceat(self.is_leaf.astype(np.int64), self.tree_ptr[:-1]) if (
            self.n_trees
        ) else np.zeros(0, dtype=np.int64)

    def depths(self) -> np.ndarray:
        """Depth of every node (root = 0), tree by tree: a level of every tree at a time
        (one node at a time in Python took 46 ms on 300 trees of depth 8)."""
        depth = np.zeros(self.n_nodes, dtype=np.int32)
        start = np.repeat(np.asarray(self.tree_ptr[:-1], np.int64), np.diff(self.tree_ptr))
        level = np.asarray(self.tree_ptr[:-1], np.int64)  # the roots (global indices)
        level = level[level < np.asarray(self.tree_ptr[1:])]  # trees with nodes
        d = 0
        while level.size:
            depth[level] = d
            internal = level[self.left[level] >= 0]
            level = np.concatenate([start[internal] + self.left[internal],
                                    start[internal] + self.right[internal]])
            d += 1
        return depth

    def max_depth(self) -> int:
        """Largest number of splits on a root-to-leaf path."""
        return int(self.depths().max()) if self.n_nodes else 0

    # ------------------------------------------------------------------ validation
    def validate(self) -> "TreeEnsemble":
        """Check shapes, ranges and that every tree is a proper binary tree.

        Raises
        ------
        ValueError
            Naming the tree and node at fault.
        """
        tp = self.tree_ptr
        self._validate_tree_ptr()
        n_nodes, n_trees = self.n_nodes, self.n_trees
        for name in _NODE_ARRAYS:
            arr = getattr(self, name)
            if arr.shape != (n_nodes,):
                raise ValueError(f"{name} has shape {arr.shape}; expected ({n_nodes},).")
        for name in ("tree_output", "tree_weight"):
            if getattr(self, name).shape != (n_trees,):
                raise ValueError(f"{name} must have one entry per tree ({n_trees}).")
        if not 1 <= self.n_features <= _MAX_FEATURES:
            raise ValueError(f"n_features must be >= 1 and < 2**31; got {self.n_features}.")
        for name in ("base_score", "tree_weight"):
            arr = getattr(self, name)
            if not np.all(np.isfinite(arr)):
                bad = int(np.flatnonzero(~np.isfinite(arr))[0])
                raise ValueError(f"{name}[{bad}] is {arr[bad]}; {name} must be finite.")
        if self.n_outputs < 1 or self.base_score.shape != (self.n_outputs,):
            raise ValueError(
                f"base_score must have n_outputs={self.n_outputs} entries; got "
                f"{self.base_score.shape}."
            )
        if n_trees and (self.tree_output.min() < 0 or self.tree_output.max() >= self.n_outputs):
            raise ValueError(f"tree_output values must lie in [0, {self.n_outputs}).")
        for name, allowed in (
            ("decision", ("<", "<=")),
            ("precision", ("float64", "float32")),
            ("sum_dtype", ("float64", "float32")),
            ("input_rule", INPUT_RULES),
            ("frame_rule", FRAME_RULES),
            ("output_transform", OUTPUT_TRANSFORMS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected one of {allowed}.")
        if self.output_transform.endswith("softmax") and self.n_outputs < 2:
            raise ValueError(f"output_transform={self.output_transform!r} needs n_outputs > 1; "
                             "got 1 output.")
        self._validate_transform_params()
        if not isinstance(self.source, dict):
            raise ValueError(f"source must be a dict; got {type(self.source).__name__}.")
        if self.feature_names is not None and len(self.feature_names) != self.n_features:
            raise ValueError(
                f"feature_names has {len(self.feature_names)} names for {self.n_features} "
                f"features."
            )
        self._validate_categories()
        if self.cover is not None and (
                self.cover.shape != (n_nodes,)
                or not np.all(np.isfinite(self.cover) & (self.cover >= 0))):
            raise ValueError(f"cover must be None or one finite value >= 0 per node "
                             f"({n_nodes}); got shape {self.cover.shape}.")
        if not np.all(np.isfinite(self.value)):
            bad = int(np.flatnonzero(~np.isfinite(self.value))[0])
            raise ValueError(self._where(bad, f"has the value {self.value[bad]}; leaf values "
                                              f"must be finite"))
        if np.any(self.flags & ~np.uint8(_KNOWN_FLAGS)):
            bad = int(np.flatnonzero(self.flags & ~np.uint8(_KNOWN_FLAGS))[0])
            raise ValueError(self._where(bad, f"has flags {int(self.flags[bad])}, with bits "
                                              f"NodeFlags does not define"))
        tree_of = np.repeat(np.arange(n_trees), np.diff(tp))
        size = np.diff(tp)[tree_of]
        leaf = self.left < 0
        if np.any(leaf != (self.right < 0)):
            bad = int(np.flatnonzero(leaf != (self.right < 0))[0])
            raise ValueError(self._where(bad, "has exactly one child; nodes need 0 or 2"))
        internal = ~leaf
        for name in ("left", "right"):
            child = getattr(self, name)
            out = internal & (child >= size)
            if np.any(out):
                bad = int(np.flatnonzero(out)[0])
                raise ValueError(self._where(bad, f"{name} child {child[bad]} is outside the tree"))
        bad_feat = internal & ((self.feature < 0) | (self.feature >= self.n_features))
        if np.any(bad_feat):
            bad = int(np.flatnonzero(bad_feat)[0])
            raise ValueError(
                self._where(bad, f"splits on feature {self.feature[bad]}, outside "
                                 f"[0, {self.n_features})")
            )
        bad_thr = internal & ~np.isfinite(self.threshold) & ~self._categorical()
        if np.any(bad_thr):
            bad = int(np.flatnonzero(bad_thr)[0])
            raise ValueError(self._where(bad, "has a non-finite threshold"))
        bad_missing = internal & ~self._categorical() & (
            NodeFlags.missing_type(self.flags) > NodeFlags.MISSING_NAN)
        if np.any(bad_missing):
            bad = int(np.flatnonzero(bad_missing)[0])
            raise ValueError(self._where(
                bad, f"has missing type {int(NodeFlags.missing_type(self.flags[bad]))} "
                     f"(flags bits 2-3); expected 0 (none), 1 (zero) or 2 (NaN)"))
        cat = internal & self._categorical()
        ends = self.cat_offset + self.cat_nwords
        bad_cat = cat & ((self.cat_offset < 0) | (self.cat_nwords < 0)
                         | (ends > self.cat_bitsets.size))
        if np.any(bad_cat):
            bad = int(np.flatnonzero(bad_cat)[0])
            raise ValueError(self._where(bad, "has a category set outside cat_bitsets"))
        # Every node reached exactly once from the root: no cycles, no orphans, no sharing.
        children = np.concatenate([self.left[internal], self.right[internal]])
        owner = np.concatenate([tree_of[internal], tree_of[internal]])
        global_child = tp[owner] + children
        hits = np.bincount(global_child, minlength=n_nodes)
        is_root = np.zeros(n_nodes, dtype=bool)
        is_root[tp[:-1]] = True
        wrong = (hits != np.where(is_root, 0, 1))
        if np.any(wrong):
            bad = int(np.flatnonzero(wrong)[0])
            what = "the root is some node's child" if is_root[bad] else (
                "is not reachable from the root" if hits[bad] == 0 else
                "is the child of several nodes")
            raise ValueError(self._where(bad, what + " (trees must be proper binary trees)"))
        # With one parent per non-root node and n-1 edges per tree, a cycle would leave the
        # root's component short of nodes: check reachability explicitly.
        self._check_reachable()
        return self

    def _validate_tree_ptr(self) -> None:
        tp = self.tree_ptr
        if tp.ndim != 1:
            raise ValueError(f"tree_ptr must be 1-D; got shape {tp.shape}.")
        if tp.size < 1 or tp[0] != 0 or np.any(np.diff(tp) < 1):
            raise ValueError(
                "tree_ptr must start at 0 and increase strictly (every tree has >= 1 node)."
            )

    def _validate_transform_params(self) -> None:
        params = self.transform_params
        if not isinstance(params, dict):
            raise ValueError(f"transform_params must be a dict; got "
                             f"{type(params).__name__}.")
        scale = params.get("scale", 1.0)
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not (
                math.isfinite(scale)):
            raise ValueError(f"transform_params['scale'] is {scale!r:.40}; the sigmoid's scale "
                             f"must be a finite number.")
        if params.get("order", "F") not in ("C", "F"):
            raise ValueError(f"transform_params['order'] is {params['order']!r:.40}; expected "
                             f"'C' or 'F'.")

    def check_score_range(self) -> "TreeEnsemble":
        """Refuse an ensemble some input could make score ±inf: the largest ``|leaf| *
        |weight|`` of each tree, summed with the largest ``|base_score|``, must stay within
        half the range of ``sum_dtype`` (float32 for XGBoost).

        The XGBoost and LightGBM converters call this after :meth:`validate`: a model those
        libraries trained never comes near the bound, but a corrupt file can hold leaves of
        1e38. It is not part of :meth:`validate` (nor of loading a skltr JSON file, which
        round-trips every valid ensemble) because an ensemble may hold such values on
        purpose, e.g. to test how overflow is summed. O(nodes), vectorised.

        Raises
        ------
        ValueError
            Naming the bound and the largest possible score.
        """
        limit = float(np.finfo(self.sum_dtype).max) / 2
        if self.n_trees:
            with np.errstate(over="ignore"):
                per_tree = np.maximum.reduceat(np.abs(self.value), self.tree_ptr[:-1])
                worst = float(np.sum(per_tree * np.abs(self.tree_weight)))
        else:
            worst = 0.0
        worst += float(np.max(np.abs(self.base_score)))
        if not worst <= limit:
            raise ValueError(f"the leaf values, tree weights and base score can add up to "
                             f"{worst:.3g}, beyond the {self.sum_dtype} range the scores are "
                             f"summed in (+-{limit:.3g}); no trained model comes near this, "
                             f"so the values are corrupt.")
        return self

    def _validate_categories(self) -> None:
        cats = self.categories
        if cats is not None:
            if not isinstance(cats, list) or len(cats) != self.n_features:
                raise ValueError(f"categories must be a list with one entry per feature "
                                 f"({self.n_features}) or None.")
            for f, entry in enumerate(cats):
                if entry is None:
                    continue
                if (not isinstance(entry, dict) or set(entry) != {"type", "values"}
                        or not isinstance(entry["values"], list)
                        or entry["type"] not in _CATEGORY_TYPES):
                    raise ValueError(
                        f"categories[{f}] must be None or {{'type': one of {_CATEGORY_TYPES}, "
                        f"'values': [...]}}; got {entry!r:.80}.")
                want = str if entry["type"] == "str" else int
                if not all(isinstance(v, want) and not isinstance(v, bool)
                           for v in entry["values"]):
                    raise ValueError(f"categories[{f}] holds values that are not all "
                                     f"{want.__name__}.")
        pc = self.pandas_categorical
        if pc is not None and not (isinstance(pc, list)
                                   and all(isinstance(c, list) for c in pc)):
            raise ValueError("pandas_categorical must be a list of lists (LightGBM's "
                             "training categories per category column) or None.")

    def _categorical(self) -> np.ndarray:
        return (self.flags & NodeFlags.CATEGORICAL) != 0

    def _where(self, global_node: int, what: str) -> str:
        t = int(np.searchsorted(self.tree_ptr, global_node, side="right") - 1)
        return f"tree {t}, node {global_node - int(self.tree_ptr[t])} {what}."

    def _check_reachable(self) -> None:
        # Breadth-first from every root at once, one NumPy step per level: a 200-tree x
        # 511-node ensemble is checked in ~2 ms instead of ~70 ms node by node. validate()
        # has checked that every non-root node has exactly one parent, so nothing reachable
        # from a root lies on a cycle and the walk ends; the bound on the steps is a guard.
        tp = self.tree_ptr
        start = np.repeat(tp[:-1], np.diff(tp))  # global id of each node's tree root
        seen = np.zeros(self.n_nodes, dtype=bool)
        frontier = tp[:-1]
        for _ in range(self.n_nodes + 1):
            if frontier.size == 0:
                break
            seen[frontier] = True
            split = frontier[self.left[frontier] >= 0]
            frontier = np.concatenate([start[split] + self.left[split],
                                       start[split] + self.right[split]])
        if not seen.all():
            raise ValueError(self._where(int(np.flatnonzero(~seen)[0]), "lies on a cycle"))

    # ------------------------------------------------------------------ prediction
    def predict_raw(self, X, *, n_jobs=None) -> np.ndarray:
        """Raw scores (margins) by plain tree traversal: the reference backend.

        Parameters
        ----------
        X : array-like, pandas DataFrame or scipy CSR / CSC matrix, shape (n_samples, n_features)
            Read as the source library reads it (``input_rule``, ``frame_rule``; an entry
            absent from a sparse row is ``absent_value``).
        n_jobs : int, optional
            Threads; None uses numba's default.

        Returns
        -------
        ndarray of shape (n_samples,) when ``n_outputs == 1`` else (n_samples, n_outputs),
        of dtype ``sum_dtype``.
        """
        from ._traversal import predict_raw  # noqa: PLC0415 - compile kernels on first use

        return predict_raw(self, X, n_jobs=n_jobs)

    def predict(self, X, *, n_jobs=None) -> np.ndarray:
        """Raw scores with ``output_transform`` applied."""
        from ._transforms import apply_transform  # noqa: PLC0415

        return apply_transform(self, self.predict_raw(X, n_jobs=n_jobs))

    # ------------------------------------------------------------------ explanations
    def predict_contribs(self, X, *, device="cpu", n_jobs=None) -> np.ndarray:
        """SHAP values of every feature, by exact path-dependent TreeSHAP.

        Lundberg et al. (2020), Algorithm 2, with each node's ``cover`` as the probability of
        its branches; the branch an input takes is the model's own routing (missing values,
        categories, ``precision``), so each row sums to :meth:`predict_raw`.

        Parameters
        ----------
        X : array-like, pandas DataFrame or scipy CSR / CSC matrix
            Read as :meth:`predict_raw` reads it.
        device : {"cpu", "cuda", "cuda:N"}, default="cpu"
        n_jobs : int, optional
            CPU threads; None uses numba's default.

        Returns
        -------
        ndarray of float64, shape (n_samples, n_features + 1) or, with several outputs,
        (n_samples, n_outputs, n_features + 1)
            XGBoost's ``pred_contribs`` layout: the last column is the expected value (the
            base score plus each tree's cover-weighted mean leaf value).

        Raises
        ------
        ValueError
            If the ensemble has no ``cover`` (see :mod:`skltr.trees._shap`), or ``X`` has
            the wrong number of columns.
        """
        from ._shap import predict_contribs  # noqa: PLC0415 - compile kernels on first use

        return predict_contribs(self, X, device=device, n_jobs=n_jobs)

    def predict_interactions(self, X, *, device="cpu", n_jobs=None) -> np.ndarray:
        """SHAP interaction values, XGBoost's ``pred_interactions`` layout.

        Returns an array of shape (n_samples, n_features + 1, n_features + 1) (with an
        output axis after the rows when ``n_outputs > 1``): entry ``[i, j]`` is half the
        interaction of features ``i`` and ``j``, the diagonal the main effects; each row
        ``[i, :]`` sums to ``predict_contribs(X)[:, i]`` and ``[-1, -1]`` is the expected
        value. See :meth:`predict_contribs` for the parameters.
        """
        from ._shap import predict_interactions  # noqa: PLC0415

        return predict_interactions(self, X, device=device, n_jobs=n_jobs)

    # ------------------------------------------------------------------ persistence
    _SCALARS = ("n_features", "n_outputs", "decision", "precision", "sum_dtype", "input_rule",
                "frame_rule", "categories", "pandas_categorical", "average_output",
                "output_transform", "transform_params", "feature_names", "source")
    _ARRAYS = ("tree_ptr", *_NODE_ARRAYS, "cat_bitsets", "tree_output", "tree_weight",
               "base_score")
    #: Arrays stored only when present (schema 1.3): training statistics, not routing.
    _OPTIONAL_ARRAYS = ("cover",)

    def to_document(self) -> dict:
        """The ensemble as a versioned model document (see :mod:`skltr.utils._model_io`)."""
        meta = {name: getattr(self, name) for name in self._SCALARS}
        # JSON has no NaN: store the sentinel as a string when it is not a plain float.
        meta["missing_value"] = repr(self.missing_value)
        meta["absent_value"] = repr(self.absent_value)
        arrays = {name: getattr(self, name) for name in self._ARRAYS}
        arrays.update({name: getattr(self, name) for name in self._OPTIONAL_ARRAYS
                       if getattr(self, name) is not None})
        return make_document("TreeEnsemble", meta, arrays)

    @classmethod
    def from_document(cls, doc: dict) -> "TreeEnsemble":
        meta, arrays = read_document(doc, expected_kind="TreeEnsemble")
        required = [name for name in ("tree_ptr", "feature", "threshold", "left", "right",
                                      "value") if name not in arrays]
        if required or "n_features" not in meta:
            missing = required + ([] if "n_features" in meta else ["meta.n_features"])
            raise ValueError(f"TreeEnsemble document lacks required entries: {missing}; the "
                             f"file is truncated or corrupt.")
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in meta.items() if k in known}
        _check_meta_types(kwargs)
        for name, default in (("missing_value", "nan"), ("absent_value", "0.0")):
            kwargs[name] = _float_field(meta.get(name, default), f"meta.{name}")
        kwargs.update({k: v for k, v in arrays.items() if k in known})
        return cls(**kwargs)

    def save(self, path) -> None:
        """Save to a versioned JSON file (no pickle, no executable content)."""
        save_document(self.to_document(), path)

    @classmethod
    def load(cls, path) -> "TreeEnsemble":
        """Load a file written by :meth:`save` (errors name the file: ``ModelFileError``)."""
        with model_file_errors(path):
            return cls.from_document(load_document(path))

    # ------------------------------------------------------------------ export
    # Thin entry points; the formats live in the _export_* modules (docs/user_guide/export.rst).
    def to_xgboost(self, path) -> None:
        """Write an XGBoost JSON model (``xgboost.Booster(model_file=path)``); routing of
        float32 inputs is exact, leaves become float32 (:mod:`skltr.trees._export_xgboost`)."""
        from ._export_xgboost import to_xgboost  # noqa: PLC0415 - loaded on use

        to_xgboost(self, path)

    def to_xgboost_dump(self, path, *, base_score="fold", feature_names=None) -> None:
        """Write the JSON dump (``get_dump(dump_format="json")`` form) read by the
        OpenSearch / Elasticsearch LTR plugin and Vespa; ``base_score`` "fold" adds the base
        score to the first tree's leaves, "drop" leaves it out."""
        from ._export_xgboost import to_xgboost_dump  # noqa: PLC0415 - loaded on use

        to_xgboost_dump(self, path, base_score=base_score, feature_names=feature_names)

    def to_lightgbm(self, path, *, format="text") -> None:
        """Write a LightGBM model: ``format="text"`` (``lightgbm.Booster(model_file=path)``)
        or ``"json"`` (the ``Booster.dump_model()`` document Vespa reads)."""
        from ._export_lightgbm import to_lightgbm  # noqa: PLC0415 - loaded on use

        to_lightgbm(self, path, format=format)

    def to_onnx(self, path=None, *, input_type="float32", raw_score=False, ml_opset=None):
        """An ONNX model (needs ``onnx``: ``pip install ".[export-onnx]"``), written to
        ``path`` when given; returns the ModelProto. ``ml_opset=3``: ``ai.onnx.ml``
        TreeEnsembleRegressor; ``5``: TreeEnsemble (categorical splits; the default for
        models that have them)."""
        from ._export_onnx import to_onnx  # noqa: PLC0415 - optional dependency

        return to_onnx(self, path, input_type=input_type, raw_score=raw_score,
                       ml_opset=ml_opset)

    def to_treelite(self):
        """A ``treelite.Model`` (needs ``treelite>=4``) for ``treelite.gtil`` or TL2cgen."""
        from ._export_treelite import to_treelite  # noqa: PLC0415 - optional dependency

        return to_treelite(self)

    def select_trees(self, begin: int, end: int) -> "TreeEnsemble":
        """The ensemble of trees ``begin .. end - 1`` (boosting rounds, for a single-output
        model), with this ensemble's base score and rules: XGBoost's ``iteration_range``.

        Its raw scores are the base score plus those trees' values, added in order, so the
        trees ``[0, k)`` of a skltr model score as the model after ``k`` rounds did.
        """
        begin, end = int(begin), int(end)
        if not 0 <= begin < end <= self.n_trees:
            raise ValueError(f"trees [{begin}, {end}) are not in this ensemble's "
                             f"{self.n_trees} trees; give 0 <= begin < end <= {self.n_trees}.")
        lo, hi = int(self.tree_ptr[begin]), int(self.tree_ptr[end])
        nodes = {name: getattr(self, name)[lo:hi] for name in _NODE_ARRAYS}
        return replace(
            self, tree_ptr=self.tree_ptr[begin:end + 1] - lo, **nodes,
            tree_output=self.tree_output[begin:end], tree_weight=self.tree_weight[begin:end],
            cover=None if self.cover is None else self.cover[lo:hi],
            # the category sets stay whole: the kept nodes' offsets still point into them
            cat_bitsets=self.cat_bitsets, base_score=self.base_score,
            categories=self.categories, pandas_categorical=self.pandas_categorical,
            transform_params=dict(self.transform_params),
            feature_names=self.feature_names, source=dict(self.source))

    def equals(self, other: "TreeEnsemble") -> bool:
        """True when both ensembles are identical, array for array and bit for bit.

        ``source`` and ``cover`` (training statistics, which change no prediction) are not
        compared."""
        if not isinstance(other, TreeEnsemble):
            return False
        for name in self._ARRAYS:
            a, b = getattr(self, name), getattr(other, name)
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                return False
        same_missing = all(
            a == b or (np.isnan(a) and np.isnan(b))
            for a, b in ((self.missing_value, other.missing_value),
                         (self.absent_value, other.absent_value)))
        return same_missing and all(
            getattr(self, n) == getattr(other, n) for n in self._SCALARS if n != "source")

    def __repr__(self) -> str:
        return (f"TreeEnsemble(n_trees={self.n_trees}, n_nodes={self.n_nodes}, "
                f"n_features={self.n_features}, n_outputs={self.n_outputs}, "
                f"decision={self.decision!r}, precision={self.precision!r}, "
                f"output_transform={self.output_transform!r})")


#: JSON types of the ``meta`` entries of a TreeEnsemble document (``docs/model_format.rst``).
_META_TYPES = {
    "n_features": (int,), "n_outputs": (int,), "decision": (str,), "precision": (str,),
    "sum_dtype": (str,), "input_rule": (str,), "frame_rule": (str,),
    "categories": (list, type(None)), "pandas_categorical": (list, type(None)),
    "average_output": (bool,), "output_transform": (str,), "transform_params": (dict,),
    "feature_names": (list, type(None)), "source": (dict,),
}


def _check_meta_types(meta: dict) -> None:
    """Refuse ``meta`` entries of the wrong JSON type before the constructor converts them
    (``bool("false")`` is True, ``int(2.7)`` is 2, a string of names would become a list of
    characters)."""
    for name, value in meta.items():
        types = _META_TYPES.get(name)
        if types is None:
            continue
        ok = isinstance(value, types) and not (bool not in types and isinstance(value, bool))
        if not ok:
            want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise ValueError(f"meta.{name} is {value!r:.60} ({type(value).__name__}); expected "
                             f"{want}. The file is corrupt or was edited.")
    names = meta.get("feature_names")
    if names is not None and not all(isinstance(n, str) for n in names):
        raise ValueError("meta.feature_names holds entries that are not strings; the file is "
                         "corrupt or was edited.")


def _float_field(value, name: str) -> float:
    """``missing_value`` / ``absent_value``: stored as ``repr(float)`` (JSON has no NaN)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{name} is {value!r:.60}; expected a float written as a string.")
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} is {value!r:.60}, not a number; the file is corrupt or was "
                         f"edited.") from None
