"""``TreeGrower``: grow one regression tree on binned data from gradients and hessians.

Host orchestration of the numba kernels under ``skltr/_cpu`` (histogram, split, partition);
the contract with the boosting loop is ``docs/gbdt_internals.rst``.

Rows of the tree live in one buffer (uint32 row ids); every node owns a contiguous range of
it, and splitting a node partitions its range stably (left rows first)::

    rows    | ......................... root ......................... |
    split   | ........ left (node 1) ........ | ..... right (node 2) .... |
    split   | .. node 3 .. | .... node 4 .... | ..... right (node 2) .... |

Histograms come from a pool (``HistogramPool``): a split builds the histogram of the smaller
child only and derives the larger one as ``parent - smaller`` in the parent's buffer (the
subtraction trick), so each level of the tree reads at most half of its rows.

Growth policies:

* ``"leafwise"``: repeatedly split the leaf of highest gain (ties: lowest node id) until
  ``max_leaves`` leaves, or no leaf has a valid split; leaves at ``max_depth`` are not split.
* ``"depthwise"``: level by level up to ``max_depth``; within a level, nodes are split in
  decreasing gain (ties: lowest node id) while fewer than ``max_leaves`` leaves exist.

Node ids are assigned in creation order (root 0; a split appends its left then its right
child), which is the TreeEnsemble order.

Quantised mode (``hist_mode="quantised"``): each round, gradients are scaled by ``2**kg``
and hessians by ``2**kh`` (powers of two: the scaling is exact) and rounded to integers.
Histograms sum int64 exactly, in any order, on any number of threads or workers. Two bin
layouts:

* one word (``min_samples_leaf_counts="hessian"``, the estimator's default, and at most
  ``GH64_MAX_ROWS`` rows): ``q_g * 2**32 + q_h`` in one int64, with the scales chosen from
  the exact sums of ``|g|`` and ``h`` (integer accumulators,
  :func:`skltr._cpu.quantise.abs_sum_accumulators`; :func:`gh64_exponent`) so that no set
  of rows sums past ``2**31`` (gradients) or ``2**32`` (hessians): no sum carries from one
  field into the other. No row counts: the split search counts rows from hessians, as
  LightGBM, and the partition gives children their row counts. 8-byte bins with one
  read-modify-write per (row, feature): measured 1.9x faster updates than two words (1.38
  vs 2.67 ns, one thread, 494k x 68 features).
* two words (otherwise): ``q_g`` as int32 with ``max|g| * 2**kg <= min(2**30, 2**62 /
  n_rows)``, and ``(1 << K) + q_h`` in int64 with the bound ``2**(K-1) / n_rows``, so that
  one channel sums both the hessian (low ``K = 63 - bits(n_rows)`` bits) and the row count
  (high bits); 16-byte bins.

Every node sum (``sum_g``, ``sum_h``) is kept in histogram units (float64, or int64 in
quantised mode, where a right child's ``parent - left`` is exact); only gains and leaf values
convert to gradient units.
"""

from __future__ import annotations

import heapq
import math

import numba
import numpy as np

from .._cpu.histogram import build_histogram, build_histogram_serial, subtract_histograms
from .._cpu.partition import partition_rows, partition_rows_serial
from .._cpu.quantise import (N_FLOAT32_EXPONENTS, abs_sum_accumulators, accumulated_value,
                              quantise_gradients, quantise_gradients_gh64)
from .._cpu.split import find_best_splits, find_best_splits_serial, leaf_value
from .._dtypes import (G_H_DTYPE, LEAF_VALUE_DTYPE, NODE_INDEX_DTYPE,
                       QUANTISED_G_H_DTYPE, ROW_INDEX_DTYPE,
                       X_BINNED_DTYPE)
from ..utils._threads import numba_threads
from .._engine.binned_tree import GrownTree
from .._records import SplitInfo, split_constants, split_work
from .._engine.communicator import LocalCommunicator
from .params import TreeParams
from .._engine.histogram import (FLOAT, HIST_PAD_BINS, ONE_WORD, TWO_WORD, HistogramPool,
                                 histogram_tasks)

__all__ = ["TreeGrower", "can_split", "quantisation_exponent", "gh64_exponent"]

