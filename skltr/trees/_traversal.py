"""Host-side entry to the traversal backend: input checks, then the numba kernel.

Dense input goes to the kernel whole; scipy CSR / CSC input is scored a block of densified
rows at a time (:mod:`skltr.trees._sparse_input`), absent entries standing for the
ensemble's ``absent_value``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._cpu.traversal import apply_leaf_traversal, predict_raw_traversal
from .._dtypes import NodeFlags
from .._records import node_arrays, routing
from ..utils._cpu_cache import l2_cache_bytes
from ..utils._threads import numba_threads, resolve_n_jobs
from ._input import model_input
from ._sparse_input import is_sparse, map_row_chunks


#: Most rows a thread walks each tree for at a time: more share a tree's nodes in cache
#: (on 300 LightGBM trees of 255 leaves x 50 features, 2 cores: 256 rows a chunk 0.93x
#: LightGBM's predict time, 1,024 rows 0.74x, 4,096 0.82x; one row at a time, every tree's
#: nodes read again for each row, 1.31x).
MAX_CHUNK_ROWS = 1024
#: Chunks each thread should get, when there are rows enough (a static split evens out).
CHUNKS_PER_THREAD = 4


def chunk_rows(n_samples, n_threads, n_features, itemsize, l2_bytes=None) -> int:
    """Rows per traversal chunk: at most :data:`MAX_CHUNK_ROWS`, at most what keeps the
    chunk's rows of ``X`` within half the L2 cache (:func:`~skltr.utils._cpu_cache.
    l2_cache_bytes`), and few enough that every thread gets :data:`CHUNKS_PER_THREAD`;
    at least 16."""
    l2 = l2_cache_bytes() if l2_bytes is None else int(l2_bytes)
    fit = l2 // 2 // max(1, n_features * itemsize)
    share = n_samples // (CHUNKS_PER_THREAD * max(1, n_threads))
    return int(max(16, min(MAX_CHUNK_ROWS, fit, share)))


#: Levels of each tree laid out in heap order for the lean walk (at most): depth-8 trees
#: (XGBoost's ``max_depth=8``) whole. On 300 such trees, 50k x 136, 2 cores: 3.5 us a
#: document against 5.1 walked node by node (XGBoost 2.1); LightGBM's 255-leaf trees 4.1
#: against 6.1 (by hand; the benchmark's figures: docs/scoring_internals.rst).
TOP_LEVELS = 8
#: Fewest rows for which the top levels are laid out (a few ms for 1,000 trees): a smaller
#: batch (one query) is walked node by node.
TOP_LEVELS_MIN_ROWS = 2048


def top_levels(ensemble, depth):
    """The first ``depth`` levels of every tree in heap order, for
    ``skltr._cpu.traversal.group_top_levels``: ``(feature, threshold, exit)``, the first two
    of shape ``(n_trees, 2**depth - 1)`` (slot ``s``'s children at ``2 s + 1``, ``2 s + 2``;
    a leaf above the last level fills its slot with feature 0 and a NaN threshold, which
    every value passes to the left, and both child slots with itself) and ``exit`` of shape
    ``(n_trees, 2**depth)``: the global node each bottom slot stands for (a leaf, or the
    internal node the walk goes on from)."""
    e = ensemble
    starts = np.asarray(e.tree_ptr[:-1], np.int64)[:, None]
    n_trees = starts.shape[0]
    feature = np.zeros((n_trees, (1 << depth) - 1), np.int64)
    threshold = np.full((n_trees, (1 << depth) - 1), np.nan)
    cur = starts.copy()
    for level in range(depth):
        internal = e.left[cur] >= 0
        cols = slice((1 << level) - 1, (2 << level) - 1)
        feature[:, cols] = np.where(internal, e.feature[cur], 0)
        threshold[:, cols] = np.where(internal, e.threshold[cur], np.nan)
        nxt = np.empty((n_trees, 2 * cur.shape[1]), np.int64)
        nxt[:, 0::2] = np.where(internal, starts + e.left[cur], cur)
        nxt[:, 1::2] = np.where(internal, starts + e.right[cur], cur)
        cur = nxt
    return feature, threshold, cur


class TopLevels(NamedTuple):
    """:func:`top_levels` of a model, kept as the traversal backend's tables (the
    predictors and rankers build them once; ``predict_raw`` otherwise lays them out per call
    for :data:`TOP_LEVELS_MIN_ROWS` rows and more)."""

    feature: np.ndarray
    threshold: np.ndarray
    exit: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.feature.nbytes + self.threshold.nbytes + self.exit.nbytes)


def _top_depth(ensemble) -> int:
    # a tree of L leaves is at least log2(L) deep: levels no tree fills are not laid out
    return min(TOP_LEVELS, int(np.log2(max(1, int(ensemble.n_leaves().max(initial=1))))))


def traversal_layout(ensemble) -> TopLevels | None:
    """The traversal backend's tables: the heap-ordered top levels of a model the lean walk
    reads (:func:`lean_routing`), else None."""
    if ensemble.n_trees == 0 or not lean_routing(ensemble):
        return None
    return TopLevels(*top_levels(ensemble, _top_depth(ensemble)))


def lean_routing(ensemble) -> bool:
    """Whether no node of ``ensemble`` is categorical or of missing type ZERO: the traversal
    then walks chunks without NaN by comparisons alone (``skltr._cpu.traversal.
    group_leaves_plain``)."""
    internal = ensemble.left >= 0
    flags = ensemble.flags[internal]
    return not bool(np.any(flags & NodeFlags.CATEGORICAL)
                    or np.any(NodeFlags.missing_type(flags) == NodeFlags.MISSING_ZERO))


def _as_kernel_input(ensemble, X) -> np.ndarray:
    # every CPU kernel reads X through ``go_left`` or QuickScorer's gather, which take a
    # float32 or float64 X and round to float32 when ``f32_inputs``: no converted copy
    return model_input(ensemble, X, kernel_casts=True)


def predict_raw(ensemble, X, *, n_jobs=None, top=None) -> np.ndarray:
    """Raw scores of ``ensemble`` on ``X`` by traversal; see ``TreeEnsemble.predict_raw``.

    ``X`` is a dense array or a scipy CSR / CSC matrix. ``top``: the model's
    :func:`traversal_layout`, when the caller keeps it."""
    if is_sparse(X):
        return map_row_chunks(ensemble, X, lambda rows: predict_raw(ensemble, rows,
                                                                    n_jobs=n_jobs, top=top))
    X = _as_kernel_input(ensemble, X)
    out = np.empty((X.shape[0], ensemble.n_outputs), dtype=np.float64)
    e = ensemble
    lean = top is not None or lean_routing(e)
    if top is None:
        deep = lean and X.shape[0] >= TOP_LEVELS_MIN_ROWS and e.n_trees
        top = top_levels(e, _top_depth(e) if deep else 0)
    with numba_threads(n_jobs):
        r = routing(e)
        predict_raw_traversal(X, *node_arrays(e), r.strict, r.f32_inputs, r.sum_f32,
                              r.missing_value, r.has_sentinel, r.average, out,
                              chunk_rows(X.shape[0], resolve_n_jobs(n_jobs), X.shape[1],
                                         X.itemsize), lean, *top)
    if e.sum_dtype == "float32":
        out = out.astype(np.float32)
    return out[:, 0] if e.n_outputs == 1 else out


def apply(ensemble, X, *, n_jobs=None) -> np.ndarray:
    """Local leaf index reached in every tree, shape (n_samples, n_trees); ``X`` dense or
    CSR / CSC."""
    if is_sparse(X):
        return map_row_chunks(ensemble, X, lambda rows: apply(ensemble, rows, n_jobs=n_jobs))
    X = _as_kernel_input(ensemble, X)
    out = np.empty((X.shape[0], ensemble.n_trees), dtype=np.int32)
    with numba_threads(n_jobs):
        e, r = node_arrays(ensemble), routing(ensemble)
        apply_leaf_traversal(X, e.tree_ptr, e.feature, e.threshold, e.left, e.right, e.flags,
                             e.cat_offset, e.cat_nwords, e.cat_bitsets, r.strict, r.f32_inputs,
                             r.missing_value, r.has_sentinel, out)
    return out


def node_visits(ensemble, X, *, n_jobs=None, chunk_rows=65536) -> np.ndarray:
    """How many rows of ``X`` pass through each node (int64, the ensemble's node order): the
    visit counts a layout orders children by. ``X`` dense or CSR / CSC."""
    e = ensemble
    tp = np.asarray(e.tree_ptr, np.int64)
    visits = np.zeros(max(int(tp[-1]), 1), np.int64)
    for r0 in range(0, X.shape[0], chunk_rows):
        leaves = apply(e, X[r0:r0 + chunk_rows], n_jobs=n_jobs).astype(np.int64) + tp[:-1]
        visits += np.bincount(leaves.ravel(), minlength=visits.size)
    # an internal node's count is its children's: repeat until every level has been summed
    internal = np.flatnonzero(np.asarray(e.left) >= 0)
    base = tp[np.repeat(np.arange(tp.size - 1), np.diff(tp))][internal]
    lg, rg = base + np.asarray(e.left)[internal], base + np.asarray(e.right)[internal]
    while internal.size:
        summed = visits[lg] + visits[rg]
        if np.array_equal(summed, visits[internal]):
            break
        visits[internal] = summed
    return visits[:int(tp[-1])]
