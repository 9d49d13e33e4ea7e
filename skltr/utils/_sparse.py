"""Sparse matrices at the API's edge: which ones skltr reads, and as what.

The checks that every estimator and converter applies to a scipy.sparse input (validation
lives in ``skltr.utils``); reading sparse rows for a model is ``skltr.trees._sparse_input``.
"""

from __future__ import annotations

import scipy.sparse as sp

__all__ = ["is_sparse", "check_sparse", "as_csr"]

_FORMATS = ("csr", "csc")


def is_sparse(X) -> bool:
    """True for any scipy.sparse matrix or array."""
    return sp.issparse(X)


def check_sparse(X, *, name="X"):
    """Refuse what the sparse paths cannot read exactly; return ``X`` unchanged.

    CSR or CSC only, 2-D, numeric, without duplicate entries.
    """
    fmt = X.format
    if fmt not in _FORMATS:
        raise TypeError(
            f"{name} is a scipy.sparse {fmt.upper()} matrix; only CSR and CSC are accepted. "
            f"Convert it with {name}.tocsr() (a {fmt.upper()} matrix may hold duplicate "
            f"entries, which tocsr() adds up: check that this is what you mean)."
        )
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features); got shape {X.shape}.")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric; got dtype {X.dtype}.")
    if not X.has_canonical_format:  # unsorted indices or duplicates: look for duplicates
        canon = X.copy()
        canon.sum_duplicates()
        if canon.nnz != X.nnz:
            raise ValueError(
                f"{name} ({fmt.upper()}) has {X.nnz - canon.nnz} duplicate entries (the same "
                f"row and column stored twice). scipy adds duplicates up, XGBoost and LightGBM "
                f"keep one of them: combine them yourself first, e.g. with "
                f"{name}.sum_duplicates()."
            )
    return X


def as_csr(X):
    """``X`` as a CSR matrix: itself when it is CSR, else one conversion (no dense copy)."""
    return X if X.format == "csr" else X.tocsr()
