"""Histogram layouts over binned features, and the pool of histogram buffers.

A node's histogram is ``hist[n_features, n_bins_total, n_channels]`` (C order): per feature,
per bin, one record of ``n_channels`` words, so that one row updates one record per
feature. What the words hold is the *layout*, named once here and read by the CPU kernels
(``skltr._cpu.histogram``, ``skltr._cpu.split``) and the GPU's (``skltr._gpu.histogram``)::

    FLOAT     float64 x 3   (sum_grad, sum_hess, count)
    WEIGHT    int64 x 1     (sum of fixed-point weights)
    TWO_WORD  int64 x 2     (sum q_g, sum (1 << K) + q_h)   count = w >> K, hess = w & (2**K-1)
    ONE_WORD  int64 x 1     (sum q_g * 2**32 + q_h)         g = w >> 32,   h = w & (2**32 - 1)

The quantised layouts sum integers (exact in any order, on any number of threads, GPUs or
workers); their scales come from the learner (``skltr._gbdt.quantisation``). A learner with one
weight per row (RankBoost's potentials) uses ``WEIGHT``: one int64 word a bin, the
weights in fixed point passed as the kernels' ``grad`` (exact sums, as the quantised
layouts).
Measurements behind the layouts: ``docs/gbdt_internals.rst``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._cpu.histogram import integer_task_split
from .._dtypes import HIST_DTYPE, QUANTISED_HIST_DTYPE

__all__ = ["HistogramLayout", "FLOAT", "TWO_WORD", "ONE_WORD", "WEIGHT", "HistogramPool",
           "histogram_tasks", "integer_histogram_tasks", "HIST_PAD_BINS",
           "MIN_FEATURES_PER_BLOCK", "MIN_CHUNK_ROWS"]


class HistogramLayout(NamedTuple):
    """What one bin record of a histogram holds."""

    name: str
    channels: tuple  # channel names, in record order
    dtype: type

    @property
    def n_channels(self) -> int:
        return len(self.channels)


FLOAT = HistogramLayout("float", ("grad", "hess", "count"), HIST_DTYPE)
TWO_WORD = HistogramLayout("two_word", ("grad", "count_hess"), QUANTISED_HIST_DTYPE)
ONE_WORD = HistogramLayout("one_word", ("grad_hess",), QUANTISED_HIST_DTYPE)
#: One fixed-point (int64) weight per row (RankBoost's potentials), passed as ``grad``.
WEIGHT = HistogramLayout("weight", ("weight",), QUANTISED_HIST_DTYPE)

#: Unused bins after each feature's histogram. With 256 bins of 24 bytes a feature spans
#: 6144 bytes, so the same bin of every feature falls in 2 of the 64 L1 cache sets (4 KiB
#: period); 3 more bins shift each feature by 72 bytes and spread them over all sets
#: (measured 8% faster building on 494k x 136).
HIST_PAD_BINS = 3
#: Fewest features per histogram feature block (see ``histogram_tasks``).
MIN_FEATURES_PER_BLOCK = 16


def histogram_tasks(n_threads: int, n_features: int):
    """``(n_row_chunks, n_feature_blocks)`` of a parallel histogram on ``n_threads``.

    Feature blocks first: each thread owns the bins of some features for all the node's
    rows, so no per-thread copy and no reduction are needed (and the float result does not
    depend on the thread count); row chunks only when there are more threads than blocks of
    ``MIN_FEATURES_PER_BLOCK`` features.
    """
    blocks = max(1, min(int(n_threads), int(n_features) // MIN_FEATURES_PER_BLOCK))
    return -(-int(n_threads) // blocks), blocks


#: Fewest rows of a row chunk of an integer node histogram (:func:`integer_histogram_tasks`):
#: every chunk after the first is a copy of the whole histogram to zero and to add, a cost
#: that does not shrink with the node.
MIN_CHUNK_ROWS = 2048


def integer_histogram_tasks(n_threads: int, n_features: int, n_rows: int):
    """``(n_row_chunks, n_feature_blocks)`` of one node's parallel histogram of ``n_rows``
    rows in an integer layout, whose sums are the same for any split of the work.

    Row chunks first, as many as keep ``MIN_CHUNK_ROWS`` rows each (up to one a thread); the
    threads left over split the features. A row chunk reads whole rows once, where each
    feature block reads a cache line of every row; the chunks' copies are summed feature by
    feature in the split search's region. In whole fits of 245k x 136 rows (20 trees of
    255 leaves, fits alternating in one process on the H200 host, by hand) the same trees
    grew faster at 4, 8 and 16 threads than with feature blocks of at least
    ``MIN_FEATURES_PER_BLOCK`` features first, the rule before
    (``benchmarks/scaling_train_cpu.py`` has the fits after it).
    ``benchmarks/histogram_tasks.py`` times one node's build with its reduction: on 30
    features, where the per-tree rule gives every node 16 row chunks, a node of 512 rows
    took 18 us instead of 62
    (``benchmarks/results/histogram_tasks-h100-2026-11-27-5c24a27-t16.json``).
    """
    # the rule's one definition is the kernel's (the whole-tree grower applies it in numba),
    # given this module's constant as it is now (tests change it)
    return integer_task_split(int(n_threads), int(n_features), int(n_rows), MIN_CHUNK_ROWS)


class HistogramPool:
    """Reusable node histograms and per-thread scratch of one shape and dtype.

    Allocating (and first touching) ~0.8 MB per node costs page faults every tree; a pool
    kept by the boosting loop across rounds pays them once. Pass it as ``TreeGrower(...,
    pool=pool)``; a grower makes its own when given none or one of another shape.

    Size: every splittable leaf holds one histogram until it is split. Measured on 494k x 136,
    255 leaves, 255 bins: 156 histograms, 126 MiB (float) or 84 MiB (quantised).
    """

    def __init__(self, n_features, n_bins_total, dtype, n_row_chunks, n_channels=3):
        self.shape = (int(n_features), int(n_bins_total), int(n_channels))
        self.dtype = np.dtype(dtype)
        self._free = []
        self._levels = [None, None]  # symmetric growth's level arrays (see level())
        self._slots = None  # the whole-tree grower's histograms (see slots())
        self._wide = None  # wide categorical histograms' row chunks (see wide_scratch())
        self.scratch = np.empty((max(n_row_chunks - 1, 1), int(np.prod(self.shape))),
                                self.dtype)

    def matches(self, shape, dtype, n_row_chunks):
        return (self.shape == tuple(shape) and self.dtype == np.dtype(dtype)
                and self.scratch.shape[0] >= n_row_chunks - 1)

    def acquire(self) -> np.ndarray:
        return self._free.pop() if self._free else np.empty(self.shape, self.dtype)

    def release(self, hist: np.ndarray) -> None:
        self._free.append(hist)

    def slots(self, n_slots) -> np.ndarray:
        """The whole-tree CPU grower's histograms (``skltr._cpu.grow_leafwise``), at least
        ``n_slots`` in one array, kept across trees. Room for every leaf costs address space
        only: memory is taken by the pages a tree touches, and the grower takes the lowest
        free slot first, so that it touches as many as it holds at once -- the pool's
        histograms' peak."""
        if self._slots is None or self._slots.shape[0] < n_slots:
            self._slots = np.empty((n_slots,) + self.shape, self.dtype)
        return self._slots

    def wide_scratch(self, n_copies, size) -> np.ndarray:
        """Row chunks 1.. of a parallel wide categorical histogram (``n_copies`` of ``size``
        words), kept across trees as :meth:`slots` are: a fresh array a tree costs its
        pages' faults every tree (15 copies of a 10,000-level feature's rows at 16
        threads: a few MB)."""
        buf = self._wide
        if buf is None or buf.shape[0] < n_copies or buf.shape[1] != size:
            buf = self._wide = np.empty((n_copies, size), self.dtype)
        return buf[:n_copies]

    def level(self, n_nodes, parity) -> np.ndarray:
        """``n_nodes`` histograms in one array (a level of symmetric growth, searched
        together), from one of two arrays kept across trees: consecutive levels alternate
        ``parity``, so a level's array is never its parent level's. Fresh arrays per level
        cost page faults: a YetiRank fit of 200 depth-6 trees on letor_small (300
        features, 1 thread, 2 shared cores) took 1.47 s with them, 1.22 s with these (a
        development run no result file records)."""
        buf = self._levels[parity]
        if buf is None or buf.shape[0] < n_nodes:
            buf = self._levels[parity] = np.empty((n_nodes,) + self.shape, self.dtype)
        return buf[:n_nodes]
