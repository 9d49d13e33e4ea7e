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
* ``"leafwise"``: the leaf of highest gain (ties: lowest node id), one at a time, until
  ``max_leaves`` leaves or no leaf has a valid split; leaves at ``max_depth`` are not split.
  A back-end may expand *speculatively* (its ``leafwise_batch`` > 1: the GPU's, one set of
  launches for several leaves; a distributed CPU grower's, one all-reduce for several). A
  node's children, their histograms and their best splits depend on the node's rows alone,
  never on when it is expanded; only the choice of which leaves split depends on the order. So
  when the best leaf is not expanded yet, the driver hands the back-end that leaf and the
  unexpanded nodes that could be taken soonest -- leaves taken or nodes below expansions not
  yet taken, as they may be taken later, ranked by their *reach* (their gain, or an untaken
  ancestor's when lower: ``_reach``) -- up to the batch size or the leaves still to come;
  then it takes leaves one at a time exactly as above, each finding its children ready. The
  tree is the one-at-a-time tree, node for node; a node expanded but never taken stays a
  leaf, or below one (its rows map to that leaf). The cost is the work not needed: on 255-leaf
  trees of lambdarank gradients (100k rows x 136 features), batches of 16 took 20 batches and
  263 expansions for the 254 splits, 32 took 14 and 295, 64 took 13 and 511.
* ``"symmetric"``: CatBoost's oblivious trees, one level a batch: the back-end finds the
  level's split (one feature, bin and missing direction for every node of the level, the
  highest sum of the nodes' gains; :mod:`skltr._cpu.split_symmetric`) and every node of the
  level takes it, until ``max_depth`` or no candidate's summed gain is above
  ``min_split_gain``: a complete tree of ``2**depth`` leaves. A node whose child would
  break ``min_samples_leaf`` / ``min_child_weight`` at the level's split is *frozen*: it is
  still split (the tree stays complete), but it adds no gain to the level's score, its
  recorded gain is 0, and every leaf below it takes its value. CatBoost has no such limits
  on symmetric trees and leaves empty leaves at 0; a frozen subtree's leaves are its
  node's value, so an empty leaf (``min_samples_leaf >= 1``) predicts its parent's value.
  Frozen nodes keep histograms (their children's sums come from them) but do not count. A
  node's own gain may be negative with ``reg_lambda > 0`` (the level's sum is positive):
  its recorded gain, an importance, is then 0 too.

Node ids in the tree are assigned in the one-at-a-time creation order (root 0; a split appends
its left then its right child), which is the TreeEnsemble order. A back-end sees *its* ids
(``Node.id``: the order in which it made the nodes); they are the tree's ids unless it
expands speculatively, and its ``finish`` gets the map from the one to the other.

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
    finish(nodes, tree_node, is_leaf, value) -> leaf_of_row or None
                                         ``nodes`` in the back-end's order; ``tree_node[i]``:
                                         the tree node that holds node i's rows (itself, or
                                         the leaf above a node expanded but not taken)
    leafwise_batch (optional int)        most leaves to expand speculatively at once (1)
    find_splits_again(nodes)             the best splits of leaves whose bounds changed
                                         (intermediate monotone constraints), from the
                                         histograms they keep while they have a split
    grow_levels(root, max_depth,         (optional) depth-wise, the rest of the tree from
                min_samples_leaf)        the root (its split found) in one go, by this
                                         policy's rule: a :class:`LevelTable`, or None
                                         where it cannot (``_levels_on_device``)
    finish_table(table, is_leaf, value)  ``finish`` of a tree grown in one go (a
                                         :class:`LevelTable`: grow_levels', the CPU's
                                         compiled leaf-wise tree)

Symmetric growth asks instead (numeric features; :mod:`skltr._gbdt.symmetric` holds what
both back-ends share)::

    level_root(root)                     the root's histogram, the first level's
    level_split(nodes, active, depth)    the level's split: per node a SplitInfo (its own
                                         left sums and gain; gain -inf where a limit is
                                         broken), or None when no candidate qualifies
    split(parents, pairs, may_split)     as above, with the children's histograms (every
                                         child's, where ``may_split``) and no split search
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np

from .._cpu.split import leaf_values
from .._dtypes import LEAF_VALUE_DTYPE, NODE_INDEX_DTYPE
from .._engine.binned_tree import GrownTree
from .constraints import ROOT_BOUNDS, IntermediateUpdate, child_bounds, clamp_leaf_values

