"""``GPUTreeGrower``: the CUDA back-end of the growth driver (one tree on the GPU).

The driver (:mod:`skltr._gbdt.growth`) decides which nodes split, in batches: depth-wise a
level, leaf-wise up to :attr:`GPUTreeGrower.leafwise_batch` leaves expanded speculatively (the
tree is the one-at-a-time tree). Per batch, whatever its size: one host-to-device copy of
every launch's arguments (five before: a host profile showed ~50 us of host time a copy, but
depth-wise rounds took 12.0-12.7 ms either way on an H100), one
partition (two small kernels and a scan), one histogram launch for the smaller children (after
one zeroing launch), one subtraction launch for their siblings and one split launch; the host
reads one small record per node (``8 x int64``). Nothing of size ``n_rows`` leaves the GPU
while growing.

The histograms live in one pool (:class:`HistogramSlots`): a node that may split holds a slot
until it is split; then its smaller child takes a new slot and its larger child takes over the
parent's, the parent's histogram minus the smaller child's, in place. A batch may so take
parents from anywhere in the pool.

Gradients are quantised by the rule of :mod:`skltr._gbdt.quantisation` (the CPU's layout
choice and scales, from statistics gathered exactly on the device: :mod:`skltr._gpu.quantise`);
the bins are always two words (``skltr._gpu.histogram``). With the same integers and the same
driver, a GPU tree equals the CPU tree grown from the same gradients: same node ids, splits,
gains and leaf values (``tests/test_gbdt_gpu.py`` checks it).

Leaf-wise, a batch costs ten-odd launches and a host round trip (~0.4 ms) whatever its
size: expanding up to ``leafwise_batch`` leaves a batch takes ~255-leaf trees from ~250
batches to a few dozen (``docs/gbdt_gpu.rst``).

Distributed (:mod:`skltr.dask`, a ``communicator`` of ``world > 1``): each worker holds the
rows of some queries; the global sums go through the communicator as in the CPU grower --
the quantisation statistics and the row count (the scales), the root sums, and the
histograms of the built (smaller) children, one all-reduce per batch (GPU to GPU through
NCCL where the communicator offers it, else through the host), exact as int64. Node counts
are global (they ride in the histograms' count bits); node ranges are the worker's own, read
off the partition scan. Every worker then makes the same decisions, and the tree equals the
one-process tree.
"""

from __future__ import annotations

import cupy
import cupyx
import numpy as np

from .._engine.communicator import LocalCommunicator
from .._engine.histogram import ONE_WORD
from .._gpu._profile import stage
from .._gpu.arrays import Uploader
from .._engine.wide_categorical import WideCategorical
from .._gpu import _config
from .._gpu.histogram import (MAX_ROWS_PER_BLOCK, build_histograms, build_wide_histograms,
                              features_per_block, row_chunk_tasks, subtract_histograms,
                              zero_histograms)
from .._gpu.levels import COLUMNS, MAX_DEPTH, NODE_WORDS, plan_level
from .._gpu.partition import partition_info, partition_level
from .._gpu.predict_binned import add_leaf_values
from .._gpu.quantise import abs_sum_accumulators, gradient_maxima, quantise
from .._gpu.split import find_best_splits, search_splits, split_records
from .._records import split_constants
from .categorical import CategoricalSearch
from .constraints import allowed_features
from .growth import GrowthDriver, LevelTable, Node, fill_children
from .params import TreeParams
from .quantisation import (check_hessians, choose_layout, count_bit, one_word_scales,
                           two_word_scales)
from .symmetric import level_splits, noise_sigma, one_word_from_two

__all__ = ["GPUTreeGrower", "HistogramSlots"]


class HistogramSlots:
    """The tree's device histograms: one int64 array of slots, and a free list.

    A slot is held by a node that may still split, so a tree of ``L`` leaves needs at most
    ``L`` slots, plus a leaf-wise batch's speculative leaves (:mod:`skltr._gbdt.growth`):
    the grower makes it that size at once (growing it in steps would leave every old array
    in CuPy's memory pool). It doubles (the old slots copied) if ever a batch needs more
    slots than are free.
    """

    def __init__(self, n_features, n_bins_total, n_slots):
        self.array = cupy.zeros((n_slots, n_features, n_bins_total, 2), cupy.int64)
        self.free = list(range(n_slots - 1, -1, -1))  # pop() gives the lowest slot

    def acquire(self, n):
        """``n`` free slots (not zeroed: :func:`~skltr._gpu.histogram.zero_histograms`)."""
        if len(self.free) < n:
            old = self.array
            size = max(2 * old.shape[0], old.shape[0] + n)
            self.array = cupy.empty((size,) + old.shape[1:], cupy.int64)
            self.array[:old.shape[0]] = old
            self.free = list(range(size - 1, old.shape[0] - 1, -1)) + self.free
        return [self.free.pop() for _ in range(n)]

    def release(self, node):
        """Give ``node``'s slot back (if it holds one)."""
        if node.slot >= 0:
            self.free.append(node.slot)
            node.slot = -1


