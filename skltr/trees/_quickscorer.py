"""Host-side entry to the QuickScorer CPU backend, and the one place that sizes its work.

Two sizes are chosen from the per-core L2 cache
(:func:`~skltr.utils._cpu_cache.l2_cache_bytes`):

* :func:`cpu_tree_block` (when the layout is built): trees per block, so that a block's
  leaf-vector state (``TREE_BYTES`` per tree) and its node and leaf tables fit half the L2
  -- the scan updates the state at random, and the tables are read once per group of
  ``LANES`` documents.
* :func:`chunk_docs` (per call): documents per work chunk, a multiple of ``LANES``. A chunk's
  groups share each block's tables while they are in cache (up to ``MAX_CHUNK_GROUPS``), but
  every thread should get several chunks (``CHUNKS_PER_THREAD``) so that the dynamic split
  evens out, and a chunk's transposed values stay within a quarter of the L2.
"""

from __future__ import annotations

import numba
import numpy as np

from .._cpu._simd import LANES, TREE_BYTES
from .._cpu.quickscorer import predict_raw_quickscorer
from .._records import node_arrays, qs_tables, routing
from ..utils._cpu_cache import l2_cache_bytes
from ..utils._threads import numba_threads
from ._sparse_input import is_sparse, map_row_chunks
from ._traversal import _as_kernel_input

#: Most groups of ``LANES`` documents per chunk: 4 x 64 = 256 documents, which read a
#: block's tables from L3 once per 4 groups when they do not fit the L2 (5,000 trees).
MAX_CHUNK_GROUPS = 4
#: Chunks each thread should get at least (when there are rows enough): threads take chunks
#: from a shared counter, so the last ones even out a thread slowed by other work.
CHUNKS_PER_THREAD = 8
def cpu_tree_block(ensemble, l2_bytes=None) -> int:
    """Trees per QuickScorer block for the CPU kernel (a multiple of 64).

    Parameters
    ----------
    ensemble : TreeEnsemble
    l2_bytes : int, optional
        L2 cache per core (default: :func:`l2_cache_bytes`).

    Returns
    -------
    int
        The most trees whose state and tables fit half of ``l2_bytes``, at least 64.
    """
    l2 = l2_cache_bytes() if l2_bytes is None else int(l2_bytes)
    leaves = np.minimum(ensemble.n_leaves(), 64)  # larger trees are not tabled
    mean_leaves = float(leaves.mean()) if leaves.size else 1.0
    thr_bytes = 4 if ensemble.precision == "float32" else 8
    leaf_bytes = 4 if ensemble.sum_dtype == "float32" else 8
    # per node: threshold, tree index (2), node_byte (1), node_mbytes (2)
    per_tree = TREE_BYTES + (mean_leaves - 1) * (thr_bytes + 5) + mean_leaves * leaf_bytes
    return max(64, int(l2 // 2 / per_tree) // 64 * 64)


def chunk_docs(n_samples, n_threads, n_slots, itemsize, l2_bytes=None) -> int:
    """Documents per work chunk: a positive multiple of ``LANES`` (see the module docstring).

    Parameters
    ----------
    n_samples, n_threads : int
    n_slots : int
        Features the layout's lists test (``used_feature``): the values transposed per
        document.
    itemsize : int
        Bytes of a transposed value (the thresholds' dtype).
    l2_bytes : int, optional
        L2 cache per core (default: :func:`l2_cache_bytes`).
    """
    l2 = l2_cache_bytes() if l2_bytes is None else int(l2_bytes)
    groups = -(-n_samples // LANES)
    per_thread = groups // (CHUNKS_PER_THREAD * max(1, n_threads))
    fit = (l2 // 4) // max(1, n_slots * LANES * itemsize)
    return LANES * max(1, min(MAX_CHUNK_GROUPS, per_thread, fit))


def predict_raw(ensemble, layout, X, *, n_jobs=None, doc_block=None):
    """Raw scores of ``ensemble`` on ``X`` through its QuickScorer ``layout``.

    Same output (dtype and shape, bit for bit) as ``TreeEnsemble.predict_raw``.
    ``doc_block``: documents per work chunk (rounded up to a multiple of ``LANES``; default
    :func:`chunk_docs`). ``X`` is a dense array or a scipy CSR / CSC matrix (scored a block
    of densified rows at a time, absent entries standing for ``ensemble.absent_value``).
    """
    if is_sparse(X):
        return map_row_chunks(ensemble, X, lambda rows: predict_raw(
            ensemble, layout, rows, n_jobs=n_jobs, doc_block=doc_block))
    X = _as_kernel_input(ensemble, X)
    e = ensemble
    out = np.empty((X.shape[0], e.n_outputs), dtype=np.float64)
    with numba_threads(n_jobs):
        if doc_block is None:
            chunk = chunk_docs(X.shape[0], numba.get_num_threads(), layout.used_feature.size,
                               layout.node_thr.itemsize)
        else:
            chunk = -(-max(1, int(doc_block)) // LANES) * LANES
        workers = min(numba.get_num_threads(), -(-X.shape[0] // chunk))
        predict_raw_quickscorer(X, chunk, workers, np.zeros(1, dtype=np.int64),
                                qs_tables(layout), node_arrays(e), routing(e), out)
    if e.sum_dtype == "float32":
        out = out.astype(np.float32)
    return out[:, 0] if e.n_outputs == 1 else out