__all__ = ["Node", "GrowthDriver", "LevelTable", "can_split", "fill_children"]


class Node:
    """A node while its tree grows: the back-end's row range and sums, the driver's depth.

    ``sum_g`` / ``sum_h`` are in histogram units (int64 when quantised: a right child's
    ``parent - left`` is exact); ``count`` is global (all workers), None until known;
    ``split`` a :class:`~skltr._records.SplitInfo` or None; ``id`` the node's id in the
    tree. ``hist``, ``local_hist`` and ``slot`` belong to the back-end.
    """

    __slots__ = ("id", "start", "end", "sum_g", "sum_h", "count", "depth", "split", "hist",
                 "local_hist", "slot", "lo", "hi", "used")

    def __init__(self, start, end, sum_g, sum_h, count, depth):
        self.id = 0  # the driver's
        self.start, self.end = start, end
        self.sum_g, self.sum_h, self.count, self.depth = sum_g, sum_h, count, depth
        self.split = None
        self.hist = self.local_hist = None
        self.slot = -1
        # the driver's constraints (skltr._gbdt.constraints): output bounds, features above
        self.lo, self.hi = ROOT_BOUNDS
        self.used = frozenset()


def fill_children(node, left, right, n_left):
    """The children's row ranges (the first ``n_left`` of ``node``'s rows in the back-end's
    buffer go left) and sums (the split's left sums; the rest right), for every back-end."""
    split = node.split
    mid = node.start + int(n_left)
    left.start, left.end, left.sum_g, left.sum_h = node.start, mid, split.left_g, split.left_h
    right.start, right.end = mid, node.end
    right.sum_g, right.sum_h = node.sum_g - split.left_g, node.sum_h - split.left_h


def can_split(node, n_leaves, max_leaves, max_depth, min_samples_leaf) -> bool:
    """Whether ``node`` may be split once the tree has ``n_leaves`` leaves.

    A node needs room for another leaf, depth below ``max_depth`` and rows for two children
    of ``min_samples_leaf`` rows.
    """
    return (n_leaves < max_leaves and (max_depth is None or node.depth < max_depth)
            and node.count >= 2 * min_samples_leaf)


