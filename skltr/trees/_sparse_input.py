"""Sparse (CSR / CSC) input: checked once, then densified a block of rows at a time.

A sparse row leaves some entries out, and what an absent entry stands for depends on the
library the model came from (``TreeEnsemble.absent_value``, measured by running each one):

* **skltr, LightGBM, scikit-learn**: 0.0. LightGBM's ``predict`` on a CSR or CSC matrix
  equals its ``predict`` on the dense array with zeros, and an explicitly stored 0.0 is the
  same 0.0.
* **XGBoost**: missing (NaN). ``XGBRanker.predict(csr)`` and ``DMatrix(csr)`` equal the
  dense array with NaN where the CSR has no entry, while an explicitly *stored* 0.0 is an
  ordinary value 0.0 (as in XGBoost's own LibSVM text loader: ``1:0`` is a value).

A stored NaN is missing for every library. Only CSR and CSC are accepted (a COO or DOK
matrix may hold duplicate entries that ``tocsr()`` would sum silently); a matrix with
duplicate entries is refused, because scipy sums them while XGBoost and LightGBM keep one.

Scoring never densifies the whole matrix: rows are densified in blocks of about
:data:`CHUNK_BYTES` (in float64) and each block goes through the dense path
(:func:`skltr.trees._input.model_input`, then the kernels). A CSC matrix is converted to CSR
once (one copy of its non-zeros, never a dense one): slicing rows out of a CSC matrix costs
a pass over all its non-zeros per block, so per-block conversion would be quadratic.

A block is densified in the data's own dtype whenever the fill value fits in it (0 always
does; NaN only in a floating dtype), so the ensemble's ``input_rule`` sees the caller's
dtype exactly as for a dense array. An integer (or bool) matrix whose absent entries are NaN
cannot hold them: its stored values are read through the input rule first (what the rule
would do to them in a dense array) and the block is float64, which the rule then leaves as
it is.
"""

from __future__ import annotations

import numpy as np

from ..utils._sparse import as_csr, check_sparse, is_sparse
from ._input import cast_input_values, check_no_inf

__all__ = ["CHUNK_BYTES", "is_sparse", "check_sparse", "as_csr", "chunk_rows",
           "densify_rows", "dense_chunks", "map_row_chunks"]

#: Bytes of one densified block of rows (counted in float64, the kernels' dtype): small
#: enough to stay out of the way of memory, large enough to keep every thread busy.
CHUNK_BYTES = 8 << 20

def chunk_rows(n_features: int, chunk_bytes: int | None = None) -> int:
    """Rows per densified block: about ``chunk_bytes`` of float64, at least one row."""
    chunk_bytes = CHUNK_BYTES if chunk_bytes is None else int(chunk_bytes)
    return max(1, chunk_bytes // (8 * max(1, int(n_features))))


def _dense_dtype(dtype, fill):
    """dtype of a densified block: the data's own when ``fill`` fits in it, else float64."""
    dtype = np.dtype(dtype)
    if np.isnan(fill) and dtype.kind not in "f":
        return np.dtype(np.float64)
    return dtype


def densify_rows(X, lo: int, hi: int, *, fill=0.0, rule=None, dtype=None) -> np.ndarray:
    """Rows ``lo:hi`` of the CSR matrix ``X`` as a dense C-contiguous array.

    Absent entries are ``fill``; stored entries are copied by assignment (``toarray()``
    adds into zeros, which turns -0.0 into 0.0). The block's dtype is ``dtype`` when given,
    else X's own when ``fill`` fits in it; otherwise (an integer matrix with NaN fill) the
    stored values go through ``cast_input_values(values, rule)`` into a float64 block.
    """
    start, end = int(X.indptr[lo]), int(X.indptr[hi])
    values = X.data[start:end]
    out_dtype = _dense_dtype(X.dtype, fill) if dtype is None else np.dtype(dtype)
    if out_dtype != X.dtype and out_dtype.kind == "f" and X.dtype.kind != "f" and rule:
        values = cast_input_values(values, rule)
    out = np.full((hi - lo, X.shape[1]), fill, dtype=out_dtype)
    counts = np.diff(X.indptr[lo:hi + 1])
    rows = np.repeat(np.arange(hi - lo), counts)
    out[rows, X.indices[start:end]] = values
    return out


def dense_chunks(X, *, fill=0.0, rule=None, chunk_bytes=None, dtype=None):
    """Yield ``(lo, hi, dense rows lo:hi)`` of a checked sparse ``X``, covering every row.

    ``X`` is converted to CSR once when it is CSC. See :func:`densify_rows` for the block
    dtype and the fill.
    """
    X = as_csr(X)
    n = X.shape[0]
    step = chunk_rows(X.shape[1], chunk_bytes)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        yield lo, hi, densify_rows(X, lo, hi, fill=fill, rule=rule, dtype=dtype)


def _check_source_accepts(ensemble, X) -> None:
    """Refuse what the source library refuses, so that no score stands where it has none.

    XGBoost reads +-inf in a CSR matrix (as in a dense array) as an ordinary value, but its
    CSC reader refuses it ("Input data contains `inf` or a value too large, while `missing` is
    not set to `inf`"; XGBoost 3.2).
    """
    if ((ensemble.source or {}).get("library") == "xgboost" and X.format == "csc"
            and ensemble.missing_value != np.inf and np.isinf(X.data).any()):
        raise ValueError("X is a CSC matrix holding +-inf, which XGBoost refuses for this "
                         "model ('Input data contains inf ... while missing is not set to "
                         "inf'); pass it as CSR or dense, where XGBoost reads inf as a value.")


def map_row_chunks(ensemble, X, fn, *, chunk_bytes=None):
    """``fn(dense rows)`` on every block of the sparse ``X``, stacked in row order.

    Absent entries take ``ensemble.absent_value``; each block is what the dense path would
    have been given, so ``fn`` is the backend's dense entry point (it applies the ensemble's
    input rule). An ``X`` with no rows still calls ``fn`` once, on an empty block, so the
    result has the right shape and dtype.
    """
    check_sparse(X)
    if X.shape[1] != ensemble.n_features:
        raise ValueError(
            f"X has {X.shape[1]} features, but the ensemble was built for "
            f"{ensemble.n_features}."
        )
    _check_source_accepts(ensemble, X)
    X = as_csr(X)
    # once over the stored values, naming the row (each block is checked again, cheaply)
    check_no_inf(ensemble, X.data, row_of=lambda k: (
        int(np.searchsorted(X.indptr, k, side="right")) - 1, int(X.indices[k])))
    fill, rule = ensemble.absent_value, ensemble.input_rule
    if X.shape[0] == 0:
        return fn(np.zeros((0, X.shape[1]), dtype=_dense_dtype(X.dtype, fill)))
    parts = [fn(block) for _, _, block in dense_chunks(X, fill=fill, rule=rule,
                                                        chunk_bytes=chunk_bytes)]
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
