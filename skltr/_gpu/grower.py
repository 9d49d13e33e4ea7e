"""``GPUTreeGrower``: grow one tree on the GPU, depth-wise (level by level) or leaf-wise.

Per level, whatever the number of nodes in it: one partition (two small kernels and a scan),
one histogram launch for the smaller children, one subtraction launch for their siblings and
one split launch; the host reads one small record per node of the level (``8 x int64``) and
decides, as the CPU grower does, which nodes split and the ids of their children. Nothing of
size ``n_rows`` leaves the GPU while growing.

Gradients are quantised as the CPU engine's ``hist_mode="quantised"`` (same exponent rule,
:func:`skltr._gbdt.grower.quantisation_exponent`, same packing of the row count above bit
``K``), so a GPU tree equals the CPU quantised tree grown from the same gradients: same node
ids, splits, gains and leaf values (``tests/test_gbdt_gpu.py`` checks it).

``growth="leafwise"`` runs the same kernels on one split at a time (the leaf of highest gain,
ties to the lowest node id, as the CPU grower): a partition of one node, one histogram of its
smaller child, one subtraction and one split search of the two children, and one host read
per split. Each pending leaf keeps its histogram on the device until it is split. It grows
the CPU's leaf-wise trees exactly, but with ten-odd launches and a host round trip per split
(~0.4 ms) it took 7x the time of depth-wise growth of the same 256-leaf trees on 1M rows
(``docs/gbdt_gpu.rst``): prefer ``growth="depthwise"`` on the GPU for speed.

Distributed (:mod:`skltr.dask`, a ``communicator`` of ``world > 1``): each worker holds the
rows of some queries; the global sums go through the communicator as in the CPU grower --
the largest |g| and h and the row count (the quantisation scales), the root sums, and the
histograms of the built (smaller) children, one all-reduce per level (GPU to GPU through
NCCL where the communicator offers it, else through the host), exact as int64. Node counts
are global (they ride in the histograms' count bits); node ranges are the worker's own, read
off the partition scan. Every worker then makes the same decisions, and the tree equals the
one-process tree.
"""

from __future__ import annotations

import heapq

import cupy
import numpy as np

from .._dtypes import LEAF_VALUE_DTYPE, NODE_INDEX_DTYPE
from .._engine.binned_tree import GrownTree
from .._engine.communicator import LocalCommunicator
from .._gbdt.grower import can_split, quantisation_exponent
from .._gbdt.params import TreeParams
from . import _config
from ._compile import blocks, module
from ._profile import stage
from .binning import map_to_bins
from .histogram import (build_histograms, features_per_block, row_chunk_tasks,
                        subtract_histograms)
from .partition import partition_level
from .predict_binned import add_leaf_values
from .._cpu.split import leaf_values
from .._records import split_constants
from .split import find_best_splits

__all__ = ["DeviceBinned", "GPUTreeGrower"]

_QUANTISE_SOURCE = r"""
// Rows used: row = use_rows ? rows[p] : p for p < n_used.
extern "C" __global__ void gradient_stats(const float* g, const float* h, const u32* rows,
                                          int use_rows, i64 n_used, u32* out) {
    // out[0] = bits of max |g|, out[1] = bits of max(h, 0), out[2] = 1 if some h < 0.
    // Non-negative floats order as their bit patterns, so atomicMax on the bits is exact.
    float mg = 0.f, mh = 0.f; u32 neg = 0;
    for (i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x; p < n_used;
         p += (i64)gridDim.x * blockDim.x) {
        const i64 r = use_rows ? (i64)rows[p] : p;
        mg = fmaxf(mg, fabsf(g[r])); const float hv = h[r];
        mh = fmaxf(mh, hv); neg |= hv < 0.f;
    }
    for (int o = 16; o > 0; o >>= 1) {
        mg = fmaxf(mg, __shfl_down_sync(0xffffffffu, mg, o));
        mh = fmaxf(mh, __shfl_down_sync(0xffffffffu, mh, o));
        neg |= __shfl_down_sync(0xffffffffu, neg, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMax(out, __float_as_uint(mg)); atomicMax(out + 1, __float_as_uint(mh));
        if (neg) atomicOr(out + 2, 1u);
    }
}

extern "C" __global__ void quantise(const float* g, const float* h, const u32* rows,
                                    int use_rows, i64 n_used, double sg, double sh,
                                    int* qg, int* qh, u64* sums) {
    // q_g = rint(g * 2**kg), q_h = rint(h * 2**kh), as np.rint on float64 (both fit int32:
    // |q| <= 2**30 by the exponent rule); sums[0] += q_g, sums[1] += q_h (exact).
    i64 s0 = 0, s1 = 0;
    for (i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x; p < n_used;
         p += (i64)gridDim.x * blockDim.x) {
        const i64 r = use_rows ? (i64)rows[p] : p;
        const int a = (int)rint((double)g[r] * sg);
        const int b = (int)rint((double)h[r] * sh);
        qg[r] = a; qh[r] = b; s0 += a; s1 += b;
    }
    for (int o = 16; o > 0; o >>= 1) {
        s0 += __shfl_down_sync(0xffffffffu, s0, o);
        s1 += __shfl_down_sync(0xffffffffu, s1, o);
    }
    if ((threadIdx.x & 31) == 0) { atomicAdd(sums, (u64)s0); atomicAdd(sums + 1, (u64)s1); }
}
"""