class LevelTable(NamedTuple):
    """A tree grown by a back-end in one go (the GPU's ``grow_levels``, the CPU's
    whole-tree leaf-wise grower): one array a field, a node each, ids in the driver's
    creation order. ``left``: the left child's id (the right's
    is the next), -1 for a leaf; the split fields (``feature`` .. ``left_count``, a
    :class:`~skltr._records.SplitInfo`'s) hold for split nodes only; ``gain`` float64, the
    rest int."""

    start: np.ndarray
    end: np.ndarray
    sum_g: np.ndarray
    sum_h: np.ndarray
    count: np.ndarray
    depth: np.ndarray
    feature: np.ndarray
    gain: np.ndarray
    bin: np.ndarray
    default_left: np.ndarray
    left_g: np.ndarray
    left_h: np.ndarray
    left_count: np.ndarray
    left: np.ndarray
    #: categorical splits (the CPU's whole-tree grower): the uint64 words of each split's
    #: left set (0: numeric), the sets (one row a node), the L2 its children's outputs add
    cat_words: np.ndarray | None = None
    cat_bits: np.ndarray | None = None
    cat_l2: np.ndarray | None = None


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
        # the back-end's nodes (ids = positions), each one's children and parent
        self.nodes, self.children, self.parent = [root], [None], [-1]
        self.order = [0]  # the tree's nodes, as back-end ids, in the tree's order
        self.n_leaves = 1
        # the node whose value each back-end node's leaves take (symmetric: frozen nodes)
        self.value_of = {}
        if self.params.growth == "symmetric":
            self._symmetric(backend)
        else:
            if self.can_split(root, 1):
                backend.find_splits([root])
            if self.params.growth == "leafwise":
                self._leafwise(backend)
            else:
                table = self._levels_on_device(backend)
                if table is not None:
                    return self.assemble_table(backend, table, missing_bin, rows)
                self._depthwise(backend)
        tree_nodes = [self.nodes[i] for i in self.order]
        backend.counts(tree_nodes)
        return self._assemble(backend, tree_nodes, backend.scales, missing_bin, rows)

    def expand(self, backend, ids, may_split):
        """Split the nodes ``ids`` (back-end ids, in this order); ``may_split(child, k)``
        says whether the back-end finds the best split of a child of the k-th. Returns the
        children's ids."""
        parents = [self.nodes[i] for i in ids]
        pairs = [(Node(0, 0, 0, 0, None, p.depth + 1), Node(0, 0, 0, 0, None, p.depth + 1))
                 for p in parents]
        p = self.params
        if p.monotone is not None or p.interaction is not None:  # (else: the roots' own)
            for parent, pair in zip(parents, pairs):
                bounds = child_bounds(p, parent, backend.scales)
                for child, (lo, hi) in zip(pair, bounds):
                    child.lo, child.hi = lo, hi
                    child.used = parent.used | {int(parent.split.feature)}
        first = len(self.nodes)
        for k, (i, pair) in enumerate(zip(ids, pairs)):
            self.children[i] = (first + 2 * k, first + 2 * k + 1)
            pair[0].id, pair[1].id = self.children[i]
            self.nodes.extend(pair)
            self.children.extend((None, None))
            self.parent.extend((i, i))
        backend.split(parents, pairs, may_split)
        return list(range(first, len(self.nodes)))

    def _leafwise(self, backend):
        p = self.params
        intermediate = p.monotone is not None and p.monotone_method == "intermediate"
        # intermediate monotone constraints change other leaves' bounds after each split:
        # nothing is expanded ahead of its turn
        batch = 1 if intermediate else max(1, int(getattr(backend, "leafwise_batch", 1)))
        update = IntermediateUpdate(self, p, backend.scales) if intermediate else None
        position = {0: 0}  # back-end id -> the tree's id
        # the leaves taken so far that may split: (-gain, the tree's id, back-end id), the
        # one-at-a-time order and its tie rule
        heap = [] if self.nodes[0].split is None else [(-self.nodes[0].split.gain, 0, 0)]
        # every node with a split and no children yet, taken or below an untaken expansion
        frontier = set(heap and [0])
        while heap and self.n_leaves < p.max_leaves:
            node_id = heap[0][2]
            if self.children[node_id] is None:
                # the best leaf is not expanded: expand it and the next best unexpanded nodes
                # (no more than the leaves still to come)
                more = min(batch, p.max_leaves - self.n_leaves) - 1
                ids = [node_id]
                if more > 0:
                    ids += [i for _, i in heapq.nsmallest(
                        more, self._reach(frontier - {node_id}, position))]
                frontier.difference_update(ids)
                # a child is split later, if ever, with more leaves than now: whatever it
                # would be split with is found now
                children = self.expand(backend, ids,
                                       lambda child, k: self.can_split(child, self.n_leaves + 1))
                frontier.update(c for c in children if self.nodes[c].split is not None)
            heapq.heappop(heap)
            self.n_leaves += 1
            for child_id in self.children[node_id]:
                position[child_id] = len(self.order)
                self.order.append(child_id)
                child = self.nodes[child_id]
                if child.split is not None and self.can_split(child, self.n_leaves):
                    heapq.heappush(heap, (-child.split.gain, position[child_id], child_id))
            if update is not None:
                heap = self._update_bounds(backend, update, node_id, heap, position)

    def _reach(self, ids, position):
        """``(-reach, id)`` of each node of ``ids``, the speculation's order: a node's reach is
        the gain at which it could be taken at best, its own split's, or an untaken
        ancestor's when lower (that split must be taken first). Speculation by it instead of
        the node's own gain: on 255-leaf lambdarank trees of 1M rows the late rounds' trees
        are uneven, and high-gain nodes below low-gain untaken splits took most of the
        expansions (1,296 for 254 splits, 85 batches, 101 ms a tree on an H100 at rounds
        175-199: ``benchmarks/results/leafwise_speculation-*``). One loop for the batch, no
        call a node: it runs over the whole frontier before every batch."""
        nodes, parent = self.nodes, self.parent
        keys = []
        for i in ids:
            gain, j = nodes[i].split.gain, i
            while j not in position:
                j = parent[j]
                gain = min(gain, nodes[j].split.gain)
            keys.append((-gain, i))
        return keys

    def _update_bounds(self, backend, update, node_id, heap, position):
        """After the split of ``node_id`` (intermediate monotone constraints): tighten the
        bordering leaves' bounds, search their splits again; returns the new heap."""
        waiting = {entry[2] for entry in heap}
        changed = update.leaves_to_update(node_id, lambda i: i in waiting)
        if not changed:
            return heap
        backend.find_splits_again([self.nodes[i] for i in changed])
        heap = [entry for entry in heap if entry[2] not in changed]
        heap += [(-self.nodes[i].split.gain, position[i], i) for i in changed
                 if self.nodes[i].split is not None]
        heapq.heapify(heap)
        return heap

    def _depthwise(self, backend):
        level = [0]
        while level and self.n_leaves < self.params.max_leaves:
            ready = sorted((i for i in level if self.nodes[i].split is not None),
                           key=lambda i: (-self.nodes[i].split.gain, i))
            ready = ready[:self.params.max_leaves - self.n_leaves]
            if not ready:
                break
            after = [self.n_leaves + 1 + k for k in range(len(ready))]
            self.n_leaves += len(ready)
            level = self.expand(backend, ready,
                                lambda child, k: self.can_split(child, after[k]))
            self.order.extend(level)

    def _levels_on_device(self, backend):
        """The tree grown by the back-end (``grow_levels``: the GPU's, each level planned on
        the device, :mod:`skltr._gpu.levels`) where this policy's rule is the planner's:
        ``max_leaves >= 2**max_depth`` (no level cut to the leaves still allowed) and no
        constraints or categorical features (their bounds, masks and searches are the
        host's). A :class:`LevelTable`, or None: grow level by level."""
        p = self.params
        grow = getattr(backend, "grow_levels", None)
        if (grow is None or self.nodes[0].split is None or p.max_depth is None
                or p.max_leaves < 2 ** p.max_depth or p.monotone is not None
                or p.interaction is not None or p.categorical is not None):
            return None
        return grow(self.nodes[0], p.max_depth, p.min_samples_leaf)

    def _symmetric(self, backend):
        root = self.nodes[0]
        if root.count == 0 or self.params.max_depth < 1:
            return
        backend.level_root(root)
        level = [0]
        for depth in range(self.params.max_depth):
            active = np.array([i not in self.value_of for i in level], bool)
            splits = backend.level_split([self.nodes[i] for i in level], active, depth)
            if splits is None:
                break
            for i, split, on in zip(level, splits, active):
                ok = bool(on) and split.gain > -np.inf
                if not ok:  # frozen: split (the tree stays complete) without gain
                    self.value_of.setdefault(i, i)
                # a node's own gain may be negative under reg_lambda (the level's sum is
                # positive): its importance (the recorded gain) is then 0
                self.nodes[i].split = split._replace(gain=max(split.gain, 0.0) if ok else 0.0)
            self.n_leaves += len(level)
            deeper = depth + 1 < self.params.max_depth
            children = self.expand(backend, level, lambda child, k: deeper)
            for k, i in enumerate(level):
                if i in self.value_of:
                    for child in children[2 * k:2 * k + 2]:
                        self.value_of[child] = self.value_of[i]
            self.order.extend(children)
            level = children

    def _assemble(self, backend, nodes, scales, missing_bin, rows) -> GrownTree:
        p = self.params
        n_nodes = len(nodes)
        position = np.full(len(self.nodes), -1, np.int64)
        position[self.order] = np.arange(n_nodes)
        # the tree node of each back-end node: itself, or the leaf above an untaken expansion
        tree_node = position.copy()
        for i in range(1, len(self.nodes)):  # parents come before their children
            if tree_node[i] < 0:
                tree_node[i] = tree_node[self.parent[i]]
        count = np.fromiter((n.count for n in nodes), np.int64, n_nodes)
        sum_g = np.fromiter((n.sum_g for n in nodes), np.float64, n_nodes)  # int64 -> double
        sum_h = np.fromiter((n.sum_h for n in nodes), np.float64, n_nodes)  # as float(int)
        hess_sum = sum_h * scales.inv_h
        split = [j for j, i in enumerate(self.order)
                 if self.children[i] is not None and position[self.children[i][0]] >= 0]
        feature = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        bin_threshold = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        default_left = np.zeros(n_nodes, bool)
        left = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        right = np.full(n_nodes, -1, NODE_INDEX_DTYPE)
        gain = np.zeros(n_nodes, np.float64)
        if split:
            rec = [(nodes[j].split.feature, nodes[j].split.bin, nodes[j].split.default_left)
                   for j in split]
            feature[split], bin_threshold[split], default_left[split] = np.array(rec).T
            gain[split] = [nodes[j].split.gain for j in split]
            left[split], right[split] = position[
                np.array([self.children[self.order[j]] for j in split])].T
        is_leaf = left < 0
        cat_bits, value_h = _categorical_splits(nodes, split, left, right, hess_sum)
        if self.value_of:  # frozen subtrees: their leaves take the frozen node's sums
            source = position[[self.value_of.get(i, i) for i in self.order]]
            sum_g, value_h = sum_g[source], value_h[source]
        value = leaf_values(sum_g, value_h, is_leaf, scales.inv_g, p.reg_lambda,
                            p.reg_alpha, p.learning_rate)
        if p.monotone is not None:
            value = clamp_leaf_values(value, sum_g, value_h, is_leaf,
                                      [n.lo for n in nodes], [n.hi for n in nodes],
                                      scales.inv_g, p)
        value = value.astype(LEAF_VALUE_DTYPE)
        leaf_of_row = backend.finish(self.nodes, tree_node, is_leaf, value)
        return GrownTree(feature, bin_threshold, default_left, left, right, value, gain,
                         count, hess_sum, leaf_of_row, rows, missing_bin, cat_bits)

    def assemble_table(self, backend, t, missing_bin, rows) -> GrownTree:
        """:meth:`_assemble` of a :class:`LevelTable` (ids are the tree's; no bounds,
        nothing frozen), with arrays instead of a node object each: the GPU's table comes at
        the end of a tree whose levels left the host idle, and its ~500 nodes as objects
        took ~1 ms of the GPU's round. The back-end's ``finish_table(t, is_leaf, value)``
        gives the leaf of every row."""
        p, scales = self.params, backend.scales
        n = len(t.start)
        is_split = t.left >= 0
        feature = np.where(is_split, t.feature, -1).astype(NODE_INDEX_DTYPE)
        bin_threshold = np.where(is_split, t.bin, -1).astype(NODE_INDEX_DTYPE)
        default_left = is_split & (t.default_left != 0)
        left = np.where(is_split, t.left, -1).astype(NODE_INDEX_DTYPE)
        right = np.where(is_split, t.left + 1, -1).astype(NODE_INDEX_DTYPE)
        gain = np.where(is_split, t.gain, 0.0)
        sum_g = t.sum_g.astype(np.float64)  # int64 -> double, as float(int)
        hess_sum = t.sum_h.astype(np.float64) * scales.inv_h
        is_leaf = ~is_split
        cat_bits, value_h = None, hess_sum
        cat = None if t.cat_words is None else np.flatnonzero(is_split & (t.cat_words > 0))
        if cat is not None and cat.size:  # as _categorical_splits
            width = int(t.cat_words[cat].max())
            cat_bits = np.zeros((n, width), np.uint64)
            cat_bits[cat] = t.cat_bits[cat, :width]
            value_h = hess_sum.copy()
            value_h[t.left[cat]] += t.cat_l2[cat]
            value_h[t.left[cat] + 1] += t.cat_l2[cat]
        value = leaf_values(sum_g, value_h, is_leaf, scales.inv_g, p.reg_lambda,
                            p.reg_alpha, p.learning_rate).astype(LEAF_VALUE_DTYPE)
        leaf_of_row = backend.finish_table(t, is_leaf, value)
        return GrownTree(feature, bin_threshold, default_left, left, right, value, gain,
                         np.asarray(t.count, np.int64), hess_sum, leaf_of_row, rows,
                         missing_bin, cat_bits)


def _categorical_splits(nodes, split, left, right, hess_sum):
    """``(cat_bits, hessians of the leaf values)`` of an assembled tree: the left bins of its
    categorical splits (None without any), and ``hess_sum`` with ``cat_l2`` added under the
    children of many-vs-many splits (LightGBM's outputs there take ``lambda + cat_l2``)."""
    cat = [j for j in split if nodes[j].split.cat_left is not None]
    if not cat:
        return None, hess_sum
    # one width for the tree: the widest left set (4 words unless a wide feature split)
    width = max(nodes[j].split.cat_left.size for j in cat)
    cat_bits = np.zeros((len(nodes), width), np.uint64)
    value_h = hess_sum.copy()
    for j in cat:
        cat_bits[j, :nodes[j].split.cat_left.size] = nodes[j].split.cat_left
        value_h[[left[j], right[j]]] += nodes[j].split.cat_l2
    return cat_bits, value_h
