"""GPU score updates: add one grown tree's leaf values to scores.

Two kernels, as the CPU path's two ways (``GrownTree.add_to_training_scores`` and
:func:`skltr._cpu.predict_binned.add_tree_binned`):

* :func:`add_leaf_values`: after growing, every position of the partition buffer knows its
  leaf: ``scores[buf[p]] += value[pos_node[p]]`` (no traversal);
* :func:`add_tree_binned`: route every row of a binned matrix (eval sets, rows outside a
  query subsample): bin ``b`` of ``feature[n]`` goes left when ``b <= bin_threshold[n]``, the
  missing bin when ``default_left[n]``; at a categorical node (``bin_threshold[n] < 0``)
  when bit ``b`` of its words of ``cat_bits`` is set (a wide categorical feature's codes
  ``b`` read from the binned matrix's ``X_wide``).
"""

from __future__ import annotations

import cupy
import numpy as np

from . import _config
from ._compile import blocks, module

_SOURCE = r"""
extern "C" __global__ void add_leaf_values(const u32* buf, const int* pos_node, i64 n_used,
                                           const double* value, double* scores) {
    const i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n_used) scores[buf[p]] += value[pos_node[p]];
}

extern "C" __global__ void add_tree_binned(const u8* X, i64 n, int stride,
                                           const unsigned short* Xw, int n_wide,
                                           const int* wide_of, const int* feature,
                                           const int* bin_threshold, const u8* default_left,
                                           const int* left, const int* right,
                                           const double* value, int missing_bin,
                                           const unsigned long long* cat_bits, int n_words,
                                           double* scores) {
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int node = 0;
    while (left[node] >= 0) {
        const int f = feature[node];
        const int w = wide_of[f];
        const int b = w < 0 ? (int)X[i * stride + f] : (int)Xw[i * n_wide + w];
        const int t = bin_threshold[node];
        const bool go_left = (t < 0) ? (bool)((cat_bits[(i64)n_words * node + (b >> 6)]
                                                >> (b & 63)) & 1)
                           : (b == missing_bin) ? (bool)default_left[node] : (b <= t);
        node = go_left ? left[node] : right[node];
    }
    scores[i] += value[node];
}
"""


@cupy.memoize(for_each_device=True)
def _module():
    return module(_SOURCE)


def add_leaf_values(buf, pos_node, value, scores):
    """``scores[buf[p]] += value[pos_node[p]]`` for every position (``value`` on device)."""
    n = buf.size
    t = _config.ELEMENTWISE_THREADS
    _module().get_function("add_leaf_values")(
        (blocks(n, t),), (t,), (buf, pos_node, np.int64(n), value, scores))


class DeviceTree:
    """One grown tree's node arrays on the GPU (for :func:`add_tree_binned`)."""

    def __init__(self, tree):
        n = tree.feature.size
        ints = np.concatenate([tree.feature, tree.bin_threshold, tree.left, tree.right,
                               tree.default_left.astype(np.int32)]).astype(np.int32)
        dev = cupy.asarray(ints)
        self.feature, self.bin_threshold = dev[:n], dev[n:2 * n]
        self.left, self.right = dev[2 * n:3 * n], dev[3 * n:4 * n]
        self.default_left = dev[4 * n:].astype(cupy.uint8)
        self.value = cupy.asarray(np.ascontiguousarray(tree.value, np.float64))
        bits = tree.cat_bits if tree.cat_bits is not None else np.zeros((1, 4), np.uint64)
        self.cat_bits = cupy.asarray(np.ascontiguousarray(bits, np.uint64))
        self.n_words = int(bits.shape[1])
        self.missing_bin = int(tree.missing_bin)


def add_tree_binned(data, tree, scores):
    """``scores[i] += tree(row i)`` for every row of ``data`` (a
    :class:`~skltr._gpu.binned.DeviceBinned`; ``tree``: a :class:`DeviceTree`)."""
    n = data.n_samples
    if n == 0:
        return
    t = _config.ELEMENTWISE_THREADS
    _module().get_function("add_tree_binned")(
        (blocks(n, t),), (t,),
        (data.X_bytes, np.int64(n), np.int32(data.X_bytes.shape[1]), data.X_wide,
         np.int32(data.X_wide.shape[1]), data.wide_of, tree.feature, tree.bin_threshold,
         tree.default_left, tree.left, tree.right, tree.value, np.int32(tree.missing_bin),
         tree.cat_bits, np.int32(tree.n_words), scores))
