"""The ``skltr`` command's input files and outputs: LETOR/SVMlight files read as the
model's library reads them, checked before any long work; output paths; progress.

Files are read as the model's library reads them. Feature indices: LightGBM
(``lgb.Dataset(path)``) and XGBoost (``DMatrix(path + "?format=libsvm")``: dmlc's LibSVM
parser, ``indexing_mode`` 0 by default) number columns by the index as written (index 1 is
column 1, column 0 stays empty), so ``predict`` reads files zero-based for their models; a
skltr model records how ``skltr train`` read its training file and is read the same way
(models without the record: "auto", scikit-learn's rule -- zero-based only when some index
is 0); ``--zero-based`` overrides. Absent entries: a file is scored as a sparse matrix, so an
entry a line leaves out means what it means to the model's library (0.0 for LightGBM and
skltr, missing for XGBoost, whose loader keeps a written ``k:0`` as the value 0).

Bad input ends in one line on stderr and exit status 2, before any long work where it can:
``-o`` is checked (its folder exists and is writable) before a model is trained or a file
scored; a data file without data lines, a label that is not finite, +-inf where the model
refuses it, or a feature index that would make ``skltr train`` allocate per-feature tables
for an absurd width (more than :data:`MAX_TRAIN_FEATURES`) is refused naming the file and the
line. Every output file is written atomically (a temporary file renamed over it): a failed
command leaves an existing file as it was.
"""

from __future__ import annotations

import os
import sys

import numpy as np

#: ``--zero-based`` choices.
_ZERO_BASED = {"auto": "auto", "true": True, "false": False}

#: The widest data ``skltr train`` takes: its rankers keep tables per feature (bin edges,
#: histograms) whatever the file's density, so an index far beyond the real features (a
#: typo, a corrupt line) would have them allocate for every column up to it.
MAX_TRAIN_FEATURES = 1 << 20


class CommandError(Exception):
    """A mistake in a command's input, reported as one line (``skltr CMD: error: ...``)."""


def _indexing_words(zero_based) -> str:
    return ("zero-based (index k is column k)" if zero_based is True else
            "one-based (index k is column k-1)" if zero_based is False else
            "'auto' (zero-based only if some index is 0)")


def model_file_indexing(source):
    """How ``skltr predict`` reads a data file for a model: ``(zero_based, why)``.

    ``source`` is the model's provenance record (``TreeEnsemble.source``, or the rule model
    document's ``meta["source"]``). As the model's library reads LibSVM files when it trains
    from one: LightGBM and XGBoost number columns by the index as written; a skltr model is
    read as ``skltr train`` read its training file (``source["file_zero_based"]``), else
    with "auto".
    """
    source = source or {}
    library = source.get("library")
    if library == "lightgbm":
        return True, "as LightGBM reads LibSVM files"
    if library == "xgboost":
        return True, "as XGBoost reads LibSVM files (indexing_mode=0)"
    if library == "skltr" and isinstance(source.get("file_zero_based"), bool):
        return source["file_zero_based"], "as skltr train read the model's training file"
    return "auto", "scikit-learn's load_svmlight_file rule"


def _read_letor(path, *, zero_based, why, n_features=None, query_file=None, model_words="",
                max_features=None, width_words=None):
    """``load_letor`` as CSR plus the indexing used and each row's line; errors become one
    line of advice. A file without data lines is refused."""
    from .datasets._svmlight import (  # noqa: PLC0415
        LetorIndexError, LetorWidthError, MissingQidError, _load_letor)

    try:
        X, y, qid, used, lines = _load_letor(
            path, n_features=n_features, dense=False, query_file=query_file,
            zero_based=zero_based, max_features=max_features, return_lines=True)
    except MissingQidError as exc:
        raise CommandError(
            f"{exc.where}; pass --query-file with the group sizes (one integer per line), "
            f"or write qid:<id> after each label.") from None
    except LetorWidthError as exc:
        raise CommandError(
            f"{exc.where}: feature index {exc.index} makes the data {exc.width:,} features "
            f"wide, beyond the {exc.limit:,} that {width_words(exc.width)}; check that line "
            f"(a typo or a corrupt file?).") from None
    except LetorIndexError as exc:
        if exc.index == 0:
            raise CommandError(
                f"{exc.where}: feature index 0, but the file is read one-based ({why}); pass "
                f"--zero-based true if this file is zero-based.") from None
        other = "false" if exc.zero_based else "true"
        raise CommandError(
            f"{exc.where}: feature index {exc.index} does not fit {model_words}"
            f"{exc.n_features} features when the file is read "
            f"{'zero' if exc.zero_based else 'one'}-based ({why}); if the file is "
            f"{'one' if exc.zero_based else 'zero'}-based, pass --zero-based {other}, else "
            f"the file does not belong to this model.") from None
    if X.shape[0] == 0:
        raise CommandError(
            f"{path} has no data lines (it is empty, or holds only comments and blank "
            f"lines); give a LETOR/SVMlight file with one '<label> qid:<id> <index>:<value> "
            f"...' line per document.")
    return X, y, qid, used, lines