@cupy.memoize(for_each_device=True)
def _quantise_module():
    return module(_QUANTISE_SOURCE)


class DeviceBinned:
    """A binned matrix on the GPU and its bin layout (made once per data set).

    Parameters
    ----------
    X_bytes : cupy.ndarray of uint8, shape (n_samples, stride)
        From :func:`skltr._gpu.binning.map_to_bins` (rows padded to whole 32-bit words).
    n_features : int
    n_bins : ndarray of int32, shape (n_features,)
    missing_bin : int
    """

    def __init__(self, X_bytes, n_features, n_bins, missing_bin):
        self.X_bytes = X_bytes
        self.X_words = X_bytes.view(cupy.uint32)
        self.n_samples = X_bytes.shape[0]
        self.n_features = int(n_features)
        self.n_bins_host = np.ascontiguousarray(n_bins, np.int32)
        self.n_bins = cupy.asarray(self.n_bins_host)
        self.missing_bin = int(missing_bin)
        self.n_bins_total = self.missing_bin + 1

    @classmethod
    def from_mapper(cls, X, mapper):
        """Bin ``X`` (host or CuPy) on the GPU with a fitted ``BinMapper``'s cuts.

        ``self.has_missing`` (host bool per feature) says which features had a NaN,
        ``self.has_inf`` whether some value was +inf or -inf (one read of both).
        """
        n_features = X.shape[1]
        flags = cupy.zeros(n_features + 1, cupy.int32)  # NaN per feature, then inf
        out = cls(map_to_bins(X, mapper.cut_ptr, mapper.cut_values, mapper.missing_bin,
                              flags[:max(n_features, 1)], flags[n_features:]),
                  n_features, mapper.n_bins, mapper.missing_bin)
        host = flags.get()
        out.has_missing = host[:n_features].astype(bool)
        out.has_inf = bool(host[n_features])
        return out


class _Node:
    __slots__ = ("start", "end", "sum_g", "sum_h", "count", "depth", "split", "slot")

    def __init__(self, start, end, sum_g, sum_h, count, depth):
        self.start, self.end = start, end
        self.sum_g, self.sum_h, self.count, self.depth = sum_g, sum_h, count, depth
        self.split = None  # SplitInfo
        self.slot = -1     # histogram slot in the current level's array


