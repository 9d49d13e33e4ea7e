"""Binned trees (``GrownTree``) and the ``TreeEnsemble`` builders of every binned learner.

A learner on binned features (a GBDT tree grower, a RankBoost stump finder) describes its
trees in bins: "bin <= b goes left", the missing bin going to the default side. This module
turns them into one :class:`~skltr.trees.TreeEnsemble` with raw thresholds, the
:class:`~skltr._engine.binning.BinMapper`'s cut values, so that scoring never needs the bins::

    GrownTree(feature, bin_threshold, default_left, left, right, value)  (per tree, bins)
        --binned_trees_to_ensemble-->  threshold = cut_values[cut_ptr[f] + b], flags (NaN
                                     missing, default side): one
                                     TreeEnsemble(decision="<=", precision="float64")

A categorical split (``cat_bits``: its left bins, ``bin_threshold`` -1) becomes a categorical
node whose set holds the categories of those bins (``BinMapper.cat_values``); NaN and every
other category go right, as in LightGBM's models.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._cpu.predict_binned import add_leaf_values, add_tree_binned
from .._dtypes import BITSET_DTYPE, LEAF_VALUE_DTYPE, NODE_INDEX_DTYPE, WIDE_CODE_DTYPE
from ..trees._ensemble import NodeFlags, TreeEnsemble
from ..utils._threads import numba_threads

__all__ = ["GrownTree", "binned_trees_to_ensemble", "stump"]

#: Threshold of a split "every non-missing value left, missing right": above every finite x.
_ALL_FINITE_LEFT = float(np.finfo(np.float64).max)


@dataclass
class GrownTree:
    """One grown tree: node arrays in TreeEnsemble order and the leaf of each training row.

    Attributes
    ----------
    feature, bin_threshold, left, right : ndarray of int32, shape (n_nodes,)
        ``-1`` on leaves; a row goes left when its bin ``<= bin_threshold``.
    default_left : ndarray of bool
        Where rows in the missing bin go.
    value : ndarray of float64
        Leaf values (learning rate applied); 0 on internal nodes.
    gain : ndarray of float64
        Split gains of internal nodes (0 on leaves), for feature importances.
    count : ndarray of int64
        Rows of each node.
    hess_sum : ndarray of float64
        Hessian sum of each node.
    leaf_of_row : ndarray of int32, shape (n_rows,)
        Leaf (node id) of each row grown on: of ``rows[i]`` when the grower had ``rows``, of
        row ``i`` otherwise.
    rows : ndarray of uint32 or None
        The rows grown on (None: all rows).
    missing_bin : int
    cat_bits : ndarray of uint64, shape (n_nodes, n_words), or None
        Left bins of categorical splits (their ``bin_threshold`` is -1; 4 words, more when a
        wide categorical feature split); None when the tree has none.
    """

    feature: np.ndarray
    bin_threshold: np.ndarray
    default_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    gain: np.ndarray
    count: np.ndarray
    hess_sum: np.ndarray
    leaf_of_row: np.ndarray
    rows: np.ndarray | None
    missing_bin: int
    cat_bits: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return int(self.feature.size)

    @property
    def n_leaves(self) -> int:
        return int(np.count_nonzero(self.left < 0))

    def add_to_training_scores(self, scores: np.ndarray, n_threads=None) -> None:
        """``scores[row] += value[leaf of row]`` for every row the tree was grown on."""
        if self.rows is None:
            with numba_threads(n_threads):
                add_leaf_values(self.leaf_of_row, self.value, scores)
        else:
            scores[self.rows] += self.value[self.leaf_of_row]

    def add_to_scores(self, X_binned: np.ndarray, scores: np.ndarray, n_threads=None,
                      wide=None) -> None:
        """``scores[i] += tree(X_binned[i])`` for every row of a binned matrix.

        ``wide``: ``(X_wide, wide_of)`` of a fit with wide categorical features (their codes,
        and each feature's column of them or -1: :mod:`skltr._engine.wide_categorical`).
        """
        if wide is None:
            wide = (np.empty((X_binned.shape[0], 0), WIDE_CODE_DTYPE),
                    np.full(X_binned.shape[1], -1, np.int64))
        with numba_threads(n_threads):
            add_tree_binned(X_binned, *wide, self.feature, self.bin_threshold,
                            self.default_left, self.left, self.right, self.value,
                            self.missing_bin, self.cat_bits, scores)


def _node_arrays(trees, bin_mapper) -> dict:
    """The node arrays of the trees, concatenated, for a ``TreeEnsemble(decision="<=",
    precision="float64")`` (every tree's at once: one numpy call a field, not one a tree).

    ``threshold`` is the raw cut value of ``bin_threshold`` (the last non-missing bin, a
    "missing versus the rest" split, becomes the largest double); ``flags`` mark NaN as the
    missing type and carry the default direction; ``cover`` is ``hess_sum`` (the training
    hessians of each node, TreeSHAP's cover). Categorical splits are left to
    :func:`_categorical_nodes`.
    """
    def joined(name, dtype=None):
        return np.concatenate([np.asarray(getattr(t, name), dtype=dtype) for t in trees])

    feature, bin_threshold, left = joined("feature"), joined("bin_threshold"), joined("left")
    internal = left >= 0
    f = np.where(internal, feature, 0)
    b = np.where(internal, bin_threshold, 0).astype(np.int64)
    # categorical splits (bin_threshold -1) read no cut: _categorical_nodes sets them
    last = (b >= bin_mapper.n_bins[f] - 1) | (b < 0)
    idx = np.where(last, 0, bin_mapper.cut_ptr[f] + b)
    cut = bin_mapper.cut_values[idx] if bin_mapper.cut_values.size else np.zeros(idx.size)
    threshold = np.where(internal, np.where(last, _ALL_FINITE_LEFT, cut), 0.0)
    flags = np.where(
        internal,
        (NodeFlags.MISSING_NAN << NodeFlags.MISSING_SHIFT)
        | np.where(joined("default_left"), NodeFlags.DEFAULT_LEFT, 0),
        0,
    ).astype(np.uint8)
    return {"feature": feature, "threshold": threshold.astype(np.float64), "left": left,
            "right": joined("right"), "value": joined("value"), "flags": flags,
            "cover": np.maximum(joined("hess_sum", np.float64), 0.0)}


def _categorical_nodes(trees, arrays, bin_mapper):
    """Turn the categorical splits of the trees' concatenated ``arrays`` into categorical
    nodes: the categories of their left bins in a bitset of category codes; returns the
    bitsets. Every tree's at once: a tree at a time, with :func:`_node_arrays`, 100 trees of
    a 1,000-level feature took 6.8-10.5 ms against 3.7-4.0 ms (by hand, 2 cores), a few
    percent of a fit on 16 threads."""
    n = arrays["feature"].size
    offset, nwords = np.zeros(n, np.int64), np.zeros(n, np.int32)
    arrays["cat_offset"], arrays["cat_nwords"] = offset, nwords
    at, nodes, rows = 0, [], []
    for t in trees:
        if t.cat_bits is not None:
            own = np.flatnonzero((t.left >= 0) & (t.bin_threshold < 0))
            nodes.append(at + own)
            rows.append(t.cat_bits[own])
        at += t.n_nodes
    nodes = np.concatenate(nodes) if nodes else np.zeros(0, np.int64)
    if not nodes.size:
        return np.zeros(0, BITSET_DTYPE)
    width = max(r.shape[1] for r in rows)  # a tree's rows are its widest set's width
    left_bits = np.zeros((nodes.size, width), np.uint64)
    k = 0
    for r in rows:
        left_bits[k:k + r.shape[0], :r.shape[1]] = r
        k += r.shape[0]
    cats = bin_mapper.categorical_indices()
    position = np.full(bin_mapper.n_bins.size, -1, np.int64)
    position[cats] = np.arange(cats.size)
    bits = np.unpackbits(left_bits.view(np.uint8), axis=1, bitorder="little")
    k, left_bins = np.nonzero(bits)  # per node, its left bins in order
    first = bin_mapper.cat_ptr[position[arrays["feature"][nodes]]]
    codes = bin_mapper.cat_values[first[k] + left_bins].astype(np.int64)
    top = np.zeros(nodes.size, np.int64)
    np.maximum.at(top, k, codes)
    nwords[nodes] = top // 32 + 1
    offset[nodes] = np.cumsum(nwords[nodes]) - nwords[nodes]
    arrays["threshold"][nodes] = 0.0
    arrays["flags"][nodes] = NodeFlags.CATEGORICAL | (
        NodeFlags.MISSING_NAN << NodeFlags.MISSING_SHIFT)
    # a node's codes are distinct: the sum of their bits in a word is its bitwise or (exact
    # in float64 below 2**53)
    return np.bincount(offset[nodes][k] + codes // 32,
                       weights=np.left_shift(1, codes % 32).astype(np.float64),
                       minlength=int(nwords[nodes].sum())).astype(BITSET_DTYPE)


def binned_trees_to_ensemble(trees, bin_mapper, base_score=0.0, **kwargs):
    """One ``TreeEnsemble(decision="<=", precision="float64")`` of grown trees, in order."""
    tree_ptr = np.concatenate([[0], np.cumsum([t.n_nodes for t in trees])])
    arrays = _node_arrays(trees, bin_mapper)
    if any(t.cat_bits is not None for t in trees):
        kwargs["cat_bitsets"] = _categorical_nodes(trees, arrays, bin_mapper)
    return TreeEnsemble(tree_ptr=tree_ptr, n_features=bin_mapper.cut_ptr.size - 1,
                        base_score=np.array([base_score]), decision="<=",
                        precision="float64", **arrays, **kwargs)


def stump(feature, bin_threshold, default_left, left_value, right_value, missing_bin,
          gain=0.0):
    """A one-split ``GrownTree`` (a weak ranker "bin <= b"), leaf values given.

    ``gain`` is the split's importance (what ``feature_importances_`` sums); ``count`` and
    ``hess_sum`` are left at zero (RankBoost sets its ensemble's cover from the training rows
    afterwards).
    """
    i32 = NODE_INDEX_DTYPE
    return GrownTree(
        feature=np.array([feature, -1, -1], i32),
        bin_threshold=np.array([bin_threshold, -1, -1], i32),
        default_left=np.array([bool(default_left), False, False]),
        left=np.array([1, -1, -1], i32), right=np.array([2, -1, -1], i32),
        value=np.array([0.0, left_value, right_value], LEAF_VALUE_DTYPE),
        gain=np.array([float(gain), 0.0, 0.0]), count=np.zeros(3, np.int64),
        hess_sum=np.zeros(3),
        leaf_of_row=None, rows=None, missing_bin=int(missing_bin))