def _bad_label(path, y, lines):
    """``None`` when every label is a finite number, else the line that says which is not."""
    bad = ~np.isfinite(y)
    if not bad.any():
        return None
    row = int(np.argmax(bad))
    return f"{path}: line {lines[row]}: label {y[row]} is not a finite number"


def _first_entry(X, bad, used):
    """``(row, index as written, value)`` of the first stored entry of CSR ``X`` in
    ``bad`` (a mask over ``X.data``)."""
    k = int(np.argmax(bad))
    row = int(np.searchsorted(X.indptr, k, side="right")) - 1
    return row, int(X.indices[k]) + (0 if used else 1), X.data[k]


def _refuse_inf(path, X, lines, used, why):
    """Refuse a CSR ``X`` holding +-inf, naming the line and the index as written."""
    bad = np.isinf(X.data)
    if bad.any():
        row, index, value = _first_entry(X, bad, used)
        raise CommandError(
            f"{path}: line {lines[row]}: feature {index} is {value}: {why} refuse infinity "
            f"(NaN is read as missing); replace it with nan or a finite value.")


def _refuse_what_xgboost_files_cannot_hold(path, X, lines, used):
    """XGBoost's LibSVM reader (``DMatrix("file?format=libsvm")``, XGBoost 3.2) has no
    value for a written ``nan`` or ``inf``: it reads 0.0 or refuses the file ("Input data
    contains inf", a failed check), depending on where the entry stands on its line. Refuse
    them, naming the line, rather than score what XGBoost would not."""
    bad = ~np.isfinite(X.data)
    if bad.any():
        row, index, value = _first_entry(X, bad, used)
        raise CommandError(
            f"{path}: line {lines[row]}: feature {index} is {value}, which XGBoost's LibSVM "
            f"reader does not read as a value (it reads 0.0 or refuses the file, depending on "
            f"the entry's place on the line), so this XGBoost model has no score for it; "
            f"write a finite value, or leave the entry out for a missing value.")


def _rule_model_source(path):
    """``meta["source"]`` (a dict, maybe empty) when ``path`` is a skltr rule model
    document (``OnDemandRuleRanker``), else None."""
    from .ranking._rule_ranker import DOC_KIND  # noqa: PLC0415
    from .utils._model_io import FORMAT_NAME, ModelFileError, load_document  # noqa: PLC0415

    try:
        doc = load_document(path)
    except (ModelFileError, OSError):
        return None
    if doc.get("format") != FORMAT_NAME or doc.get("kind") != DOC_KIND:
        return None
    source = (doc.get("meta") or {}).get("source")
    return source if isinstance(source, dict) else {}


def _output_path(path, what):
    """Check, before the command's work, that ``path`` (unless standard output) can be
    written; one line saying why not."""
    from .utils._atomic import check_writable  # noqa: PLC0415

    if path not in (None, "-"):
        try:
            check_writable(path, what)
        except ValueError as exc:
            raise CommandError(str(exc)) from None


def _progress(iterable, *, quiet: bool, desc: str, total: int | None = None):
    """tqdm progress bar, off with --quiet or when stderr is not a terminal."""
    from tqdm.auto import tqdm  # noqa: PLC0415

    disable = quiet or not sys.stderr.isatty()
    colour = None if os.environ.get("NO_COLOR") else "green"
    return tqdm(iterable, desc=desc, total=total, disable=disable, colour=colour,
                file=sys.stderr, leave=False)
