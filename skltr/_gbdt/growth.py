"""The growth driver: which nodes of a tree to expand, in what batches, and the tree it makes.

One driver for both devices (after XGBoost's ``src/tree/driver.h``): it keeps the nodes, hands
batches of nodes to a back-end to expand, checks :func:`can_split`, assigns node ids and
assembles the :class:`~skltr._engine.binned_tree.GrownTree`. A back-end (the CPU
:class:`~skltr._gbdt.grower_cpu.TreeGrower`, the CUDA
:class:`~skltr._gbdt.grower_cuda.GPUTreeGrower`) owns the rows, the histograms and the split
search; it may expand a batch one node at a time (CPU) or all at once (GPU: one launch per
stage). The order of the decisions is the driver's alone, so both back-ends grow the same tree
from the same histogram sums.

Batch policies:

* ``"depthwise"``: one level a batch, its splittable nodes in decreasing gain (ties: lowest node
  id), cut to the leaves still allowed by ``max_leaves``.
* ``"leafwise"``: the leaf of highest gain (ties: lowest node id), one a batch, until
  ``max_leaves`` leaves or no leaf has a valid split; leaves at ``max_depth`` are not split.
  Expanding the best *k* leaves at once is not exact: a child of the first may outrank the
  second, and the tree would differ from the one-at-a-time tree. A batched leaf-wise policy
  (for the GPU's launch count) is a new policy here, nothing else.

Node ids are assigned in creation order (root 0; a split appends its left then its right
child), which is the TreeEnsemble order.

The back-end protocol (duck-typed)::

    root() -> Node                       the root (sums, count); quantises the gradients and
                                         sets ``scales``
    find_splits([root])                  its histogram and best split (node.split or None)
    split(parents, pairs, may_split)     partition the parents (batch order); for each parent
                                         its (left, right) Nodes in ``pairs`` (the back-end
                                         fills their ranges, sums and counts), then the
                                         children's histograms and splits where
                                         ``may_split(child, k)`` (k: the parent's batch index)
    counts(nodes)                        fill counts still None (deferred all-reduce)
    finish(nodes, is_leaf, value) -> leaf_of_row or None
"""

from __future__ import annotations

import heapq

import numpy as np

from .._cpu.split import leaf_values
from .._dtypes import LEAF_VALUE_DTYPE, NODE_INDEX_DTYPE
from .._engine.binned_tree import GrownTree

__all__ = ["Node", "GrowthDriver", "can_split"]


class Node:
    """A node while its tree grows: the back-end's row range and sums, the driver's depth.

    ``sum_g`` / ``sum_h`` are in histogram units (int64 when quantised: a right child's
    ``parent - left`` is exact); ``count`` is global (all workers), None until known;
    ``split`` a :class:`~skltr._records.SplitInfo` or None; ``id`` the node's id in the
    tree. ``hist``, ``local_hist`` and ``slot`` belong to the back-end.
    """

    __slots__ = ("id", "start", "end", "sum_g", "sum_h", "count", "depth", "split", "hist",
                 "local_hist", "slot")

    def __init__(self, start, end, sum_g, sum_h, count, depth):
        self.id = 0  # the driver's
        self.start, self.end = start, end
        self.sum_g, self.sum_h, self.count, self.depth = sum_g, sum_h, count, depth
        self.split = None
        self.hist = self.local_hist = None
        self.slot = -1


def can_split(node, n_leaves, max_leaves, max_depth, min_samples_leaf) -> bool:
    """Whether ``node`` may be split once the tree has ``n_leaves`` leaves.

    A node needs room for another leaf, depth below ``max_depth`` and rows for two children
    of ``min_samples_leaf`` rows.
    """
    return (n_leaves < max_leaves and (max_depth is None or node.depth < max_depth)
            and node.count >= 2 * min_samples_leaf)


class GrowthDriver:
    """Grow one tree through a back-end (see the module docstring).

    Parameters
    ----------
    params : TreeParams
    """

    def __init__(self, params):
        self.params = params

    def can_split(self, node, n_leaves) -> bool:
        p = self.params
        return can_split(node, n_leaves, p.max_leaves, p.max_depth, p.min_samples_leaf)

    def grow(self, backend, missing_bin, rows) -> GrownTree:
        """Grow a tree; ``backend.scales`` (:class:`~skltr._gbdt.quantisation.Scales`, set by
        ``root()``) turn its sums into gradient units."""
        root = backend.root()
        self.nodes, self.children, self.n_leaves = [root], [None], 1
        if self.can_split(root, 1):
            backend.find_splits([root])
        if self.params.growth == "leafwise":
            self._leafwise(backend)
        else:
            self._depthwise(backend)
        backend.counts(self.nodes)
        return self._assemble(backend, backend.scales, missing_bin, rows)

    def expand(self, backend, ids):
        """Split the nodes ``ids`` (in this order); returns their children's ids."""
        parents = [self.nodes[i] for i in ids]
        pairs = [(Node(0, 0, 0, 0, None, p.depth + 1), Node(0, 0, 0, 0, None, p.depth + 1))
                 for p in parents]
        first = len(self.nodes)
        after = [self.n_leaves + 1 + k for k in range(len(ids))]
        for k, (i, pair) in enumerate(zip(ids, pairs)):
            self.children[i] = (first + 2 * k, first + 2 * k + 1)
            pair[0].id, pair[1].id = self.children[i]
            self.nodes.extend(pair)
            self.children.extend((None, None))
        self.n_leaves += len(ids)
        backend.split(parents, pairs, lambda child, k: self.can_split(child, after[k]))
        return list(range(first, len(self.nodes)))

    def _leafwise(self, backend):
        heap = []
        if self.nodes[0].split is not None:
            heap.append((-self.nodes[0].split.gain, 0))
        while heap and self.n_leaves < self.params.max_leaves:
            _, node_id = heapq.heappop(heap)
            for child_id in self.expand(backend, [node_id]):
                child = self.nodes[child_id]
                if child.split is not None:
                    heapq.heappush(heap, (-child.split.gain, child_id))

    def _depthwise(self, backend):
        level = [0]
        while level and self.n_leaves < self.params.max_leaves:
            ready = sorted((i for i in level if self.nodes[i].split is not None),
                           key=lambda i: (-self.nodes[i].split.gain, i))
            ready = ready[:self.params.max_leaves - self.n_leaves]
            if not ready:
                break
            level = self.expand(backend, ready)

    def _assemble(self, backend, scales, missing_bin, rows) -> GrownTree:
        nodes, p = self.nodes, self.params
        n_nodes = len(nodes)
        count = np.fromiter((n.count for n in nodes), np.int64, n_nodes)
        sum_g = np.fromiter((n.sum_g for n in nodes), np.float64, n_nodes)  # int64 -> double
        sum_h = np.fromiter((n.sum_h for n in nodes), np.float64, n_nodes)  # as float(int)
        hess_sum = sum_h * scales.inv_h
        split = [i for i in range(n_nodes) if self.children[i] is not None]
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
            left[split], right[split] = np.array([self.children[i] for i in split]).T
        is_leaf = left < 0
        value = leaf_values(sum_g, hess_sum, is_leaf, scales.inv_g, p.reg_lambda,
                            p.reg_alpha, p.learning_rate).astype(LEAF_VALUE_DTYPE)
        leaf_of_row = backend.finish(nodes, is_leaf, value)
        return GrownTree(feature, bin_threshold, default_left, left, right, value, gain,
                         count, hess_sum, leaf_of_row, rows, missing_bin)