# Below these node sizes a kernel runs on one thread: starting a parallel region costs ~10 us
# on an idle machine but milliseconds on a busy one (OpenMP threads wait for a time slice),
# more than the parallel work saves on small nodes.
#: Rows of a node from which its histogram is built in parallel.
HIST_PARALLEL_MIN_ROWS = 512
#: Rows of a node from which it is partitioned in parallel.
PARTITION_PARALLEL_MIN_ROWS = 65536
#: Rows of a node from which its split is searched in parallel: every node, since a split
#: search scans all bins of every feature whatever the node's size (measured 9% faster trees
#: on 494k x 136, 255 leaves, 2 threads, than parallel from 16,384 rows only).
SPLIT_PARALLEL_MIN_ROWS = 0
#: Most rows (of the whole tree) for one-word bins (gradient and hessian in one int64, see
#: the module docstring). Their scale keeps the sum of all rows' ``|q_g|`` below ``2**31``,
#: so a row of average ``|g|`` gets about ``31 - log2(n_rows)`` bits (10 at this bound);
#: larger trees use two-word bins.
GH64_MAX_ROWS = 2**21


def quantisation_exponent(max_abs: float, n_rows: int, total_bits: int = 62) -> int:
    """Largest ``k`` with ``max_abs * 2**k <= min(2**30, 2**total_bits / n_rows)``; 0 if no max.

    ``|round(v * 2**k)| <= 2**30`` fits int32, and ``n_rows`` such values sum below
    ``2**total_bits`` (62: within int64; ``count_shift - 1`` for packed hessians).
    """
    if not max_abs > 0.0:
        return 0
    limit = min(2.0 ** 30, 2.0 ** total_bits / max(n_rows, 1))
    k = math.floor(math.log2(limit / max_abs))
    while max_abs * 2.0 ** k > limit:  # guard log2 rounding
        k -= 1
    while max_abs * 2.0 ** (k + 1) <= limit:
        k += 1
    return k


def gh64_exponent(total_abs: float, n_rows: int, bits: int) -> int:
    """Largest ``k`` such that ``sum |rint(v * 2**k)| < 2**bits`` for values of ``sum |v| <=
    total_abs`` over ``n_rows`` rows: ``total_abs * 2**k + n_rows / 2 < 2**bits``; 0 if no sum.

    The one-word bins' scale: bounding the sum of magnitudes instead of ``n_rows * max|v|``
    keeps 3-6 more bits of lambdarank's heavy-tailed gradients (measured on letor_small and
    ``make_ranking``). A 1e-6 relative margin covers the float64 rounding of ``total_abs``.
    """
    room = 2.0 ** bits - 1.0 - 0.5 * n_rows
    if not total_abs > 0.0 or room <= 0.0:
        return 0
    bound = total_abs * (1.0 + 1e-6)
    k = math.floor(math.log2(room / bound))
    while bound * 2.0 ** k > room:  # guard log2 rounding
        k -= 1
    while bound * 2.0 ** (k + 1) <= room:
        k += 1
    return min(k, 1000)


def can_split(node, n_leaves, max_leaves, max_depth, min_samples_leaf) -> bool:
    """Whether ``node`` may be split once the tree has ``n_leaves`` leaves (both growers).

    A node needs room for another leaf, depth below ``max_depth`` and rows for two children
    of ``min_samples_leaf`` rows.
    """
    return (n_leaves < max_leaves and (max_depth is None or node.depth < max_depth)
            and node.count >= 2 * min_samples_leaf)


class _Node:
    __slots__ = ("start", "end", "sum_g", "sum_h", "count", "depth", "hist", "local_hist",
                 "split")

    def __init__(self, start, end, sum_g, sum_h, count, depth):
        self.start, self.end = start, end
        self.sum_g, self.sum_h, self.count, self.depth = sum_g, sum_h, count, depth
        self.hist = None
        self.local_hist = None  # this worker's share (distributed one-word bins only)
        self.split = None  # SplitInfo