class GPUTreeGrower:
    """Grow trees depth-wise on the GPU from device gradients (quantised histograms).

    Parameters
    ----------
    data : DeviceBinned
    max_leaves, max_depth, growth, min_child_weight, min_samples_leaf, reg_lambda,
    reg_alpha, min_split_gain, learning_rate :
        As :class:`skltr._gbdt.grower.TreeGrower` (``growth``: ``"depthwise"`` or
        ``"leafwise"``).
    min_samples_leaf_counts : {"rows", "hessian"}
        What ``min_samples_leaf`` counts, as :class:`skltr._gbdt.grower.TreeGrower`: rows, or
        LightGBM's estimate of them from the hessians (the same integer estimates as the
        CPU, so the same trees).
    hist_mode : {"quantised"}
        The only histogram mode of the GPU (float atomics would make trees depend on the
        order of additions).
    communicator : object or None
        ``allreduce_sum`` / ``allreduce_max`` on host arrays and ``world``, as for
        :class:`skltr._gbdt.grower.TreeGrower`, and optionally ``allreduce_sum_device`` (in
        place on a CuPy array: :class:`skltr.dask._collective.GPUCommunicator`), which the
        histograms then take; None: this process holds every row.
    """

    def __init__(self, data, *, tree_params=None, communicator=None, **params):
        # validated by the estimator (and hist_mode by the GPU loop): invariants only
        assert tree_params is None or not params, "pass tree_params or keywords, not both"
        if tree_params is None:
            tree_params = TreeParams(**{"growth": "depthwise", "hist_mode": "quantised",
                                        **params})
        p = self.params = tree_params
        assert p.hist_mode == "quantised"
        self.data = data
        self.growth = p.growth
        self.max_leaves, self.max_depth = p.max_leaves, p.max_depth
        self.min_child_weight = p.min_child_weight
        self.min_samples_leaf = p.min_samples_leaf
        self.min_samples_leaf_counts = p.min_samples_leaf_counts
        self.reg_lambda, self.reg_alpha = p.reg_lambda, p.reg_alpha
        self.min_split_gain, self.learning_rate = p.min_split_gain, p.learning_rate
        self.communicator = LocalCommunicator() if communicator is None else communicator
        self._distributed = getattr(self.communicator, "world", 1) > 1
        n = data.n_samples
        self._qg = cupy.empty(n, cupy.int32)
        self._qh = cupy.empty(n, cupy.int32)
        self._all_features = cupy.ones(data.n_features, cupy.uint8)
        self._dummy_rows = cupy.zeros(1, cupy.uint32)
        self.timings = {}

    # ------------------------------------------------------------------ helpers
    def _can_split(self, node, n_leaves):
        return can_split(node, n_leaves, self.max_leaves, self.max_depth, self.min_samples_leaf)

    def _quantise(self, grad, hess, rows_dev, n_used):
        """Device quantisation of the used rows; returns the root's ``(G, H, count)``
        (gradient sums in histogram units, over all workers).

        Two small launches and two 3-word reads: the scale needs the global maxima first.
        """
        use_rows = rows_dev is not None
        rows = rows_dev if use_rows else self._dummy_rows
        t = _config.ELEMENTWISE_THREADS
        grid = min(blocks(n_used, t), _config.STATS_BLOCKS)
        mod = _quantise_module()
        stats = cupy.zeros(3, cupy.uint32)
        mod.get_function("gradient_stats")(
            (grid,), (t,), (grad, hess, rows, np.int32(use_rows), np.int64(n_used), stats))
        st = stats.get()
        comm = self.communicator
        gmax, hmax = (float(v) for v in st[:2].view(np.float32))
        n_rows = n_used
        if self._distributed:  # float32 maxima are exact as float64
            gmax, hmax, neg = comm.allreduce_max(np.array([gmax, hmax, st[2]], np.float64))
            st[2] = neg > 0
            n_rows = int(comm.allreduce_sum(np.array([n_used], np.int64))[0])
        if st[2]:
            raise ValueError("the GPU grower needs hessians >= 0 (they share an int64 with "
                             "the row count).")
        K = 63 - max(int(n_rows).bit_length(), 1)
        kg = quantisation_exponent(gmax, n_rows)
        kh = quantisation_exponent(hmax, n_rows, total_bits=K - 1)
        self.count_shift, self._inv_g, self._inv_h = K, 2.0 ** -kg, 2.0 ** -kh
        sums = cupy.zeros(2, cupy.uint64)
        mod.get_function("quantise")(
            (grid,), (t,), (grad, hess, rows, np.int32(use_rows), np.int64(n_used),
                            np.float64(2.0 ** kg), np.float64(2.0 ** kh), self._qg,
                            self._qh, sums))
        sg, sh = comm.allreduce_sum(sums.get().view(np.int64))
        return int(sg), int(sh), n_rows

    def _new_hist(self, n_slots):
        d = self.data
        return cupy.zeros((n_slots, d.n_features, d.n_bins_total, 2), cupy.int64)

    def _build(self, hist, nodes):
        """Histograms of ``nodes`` (in slots ``0 .. len(nodes) - 1``), summed over the
        workers."""
        d = self.data
        fpb = features_per_block(d.n_bins_total, d.n_features)
        tasks = row_chunk_tasks([n.start for n in nodes], [n.end for n in nodes],
                                [n.slot for n in nodes], -(-d.n_features // fpb))
        with stage("histogram"):
            build_histograms(d.X_words, self.buf, self._qg, self._qh, tasks, hist,
                             d.n_features, d.n_bins_total, self.count_shift)
        if self._distributed:
            with stage("allreduce"):
                built = hist[:len(nodes)]
                device_sum = getattr(self.communicator, "allreduce_sum_device", None)
                if device_sum is not None:  # GPU to GPU (NCCL)
                    device_sum(built)
                else:
                    built[...] = cupy.asarray(self.communicator.allreduce_sum(built.get()))

    def _find_splits(self, hist, nodes):
        with stage("split"):
            res = self._find_splits_launch(hist, nodes)
        for node, r in zip(nodes, res):
            node.split = None if r is None else r

    def _find_splits_launch(self, hist, nodes):
        c = split_constants(
            missing_bin=self.data.missing_bin, inv_scale_g=self._inv_g, inv_scale_h=self._inv_h,
            reg_lambda=self.reg_lambda, reg_alpha=self.reg_alpha,
            min_child_weight=self.min_child_weight, min_samples_leaf=self.min_samples_leaf,
            min_split_gain=self.min_split_gain, count_shift=self.count_shift,
            hessian_counts=self.min_samples_leaf_counts == "hessian")
        return find_best_splits(hist, [n.slot for n in nodes], [n.sum_g for n in nodes],
                                [n.sum_h for n in nodes], [n.count for n in nodes],
                                self.data.n_bins, self._mask, c)

    # ------------------------------------------------------------------ growing
    def grow(self, grad, hess, rows=None, feature_mask=None, leaf_of_row=False):
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

        Returns
        -------
        GrownTree
            Host NumPy node arrays, as the CPU grower's.
        """
        d = self.data
        n = d.n_samples
        grad = cupy.ascontiguousarray(grad, dtype=cupy.float32)
        hess = cupy.ascontiguousarray(hess, dtype=cupy.float32)
        if grad.shape != (n,) or hess.shape != (n,):
            raise ValueError(f"grad and hess must have shape ({n},); got {grad.shape} and "
                             f"{hess.shape}.")
        self._mask = self._all_features if feature_mask is None else cupy.asarray(
            np.ascontiguousarray(feature_mask, dtype=np.uint8))
        if rows is None:
            rows_dev = None
            self.buf = cupy.arange(n, dtype=cupy.uint32)
        else:
            rows = np.asarray(rows)
            rows_dev = cupy.asarray(np.sort(rows).astype(np.uint32))
            self.buf = rows_dev.copy()
        self.rows = rows
        n_used = self.buf.size
        with stage("quantise"):
            sum_g, sum_h, n_rows = self._quantise(grad, hess, rows_dev, n_used)
        self.pos = cupy.zeros(n_used, cupy.int32)
        root = _Node(0, n_used, sum_g, sum_h, n_rows, 0)
        self.nodes = [root]
        self._children = [None]
        hist = None
        if self._can_split(root, 1):
            root.slot = 0
            hist = self._new_hist(1)
            self._build(hist, [root])
            self._find_splits(hist, [root])
        if self.growth == "leafwise":
            self._grow_leafwise(hist)
        else:
            self._grow_depthwise(hist)
        return self._finish(leaf_of_row)

    def _split_nodes(self, node_ids, n_leaves):
        """Partition the chosen nodes and create their children, in ``node_ids`` order.

        ``n_leaves`` is the leaf count before these splits; returns ``(chosen, splittable,
        n_leaves)``: the partition records, whether each child may split, the new count.
        """
        chosen = []
        for i, node_id in enumerate(node_ids):
            node = self.nodes[node_id]
            f, _, b, dl = node.split[:4]
            ids = (len(self.nodes) + 2 * i, len(self.nodes) + 2 * i + 1)
            chosen.append((node_id, f, b, dl, node.start, node.end, ids[0], ids[1]))
        n_nodes = len(self.nodes) + 2 * len(chosen)
        with stage("partition"):
            out = partition_level(self.buf, self.pos, self.data.X_bytes,
                                  self.data.missing_bin, n_nodes, chosen,
                                  left_counts=self._distributed)
        self.buf, self.pos = out[:2]
        # a worker's left range: the global left count unless it holds a part of the rows
        n_left = out[2] if self._distributed else [self.nodes[i].split[6] for i in node_ids]
        splittable = []
        for node_id, nl in zip(node_ids, n_left):
            n_leaves += 1
            node = self.nodes[node_id]
            gl, hl, cl = node.split[4:]
            mid = node.start + int(nl)
            left = _Node(node.start, mid, gl, hl, cl, node.depth + 1)
            right = _Node(mid, node.end, node.sum_g - gl, node.sum_h - hl, node.count - cl,
                          node.depth + 1)
            self._children[node_id] = (len(self.nodes), len(self.nodes) + 1)
            self.nodes.extend((left, right))
            self._children.extend((None, None))
            splittable.append([self._can_split(c, n_leaves) for c in (left, right)])
        return chosen, splittable, n_leaves

    def _children_histograms(self, hist, chosen, splittable):
        """Histograms (smaller child built, larger = parent - smaller) and splits of the
        children that may split; returns the children's histogram array or None."""
        pairs = [(node_id, ok) for (node_id, *_rest), ok in zip(chosen, splittable)
                 if any(ok)]
        if not pairs:
            return None
        # the smaller children (by global count: every worker picks the same) take the first
        # slots, so that one all-reduce covers the histograms that are built
        n_pairs = len(pairs)
        small, p_slots, to_find = [], [], []
        for k, (node_id, ok) in enumerate(pairs):
            left, right = (self.nodes[c] for c in self._children[node_id])
            sm, lg = (left, right) if left.count <= right.count else (right, left)
            sm.slot, lg.slot = k, n_pairs + k
            small.append(sm)
            p_slots.append(self.nodes[node_id].slot)
            to_find.extend(c for c, can in zip((left, right), ok) if can)
        s_slots = list(range(n_pairs))
        l_slots = list(range(n_pairs, 2 * n_pairs))
        with stage("histogram"):
            child_hist = self._new_hist(2 * n_pairs)
        self._build(child_hist, small)
        with stage("subtract"):
            subtract_histograms(hist, child_hist, p_slots, s_slots, l_slots)
        self._find_splits(child_hist, to_find)
        return child_hist

    def _grow_leafwise(self, hist):
        # the CPU grower's order: highest gain first, ties to the lowest node id; every
        # pending leaf holds (its histogram array, its slot) until it is split
        hists = {0: hist} if hist is not None else {}
        heap = []
        if self.nodes[0].split is not None:
            heapq.heappush(heap, (-self.nodes[0].split.gain, 0))
        n_leaves = 1
        while heap and n_leaves < self.max_leaves:
            _, node_id = heapq.heappop(heap)
            chosen, splittable, n_leaves = self._split_nodes([node_id], n_leaves)
            child_hist = self._children_histograms(hists.pop(node_id), chosen, splittable)
            for child_id in self._children[node_id]:
                if self.nodes[child_id].split is not None:
                    hists[child_id] = child_hist
                    heapq.heappush(heap, (-self.nodes[child_id].split.gain, child_id))

    def _grow_depthwise(self, hist):
        level = [0]
        n_leaves = 1
        while level and n_leaves < self.max_leaves:
            ready = sorted((i for i in level if self.nodes[i].split is not None),
                           key=lambda i: (-self.nodes[i].split.gain, i))
            ready = ready[:self.max_leaves - n_leaves]
            if not ready:
                break
            chosen, splittable, n_leaves = self._split_nodes(ready, n_leaves)
            hist = self._children_histograms(hist, chosen, splittable)
            level = [i for c in chosen for i in self._children[c[0]]]

    def _finish(self, want_leaf_of_row):
        nodes = self.nodes
        n_nodes = len(nodes)
        count = np.fromiter((n.count for n in nodes), np.int64, n_nodes)
        sum_g = np.fromiter((n.sum_g for n in nodes), np.float64, n_nodes)  # int64 -> double
        sum_h = np.fromiter((n.sum_h for n in nodes), np.float64, n_nodes)  # as float(int)
        hess_sum = sum_h * self._inv_h
        split = [i for i in range(n_nodes) if self._children[i] is not None]
        feature = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        bin_threshold = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        default_left = np.zeros(n_nodes, bool)
        left = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        right = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        gain = np.zeros(n_nodes, np.float64)
        if split:
            rec = [(nodes[i].split.feature, nodes[i].split.bin, nodes[i].split.default_left)
                   for i in split]
            feature[split], bin_threshold[split], default_left[split] = np.array(rec).T
            gain[split] = [nodes[i].split.gain for i in split]
            left[split], right[split] = np.array([self._children[i] for i in split]).T
        # the CPU grower's leaf_value, leaf by leaf (same operations, same order)
        value = leaf_values(sum_g, hess_sum, left < 0, self._inv_g, self.reg_lambda,
                            self.reg_alpha, self.learning_rate).astype(LEAF_VALUE_DTYPE)
        self._value_dev = cupy.asarray(value)
        leaf = None
        if want_leaf_of_row:
            n = self.data.n_samples
            full = cupy.full(n, -1, cupy.int32)
            full[self.buf] = self.pos
            leaf = full.get()
            if self.rows is not None:
                leaf = leaf[np.asarray(self.rows)]
        rows = None if self.rows is None else np.asarray(self.rows).astype(np.uint32)
        return GrownTree(feature, bin_threshold, default_left, left, right, value, gain,
                         count, hess_sum, leaf, rows, self.data.missing_bin)

    def add_to_training_scores(self, scores):
        """``scores[row] += leaf value`` for the rows of the last grown tree (device)."""
        add_leaf_values(self.buf, self.pos, self._value_dev, scores)
