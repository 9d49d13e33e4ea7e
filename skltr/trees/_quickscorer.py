"""Host-side entry to the QuickScorer CPU backend."""

from __future__ import annotations

import numba
import numpy as np

from .._cpu._simd import LANES
from .._cpu.quickscorer import predict_raw_quickscorer
from .._records import node_arrays, qs_tables, routing
from ..utils._threads import numba_threads
from ._sparse_input import is_sparse, map_row_chunks
from ._traversal import _as_kernel_input

#: Documents per thread chunk (rounded up to a multiple of the kernel's LANES). A chunk's
#: groups of LANES documents reuse each block of tables while it is in L2; larger chunks
#: read the tables of big ensembles from L3 less often.
DEFAULT_DOC_BLOCK = 256


def _chunk_docs(n_samples, doc_block, n_threads):
    """Documents per thread chunk: ``doc_block``, but small inputs are split evenly over the
    threads; always a positive multiple of LANES."""
    per_thread = -(-n_samples // max(1, n_threads))
    chunk = max(1, min(int(doc_block), per_thread))
    return -(-chunk // LANES) * LANES


def predict_raw(ensemble, layout, X, *, n_jobs=None, doc_block=DEFAULT_DOC_BLOCK):
    """Raw scores of ``ensemble`` on ``X`` through its QuickScorer ``layout``.

    Same output (dtype and shape, bit for bit) as ``TreeEnsemble.predict_raw``.
    ``doc_block`` is the number of documents per thread chunk (see ``DEFAULT_DOC_BLOCK``).
    ``X`` is a dense array or a scipy CSR / CSC matrix (scored a block of densified rows at
    a time, absent entries standing for ``ensemble.absent_value``).
    """
    if is_sparse(X):
        return map_row_chunks(ensemble, X, lambda rows: predict_raw(
            ensemble, layout, rows, n_jobs=n_jobs, doc_block=doc_block))
    X = _as_kernel_input(ensemble, X)
    e = ensemble
    out = np.empty((X.shape[0], e.n_outputs), dtype=np.float64)
    with numba_threads(n_jobs):
        chunk = _chunk_docs(X.shape[0], doc_block, numba.get_num_threads())
        predict_raw_quickscorer(X, chunk, qs_tables(layout), node_arrays(e), routing(e), out)
    if e.sum_dtype == "float32":
        out = out.astype(np.float32)
    return out[:, 0] if e.n_outputs == 1 else out