class TreeGrower:
    """Grow one tree on binned features from per-row gradients and hessians.

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_samples, n_features), C order
        From ``BinMapper.transform``.
    X_binned_T : ndarray of uint8, shape (n_features, n_samples), C order, or None
        ``np.ascontiguousarray(X_binned.T)``, read by the partition kernel. The boosting loop
        should make it once and pass it to every grower; None makes it here (a full copy of
        the binned matrix per tree).
    grad, hess : ndarray of float32, shape (n_samples,)
    n_bins : ndarray of int32, shape (n_features,)
        Non-missing bins per feature (``BinMapper.n_bins``).
    missing_bin : int
        ``BinMapper.missing_bin``; histograms have ``missing_bin + 1`` bins per feature (plus
        ``HIST_PAD_BINS`` unused ones).
    has_missing : ndarray of bool, shape (n_features,)
        ``BinMapper.has_missing`` (features without training NaN send NaN to the child with
        more samples -- which the split rule does for every node without missing rows).
    rows : array of int or None
        Rows to grow on (a query subsample), unique; None for all rows.
    feature_mask : ndarray of bool or None
        Features allowed to split (colsample); None for all.
    max_leaves : int >= 2
    max_depth : int >= 1 or None
    growth : {"leafwise", "depthwise"}
    min_child_weight : float
        Least hessian sum of a child.
    min_samples_leaf : int >= 1
        Least rows of a child.
    min_samples_leaf_counts : {"rows", "hessian"}
        What ``min_samples_leaf`` counts: rows, or LightGBM's estimate of them from the
        hessians (``int(h_bin * node_rows / node_hessian + 0.5)`` per bin; its
        ``min_data_in_leaf`` rule, ``skltr._cpu.split``). Nodes with fewer than
        ``2 * min_samples_leaf`` rows are not split either way.
    reg_lambda, reg_alpha : float >= 0
        L2 and L1 regularisation of leaf values.
    min_split_gain : float >= 0
        A split needs a gain strictly above it.
    learning_rate : float
        Multiplies leaf values.
    hist_mode : {"float", "quantised"}
    communicator : object or None
        ``allreduce_sum`` / ``allreduce_max`` of global sums; None: ``LocalCommunicator()``.
    n_threads : int or None
        ``n_jobs`` semantics.
    pool : HistogramPool or None
        Histogram buffers to reuse across trees.

    Examples
    --------
    >>> import numpy as np
    >>> from skltr._engine.binning import BinMapper
    >>> from skltr._gbdt.grower import TreeGrower
    >>> X = np.arange(100.0).reshape(-1, 1)
    >>> bm = BinMapper(max_bins=16).fit(X)
    >>> grad = np.where(X[:, 0] < 50, -1.0, 1.0).astype(np.float32)
    >>> hess = np.ones(100, dtype=np.float32)
    >>> tree = TreeGrower(bm.transform(X), grad, hess, n_bins=bm.n_bins,
    ...                   missing_bin=bm.missing_bin, has_missing=bm.has_missing,
    ...                   max_leaves=2, learning_rate=1.0).grow()
    >>> tree.value[tree.left < 0]
    array([ 1., -1.])
    """

    def __init__(self, X_binned, grad, hess, *, n_bins, missing_bin, has_missing, rows=None,
                 feature_mask=None, tree_params=None, communicator=None, n_threads=None,
                 pool=None, X_binned_T=None, **params):
        # The estimator validated every hyper-parameter (``_parameter_constraints``) and the
        # boosting loop built these arrays: what follows asserts invariants only.
        assert (isinstance(X_binned, np.ndarray) and X_binned.dtype == X_BINNED_DTYPE
                and X_binned.ndim == 2 and X_binned.flags.c_contiguous), \
            "X_binned must be a C-contiguous 2-D uint8 array (BinMapper.transform output)"
        n, n_features = X_binned.shape
        self.X_binned = X_binned
        assert X_binned_T is None or (
            isinstance(X_binned_T, np.ndarray) and X_binned_T.dtype == X_BINNED_DTYPE
            and X_binned_T.shape == (n_features, n) and X_binned_T.flags.c_contiguous), \
            "X_binned_T must be np.ascontiguousarray(X_binned.T)"
        self.X_binned_T = X_binned_T
        self.grad = np.ascontiguousarray(grad, dtype=G_H_DTYPE)
        self.hess = np.ascontiguousarray(hess, dtype=G_H_DTYPE)
        assert self.grad.shape == (n,) and self.hess.shape == (n,)
        self.n_bins = np.ascontiguousarray(n_bins, dtype=np.int32)
        self.has_missing = np.ascontiguousarray(has_missing, dtype=bool)
        assert self.n_bins.shape == (n_features,) and self.has_missing.shape == (n_features,)
        self.missing_bin = int(missing_bin)
        assert 1 <= self.missing_bin <= 255 and not np.any(self.n_bins > self.missing_bin) \
            and not np.any(self.n_bins < 1)
        if rows is not None:
            rows = np.asarray(rows)
            assert rows.ndim == 1 and not (rows.size and (rows.min() < 0 or rows.max() >= n))
            rows = rows.astype(ROW_INDEX_DTYPE)
        self.rows = rows
        if feature_mask is None:
            feature_mask = np.ones(n_features, dtype=bool)
        self.feature_mask = np.ascontiguousarray(feature_mask, dtype=bool)
        assert self.feature_mask.shape == (n_features,)
        assert tree_params is None or not params, "pass tree_params or keywords, not both"
        self.params = p = TreeParams(**params) if tree_params is None else tree_params
        self.max_leaves, self.max_depth, self.growth = p.max_leaves, p.max_depth, p.growth
        self.min_child_weight = p.min_child_weight
        self.min_samples_leaf = p.min_samples_leaf
        self.min_samples_leaf_counts = p.min_samples_leaf_counts
        self.reg_lambda, self.reg_alpha = p.reg_lambda, p.reg_alpha
        self.min_split_gain, self.learning_rate = p.min_split_gain, p.learning_rate
        self.hist_mode = p.hist_mode
        self.communicator = LocalCommunicator() if communicator is None else communicator
        self._distributed = getattr(self.communicator, "world", 1) > 1
        self.n_threads = n_threads
        self.pool = pool

    # ------------------------------------------------------------------ setup
    def _prepare_gradients(self, n_rows):
        """Gradients in histogram units, the factors back to gradient units, count_shift.

        Quantised mode, two words: ``q_g`` int32; the hessian channel holds ``(1 << K) +
        q_h`` (int64), so that summing it counts rows in the bits above ``K = 63 -
        bits(n_rows)``. One word: ``q_g * 2**32 + q_h`` (int64), passed as both arrays.
        """
        self.count_shift = 0
        if self.hist_mode == "float":
            self.scale_g_exp = self.scale_h_exp = 0
            return self.grad, self.hess, 1.0, 1.0
        sel = slice(None) if self.rows is None else self.rows
        if self._layout is ONE_WORD:
            neg_hmin = np.array([-np.min(self.hess[sel], initial=0.0)], dtype=np.float64)
            if self.communicator.allreduce_max(neg_hmin)[0] > 0:
                raise ValueError("hist_mode='quantised' needs hessians >= 0; use "
                                 "hist_mode='float'.")
            # Exact sums (integer accumulators): the scales, and so the model, do not depend
            # on the order of the rows or on how they are split between workers.
            acc = np.zeros((2, N_FLOAT32_EXPONENTS), dtype=np.int64)
            rows = np.empty(0, ROW_INDEX_DTYPE) if self.rows is None else self.rows
            for channel, values in enumerate((self.grad, self.hess)):
                abs_sum_accumulators(values, rows, self.rows is not None, self._n_threads,
                                     acc[channel])
            acc = self.communicator.allreduce_sum(acc)
            kg = gh64_exponent(accumulated_value(acc[0]), n_rows, 31)
            kh = gh64_exponent(accumulated_value(acc[1]), n_rows, 32)
            self.scale_g_exp, self.scale_h_exp = kg, kh
            gh = np.empty(self.grad.size, np.int64)
            quantise_gradients_gh64(self.grad, self.hess, 2.0 ** kg, 2.0 ** kh, gh,
                                    self._n_threads)
            return gh, gh, 2.0 ** -kg, 2.0 ** -kh
        local = np.array([np.max(np.abs(self.grad[sel]), initial=0.0),
                          np.max(self.hess[sel], initial=0.0),
                          -np.min(self.hess[sel], initial=0.0)], dtype=np.float64)
        gmax, hmax, neg_hmin = self.communicator.allreduce_max(local)
        if neg_hmin > 0:
            raise ValueError("hist_mode='quantised' needs hessians >= 0 (they share an int64 "
                             "with the row count); use hist_mode='float'.")
        K = 63 - max(int(n_rows).bit_length(), 1)
        kg = quantisation_exponent(float(gmax), n_rows)
        kh = quantisation_exponent(float(hmax), n_rows, total_bits=K - 1)
        self.scale_g_exp, self.scale_h_exp, self.count_shift = kg, kh, K
        qg = np.empty(self.grad.size, QUANTISED_G_H_DTYPE)
        qh = np.empty(self.grad.size, np.int64)
        quantise_gradients(self.grad, self.hess, 2.0 ** kg, 2.0 ** kh, K, qg, qh,
                           self._n_threads)
        return qg, qh, 2.0 ** -kg, 2.0 ** -kh

    # ------------------------------------------------------------------ growing
    def grow(self) -> GrownTree:
        """Grow the tree; returns a :class:`GrownTree`."""
        with numba_threads(self.n_threads):
            self._n_threads = numba.get_num_threads()
            return self._grow()

    def _grow(self):
        X = self.X_binned
        n, n_features = X.shape
        local_rows = n if self.rows is None else self.rows.size
        n_rows = int(self.communicator.allreduce_sum(np.array([local_rows], np.int64))[0])
        if self.hist_mode == "float":
            self._layout = FLOAT
        elif self.min_samples_leaf_counts == "hessian" and n_rows <= GH64_MAX_ROWS:
            self._layout = ONE_WORD
        else:
            self._layout = TWO_WORD
        # distributed one-word bins: child counts come with the all-reduce (_split_deferred)
        self._deferred = self._layout is ONE_WORD and self._distributed
        g, h, self._inv_g, self._inv_h = self._prepare_gradients(n_rows)
        hist_dtype = self._layout.dtype
        shape = (n_features, self.missing_bin + 1 + HIST_PAD_BINS, self._layout.n_channels)
        self._tasks = histogram_tasks(self._n_threads, n_features)
        if self.pool is None or not self.pool.matches(shape, hist_dtype, self._tasks[0]):
            self.pool = HistogramPool(n_features, shape[1], hist_dtype,
                                      self._tasks[0], self._layout.n_channels)
        if self.X_binned_T is None:
            self.X_binned_T = np.ascontiguousarray(X.T)
        self._g, self._h = g, h
        if self.rows is None:
            self._buf = np.arange(n, dtype=ROW_INDEX_DTYPE)
            sums = np.array([g.sum(dtype=hist_dtype), h.sum(dtype=hist_dtype)])
        else:
            self._buf = np.sort(self.rows)  # increasing rows: forward memory scans
            sums = np.array([g[self.rows].sum(dtype=hist_dtype),
                             h[self.rows].sum(dtype=hist_dtype)])
        if self._layout is ONE_WORD:  # one word: gradient sum above bit 32, hessian sum below
            sums = np.array([sums[0] >> 32, sums[0] & 0xFFFFFFFF], dtype=np.int64)
        if self.count_shift:
            sums[1] -= np.int64(local_rows) << self.count_shift  # unpack: hessians only
        self._tmp = np.empty_like(self._buf)
        sums = self.communicator.allreduce_sum(sums)
        self._work = split_work(n_features, hist_dtype)
        self._split_constants = split_constants(
            missing_bin=self.missing_bin, inv_scale_g=self._inv_g, inv_scale_h=self._inv_h,
            reg_lambda=self.reg_lambda, reg_alpha=self.reg_alpha,
            min_child_weight=self.min_child_weight, min_samples_leaf=self.min_samples_leaf,
            min_split_gain=self.min_split_gain, count_shift=self.count_shift,
            hessian_counts=self.min_samples_leaf_counts == "hessian")
        root = _Node(0, local_rows, sums[0], sums[1], n_rows, 0)
        self.nodes = [root]
        self._children = [None]
        if self._can_split(root, 1):
            root.hist = self.pool.acquire()
            self._build(root, use_rows=self.rows is not None)
            self._find_split(root)
        if self.growth == "leafwise":
            self._grow_leafwise()
        else:
            self._grow_depthwise()
        for node in self.nodes:
            self._drop_hists(node)
        return self._finish()

    def _drop_hists(self, node):
        """Give the node's histograms back to the pool."""
        for name in ("hist", "local_hist"):
            hist = getattr(node, name)
            if hist is not None:
                self.pool.release(hist)
                setattr(node, name, None)

    def _can_split(self, node, n_leaves):
        return can_split(node, n_leaves, self.max_leaves, self.max_depth, self.min_samples_leaf)

    def _build(self, node, use_rows=True):
        """Build ``node``'s histogram (of this worker's rows) and sum it over the workers.

        Distributed one-word bins keep the worker's own histogram in ``node.local_hist``
        (see :meth:`_split_deferred`).
        """
        self._build_local(node, use_rows)
        if self._deferred:
            node.local_hist, node.hist = node.hist, self._summed(node.hist)
        else:
            node.hist = self.communicator.allreduce_sum(node.hist)

    def _summed(self, local):
        """A pool histogram holding ``local`` summed over the workers (``local`` is kept;
        the copy keeps the pool from growing by the all-reduce's new arrays)."""
        out = self.pool.acquire()
        out[...] = self.communicator.allreduce_sum(local)
        return out

    def _build_local(self, node, use_rows=True):
        """``node.hist`` = the histogram of this worker's rows of ``node``."""
        if self._n_threads > 1 and node.end - node.start >= HIST_PARALLEL_MIN_ROWS:
            build_histogram(self.X_binned, self._g, self._h, self._buf, node.start, node.end,
                            use_rows, node.hist, self.pool.scratch, *self._tasks)
        else:
            build_histogram_serial(self.X_binned, self._g, self._h, self._buf, node.start,
                                   node.end, use_rows, node.hist)

    def _find_split(self, node):
        parallel = self._n_threads > 1 and node.count >= SPLIT_PARALLEL_MIN_ROWS
        kernel = find_best_splits if parallel else find_best_splits_serial
        res = SplitInfo(*kernel(node.hist, self.n_bins, self.feature_mask, node.sum_g,
                                node.sum_h, node.count, self._split_constants, self._work))
        node.split = res if res.feature >= 0 else None
        if node.split is None:
            self._drop_hists(node)

    def _split(self, node_id, n_leaves_after):
        """Partition a node, create its two children, give them histograms and splits."""
        node = self.nodes[node_id]
        feature, _, b, default_left, gl, hl, cl = node.split  # a SplitInfo
        col = self.X_binned_T[feature]
        if self._n_threads > 1 and node.end - node.start >= PARTITION_PARALLEL_MIN_ROWS:
            n_left_local = partition_rows(col, self._buf, node.start, node.end, b,
                                          default_left, self.missing_bin, self._tmp,
                                          self._n_threads)
        else:
            n_left_local = partition_rows_serial(col, self._buf, node.start, node.end, b,
                                                 default_left, self.missing_bin, self._tmp)
        mid = node.start + n_left_local
        if self._layout is ONE_WORD:  # no row counts in these bins (deferred: unused)
            cl = n_left_local
        left = _Node(node.start, mid, gl, hl, None if self._deferred else cl, node.depth + 1)
        right = _Node(mid, node.end, node.sum_g - gl, node.sum_h - hl,
                      None if self._deferred else node.count - cl, node.depth + 1)
        ids = (len(self.nodes), len(self.nodes) + 1)
        self.nodes.extend((left, right))
        self._children[node_id] = ids
        self._children.extend((None, None))
        if self._deferred:
            self._split_deferred(node, left, right, n_leaves_after)
            return ids
        splittable = [self._can_split(c, n_leaves_after) for c in (left, right)]
        parent_hist, node.hist = node.hist, None
        if any(splittable):
            # Build the smaller child (global count: every worker agrees), subtract for the
            # larger in the parent's buffer.
            small, large = (left, right) if left.count <= right.count else (right, left)
            small.hist = self.pool.acquire()
            self._build(small)
            subtract_histograms(parent_hist, small.hist, parent_hist)
            large.hist = parent_hist
            self._find_splits_of(left, right, splittable)
        else:
            self.pool.release(parent_hist)
        return ids

    def _find_splits_of(self, left, right, splittable):
        for child, ok in zip((left, right), splittable):
            if ok:
                self._find_split(child)
            else:
                self._drop_hists(child)

    def _split_deferred(self, node, left, right, n_leaves_after):
        """Children's histograms and splits with distributed one-word bins.

        These bins hold no row counts, so no worker knows which child is globally smaller
        before the children's counts are summed. Each worker builds the child that is
        smaller *here* (the least histogram work), gets the other from its own parent
        histogram by subtraction, and all-reduce the left child's histogram, its local row
        count riding in a pad cell that the split search never reads; the right child is the
        global parent minus the global left. One all-reduce a split, as before, and no
        worker builds a larger child than it must.
        """
        # until the counts arrive only the leaf and depth limits decide, with the parent's
        bound = _Node(node.start, node.end, 0, 0, node.count, node.depth + 1)
        parent_local, parent_global = node.local_hist, node.hist
        node.local_hist = node.hist = None
        if not self._can_split(bound, n_leaves_after):
            self.pool.release(parent_local)
            self.pool.release(parent_global)
            return
        here_left, here_right = left.end - left.start, right.end - right.start
        small, large = (left, right) if here_left <= here_right else (right, left)
        small.hist = self.pool.acquire()
        self._build_local(small)
        small.local_hist, small.hist = small.hist, None
        subtract_histograms(parent_local, small.local_hist, parent_local)
        large.local_hist = parent_local
        pad = (0, self.missing_bin + 1, 0)
        left.local_hist[pad] = here_left
        left.hist = self._summed(left.local_hist)
        left.count = int(left.hist[pad])
        left.hist[pad] = 0
        right.count = node.count - left.count
        subtract_histograms(parent_global, left.hist, parent_global)
        right.hist = parent_global
        self._find_splits_of(left, right,
                             [self._can_split(c, n_leaves_after) for c in (left, right)])

    def _grow_leafwise(self):
        heap = []
        if self.nodes[0].split is not None:
            heap.append((-self.nodes[0].split.gain, 0))
        n_leaves = 1
        while heap and n_leaves < self.max_leaves:
            _, node_id = heapq.heappop(heap)
            n_leaves += 1
            for child_id in self._split(node_id, n_leaves):
                child = self.nodes[child_id]
                if child.split is not None:
                    heapq.heappush(heap, (-child.split.gain, child_id))

    def _grow_depthwise(self):
        level = [0]
        n_leaves = 1
        while level and n_leaves < self.max_leaves:
            ready = sorted((i for i in level if self.nodes[i].split is not None),
                           key=lambda i: (-self.nodes[i].split.gain, i))
            nxt = []
            for node_id in ready:
                if n_leaves >= self.max_leaves:
                    break
                n_leaves += 1
                nxt.extend(self._split(node_id, n_leaves))
            level = nxt

    def _finish(self):
        n_nodes = len(self.nodes)
        unknown = [node for node in self.nodes if node.count is None]
        if unknown:  # deferred counts (distributed one-word bins): one all-reduce for all
            local = np.array([node.end - node.start for node in unknown], dtype=np.int64)
            for node, c in zip(unknown, self.communicator.allreduce_sum(local)):
                node.count = int(c)
        feature = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        bin_threshold = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        default_left = np.zeros(n_nodes, bool)
        left = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        right = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        value = np.zeros(n_nodes, LEAF_VALUE_DTYPE)
        gain = np.zeros(n_nodes, np.float64)
        count = np.zeros(n_nodes, np.int64)
        hess_sum = np.zeros(n_nodes, np.float64)
        leaf_pos = np.empty(self._buf.size, np.int32)
        for i, node in enumerate(self.nodes):
            count[i] = node.count
            hess_sum[i] = float(node.sum_h) * self._inv_h
            kids = self._children[i]
            if kids is not None:
                sp = node.split
                gain[i], feature[i] = sp.gain, sp.feature
                bin_threshold[i], default_left[i] = sp.bin, sp.default_left
                left[i], right[i] = kids
            else:
                value[i] = leaf_value(float(node.sum_g) * self._inv_g, hess_sum[i],
                                      self.reg_lambda, self.reg_alpha, self.learning_rate)
                leaf_pos[node.start:node.end] = i
        # leaf_pos is indexed by position in the partition buffer; map back to rows.
        if self.rows is None:
            leaf_of_row = np.empty(self._buf.size, np.int32)
            leaf_of_row[self._buf] = leaf_pos
        else:
            full = np.empty(self.X_binned.shape[0], np.int32)
            full[self._buf] = leaf_pos
            leaf_of_row = full[self.rows]
        return GrownTree(feature, bin_threshold, default_left, left, right, value, gain, count,
                         hess_sum, leaf_of_row, self.rows, self.missing_bin)
