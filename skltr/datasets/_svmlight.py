"""LETOR / SVMlight files with query ids: a line-numbering reader and an exact writer.

File format, one document per line (``#`` starts a comment, blank lines are skipped)::

    <label> [qid:<int>] <index>:<value> <index>:<value> ... [# comment]
    2 qid:10 1:0.5 3:12 # doc-17
    0 qid:10 2:1e-3

Query ids come either from ``qid:`` tokens on every line, or -- LightGBM's convention -- from
a side file ``<path>.query`` holding the number of consecutive lines of each query, one
integer per line.

Parsing is one pass of a numba kernel over the raw bytes (:mod:`skltr.datasets._letor_kernel`),
with errors reported by code and byte offsets so that this wrapper can name the line and the
token.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import os
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from .._dtypes import QID_DTYPE, Y_DTYPE
from ..utils._atomic import atomic_write
from ..utils._qid import check_qid, group_sizes_to_qid
from ._letor_kernel import (_BAD_INDEX, _BAD_LABEL, _BAD_QID, _BAD_VALUE, _DUPLICATE, _MIXED_QID,
                            _NO_COLON, _OK, _POW10, _POW10_HI, _POW10_LO, _QID_POSITION,
                            _parse_letor)

__all__ = ["load_letor", "dump_letor"]


# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


class MissingQidError(ValueError):
    """A LETOR file without ``qid:`` tokens and without a query file (``where`` says which
    file and what was looked for, so a caller such as the CLI can word its own advice)."""

    def __init__(self, message, where=""):
        super().__init__(message)
        self.where = where


class LetorIndexError(ValueError):
    """A feature index that does not fit the indexing asked for: an index 0 read one-based,
    or an index beyond ``n_features``. ``where`` names the file and line, ``index`` is the
    index as written, ``zero_based`` how the file was read; the CLI turns it into advice."""

    def __init__(self, message, *, where, index, zero_based, n_features):
        super().__init__(message)
        self.where, self.index = where, index
        self.zero_based, self.n_features = zero_based, n_features


class LetorWidthError(ValueError):
    """A feature index that makes the data wider than the caller allows (``max_features``
    of ``_load_letor``, or a dense array far too large for its entries): ``where`` names the
    file and line, ``index`` is the index as written, ``width`` the number of columns it
    implies."""

    def __init__(self, message, *, where, index, width, limit):
        super().__init__(message)
        self.where, self.index, self.width, self.limit = where, index, width, limit


#: ``dense=True`` refuses a dense array over this many bytes that is mostly empty (more than
#: ``_DENSE_WASTE`` times the bytes of the CSR matrix of the same entries): such a file is
#: wide and sparse (or has a stray huge feature index), and its dense array could exhaust
#: the memory; ``dense=False`` or ``"auto"`` reads it as CSR.
_DENSE_REFUSE_BYTES = 1 << 30
_DENSE_WASTE = 16
#: ``dense="auto"``: dense when the array is at most this many bytes, or at most
#: ``_AUTO_DENSE_RATIO`` times the CSR matrix's bytes; CSR otherwise.
_AUTO_DENSE_BYTES = 64 << 20
_AUTO_DENSE_RATIO = 2


def _read_bytes(f):
    """Whole content of a path (plain, .gz, .bz2, .xz) or an open file, as bytes."""
    if hasattr(f, "read"):
        data = f.read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    path = os.fspath(f)
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(
        os.path.splitext(path)[1].lower(), open
    )
    with opener(path, "rb") as fh:
        return fh.read()


def _token(data, start, end, limit=60):
    text = data[start:end].decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + "..."


def _read_query_file(qpath, n_rows, name):
    """Group sizes from a LightGBM ``.query`` file, validated against the number of rows."""
    text = _read_bytes(qpath).decode("utf-8", errors="replace")
    sizes = []
    for lineno, line in enumerate(text.splitlines(), 1):
        tok = line.split("#", 1)[0].strip()
        if not tok:
            continue
        if not tok.isdigit():
            raise ValueError(
                f"{qpath}: line {lineno}: expected one non-negative integer group size per "
                f"line, got {tok!r}."
            )
        sizes.append(int(tok))
    total = sum(sizes)
    if total != n_rows:
        raise ValueError(
            f"{qpath}: group sizes sum to {total} but {name} has {n_rows} data lines; the "
            f"query file must list the number of consecutive lines of each query."
        )
    return group_sizes_to_qid(np.asarray(sizes, dtype=np.int64))


def load_letor(path, *, n_features=None, dense=True, dtype=np.float64, query_file=None,
               zero_based="auto"):
    """Load a LETOR / SVMlight ranking file with per-row query ids.

    Lines are ``<label> [qid:<int>] <index>:<value> ... [# comment]``. Feature indices may
    come in any order on a line but may not repeat; missing entries are 0. Blank and
    comment-only lines are skipped (line numbers in errors are physical, 1-based).

    Parameters
    ----------
    path : str, path-like or file object
        The file; ``.gz``, ``.bz2`` and ``.xz`` paths are decompressed. An open file (binary
        or text) is read to its end.
    n_features : int, optional
        Number of columns. Default: the largest index in the file + 1 (after the
        ``zero_based`` shift). A file whose largest index does not fit raises ValueError;
        pass it to load a test file with the train file's width.
    dense : bool or "auto", default=True
        Return an ndarray; ``False`` returns a :class:`scipy.sparse.csr_matrix` with sorted
        indices (explicit ``i:0`` entries of the file are kept as stored zeros). ``"auto"``
        returns the ndarray when it takes at most 64 MiB or at most twice the memory of
        the CSR matrix, else the CSR matrix (wide, sparse files). ``True`` refuses, naming
        the line of the largest feature index, an ndarray over 1 GiB that would take more
        than 16 times the CSR matrix's memory (a wide sparse file, or a stray huge index):
        read such files with ``dense=False`` or ``"auto"``.
    dtype : floating dtype, default=np.float64
        dtype of ``X``. Values are parsed to the correctly rounded float64 and then cast.
    query_file : None, False, str or path-like, default=None
        Where the query grouping comes from when the lines carry no ``qid:`` tokens: a file
        of group sizes (LightGBM's ``.query`` format, one integer per line). None looks for
        ``str(path) + ".query"`` when the lines have no qid; False never looks. Passing a
        path for a file whose lines do carry ``qid:`` raises (two groupings would be
        ambiguous). With neither qid tokens nor a query file, a ValueError says so.
    zero_based : bool or "auto", default="auto"
        Whether indices start at 0. ``True``: index ``k`` is column ``k``, as written -- how
        LightGBM's and XGBoost's own text loaders number the columns (``lgb.Dataset(path)``;
        ``xgboost.DMatrix(path + "?format=libsvm")``, whose parser's ``indexing_mode``
        defaults to 0), so read a file with ``zero_based=True`` to score it with a model
        those libraries trained from a file. ``False``: index ``k`` is column ``k - 1``
        (one-based; an index 0 in the file raises). "auto" follows
        :func:`sklearn.datasets.load_svmlight_file`: zero-based if any index is 0, else
        one-based (LETOR files are one-based). Read a test file the way its training file
        was read.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features) or csr_matrix
    y : ndarray of float64, shape (n_samples,)
    qid : ndarray of int64, shape (n_samples,)
        The ``qid:`` values as written, or, from a query file, ``0 .. n_queries - 1`` via
        :func:`skltr.utils.group_sizes_to_qid`.

    Raises
    ------
    ValueError
        On a malformed line, naming the file, the 1-based line number and the offending
        token: a label or value that is not a number, a token that is not ``index:value``,
        a negative or non-integer index, a non-integer qid, a qid that is not right after
        the label, a repeated index, lines mixing qid and no qid, an index 0 with
        ``zero_based=False``, an index beyond ``n_features``, or group sizes that do not add
        up to the number of lines.

    See Also
    --------
    dump_letor : the writer; ``load_letor`` reads back exactly what it wrote.
    sklearn.datasets.load_svmlight_file : sklearn's reader (requires sorted indices, no
        ``.query`` files).

    Examples
    --------
    >>> import io
    >>> from skltr.datasets import load_letor
    >>> f = io.BytesIO(b"2 qid:7 1:0.5 3:1\\n0 qid:7 2:4  # doc b\\n1 qid:9 1:-1\\n")
    >>> X, y, qid = load_letor(f)
    >>> X
    array([[ 0.5,  0. ,  1. ],
           [ 0. ,  4. ,  0. ],
           [-1. ,  0. ,  0. ]])
    >>> y.tolist(), qid.tolist()
    ([2.0, 0.0, 1.0], [7, 7, 9])

    Read as LightGBM and XGBoost read a file (index = column; column 0 is then empty):

    >>> f.seek(0)
    0
    >>> load_letor(f, zero_based=True)[0].shape
    (3, 4)
    """
    X, y, qid, _ = _load_letor(path, n_features=n_features, dense=dense, dtype=dtype,
                               query_file=query_file, zero_based=zero_based)
    return X, y, qid


def _load_letor(path, *, n_features=None, dense=True, dtype=np.float64, query_file=None,
                zero_based="auto", max_features=None, return_lines=False):
    """:func:`load_letor`, also returning whether the indices were read zero-based (what
    ``zero_based="auto"`` decided), and with ``return_lines`` the file line of every row.

    ``max_features``: a file wider than this raises :class:`LetorWidthError` naming the
    first line with an index beyond it, before anything of the file's width is allocated.
    """
    if not (isinstance(dense, (bool, np.bool_)) or (isinstance(dense, str)
                                                     and dense == "auto")):
        raise ValueError(f"dense must be True, False or 'auto'; got {dense!r}.")
    if isinstance(zero_based, (bool, np.bool_)):
        zero_based = bool(zero_based)
    elif not (isinstance(zero_based, str) and zero_based == "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto'; got {zero_based!r}.")
    if n_features is not None and (
        isinstance(n_features, bool) or not isinstance(n_features, Integral) or n_features < 0
    ):
        raise ValueError(f"n_features must be a non-negative int or None; got {n_features!r}.")
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype must be a floating dtype; got {dtype}.")
    is_file_obj = hasattr(path, "read")
    name = getattr(path, "name", "<file object>") if is_file_obj else os.fspath(path)

    data = _read_bytes(path)
    buf = np.frombuffer(data, dtype=np.uint8)
    max_rows = data.count(b"\n") + 1
    max_pairs = data.count(b":")
    counts, err, labels, qids, row_line, indptr, indices, values, slow = _parse_letor(
        buf, max_rows, max_pairs, _POW10, _POW10_HI, _POW10_LO
    )
    code, line, t0, t1, extra = (int(v) for v in err)
    if code != _OK:
        _raise_parse_error(name, data, code, line, t0, t1, extra)
    n_rows, nnz, n_slow, has_qid = (int(v) for v in counts)
    labels = labels[:n_rows]
    indptr = indptr[: n_rows + 1]
    indices = indices[:nnz]
    values = values[:nnz]
    row_line = row_line[:n_rows]

    # Numbers the kernel left to Python (long significands, nan, inf, far exponents).
    for kind, where, s, e in slow[:n_slow].tolist():
        try:
            v = float(data[s:e])
        except ValueError:
            row = where if kind == 0 else int(np.searchsorted(indptr, where, "right")) - 1
            what = "label" if kind == 0 else "feature value"
            raise ValueError(
                f"{name}: line {row_line[row]}: {what} {_token(data, s, e)!r} is not a number."
            ) from None
        if kind == 0:
            labels[where] = v
        else:
            values[where] = v

    # Index base.
    has_zero = nnz > 0 and int(indices.min()) == 0
    if zero_based is False and has_zero:
        row = _row_of_entry(indptr, int(np.flatnonzero(indices == 0)[0]))
        raise LetorIndexError(
            f"{name}: line {row_line[row]}: feature index 0 but zero_based=False (indices "
            f"are 1-based); pass zero_based=True or 'auto'.",
            where=f"{name}: line {row_line[row]}", index=0, zero_based=False,
            n_features=n_features)
    if zero_based is False or (zero_based == "auto" and not has_zero):
        shift = 1
        indices = indices - 1
    else:
        shift = 0
    width = int(indices.max()) + 1 if nnz else 0
    if max_features is not None and width > max_features:
        k = int(np.flatnonzero(indices >= max_features)[0])
        where = f"{name}: line {row_line[_row_of_entry(indptr, k)]}"
        raise LetorWidthError(
            f"{where}: feature index {int(indices[k]) + shift} makes the data at least "
            f"{int(indices[k]) + 1} features wide, beyond the {max_features} allowed.",
            where=where, index=int(indices[k]) + shift, width=width, limit=max_features)
    if n_features is None:
        n_features = width
    elif width > n_features:
        k = int(np.flatnonzero(indices >= n_features)[0])
        row = _row_of_entry(indptr, k)
        raise LetorIndexError(
            f"{name}: line {row_line[row]}: feature index {int(indices[k]) + shift} is beyond "
            f"n_features={n_features} (indices are {'one' if shift else 'zero'}-based).",
            where=f"{name}: line {row_line[row]}", index=int(indices[k]) + shift,
            zero_based=not shift, n_features=n_features)

    # Query ids.
    if has_qid == 1:
        if query_file is not None and query_file is not False:
            raise ValueError(
                f"{name} has qid: tokens on its lines and query_file={query_file!r} was given; "
                f"use one source of query ids (drop query_file)."
            )
        qid = qids[:n_rows].astype(QID_DTYPE)
    else:
        qpath = None
        if query_file is None and not is_file_obj:
            candidate = os.fspath(path) + ".query"
            if os.path.exists(candidate):
                qpath = candidate
        elif query_file is not None and query_file is not False:
            qpath = os.fspath(query_file)
            if not os.path.exists(qpath):
                raise ValueError(f"query_file {qpath!r} does not exist.")
        if qpath is not None:
            qid = _read_query_file(qpath, n_rows, name)
        elif n_rows == 0:
            qid = np.zeros(0, dtype=QID_DTYPE)
        else:
            looked = (
                f" and no query file {os.fspath(path) + '.query'!r} exists"
                if query_file is None and not is_file_obj else ""
            )
            raise MissingQidError(
                f"{name} has no qid: tokens{looked}; pass query_file= with the group sizes "
                f"(one integer per line), or write qid:<id> after each label.",
                where=f"{name} has no qid: tokens{looked}")

    values = values.astype(dtype, copy=False)
    dense_bytes = n_rows * n_features * dtype.itemsize
    csr_bytes = nnz * (dtype.itemsize + 4) + (n_rows + 1) * 4
    if dense == "auto":
        dense = dense_bytes <= max(_AUTO_DENSE_BYTES, _AUTO_DENSE_RATIO * csr_bytes)
    elif dense and dense_bytes > max(_DENSE_REFUSE_BYTES, _DENSE_WASTE * csr_bytes):
        k = int(np.argmax(indices))
        where = f"{name}: line {row_line[_row_of_entry(indptr, k)]}"
        raise LetorWidthError(
            f"{where}: feature index {int(indices[k]) + shift} makes the data {n_features} "
            f"features wide: a dense array of {n_rows} x {n_features} ({dense_bytes / 2**30:.1f}"
            f" GiB) for {nnz} values. Read the file as a CSR matrix with dense=False (or "
            f"dense='auto'), or check that line.",
            where=where, index=int(indices[k]) + shift, width=n_features, limit=None)
    if dense:
        # Assignment, not csr.toarray() (which adds into zeros and so turns -0.0 into 0.0).
        X = np.zeros((n_rows, n_features), dtype=dtype)
        X[np.repeat(np.arange(n_rows), np.diff(indptr)), indices] = values
    else:
        index_dtype = np.int32 if max(n_features, nnz) < 2**31 else np.int64
        X = sp.csr_matrix(
            (values, indices.astype(index_dtype), indptr.astype(index_dtype)),
            shape=(n_rows, n_features),
        )
    out = X, labels.astype(Y_DTYPE, copy=True), qid, shift == 0
    return (*out, row_line) if return_lines else out


def _row_of_entry(indptr, k):
    return int(np.searchsorted(indptr, k, "right")) - 1


def _raise_parse_error(name, data, code, line, t0, t1, extra):
    tok = _token(data, t0, t1) if code != _MIXED_QID else ""
    where = f"{name}: line {line}: "
    if code == _BAD_LABEL:
        hint = " (the line must start with its label)" if ":" in tok else ""
        msg = f"label {tok!r} is not a number{hint}."
    elif code == _NO_COLON:
        msg = f"expected index:value, got {tok!r}."
    elif code == _BAD_INDEX:
        index = tok.split(":", 1)[0]
        if index.isdigit():  # more digits than an int64 holds
            msg = (f"feature index {_token(data, t0, t0 + len(index.encode()), 30)} is too "
                   f"large (at most 18 digits).")
        else:
            msg = f"bad feature index in {tok!r}: indices are non-negative integers."
    elif code == _BAD_VALUE:
        msg = f"bad feature value in {tok!r}: values are numbers."
    elif code == _BAD_QID:
        msg = f"bad query id in {tok!r}: qid must be an integer."
    elif code == _QID_POSITION:
        msg = f"{tok!r} must come right after the label, before the features."
    elif code == _DUPLICATE:
        msg = f"feature index {extra} appears more than once."
    elif code == _MIXED_QID:
        msg = (
            f"this line {'has a' if t0 else 'has no'} qid: token but line {extra} (the first data "
            f"line) {'has none' if t0 else 'has one'}; either every line carries qid:<id> or "
            f"none does."
        )
    else:  # pragma: no cover - kernel and wrapper out of sync
        msg = f"parse error {code}."
    raise ValueError(where + msg)


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


def _fmt(v):
    """Shortest text that reads back as exactly ``v`` (Python's repr), without a '.0' tail."""
    r = repr(v)
    return r[:-2] if r.endswith(".0") else r


def dump_letor(path, X, y, qid, *, zero_based=False, comment=None, query_file=False,
               nan_policy="raise"):
    """Write a ranking data set as a LETOR / SVMlight file.

    Each row becomes ``<label> qid:<id> <index>:<value> ...`` with only its non-zero values,
    in increasing index order. Numbers are written with Python's ``repr`` (the shortest text
    that reads back as the same double), so ``load_letor`` returns identical arrays.

    Parameters
    ----------
    path : str, path-like or file object
        Destination, overwritten atomically: the file (and the ``.query`` file) is written
        to a temporary file that replaces it only once complete, so a failed write leaves
        the old file. A file object opened in text or binary mode also works.
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Features. Zeros (also explicitly stored zeros of a sparse matrix) are not written.
        float32 values are written as their exact float64 value.
    y : array-like of shape (n_samples,)
        Relevance labels; finite numbers. Integral labels are written without decimals.
    qid : array-like of shape (n_samples,)
        Query id per row. Written as ``qid:`` tokens, which requires integer ids; rows are
        written in the given order (LETOR readers expect each query's rows to be contiguous).
    zero_based : bool, default=False
        Write feature indices from 0 instead of LETOR's 1.
    comment : str, optional
        Written at the top of the file, every line prefixed with ``"# "``.
    query_file : bool, str or path-like, default=False
        True writes the grouping to ``str(path) + ".query"`` (LightGBM's convention: the
        number of consecutive rows of each query, one per line) and omits the ``qid:``
        tokens; a path writes the group sizes there. Then each query's rows must be
        contiguous, and any id type is accepted; the file read back gives qid ``0 .. n-1``.
    nan_policy : {"raise", "write"}, default="raise"
        LETOR has no convention for missing values: "raise" rejects NaN in ``X``; "write"
        writes them as ``nan``, which :func:`load_letor`, scikit-learn and LightGBM read back
        as NaN.

    Notes
    -----
    Trailing all-zero columns leave no trace in the file: pass ``n_features=X.shape[1]`` to
    :func:`load_letor` to get the same width back.

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from skltr.datasets import dump_letor, load_letor
    >>> X = np.array([[0.5, 0.0], [0.0, 1e-20], [3.0, 0.1]])
    >>> f = io.StringIO()
    >>> dump_letor(f, X, [2, 0, 1], [7, 7, 9])
    >>> print(f.getvalue(), end="")
    2 qid:7 1:0.5
    0 qid:7 2:1e-20
    1 qid:9 1:3 2:0.1
    >>> X2, y2, qid2 = load_letor(io.StringIO(f.getvalue()))
    >>> bool((X2 == X).all()), y2.tolist(), qid2.tolist()
    (True, [2.0, 0.0, 1.0], [7, 7, 9])
    """
    if zero_based not in (True, False):
        raise ValueError(f"zero_based must be True or False; got {zero_based!r}.")
    if nan_policy not in ("raise", "write"):
        raise ValueError(f"nan_policy must be 'raise' or 'write'; got {nan_policy!r}.")
    if sp.issparse(X):
        X = sp.csr_matrix(X)  # a copy only when X is not already CSR
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D; got shape {X.shape}.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric; got dtype {X.dtype}.")
        X = X.copy()
        X.eliminate_zeros()
        X.sort_indices()
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D; got shape {X.shape}.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric; got dtype {X.dtype}.")
        X = sp.csr_matrix(X)  # keeps non-zeros, NaN included
    n_samples = X.shape[0]
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(f"y must be 1-D with one label per row; got shape {y.shape} for "
                         f"{n_samples} rows.")
    if y.dtype.kind not in "biuf" or not np.all(np.isfinite(y)):
        raise ValueError("y must hold finite numbers (relevance labels).")
    qid = check_qid(qid, n_samples)

    data = X.data.astype(np.float64)
    if nan_policy == "raise" and np.isnan(data).any():
        k = int(np.flatnonzero(np.isnan(data))[0])
        row = _row_of_entry(X.indptr, k)
        raise ValueError(
            f"X has NaN (first at row {row}, column {int(X.indices[k])}); LETOR files have no "
            f"missing-value convention. Impute them, or pass nan_policy='write' to write "
            f"'nan' (read back as NaN by load_letor, scikit-learn and LightGBM)."
        )

    # Query grouping.
    if query_file is not False:
        if query_file is True:
            if hasattr(path, "write"):
                raise ValueError("query_file=True needs a path for the main file; pass "
                                 "query_file=<path of the .query file>.")
            qpath = os.fspath(path) + ".query"
        else:
            qpath = os.fspath(query_file)
        change = np.ones(n_samples, dtype=bool)
        if n_samples:
            change[1:] = qid[1:] != qid[:-1]
        starts = np.flatnonzero(change)
        run_ids = qid[starts]
        uniq, first, cnt = np.unique(run_ids, return_index=True, return_counts=True)
        if np.any(cnt > 1):
            bad = int(np.flatnonzero(cnt > 1)[0])
            rows = starts[run_ids == uniq[bad]]
            raise ValueError(
                f"query {uniq[bad].item()!r} is not contiguous (its rows restart at rows "
                f"{int(rows[0])} and {int(rows[1])}); a query file can only describe "
                f"consecutive rows. Sort the rows by qid first, or write qid tokens."
            )
        sizes = np.diff(np.append(starts, n_samples))
        qid_tokens = None
    else:
        if qid.dtype.kind == "f" and np.all(qid == np.round(qid)):
            qid = qid.astype(np.int64)
        if qid.dtype.kind not in "iu" or (qid.dtype.kind == "u" and qid.size and
                                          int(qid.max()) >= 2**63):
            raise ValueError(
                f"qid tokens must be integers; got dtype {qid.dtype}. Pass integer ids, or "
                f"query_file=True to write the grouping as a side file of group sizes."
            )
        qid_tokens = [f" qid:{q}" for q in qid.tolist()]

    offset = 0 if zero_based else 1
    pairs = [
        f"{i}:{_fmt(v)}" for i, v in zip((X.indices.astype(np.int64) + offset).tolist(),
                                         data.tolist())
    ]
    labels = [_fmt(float(v)) for v in y.tolist()]
    ptr = X.indptr.tolist()

    lines = []
    if comment is not None:
        lines.extend("# " + c if c else "#" for c in str(comment).splitlines())
    for r in range(n_samples):
        feats = " ".join(pairs[ptr[r]:ptr[r + 1]])
        lines.append(
            labels[r] + (qid_tokens[r] if qid_tokens is not None else "")
            + (" " + feats if feats else "")
        )
    text = "\n".join(lines) + ("\n" if lines else "")

    # Each path is written atomically (a temporary file renamed over it), and both files
    # are written out in full before either is renamed: a failed write leaves the old files.
    with contextlib.ExitStack() as files:
        if hasattr(path, "write"):
            try:
                path.write(text)
            except TypeError:
                path.write(text.encode("ascii"))
        else:
            fh = files.enter_context(atomic_write(path, "w", encoding="ascii", newline="\n"))
            fh.write(text)
            fh.flush()
        if query_file is not False:
            fh = files.enter_context(atomic_write(qpath, "w", encoding="ascii", newline="\n"))
            fh.write("".join(f"{int(s)}\n" for s in sizes))
            fh.flush()
