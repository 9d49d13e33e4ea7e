"""``TreeGrower``: the CPU back-end of the growth driver (one tree from gradients and hessians).

Host orchestration of the numba kernels under ``skltr/_cpu`` (histogram, split, partition);
the contract with the boosting loop is ``docs/gbdt_internals.rst``. The growth policy, node
ids and the tree's assembly are the driver's (:mod:`skltr._gbdt.growth`); this back-end
expands the driver's batches one node at a time.

Rows of the tree live in one buffer (uint32 row ids); every node owns a contiguous range of
it, and splitting a node partitions its range stably (left rows first)::

    rows    | ......................... root ......................... |
    split   | ........ left (node 1) ........ | ..... right (node 2) .... |
    split   | .. node 3 .. | .... node 4 .... | ..... right (node 2) .... |

Histograms come from a pool (``HistogramPool``): a split builds the histogram of the smaller
child only and derives the larger one as ``parent - smaller`` in the parent's buffer (the
subtraction trick), so each level of the tree reads at most half of its rows.

Quantised mode (``hist_mode="quantised"``) follows the quantisation rule of
:mod:`skltr._gbdt.quantisation` (each tree's layout and scales, the same on the GPU): integer
histograms sum exactly, in any order, on any number of threads or workers. One-word bins
(8 bytes, one read-modify-write per (row, feature)) measured 1.9x faster updates than two
words (1.38 vs 2.67 ns, one thread, 494k x 68 features).

Every node sum (``sum_g``, ``sum_h``) is kept in histogram units (float64, or int64 in
quantised mode, where a right child's ``parent - left`` is exact); only gains and leaf values
convert to gradient units.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numba
import numpy as np

from .._cpu import collective
from .._cpu.grow_distributed import CANDIDATE_FIELDS, grow_leafwise_distributed
from .._cpu.histogram import (build_histogram, build_histogram_serial,
                               build_histogram_used_serial, subtract_histograms,
                               subtract_used_bins)
from .._cpu.grow_leafwise import (GrowCase, GrowCategorical, GrowData, GrowWide, empty_table,
                                  grow_leafwise)
from .._cpu.histogram_wide import (build_wide_histogram, build_wide_histogram_serial,
                                    wide_chunks)
from .._cpu.partition import leaf_of_rows, partition_rows, partition_rows_serial
from .._cpu.quantise import (N_ACCUMULATORS, N_FLOAT32_EXPONENTS, gh_accumulators,
                              quantise_gradients, quantise_gradients_gh64)
from .._cpu.split import find_best_splits, find_best_splits_serial
from .._cpu.split_children import find_child_splits
from .._dtypes import G_H_DTYPE, QUANTISED_G_H_DTYPE, ROW_INDEX_DTYPE, X_BINNED_DTYPE
from .._engine import histogram as _histogram
from .._engine.binned_tree import GrownTree
from .._engine.communicator import LocalCommunicator
from .._engine.histogram import (FLOAT, HIST_PAD_BINS, ONE_WORD, HistogramPool,
                                 histogram_tasks, integer_histogram_tasks)
from .._records import SplitInfo, monotone_directions, split_constants, split_work
from ..utils._profile import stage
from ..utils._threads import numba_threads
from .categorical import CategoricalSearch
from .constraints import allowed_features
from .growth import GrowthDriver, LevelTable, Node, fill_children
from .params import TreeParams
from .quantisation import (FLOAT_SCALES, check_hessians, choose_layout, one_word_scales,
                           two_word_scales)
from .symmetric import level_splits, noise_sigma

__all__ = ["TreeGrower"]

# Below these node sizes a kernel runs on one thread: starting a parallel region costs ~10 us
# on an idle machine but milliseconds on a busy one (OpenMP threads wait for a time slice),
# more than the parallel work saves on small nodes.
#: Rows of a node from which its histogram is built in parallel.
HIST_PARALLEL_MIN_ROWS = 512
#: Rows of a node from which it is partitioned in parallel on 2 threads; on ``t`` threads,
#: ``2 / t`` of it. A serial partition idles ``t - 1`` cores for its ~2.5 ns a row: on 2
#: threads of a busy machine 65,536 rows measured best, while on 16 idle cores a region
#: (~10 us) pays from a few thousand rows (8,192 at 16 threads: ~20 us serial against
#: ~10 + 1.3 us). The result does not depend on it (the partition is stable).
PARTITION_PARALLEL_MIN_ROWS = 65536
#: Leaf-wise batch of a distributed grower (:attr:`TreeGrower.leafwise_batch`): 31-leaf
#: trees of lambdarank gradients take 6 batches instead of 30 splits (and 31 expansions).
DISTRIBUTED_LEAFWISE_BATCH = 8
#: A distributed leaf-wise tree of numeric features (:mod:`skltr._cpu.grow_distributed`):
#: each worker sums and searches its share of the features, then the workers sum the
#: candidates (two reductions a split); False: every worker sums and searches all of them
#: (one reduction a split, each summing and scanning everything).
DISTRIBUTED_FEATURE_SHARE = True
#: Rows of a node from which its split is searched in parallel: every node, since a split
#: search scans all bins of every feature whatever the node's size (measured 9% faster trees
#: on 494k x 136, 255 leaves, 2 threads, than parallel from 16,384 rows only).
SPLIT_PARALLEL_MIN_ROWS = 0
#: A row's update of one wide categorical feature's histogram costs about as much as
#: zeroing and summing this many bytes of a row chunk's copy of the wide rows (~3 ns
#: against ~0.2 ns a byte): a node of 180k rows and a 83 KB copy takes 5 chunks.
WIDE_UPDATE_BYTES = 15
#: A parallel region's start (~10 us on 16 idle cores) in those bytes: a wide histogram is
#: built in row chunks only where that pays (:func:`skltr._cpu.histogram_wide.wide_chunks`)
WIDE_REGION_BYTES = 50_000
#: Where the compiled grower builds a small node's wide categorical rows: ``"fit"``, as a
#: task of its split search's region (:func:`skltr._cpu.split_children.build_child_splits`)
#: when the region's tasks fit the threads, a wide feature's after a feature block's where
#: the blocks take every thread (:func:`skltr._cpu.grow_leafwise._wide_tasks`), else apart,
#: before the region; ``"apart"`` always so; ``"own"`` in the region, a task each (tests).
#: Whole fits alternating in one process (``benchmarks/wide_tasks.py``; H200 host, 1,000
#: levels): ``"fit"`` 0.89x the time of ``"apart"`` at 16 threads, 0.80x at 2; at 10,000
#: levels on 4 threads 1.04x (``benchmarks/results/wide_tasks-h200-host-*-85e2fba-*``).
WIDE_TASKS = "fit"
_WIDE_TASKS = {"fit": 0, "apart": 1, "own": 2}
#: A wide feature's task after a feature block's (``"fit"``) costs about as much as this
#: many byte features of the block, so those blocks hold that many features fewer
#: (:func:`skltr._cpu.split_children.block_start`). Timed inside the region (TSC, the
#: categorical benchmark's fits of 1,000 and 10,000 levels): 7.6 us a task against 2.9 us
#: a feature on 2 threads, 12-13 us against 6-8 us on 8-16 threads of the H200 host
WIDE_TASK_FEATURES = 3
#: Leaf-wise trees of one process grow in one numba call (:mod:`skltr._cpu.grow_leafwise`:
#: the driver's decisions compiled, the same tree) unless they need what only the driver
#: does: constraints, speculative batches, an all-reduce. False: always the driver (tests).
COMPILED_LEAFWISE = True

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
    tree_params : TreeParams, optional
        How the tree grows (:class:`~skltr._gbdt.params.TreeParams`); or its fields as
        keywords (``**params``), not both.
    communicator : object or None
        ``allreduce_sum`` / ``allreduce_max`` of global sums; None: ``LocalCommunicator()``.
    n_threads : int or None
        ``n_jobs`` semantics.
    pool : HistogramPool or None
        Histogram buffers to reuse across trees.
    search : CategoricalSearch or None
        The fit's categorical split search, to reuse across trees (with its tasks); None:
        made here when ``tree_params`` has categorical features. Like ``pool``, read it
        back from :attr:`search` after :meth:`grow`.
    compiled : bool, default=True
        Whether a leaf-wise tree may grow in one numba call (:data:`COMPILED_LEAFWISE`);
        False: through the driver, the same tree (the fit's process while the parallel
        pre-compiler still compiles that call, ``skltr._gbdt.precompile``).
    wide : WideCategorical or None
        The wide categorical features (:mod:`skltr._engine.wide_categorical`): their codes
        and their rows after the features' rows in every node histogram.
    seed, round_ : int
        The fit's seed and the tree's round in the whole model: the keys of the split
        noise of symmetric growth (``random_strength``).

    Examples
    --------
    >>> import numpy as np
    >>> from skltr._engine.binning import BinMapper
    >>> from skltr._gbdt.grower_cpu import TreeGrower
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

    #: Leaf-wise, the most leaves expanded at once (:mod:`skltr._gbdt.growth`). One process
    #: expands one at a time (a batch would only add work here; the tests set more, to check
    #: that batches grow the one-at-a-time tree); distributed, a batch's histograms go in one
    #: all-reduce, so workers meet once a batch instead of once a split
    #: (:data:`DISTRIBUTED_LEAFWISE_BATCH`).
    leafwise_batch = 1

    def __init__(self, X_binned, grad, hess, *, n_bins, missing_bin, has_missing, rows=None,
                 feature_mask=None, tree_params=None, communicator=None, n_threads=None,
                 pool=None, X_binned_T=None, wide=None, seed=0, round_=0, search=None,
                 compiled=True, **params):
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
        self.params = TreeParams(**params) if tree_params is None else tree_params
        self.communicator = LocalCommunicator() if communicator is None else communicator
        self._distributed = getattr(self.communicator, "world", 1) > 1
        if self._distributed:
            self.leafwise_batch = DISTRIBUTED_LEAFWISE_BATCH
        self.n_threads = n_threads
        self.pool = pool
        self.search = search
        self.compiled = compiled
        self.wide = wide
        assert wide is None or (wide.X.shape[0] == n and wide.row0[0] == n_features)
        self.seed, self.round = int(seed), int(round_)
        if self.params.growth == "symmetric":  # the front-ends refuse the rest
            assert wide is None and self.params.categorical is None
            assert self.params.monotone is None and self.params.interaction is None

    # ------------------------------------------------------------------ growing
    def grow(self) -> GrownTree:
        """Grow the tree (:class:`~skltr._gbdt.growth.GrowthDriver` with this back-end)."""
        with numba_threads(self.n_threads):
            self._n_threads = numba.get_num_threads()
            driver = GrowthDriver(self.params)
            if self._compiled():
                return self._grow_compiled(driver)
            return driver.grow(self, self.missing_bin, self.rows)

    def _compiled(self) -> bool:
        """Whether the tree grows in one numba call (see :data:`COMPILED_LEAFWISE`)."""
        p = self.params
        if self._distributed:  # numeric features only: grow_leafwise_distributed
            alone = p.categorical is None and self.wide is None
        else:
            alone = self.leafwise_batch == 1
        return (COMPILED_LEAFWISE and self.compiled and p.growth == "leafwise" and alone
                and p.monotone is None and p.interaction is None)

    def _grow_compiled(self, driver) -> GrownTree:
        """The driver's leaf-wise tree, grown by :func:`~skltr._cpu.grow_leafwise.
        grow_leafwise` from this back-end's root."""
        root = self.root()
        p, layout = self.params, self.scales.layout
        try:  # room for every leaf: address space, which a system may refuse (overcommit)
            slots = self.pool.slots(p.max_leaves * (1 + self._distributed))
        except MemoryError:  # the driver's pool allocates histograms one at a time
            return driver.grow(self, self.missing_bin, self.rows)
        n_features = self.X_binned.shape[1]
        mask, numeric, tasks = self._mask(root)
        if self._large_work is None:
            self._large_work = split_work(*self._work.gain.shape, self._hist_dtype)
        case = GrowCase(
            max_leaves=p.max_leaves, max_depth=-1 if p.max_depth is None else p.max_depth,
            min_samples_leaf=p.min_samples_leaf, n_threads=int(self._n_threads),
            one_word=layout is ONE_WORD, float_layout=layout is FLOAT,
            tree_chunks=int(self._tasks[0]), tree_blocks=int(self._tasks[1]),
            use_rows=self.rows is not None, hist_min_rows=HIST_PARALLEL_MIN_ROWS,
            partition_min_rows=PARTITION_PARALLEL_MIN_ROWS,
            split_min_rows=SPLIT_PARALLEL_MIN_ROWS,
            min_chunk_rows=_histogram.MIN_CHUNK_ROWS, wide_update_bytes=WIDE_UPDATE_BYTES,
            wide_region_bytes=WIDE_REGION_BYTES, wide_tasks=_WIDE_TASKS[WIDE_TASKS],
            wide_task_features=WIDE_TASK_FEATURES)
        data = GrowData(self.X_binned, self.X_binned_T, self._g, self._h, self._buf, self._tmp,
                        self.n_bins, mask, numeric, self._monotone, self.pool.scratch,
                        self._work, self._large_work)
        wide = cat = None
        if self.wide is not None:
            index = np.full(n_features, -1, np.int64)
            index[self.wide.features] = np.arange(self.wide.features.size)
            size = self.wide.hist_rows * self.pool.shape[1] * self.pool.shape[2]
            n_codes = self.wide.n_bins.astype(np.int64) + 1  # the missing code too
            codes = np.empty((slots.shape[0], n_codes.size, (int(n_codes.max()) + 63) // 64),
                             np.uint64)
            wide = GrowWide(self.wide.X, self.wide.X_T, self.wide.offsets, index,
                            self.pool.wide_scratch(self._n_threads - 1, size), n_codes, codes)
        n_words = 0
        if tasks is not None:
            search = self._categorical[0]
            n_words = search.n_words
            cat = GrowCategorical(tasks, search.rows, search.k,
                                  search.found(1, self._hist_dtype),
                                  search.feature_words,
                                  np.zeros((1, 3), self._hist_dtype), np.zeros((1, 2)),
                                  np.zeros(1, np.int64))
        t = empty_table(2 * p.max_leaves - 1, self._hist_dtype, n_words)
        t.start[0], t.end[0], t.count[0], t.depth[0] = root.start, root.end, root.count, 0
        t.sum_g[0], t.sum_h[0] = root.sum_g, root.sum_h
        with stage("grow", self._buf.size * self._row_bytes):
            if self._distributed:
                n = self._grow_distributed(data, case, slots, t)
            else:
                n = grow_leafwise(data, case, self._split_constants, wide, cat, slots, t)
        table = LevelTable(*(getattr(t, name)[:n] for name in LevelTable._fields[:14]),
                           cat_words=t.cat_words[:n], cat_bits=t.cat_bits[:n],
                           cat_l2=(np.where(t.cat_many[:n], cat.k.cat_l2, 0.0)
                                   if cat is not None else None))
        return driver.assemble_table(self, table, self.missing_bin, self.rows)

    def _grow_distributed(self, data, case, slots, t):
        """:func:`~skltr._cpu.grow_distributed.grow_leafwise_distributed` on this worker's
        features (a contiguous share of them by rank); returns the tree's nodes."""
        assert self.scales.layout is not FLOAT, "a distributed fit sums integer histograms"
        comm = self.communicator
        n_features, world = self.X_binned.shape[1], comm.world
        rank = getattr(comm, "rank", 0)
        if DISTRIBUTED_FEATURE_SHARE:
            lo, hi = rank * n_features // world, (rank + 1) * n_features // world
        else:
            lo, hi = 0, n_features
        slo, shi = (lo, hi) if hi > lo else (0, 1)
        gslot = np.full(t.count.size, -1, np.int64)
        gather = np.empty((2, CANDIDATE_FIELDS, n_features), np.int64)
        with collective.using(comm):
            return grow_leafwise_distributed(data, case, self._split_constants, slots, t,
                                             gslot, lo, hi, slo, shi, gather,
                                             DISTRIBUTED_FEATURE_SHARE)

    # ------------------------------------------------------------------ back-end protocol
    def root(self) -> Node:
        """Quantise the gradients (the tree's layout and scales) and make the root."""
        X = self.X_binned
        n, n_features = X.shape
        local_rows = n if self.rows is None else self.rows.size
        n_rows = int(self.communicator.allreduce_sum(np.array([local_rows], np.int64))[0])
        layout = choose_layout(self.params, n_rows)
        # distributed one-word bins: child counts come with the all-reduce (_split_deferred)
        self._deferred = layout is ONE_WORD and self._distributed
        with stage("quantise", 24 * local_rows):  # g, h read twice; words written
            g, h, self.scales, packed_sum = self._quantise(layout, n_rows)
        hist_dtype = self._hist_dtype = layout.dtype
        n_hist_rows = n_features + (0 if self.wide is None else self.wide.hist_rows)
        shape = (n_hist_rows, self.missing_bin + 1 + HIST_PAD_BINS, layout.n_channels)
        # the tasks of a parallel histogram: float sums depend on the row chunks, so they are
        # one split per tree; integer sums do not, so each node gets its own (_node_tasks)
        self._tasks = (histogram_tasks(self._n_threads, n_features) if layout is FLOAT
                       else integer_histogram_tasks(self._n_threads, n_features, local_rows))
        if self.pool is None or not self.pool.matches(shape, hist_dtype, self._tasks[0]):
            self.pool = HistogramPool(n_hist_rows, shape[1], hist_dtype,
                                      self._tasks[0], layout.n_channels)
        if self.X_binned_T is None:
            self.X_binned_T = np.ascontiguousarray(X.T)
        self._g, self._h = g, h
        # bytes a histogram reads per row: its bins, its gradient words, its row id
        self._row_bytes = n_features + (8 if layout is ONE_WORD else g.itemsize + h.itemsize)
        self._buf = (np.arange(n, dtype=ROW_INDEX_DTYPE) if self.rows is None
                     else np.sort(self.rows))  # increasing rows: forward memory scans
        if layout is ONE_WORD:  # one word: gradient sum above bit 32, hessian sum below
            sums = np.array([packed_sum >> 32, packed_sum & 0xFFFFFFFF], dtype=np.int64)
        elif self.rows is None:
            sums = np.array([g.sum(dtype=hist_dtype), h.sum(dtype=hist_dtype)])
        else:
            sums = np.array([g[self.rows].sum(dtype=hist_dtype),
                             h[self.rows].sum(dtype=hist_dtype)])
        if self.scales.count_shift:
            sums[1] -= np.int64(local_rows) << self.scales.count_shift  # unpack: hessians only
        self._tmp = np.empty_like(self._buf)
        sums = self.communicator.allreduce_sum(sums)
        self._work = split_work(n_features, hist_dtype)
        self._large_work = None  # the larger child's (find_child_splits), made when needed
        p = self.params
        self._split_constants = split_constants(
            missing_bin=self.missing_bin, inv_scale_g=self.scales.inv_g,
            inv_scale_h=self.scales.inv_h, reg_lambda=p.reg_lambda, reg_alpha=p.reg_alpha,
            min_child_weight=p.min_child_weight, min_samples_leaf=p.min_samples_leaf,
            min_split_gain=p.min_split_gain, count_shift=self.scales.count_shift,
            hessian_counts=p.hessian_counts, monotone=p.monotone)
        self._monotone = monotone_directions(p.monotone, n_features)
        self._masks = {}  # features above a node -> the features it may split on
        self._categorical = None  # (the search, the numeric features)
        if p.categorical is not None:  # the numeric scan skips the categorical features
            if self.search is None:
                self.search = CategoricalSearch(p.categorical, n_features, self.n_bins,
                                                self.wide, local=False)
            self._categorical = (self.search, ~p.categorical.mask(n_features))
        return Node(0, local_rows, sums[0], sums[1], n_rows, 0)

    def _mask(self, node):
        """``(mask, numeric mask, categorical tasks)``: the features ``node`` may split on --
        the tree's column sample, and under interaction constraints those allowed below the
        features used above it --, those of them the numeric split search scans (not
        categorical), and the fused child search's categorical tasks (None without
        categorical features)."""
        key = node.used if self.params.interaction is not None else None
        masks = self._masks.get(key)
        if masks is None:
            mask = self.feature_mask
            if key is not None:
                mask = mask & allowed_features(self.params, mask.size, node.used)
            numeric, tasks = mask, None
            if self._categorical is not None:
                numeric = mask & self._categorical[1]
                tasks = self._categorical[0].tasks(mask, self._hist_dtype)
            masks = self._masks[key] = (mask, numeric, tasks)
        return masks

    def _with_categorical(self, node, res, mask):
        """``node``'s split: its numeric split ``res`` or its best categorical split
        (:class:`~skltr._gbdt.categorical.CategoricalSearch`; ``res`` itself without
        categorical features)."""
        if self._categorical is None:
            return res
        search = self._categorical[0]
        rows = search.gather_rows.size
        with stage("split", node.hist.nbytes * rows // node.hist.shape[0]):
            return search.best([res], [node], node.hist[None], mask[None], _FIRST_MASK,
                               self._split_constants)[0]

    def find_splits(self, nodes):
        """Histogram and best split of the root (the only node the driver asks this of)."""
        for node in nodes:
            node.hist = self.pool.acquire()
            self._build(node, use_rows=self.rows is not None)
            self._find_split(node)

    def split(self, parents, pairs, may_split):
        """Split the driver's batch, one node at a time (see :mod:`skltr._gbdt.growth`);
        distributed, with one all-reduce for the whole batch."""
        if self.params.growth == "symmetric":
            self._split_level(parents, pairs, may_split)
            return
        if not self._distributed:
            for k, (node, (left, right)) in enumerate(zip(parents, pairs)):
                self._split(node, left, right, lambda child, k=k: may_split(child, k))
            return
        steps = [self._split_local(node, left, right, lambda child, k=k: may_split(child, k))
                 for k, (node, (left, right)) in enumerate(zip(parents, pairs))]
        steps = [step for step in steps if step is not None]
        if steps:  # the same batch on every worker: the same all-reduce
            summed = self.communicator.allreduce_sum(np.stack([st.local for st in steps]))
            for step, hist in zip(steps, summed):
                step.finish(hist)

    def find_splits_again(self, nodes):
        """Best splits of leaves whose bounds changed (their histograms are kept)."""
        for node in nodes:
            self._find_split(node)

    def counts(self, nodes):
        """Deferred counts (distributed one-word bins): one all-reduce for all."""
        unknown = [node for node in nodes if node.count is None]
        if unknown:
            local = np.array([node.end - node.start for node in unknown], dtype=np.int64)
            for node, c in zip(unknown, self.communicator.allreduce_sum(local)):
                node.count = int(c)

    def finish_table(self, table, is_leaf, value):
        """:meth:`finish` of a tree grown in one call (:meth:`_grow_compiled`: the slots
        are the pool's, nothing to give back)."""
        with stage("finish", 8 * self._buf.size):
            leaves = np.flatnonzero(is_leaf)
            return self._leaf_of_rows(table.start[leaves], table.end[leaves], leaves)

    def finish(self, nodes, tree_node, is_leaf, value):
        """Give back the histograms; the leaf of every used row (the loop's score update)."""
        with stage("finish", 8 * self._buf.size):  # row ids read, leaves written
            for node in nodes:
                self._drop_hists(node)
            # each tree node's own node here (the first that maps to it: nodes below an
            # untaken expansion come after it and hold parts of its rows)
            ids, own = np.unique(tree_node, return_index=True)
            leaves, own = ids[is_leaf[ids]].astype(np.int32), own[is_leaf[ids]]
            return self._leaf_of_rows([nodes[i].start for i in own],
                                      [nodes[i].end for i in own], leaves)

    def _leaf_of_rows(self, starts, ends, leaves):
        # the leaf of every used row from the leaves' ranges of the partition buffer: one
        # parallel pass by spans of rows (grow() set the thread count)
        full = np.empty(self.X_binned.shape[0], np.int32)
        leaf_of_rows(self._buf, np.asarray(starts, np.int64), np.asarray(ends, np.int64),
                     np.asarray(leaves, np.int32), full, self._n_threads)
        return full if self.rows is None else full[self.rows]

    # ------------------------------------------------------------------ symmetric growth
    def _level_buffer(self, n_nodes, depth):
        """The histograms of a level's ``n_nodes`` nodes at ``depth``, one array (the level
        search reads them together; :meth:`HistogramPool.level`); each node's ``hist`` is a
        view of its row."""
        return self.pool.level(n_nodes, depth % 2)

    def level_root(self, root):
        """The root's histogram, as the first level's (symmetric growth), and the tree's
        split-noise scale (:func:`~skltr._cpu.split_symmetric.noise_scale`)."""
        self._level_hist = self._level_buffer(1, 0)
        root.hist = self._level_hist[0]
        self._build_local(root, use_rows=self.rows is not None, used_only=not self._distributed)
        if self._distributed:
            root.hist[...] = self.communicator.allreduce_sum(root.hist)
        self._sigma = noise_sigma(self.params, self.grad, self.round, self.communicator)
        self._level_work = None

    def level_split(self, nodes, active, depth):
        """The split every node of the level takes (:func:`~skltr._gbdt.symmetric.
        level_splits`), or None when no candidate qualifies."""
        hist = self._level_hist
        if self._level_work is None:
            self._level_work = np.empty((hist.shape[1], hist.shape[2], 2), np.float64)
        with stage("split", hist.nbytes):
            splits = level_splits(hist, nodes, active, depth, n_bins=self.n_bins,
                                  feature_mask=self.feature_mask,
                                  constants=self._split_constants, sigma=self._sigma,
                                  seed=self.seed, round_=self.round, work=self._level_work,
                                  parallel=self._n_threads > 1)
        if splits is None:
            for node in nodes:
                node.hist = None  # views of the level's buffer, not the pool's
            self._level_hist = None
        return splits

    def _split_level(self, parents, pairs, may_split):
        """Partition a level's nodes at their split; the children's histograms (the
        smaller child's built, the larger one's ``parent - smaller``) in the next level's
        buffer, child ``2k + side`` of parent ``k``, where ``may_split`` (all or none).

        Distributed: the left counts (one-word bins hold none) and the smaller children's
        histograms are all-reduced, one call each for the whole level; every worker builds
        the same children (the globally smaller), so the sums are the one-process ones.
        """
        deeper = bool(parents) and may_split(pairs[0][0], 0)
        below = self._level_buffer(2 * len(parents), pairs[0][0].depth) if deeper else None
        here = np.array([self._partition_children(node, left, right)
                         for node, (left, right) in zip(parents, pairs)], np.int64)
        if self.scales.layout is ONE_WORD:  # the bins hold no counts: the partitions' rows
            n_left = self.communicator.allreduce_sum(here) if self._distributed else here
        else:
            n_left = [node.split.left_count for node in parents]
        for node, (left, right), cl in zip(parents, pairs, n_left):
            left.count, right.count = int(cl), node.count - int(cl)
        if below is not None:
            # (distributed: whole histograms, so that the all-reduce adds no stale bins)
            small_rows, larger = [], []
            for k, (node, (left, right)) in enumerate(zip(parents, pairs)):
                small, large = (left, right) if left.count <= right.count else (right, left)
                small_rows.append(2 * k + (small is right))
                small.hist = below[small_rows[-1]]
                self._build_local(small, used_only=not self._distributed)
                larger.append((node, small, large, 2 * k + (large is right)))
            if self._distributed:
                below[small_rows] = self.communicator.allreduce_sum(below[small_rows])
            for node, small, large, row in larger:
                large.hist = below[row]
                with stage("subtract", 3 * node.hist.nbytes):
                    subtract_used_bins(node.hist, small.hist, large.hist, self.n_bins,
                                       self.missing_bin)
        for node in parents:
            node.hist = None  # a view of the level's buffer, not the pool's
        self._level_hist = below

    # ------------------------------------------------------------------ internals
    def _quantise(self, layout, n_rows):
        """Gradients in histogram units, the tree's :class:`Scales`, and (one word) the used
        rows' packed sum, the root's (None for the other layouts).

        Two words: ``q_g`` int32 and ``(1 << K) + q_h`` (int64), so that summing the latter
        counts rows in the bits above ``K``. One word: ``q_g * 2**32 + q_h`` (int64), passed
        as both arrays.
        """
        if layout is FLOAT:
            return self.grad, self.hess, FLOAT_SCALES, None
        if layout is ONE_WORD:
            # Exact sums (integer accumulators): the scales, and so the model, do not depend
            # on the order of the rows, on how they are split between workers, or the device.
            # One pass reads g and h and counts negative hessians; one all-reduce sums it all.
            acc = np.zeros(N_ACCUMULATORS, dtype=np.int64)
            rows = np.empty(0, ROW_INDEX_DTYPE) if self.rows is None else self.rows
            gh_accumulators(self.grad, self.hess, rows, self.rows is not None,
                            self._n_threads, acc)
            acc = self.communicator.allreduce_sum(acc)
            check_hessians(acc[-1] > 0)
            scales = one_word_scales(acc[:-1].reshape(2, N_FLOAT32_EXPONENTS), n_rows)
            gh = np.empty(self.grad.size, np.int64)
            total = quantise_gradients_gh64(self.grad, self.hess, 2.0 ** scales.kg,
                                            2.0 ** scales.kh, gh, self._n_threads)
            # every row's packed sum comes from the same pass; a sample's needs its own
            if self.rows is not None:
                total = gh[self.rows].sum(dtype=np.int64)
            return gh, gh, scales, total
        sel = slice(None) if self.rows is None else self.rows
        local = np.array([np.max(np.abs(self.grad[sel]), initial=0.0),
                          np.max(self.hess[sel], initial=0.0),
                          -np.min(self.hess[sel], initial=0.0)], dtype=np.float64)
        gmax, hmax, neg_hmin = self.communicator.allreduce_max(local)
        check_hessians(neg_hmin > 0)
        scales = two_word_scales(gmax, hmax, n_rows)
        qg = np.empty(self.grad.size, QUANTISED_G_H_DTYPE)
        qh = np.empty(self.grad.size, np.int64)
        quantise_gradients(self.grad, self.hess, 2.0 ** scales.kg, 2.0 ** scales.kh,
                           scales.count_shift, qg, qh, self._n_threads)
        return qg, qh, scales, None

    def _drop_hists(self, node):
        """Give the node's histograms back to the pool."""
        for name in ("hist", "local_hist"):
            hist = getattr(node, name)
            if hist is not None:
                self.pool.release(hist)
                setattr(node, name, None)

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

    def _build_local(self, node, use_rows=True, reduce=True, used_only=False):
        """``node.hist`` = the histogram of this worker's rows of ``node``.

        ``used_only``: on one thread, zero only the bins a search reads (the symmetric level
        buffers, whose other bins nothing reads).

        ``reduce=False`` may leave row chunks 1.. in the pool's scratch (see
        :func:`build_histogram`); returns how many row chunks ``node.hist`` then lacks + 1.
        """
        n_rows = node.end - node.start
        parallel = self._n_threads > 1 and n_rows >= HIST_PARALLEL_MIN_ROWS
        if self.wide is not None:
            self._build_wide(node, use_rows, parallel)
        hist = self._features(node.hist)
        with stage("histogram", n_rows * (self._row_bytes + 4 * use_rows) + hist.nbytes):
            if parallel:
                tasks = self._node_tasks(n_rows)
                build_histogram(self.X_binned, self._g, self._h, self._buf, node.start,
                                node.end, use_rows, hist, self.pool.scratch, *tasks, reduce)
                return 1 if reduce else tasks[0]
            if used_only:
                build_histogram_used_serial(self.X_binned, self._g, self._h, self._buf,
                                            node.start, node.end, use_rows, hist, self.n_bins,
                                            self.missing_bin)
            else:
                build_histogram_serial(self.X_binned, self._g, self._h, self._buf, node.start,
                                       node.end, use_rows, hist)
            return 1

    def _node_tasks(self, n_rows):
        """``(n_row_chunks, n_feature_blocks)`` of a parallel histogram of ``n_rows`` local
        rows: the tree's in float sums, the node's own in integer ones (never more chunks
        than the root's, which the pool's scratch holds)."""
        if self.scales.layout is FLOAT:
            return self._tasks
        return integer_histogram_tasks(self._n_threads, self.X_binned.shape[1], n_rows)

    def _features(self, hist):
        """The features' rows of a node histogram (the numeric kernels' array)."""
        return hist if self.wide is None else hist[:self.X_binned.shape[1]]

    def _build_wide(self, node, use_rows, parallel):
        """The wide categorical features' rows of ``node.hist`` (:mod:`skltr._cpu.histogram_wide`):
        float sums on one thread, integer ones in row chunks."""
        out = node.hist[self.X_binned.shape[1]:]
        n_rows = node.end - node.start
        wide = self.wide
        with stage("histogram", n_rows * (2 * wide.X.shape[1] + 4 * use_rows) + out.nbytes):
            n_chunks = wide_chunks(self._n_threads, n_rows, wide.X.shape[1], out.nbytes,
                                   WIDE_UPDATE_BYTES, WIDE_REGION_BYTES)
            if parallel and n_chunks > 1 and self.scales.layout is not FLOAT:
                build_wide_histogram(wide.X, self._g, self._h, self._buf, node.start,
                                     node.end, use_rows, out, wide.offsets,
                                     self.pool.wide_scratch(self._n_threads - 1, out.size),
                                     n_chunks)
            else:
                build_wide_histogram_serial(wide.X, self._g, self._h, self._buf, node.start,
                                            node.end, use_rows, out, wide.offsets)

    def _find_split(self, node):
        parallel = self._n_threads > 1 and node.count >= SPLIT_PARALLEL_MIN_ROWS
        kernel = find_best_splits if parallel else find_best_splits_serial
        mask, numeric, _ = self._mask(node)
        with stage("split", node.hist.nbytes):
            res = SplitInfo(*kernel(self._features(node.hist), self.n_bins, numeric,
                                    self._monotone,
                                    node.sum_g, node.sum_h, node.count, node.lo, node.hi,
                                    self._split_constants, self._work))
        res = self._with_categorical(node, res, mask)
        node.split = res if res.feature >= 0 else None
        if node.split is None:
            self._drop_hists(node)

    def _split(self, node, left, right, may_split):
        """Partition a node, fill its two children, give them histograms and splits (one
        process)."""
        n_left_local = self._partition_children(node, left, right)
        cl = node.split.left_count
        if self.scales.layout is ONE_WORD:  # no row counts in these bins
            cl = n_left_local
        left.count, right.count = cl, node.count - cl
        splittable = [may_split(c) for c in (left, right)]
        parent_hist, node.hist = node.hist, None
        if any(splittable):
            # Build the smaller child, subtract for the larger in the parent's buffer.
            small, large = (left, right) if left.count <= right.count else (right, left)
            small.hist = self.pool.acquire()
            if self._n_threads > 1:
                # the histogram's reduction joins the split search's region
                n_chunks = self._build_local(small, reduce=False)
                self._find_child_splits(small, large, parent_hist, splittable[small is right],
                                        splittable[large is right], n_chunks)
                return
            self._build_local(small)
            self._children_splits(left, right, small, large, parent_hist, splittable)
        else:
            self.pool.release(parent_hist)

    def _children_splits(self, left, right, small, large, parent_hist, splittable):
        """Both children's splits once the smaller one's histogram is whole (summed over
        the workers), the larger one's got by subtraction in the parent's buffer."""
        if self._n_threads > 1:
            self._find_child_splits(small, large, parent_hist, splittable[small is right],
                                    splittable[large is right], 1)
            return
        with stage("subtract", 3 * parent_hist.nbytes):
            subtract_histograms(parent_hist, small.hist, parent_hist)
        large.hist = parent_hist
        self._find_splits_of(left, right, splittable)

    def _partition_children(self, node, left, right):
        """Partition ``node``'s rows of this worker at its split and fill the children's
        ranges and sums; returns this worker's left count."""
        n_left_local = self._partition(node)
        fill_children(node, left, right, n_left_local)
        return n_left_local

    def _partition(self, node):
        """Partition ``node``'s rows of this worker at its split; returns the left count."""
        feature, _, b, default_left = node.split[:4]
        left_bits = node.split.cat_left
        w = -1 if self.wide is None else self.wide.index(feature)
        col = self.X_binned_T[feature] if w < 0 else self.wide.X_T[w]
        n_rows = node.end - node.start
        # per row: its id and bin read, two tmp slots written, tmp read and the id written
        with stage("partition", 21 * n_rows):
            if (self._n_threads > 1
                    and n_rows * self._n_threads >= 2 * PARTITION_PARALLEL_MIN_ROWS):
                return partition_rows(col, self._buf, node.start, node.end, b, default_left,
                                      self.missing_bin, left_bits, self._tmp,
                                      self._n_threads)
            return partition_rows_serial(col, self._buf, node.start, node.end, b,
                                         default_left, self.missing_bin, left_bits, self._tmp)

    def _split_local(self, node, left, right, may_split):
        """A distributed split up to its all-reduce: partition this worker's rows, fill the
        children, build this worker's histogram to sum. Returns a :class:`_PendingSplit`
        (its ``local`` histogram, and ``finish(summed)`` for the rest) or None when neither
        child may split."""
        self._partition_children(node, left, right)
        if self._deferred:
            return self._split_deferred(node, left, right, may_split)
        cl = node.split.left_count  # global: every worker agrees
        left.count, right.count = cl, node.count - cl
        splittable = [may_split(c) for c in (left, right)]
        parent_hist, node.hist = node.hist, None
        if not any(splittable):
            self.pool.release(parent_hist)
            return None
        small, large = (left, right) if left.count <= right.count else (right, left)
        small.hist = self.pool.acquire()
        self._build_local(small)

        def finish(summed):
            small.hist[...] = summed
            self._children_splits(left, right, small, large, parent_hist, splittable)
        return _PendingSplit(small.hist, finish)

    def _find_child_splits(self, small, large, parent_hist, do_small, do_large, n_chunks):
        """Both children's splits and the larger one's histogram (``parent - small``, in
        the parent's buffer) in one parallel region (:func:`find_child_splits`, categorical
        features included), which also adds the smaller one's ``n_chunks - 1`` unreduced row
        chunks."""
        large.hist = parent_hist
        if self._large_work is None:
            self._large_work = split_work(*self._work.gain.shape, parent_hist.dtype)
        nbytes = parent_hist.nbytes * (do_small + 4 * do_large)  # scans; subtraction 3x
        # both children have the features above them in common: one mask
        _, numeric, tasks = self._mask(small)
        with stage("split", nbytes):
            small_res, large_res, small_task, large_task = find_child_splits(
                small.hist, parent_hist, self.n_bins, numeric, self._monotone,
                (small.sum_g, small.sum_h, small.count, small.lo, small.hi),
                (large.sum_g, large.sum_h, large.count, large.lo, large.hi),
                self._split_constants, self._work, self._large_work, do_small, do_large,
                self.pool.scratch, n_chunks, tasks,
                None if tasks is None else self._categorical[0].k)
        for child, ok, res, entry in ((small, do_small, small_res, small_task),
                                      (large, do_large, large_res, large_task)):
            res = SplitInfo(*res) if entry < 0 else self._categorical[0].split_of(tasks, entry)
            child.split = res if ok and res.feature >= 0 else None
            if child.split is None:
                self._drop_hists(child)

    def _find_splits_of(self, left, right, splittable):
        for child, ok in zip((left, right), splittable):
            if ok:
                self._find_split(child)
            else:
                self._drop_hists(child)

    def _split_deferred(self, node, left, right, may_split):
        """Children's histograms and splits with distributed one-word bins.

        These bins hold no row counts, so no worker knows which child is globally smaller
        before the children's counts are summed. Each worker builds the child that is
        smaller *here* (the least histogram work), gets the other from its own parent
        histogram by subtraction, and all-reduce the left child's histogram, its local row
        count riding in a pad cell that the split search never reads; the right child is the
        global parent minus the global left. One all-reduce a split (here: its part of the
        batch's), and no worker builds a larger child than it must. Returns a
        :class:`_PendingSplit` or None, as :meth:`_split_local`.
        """
        # until the counts arrive only the leaf and depth limits decide, with the parent's
        bound = Node(node.start, node.end, 0, 0, node.count, node.depth + 1)
        parent_local, parent_global = node.local_hist, node.hist
        node.local_hist = node.hist = None
        if not may_split(bound):
            self.pool.release(parent_local)
            self.pool.release(parent_global)
            return None
        here_left, here_right = left.end - left.start, right.end - right.start
        small, large = (left, right) if here_left <= here_right else (right, left)
        small.hist = self.pool.acquire()
        self._build_local(small)
        small.local_hist, small.hist = small.hist, None
        subtract_histograms(parent_local, small.local_hist, parent_local)
        large.local_hist = parent_local
        pad = (0, self.missing_bin + 1, 0)
        left.local_hist[pad] = here_left

        def finish(summed):
            left.hist = self.pool.acquire()
            left.hist[...] = summed
            left.count = int(left.hist[pad])
            left.hist[pad] = 0
            right.count = node.count - left.count
            subtract_histograms(parent_global, left.hist, parent_global)
            right.hist = parent_global
            self._find_splits_of(left, right, [may_split(c) for c in (left, right)])
        return _PendingSplit(left.local_hist, finish)


#: every node's mask is row 0 of the one given
_FIRST_MASK = np.zeros(1, np.int64)


class _PendingSplit(NamedTuple):
    """A distributed split waiting for its batch's all-reduce: this worker's histogram to
    sum, and what to do with the sum."""

    local: np.ndarray
    finish: Callable[[np.ndarray], None]