class GPUTreeGrower:
    """Grow trees on the GPU from device gradients (quantised histograms).

    Parameters
    ----------
    data : DeviceBinned
        :class:`skltr._gpu.binned.DeviceBinned`.
    tree_params : TreeParams, optional
        How trees grow (``hist_mode="quantised"``, the only GPU mode: float atomics would make
        trees depend on the order of additions); or its fields as keywords (default
        ``growth="depthwise"``), not both.
    communicator : object or None
        ``allreduce_sum`` / ``allreduce_max`` on host arrays and ``world``, as for
        :class:`skltr._gbdt.grower_cpu.TreeGrower`, and optionally ``allreduce_sum_device``
        (in place on a CuPy array: :class:`skltr.dask._collective_cuda.GPUCommunicator`), which
        the histograms then take; None: this process holds every row.
    """

    def __init__(self, data, *, tree_params=None, communicator=None, **params):
        assert tree_params is None or not params, "pass tree_params or keywords, not both"
        if tree_params is None:
            tree_params = TreeParams(**{"growth": "depthwise", "hist_mode": "quantised",
                                        **params})
        assert tree_params.hist_mode == "quantised"
        self.params = tree_params
        self.data = data
        self.communicator = LocalCommunicator() if communicator is None else communicator
        self._distributed = getattr(self.communicator, "world", 1) > 1
        n = data.n_samples
        self._qg = cupy.empty(n, cupy.int32)
        self._qh = cupy.empty(n, cupy.uint32)
        self._all_features = cupy.ones(data.n_features, cupy.uint8)
        self._slots = None
        self._monotone = None  # the monotone directions on the device, once
        self._categorical = None  # the categorical features (host, device) and controls
        self._pinned = None  # page-locked host buffer of their histogram rows (_host_buffer)
        self._n_splits = None  # the splits of the batch being partitioned
        # wide categorical features: their rows after the features' rows of every slot
        self._wide = WideCategorical.layout(data.n_features, data.wide_features,
                                            data.wide_n_bins, data.n_bins_total)
        self._wide_offsets = None if self._wide is None else cupy.asarray(self._wide.offsets)
        self._upload = Uploader()  # launch arguments, one asynchronous copy a batch
        self.timings = {}

    #: Leaf-wise, the most leaves expanded at once (:mod:`skltr._gbdt.growth`): fewer
    #: batches, at the cost of the children of at most that many leaves that the tree does
    #: not take (measured: ``benchmarks/train_gpu.py --engines skltr-gpu-leafwise``).
    leafwise_batch = 16
    #: Depth-wise, plan the levels on the device where it can (:meth:`grow_levels`); False:
    #: the driver plans each level on the host (the same tree; tests and benchmarks)
    plan_on_device = True

    # ------------------------------------------------------------------ growing
    def grow(self, grad, hess, rows=None, feature_mask=None, leaf_of_row=False, seed=0,
             round_=0):
        """Grow one tree.

        Parameters
        ----------
        grad, hess : cupy.ndarray of float32, shape (n_samples,)
        rows : ndarray of int or None
            Rows to grow on (a query subsample); None: all.
        feature_mask : ndarray of bool or None
        leaf_of_row : bool
            Copy the leaf of every row to the host into ``GrownTree.leaf_of_row`` (tests);
            the boosting loop adds leaf values on the device instead
            (:meth:`add_to_training_scores`) and leaves it None.
        seed, round_ : int
            The model's seed and this tree's round (symmetric growth's split noise).

        Returns
        -------
        GrownTree
            Host NumPy node arrays, as the CPU grower's.
        """
        d = self.data
        n = d.n_samples
        self.seed, self.round = int(seed), int(round_)
        self._grad = cupy.ascontiguousarray(grad, dtype=cupy.float32)
        self._hess = cupy.ascontiguousarray(hess, dtype=cupy.float32)
        if self._grad.shape != (n,) or self._hess.shape != (n,):
            raise ValueError(f"grad and hess must have shape ({n},); got {grad.shape} and "
                             f"{hess.shape}.")
        self._host_mask = (np.ones(d.n_features, bool) if feature_mask is None
                           else np.ascontiguousarray(feature_mask, dtype=bool))
        # the CUDA split search scans the numeric features; the categorical ones are the
        # host's (_with_categorical)
        numeric = self._numeric_mask()
        if feature_mask is None and numeric is None:
            self._mask = self._all_features
        else:
            scanned = self._host_mask if numeric is None else self._host_mask & numeric
            self._mask = cupy.asarray(scanned.astype(np.uint8))
        if rows is None:
            self._rows_dev = None
            self.buf = cupy.arange(n, dtype=cupy.uint32)
        else:
            rows = np.asarray(rows)
            self._rows_dev = cupy.asarray(np.sort(rows).astype(np.uint32))
            self.buf = self._rows_dev.copy()
        self.rows = rows
        self._want_leaf_of_row = leaf_of_row
        host_rows = None if rows is None else rows.astype(np.uint32)
        return GrowthDriver(self.params).grow(self, d.missing_bin, host_rows)

    def add_to_training_scores(self, scores):
        """``scores[row] += leaf value`` for the rows of the last grown tree (device)."""
        add_leaf_values(self.buf, self.pos, self._value_dev, scores)

    # ------------------------------------------------------------------ back-end protocol
    def root(self) -> Node:
        """Quantise the used rows (the rule's layout and scales) and make the root.

        Two small launches and one small read each: the scales need the global statistics
        first.
        """
        n_used = self.buf.size
        comm = self.communicator
        n_rows = n_used
        if self._distributed:
            n_rows = int(comm.allreduce_sum(np.array([n_used], np.int64))[0])
        args = (self._grad, self._hess, self._rows_dev, n_used)
        with stage("quantise"):
            if choose_layout(self.params, n_rows) is ONE_WORD:
                acc, neg = abs_sum_accumulators(*args)
                if self._distributed:
                    acc = comm.allreduce_sum(acc)
                    neg = comm.allreduce_max(np.array([neg], np.float64))[0] > 0
                check_hessians(neg)
                self.scales = one_word_scales(acc, n_rows)
            else:
                gmax, hmax, neg = gradient_maxima(*args)
                if self._distributed:  # float32 maxima are exact as float64
                    gmax, hmax, neg = comm.allreduce_max(np.array([gmax, hmax, neg],
                                                                  np.float64))
                check_hessians(neg > 0)
                self.scales = two_word_scales(gmax, hmax, n_rows)
            # the bins are two words whatever the layout (module docstring)
            self.count_shift = count_bit(n_rows)
            sg, sh = comm.allreduce_sum(quantise(*args, 2.0 ** self.scales.kg,
                                                 2.0 ** self.scales.kh, self._qg, self._qh))
        self.pos = cupy.zeros(n_used, cupy.int32)
        d, p = self.data, self.params
        if self._slots is None:  # kept from tree to tree
            # a leaf has min_samples_leaf rows at least: no more leaves than that allows,
            # nor than max_depth (symmetric growth may leave leaves empty: its bound)
            leaves = min(p.max_leaves, max(1, n_rows // max(p.min_samples_leaf, 1)))
            if p.max_depth is not None:
                leaves = min(leaves, 2 ** min(p.max_depth, 30))
            hist_rows = d.n_features + (0 if self._wide is None else self._wide.hist_rows)
            self._slots = HistogramSlots(hist_rows, d.n_bins_total,
                                         leaves + self.leafwise_batch + 1)
        self._constants = split_constants(
            missing_bin=self.data.missing_bin, inv_scale_g=self.scales.inv_g,
            inv_scale_h=self.scales.inv_h, reg_lambda=p.reg_lambda, reg_alpha=p.reg_alpha,
            min_child_weight=p.min_child_weight, min_samples_leaf=p.min_samples_leaf,
            min_split_gain=p.min_split_gain, count_shift=self.count_shift,
            hessian_counts=p.hessian_counts, monotone=p.monotone)
        if p.monotone is not None and self._monotone is None:  # kept from tree to tree
            self._monotone = cupy.asarray(np.asarray(p.monotone, np.int8))
        if p.categorical is not None and self._categorical is None:  # kept from tree to tree
            search = CategoricalSearch(p.categorical, d.n_features, d.n_bins_host, self._wide,
                                       local=True)
            self._categorical = (search, cupy.asarray(search.gather_rows))
        return Node(0, n_used, int(sg), int(sh), n_rows, 0)

    def find_splits(self, nodes):
        """Histogram and best split of the root."""
        for node, slot in zip(nodes, self._slots.acquire(len(nodes))):
            node.slot = slot
        slots = [n.slot for n in nodes]
        zero, tasks, records = self._upload(slots, self._tasks(nodes, slots),
                                            self._records(nodes))
        self._build(zero, tasks, nodes)
        self._find_splits(records, nodes)

    def split(self, parents, pairs, may_split):
        """Split the driver's batch at once: one partition, histogram, subtraction and split
        launch (see :mod:`skltr._gbdt.growth`)."""
        chosen = []
        for node, (left, right) in zip(parents, pairs):
            f, _, b, dl = node.split[:4]
            chosen.append((node.id, f, b, dl, node.start, node.end, left.id, right.id))
        n_nodes = pairs[-1][1].id + 1  # the driver numbers nodes in creation order
        self._n_splits = len(chosen)
        wide_column = None if self._wide is None else [
            self._wide.index(node.split.feature) for node in parents]
        info = self._upload(partition_info(n_nodes, chosen,
                                           [node.split.cat_left for node in parents],
                                           wide_column))[0]
        # launched first: the GPU partitions while the host plans the children below
        self._partition(n_nodes, info)
        # a worker's left ranges are read off its partition; else the split records'
        n_left = self._n_left if self._distributed else [node.split[6] for node in parents]
        splittable = []
        for k, (node, (left, right), nl) in enumerate(zip(parents, pairs, n_left)):
            fill_children(node, left, right, nl)
            left.count = node.split.left_count
            right.count = node.count - left.count
            splittable.append([may_split(c, k) for c in (left, right)])
        small, slots, triples, to_find = self._plan_children(parents, pairs, splittable)
        zero, tasks, triples, records = self._upload(
            slots, self._tasks(small, slots), np.array(triples, np.int64).reshape(-1, 3).T,
            self._records(to_find))
        self._build(zero, tasks, small)
        hist = self._slots.array
        with stage("subtract"):
            subtract_histograms(hist, hist, triples)
        if self.params.growth != "symmetric":  # (symmetric: the level search's, next)
            self._find_splits(records, to_find)

    def grow_levels(self, root, max_depth, min_samples_leaf):
        """Grow the rest of a depth-wise tree from ``root`` (its split found) with each level
        planned on the device (:mod:`skltr._gpu.levels`): the level's launches queued
        without a host round trip, the tree read once at the end. Returns its
        :class:`~skltr._gbdt.growth.LevelTable` (ids in the driver's creation order), or
        None where this grower cannot (``plan_on_device`` off, distributed, categorical or
        wide features, deeper than ``MAX_DEPTH``: the driver then grows the tree level by
        level).
        """
        if (not self.plan_on_device or self._distributed or self._wide is not None
                or self._categorical is not None or max_depth > MAX_DEPTH):
            return None
        d, hist = self.data, self._slots.array
        cap = 2 ** (max_depth + 1) - 1  # node ids of a complete tree
        cap_pairs = 2 ** (max_depth - 1)  # the most splits of a level
        n_used = int(self.buf.size)
        # a level's tasks: the smaller children hold half its rows at most, a chunk of at
        # least HIST_MIN_ROWS_PER_BLOCK rows each, plus one a child for the last chunks
        half_chunks = -(-n_used // (2 * _config.HIST_MIN_ROWS_PER_BLOCK))
        most_tasks = half_chunks + cap_pairs
        fpb = features_per_block(d.n_bins_total, d.n_features)
        per_group = max(1, _config.HIST_TARGET_BLOCKS // -(-d.n_features // fpb))
        table = cupy.empty((cap, NODE_WORDS), cupy.int64)
        state = cupy.empty(8, cupy.int64)
        info = cupy.empty(cap + 8 * cap_pairs, cupy.int64)
        tasks = cupy.empty((most_tasks, 3), cupy.int64)
        zero_slots = cupy.empty(cap_pairs, cupy.int64)
        triples = cupy.empty(3 * cap_pairs, cupy.int64)
        find_rec = cupy.empty((2 * cap_pairs, 8), cupy.int64)
        find_ids = cupy.empty(2 * cap_pairs, cupy.int64)
        slots = self._slots
        free = np.array(slots.free, np.int64)  # the root holds its slot
        free_slots = cupy.empty(len(free) + 1, cupy.int64)
        sp = root.split
        row = [0, n_used, int(root.sum_g), int(root.sum_h), int(root.count), root.slot, 0,
               int(sp.feature), int(np.float64(sp.gain).view(np.int64)), int(sp.bin),
               int(sp.default_left), int(sp.left_g), int(sp.left_h), int(sp.left_count),
               -1, 0]
        up_row, up_state, up_free = self._upload(
            row, [0, 1, 0, 0, 0, len(free), 0, 0], free)
        table[0] = up_row
        state[...] = up_state
        free_slots[:len(free)] = up_free
        info[:cap].fill(-1)
        root.slot = -1  # the device's now
        found = find_rec  # (no search yet: state[2] = 0)
        for depth in range(max_depth):
            pairs = 2 ** depth  # the most splits of this level
            trip = triples[:3 * pairs].reshape(3, pairs)
            with stage("plan"):
                plan_level(table, state, found, find_ids, free_slots, info, tasks, zero_slots,
                           trip, find_rec, max_depth=max_depth,
                           min_samples_leaf=min_samples_leaf, per_group=per_group,
                           rows_per_block=min(_config.HIST_ROWS_PER_BLOCK,
                                              MAX_ROWS_PER_BLOCK))
            with stage("partition"):
                self.buf, self.pos = partition_level(self.buf, self.pos, d.X_bytes,
                                                     d.missing_bin, cap, info)
            if depth + 1 >= max_depth:  # the children are at max_depth: leaves
                break
            most = half_chunks + pairs
            with stage("histogram"):
                zero_histograms(hist, zero_slots[:pairs], n_active=state[4:5])
                build_histograms(d.X_words, self.buf, self._qg, self._qh, tasks[:most], hist,
                                 d.n_features, d.n_bins_total, self.count_shift,
                                 n_tasks=state[3:4])
            with stage("subtract"):
                subtract_histograms(hist, hist, trip, n_active=state[4:5])
            with stage("split"):
                found = search_splits(hist, find_rec[:2 * pairs], d.n_bins, self._mask,
                                      self._constants, n_active=state[2:3])
        state_host = state.get()
        if state_host[6]:
            raise AssertionError("the device plan ran out of histogram slots")
        slots.free = list(range(slots.array.shape[0] - 1, -1, -1))  # every slot is free
        t = table[:int(state_host[1])].get()
        # (the table's categorical fields stay None: no categorical splits here)
        columns = {name: t[:, COLUMNS[name]] for name in LevelTable._fields if name in COLUMNS}
        columns["gain"] = columns["gain"].view(np.float64)
        return LevelTable(**columns)

    def find_splits_again(self, nodes):
        """Best splits of leaves whose bounds changed (their slots are kept), one launch."""
        records = self._upload(self._records(nodes))[0]
        self._find_splits(records, nodes)

    def counts(self, nodes):
        """Nothing to do: node counts are global from the histograms' count bits."""

    def finish_table(self, table, is_leaf, value):
        """:meth:`finish` of a tree grown by :meth:`grow_levels` (the table's ids are this
        grower's; its slots were given back level by level)."""
        return self.finish([], np.arange(is_leaf.size), is_leaf, value)

    def finish(self, nodes, tree_node, is_leaf, value):
        """Keep the leaf values on the device (:meth:`add_to_training_scores`); the leaf of
        every used row on the host only when asked (tests)."""
        # ``pos`` holds this grower's node ids: the value of each is its tree node's
        self._value_dev = self._upload(value[tree_node].view(np.int64))[0].view(cupy.float64)
        for node in nodes:
            self._slots.release(node)
        if not self._want_leaf_of_row:
            return None
        full = cupy.full(self.data.n_samples, -1, cupy.int32)
        full[self.buf] = cupy.asarray(tree_node.astype(np.int32))[self.pos]
        leaf = full.get()
        return leaf if self.rows is None else leaf[np.asarray(self.rows)]

    # ------------------------------------------------------------------ symmetric growth
    def level_root(self, root):
        """The root's histogram (every node of a level keeps its slot until the level's
        split) and the tree's split-noise scale, as the CPU grower's."""
        root.slot = self._slots.acquire(1)[0]
        zero, tasks = self._upload([root.slot], self._tasks([root], [root.slot]))
        self._build(zero, tasks, [root])
        self._sigma = 0.0
        if self.params.random_strength > 0.0:  # (the gradients' copy only then)
            self._sigma = noise_sigma(self.params, self._grad.get(), self.round,
                                      self.communicator)
        self._level_work = None

    def level_split(self, nodes, active, depth):
        """The level's split, found on the host by the CPU's search
        (:func:`~skltr._gbdt.symmetric.level_splits`) from the level's histograms, copied in
        one read in the CPU's layout; each node's left count is its rows' (from the bins'
        counts): the partition's ranges need the exact count."""
        d = self.data
        slots = cupy.asarray(np.array([n.slot for n in nodes], np.int64))
        with stage("split"):
            two = self._slots.array[slots, :d.n_features].get()
            hist = (one_word_from_two(two, self.count_shift)
                    if self.scales.layout is ONE_WORD else two)
            if self._level_work is None:
                self._level_work = np.empty((hist.shape[1], hist.shape[2], 2), np.float64)
            splits = level_splits(np.ascontiguousarray(hist), nodes, active, depth,
                                  n_bins=d.n_bins_host, feature_mask=self._host_mask,
                                  constants=self._constants, sigma=self._sigma,
                                  seed=self.seed, round_=self.round, work=self._level_work,
                                  parallel=True)
        if splits is None:
            return None
        f, b, default_left = splits[0].feature, splits[0].bin, splits[0].default_left
        counts = two[:, f, :, 1] >> np.int64(self.count_shift)
        left = counts[:, :b + 1].sum(axis=1)
        if default_left:
            left = left + counts[:, d.missing_bin]
        return [s._replace(left_g=int(s.left_g), left_h=int(s.left_h), left_count=int(c))
                for s, c in zip(splits, left)]

    # ------------------------------------------------------------------ internals
    def _tasks(self, nodes, slots):
        """The histogram launch's row chunks of ``nodes`` into ``slots`` (host)."""
        d = self.data
        fpb = features_per_block(d.n_bins_total, d.n_features)
        return row_chunk_tasks([n.start for n in nodes], [n.end for n in nodes], slots,
                               -(-d.n_features // fpb))

    def _records(self, nodes):
        """The split launch's node records (host), with their bounds and feature-mask rows
        (:meth:`_masks_for`)."""
        rows = self._masks_for(nodes)
        return split_records([n.slot for n in nodes], [n.sum_g for n in nodes],
                             [n.sum_h for n in nodes], [n.count for n in nodes],
                             [n.lo for n in nodes], [n.hi for n in nodes], rows)

    def _masks_for(self, nodes):
        """Under interaction constraints, the features each node may split on as rows of
        ``self._launch_mask`` (one row per distinct set of features above them, ANDed with
        the tree's column sample); else the tree's mask, row 0 for all."""
        self._launch_mask = self._mask
        if self.params.interaction is None or not nodes:
            return None
        keys = {}
        rows = [keys.setdefault(n.used, len(keys)) for n in nodes]
        masks = np.stack([self._host_mask & allowed_features(self.params, self._host_mask.size,
                                                             used) for used in keys])
        numeric = self._numeric_mask()
        if numeric is not None:
            masks &= numeric
        self._launch_mask = cupy.asarray(masks.astype(np.uint8))
        return rows

    def _partition(self, n_nodes, info):
        with stage("partition"):
            out = partition_level(self.buf, self.pos, self.data.X_bytes,
                                  self.data.missing_bin, n_nodes, info,
                                  left_counts=self._distributed, n_splits=self._n_splits,
                                  X_wide=None if self._wide is None else self.data.X_wide)
        self.buf, self.pos = out[:2]
        self._n_left = out[2] if self._distributed else None

    def _build(self, zero, tasks, nodes):
        """Histograms of ``nodes`` (their slots zeroed, then built), summed over the
        workers; ``zero`` / ``tasks``: the slots and :meth:`_tasks`, on the device."""
        d = self.data
        hist = self._slots.array
        with stage("histogram"):
            zero_histograms(hist, zero)
            build_histograms(d.X_words, self.buf, self._qg, self._qh, tasks, hist,
                             d.n_features, d.n_bins_total, self.count_shift)
            if self._wide is not None:
                build_wide_histograms(d.X_wide, self.buf, self._qg, self._qh, tasks, hist,
                                      d.n_features, self._wide_offsets, self.count_shift)
        if self._distributed and nodes:
            with stage("allreduce"):
                built = hist[zero]  # the built slots in one contiguous array: one all-reduce
                device_sum = getattr(self.communicator, "allreduce_sum_device", None)
                if device_sum is not None:  # GPU to GPU (NCCL)
                    device_sum(built)
                else:
                    built = cupy.asarray(self.communicator.allreduce_sum(built.get()))
                hist[zero] = built

    def _find_splits(self, records, nodes):
        with stage("split"):
            res = find_best_splits(self._slots.array, records, self.data.n_bins,
                                   self._launch_mask, self._constants, self._monotone)
            if self._categorical is not None:
                res = self._with_categorical(nodes, res)
        for node, r in zip(nodes, res):
            node.split = r
            if r is None:
                self._slots.release(node)  # a leaf: its slot may go

    def _with_categorical(self, nodes, res):
        """The numeric splits ``res`` of ``nodes`` against their best categorical splits,
        decided on the host by the CPU's rule (:class:`~skltr._gbdt.categorical.
        CategoricalSearch`, one call for the batch) from the categorical features'
        histogram rows, copied in one read: the same splits as the CPU's from the same
        integer sums."""
        if not nodes:
            return res
        search, rows_dev = self._categorical
        slots = cupy.asarray(np.array([n.slot for n in nodes], np.int64))
        gathered = self._slots.array[slots[:, None], rows_dev[None, :]]
        hists = self._host_buffer(gathered)
        gathered.get(out=hists)
        cupy.cuda.get_current_stream().synchronize()
        if self.params.interaction is None:
            masks, mask_row = self._host_mask[None], np.zeros(len(nodes), np.int64)
        else:  # one mask per distinct set of features above the nodes
            keys = {}
            mask_row = [keys.setdefault(n.used, len(keys)) for n in nodes]
            masks = np.stack([self._host_mask & allowed_features(
                self.params, self._host_mask.size, used) for used in keys])
        best = search.best(res, nodes, hists, masks, mask_row, self._constants)
        return [None if b is None or b.feature < 0 else b for b in best]

    def _host_buffer(self, like):
        """A page-locked host array of ``like``'s shape and dtype, kept across the fit's
        batches (a copy to pageable memory goes through a staging buffer: the categorical
        rows of 10,000 categories are ~160 KB a node, ~1.8 GB over a 100-round fit)."""
        nbytes = like.nbytes
        if self._pinned is None or self._pinned.nbytes < nbytes:
            self._pinned = cupyx.empty_pinned(max(nbytes, 2 * (0 if self._pinned is None
                                                               else self._pinned.nbytes)),
                                              np.uint8)
        return self._pinned[:nbytes].view(like.dtype).reshape(like.shape)

    def _numeric_mask(self):
        """The features the CUDA split search scans (not categorical); None: all."""
        cat = self.params.categorical
        return None if cat is None else ~cat.mask(self.data.n_features)

    def _plan_children(self, parents, pairs, splittable):
        """Slots of the children that may split: the smaller child of a pair takes a new
        slot (built), the larger the parent's (parent - smaller, in place). Returns the
        smaller children and their slots, the ``(parent, small, large)`` slot triples and the
        children to find splits of; gives back the slots no child needs after this batch
        (a smaller child that may not split is still built: its sibling needs it)."""
        todo = []
        for parent, pair, ok in zip(parents, pairs, splittable):
            if any(ok):
                todo.append((parent, pair, ok))
            else:
                self._slots.release(parent)
        # the smaller children (by global count: every worker picks the same) are built
        small, slots, triples, to_find = [], [], [], []
        for slot, (parent, (left, right), ok) in zip(self._slots.acquire(len(todo)), todo):
            sm, lg = (left, right) if left.count <= right.count else (right, left)
            sm.slot, lg.slot, parent.slot = slot, parent.slot, -1
            small.append(sm)
            slots.append(slot)
            triples.append((lg.slot, sm.slot, lg.slot))
            to_find.extend(c for c, can in zip((left, right), ok) if can)
        # a child that may not split keeps its slot until the subtraction is done: the
        # slots it frees are not reused before the next batch
        for _, pair, ok in todo:
            for child, can in zip(pair, ok):
                if not can:
                    self._slots.release(child)
        return small, slots, triples, to_find
