"""The skltr model file format: one versioned JSON document, no executable content.

A document looks like::

    {
      "format": "skltr-model",
      "schema_version": "1.3",            # MAJOR.MINOR of this layout
      "skltr_version": "0.1.0",           # the writer, for information
      "kind": "TreeEnsemble",             # what the payload describes
      "meta": {...},                      # JSON scalars, lists and dicts
      "arrays": {"name": {"dtype": "<f8", "shape": [3], "data": "<base64>"}, ...}
    }

Arrays are stored as base64 of their little-endian bytes, so floats round-trip bit for bit.
A reader accepts every document with the same MAJOR version (unknown keys of a newer MINOR are
ignored) and refuses another MAJOR with an error that says which versions it reads. The full
layout is documented in ``docs/model_format.rst``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import struct
import warnings

import numpy as np

from .._version import __version__

FORMAT_NAME = "skltr-model"
SCHEMA_VERSION = (1, 3)

__all__ = [
    "SCHEMA_VERSION",
    "encode_array",
    "decode_array",
    "make_document",
    "read_document",
    "save_document",
    "load_document",
    "ModelFileError",
    "model_file_errors",
    "VersionedPickleMixin",
]


class ModelFileError(ValueError):
    """A model file could not be read: the message names the file and the reason.

    Raised by every reader of model files (skltr JSON documents, XGBoost ``.json`` /
    ``.ubj``, LightGBM text, ``GPUHistGBDTRanker.load_model``); the error that revealed the
    problem, if any, is kept as ``__cause__``. A ``ValueError``, so ``except ValueError``
    keeps working. A missing or unreadable file still raises the ``OSError`` of ``open``.

    Attributes
    ----------
    path : str
        The file.
    reason : str
        What was wrong with it.
    """

    def __init__(self, path, reason: str):
        self.path = os.fspath(path) if isinstance(path, (str, os.PathLike)) else str(path)
        self.reason = reason
        # Messages of the format readers may name the file already: do not repeat it.
        if self.path in reason:
            message = reason
        else:
            message = f"cannot read model file {self.path!r}: {reason}"
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.path, self.reason))


#: What a parser raises on a truncated or corrupt file (struct.error: binary layouts such as
#: UBJSON; RecursionError: absurdly nested JSON). OSError is not among them: a missing or
#: unreadable file keeps its own error, which names the path.
_PARSE_ERRORS = (ValueError, KeyError, IndexError, TypeError, AttributeError, struct.error,
                 EOFError, OverflowError, RecursionError)


@contextlib.contextmanager
def model_file_errors(path):
    """Turn the parse errors raised inside the block into :class:`ModelFileError` for ``path``.

    ``ModelFileError`` and ``OSError`` pass through unchanged; anything in
    ``_PARSE_ERRORS`` becomes a ``ModelFileError`` naming ``path`` and the reason, with the
    original error as ``__cause__``.
    """
    try:
        yield
    except ModelFileError:
        raise
    except _PARSE_ERRORS as exc:
        if isinstance(exc, (ValueError, OverflowError)) or type(exc) is TypeError:
            reason = str(exc)
        elif isinstance(exc, KeyError):
            reason = (f"required entry {exc} is missing; the file is truncated, corrupt or "
                      f"not a model of this kind")
        else:
            reason = (f"{type(exc).__name__}: {exc} (the file is truncated, corrupt or not "
                      f"a model of this kind)")
        raise ModelFileError(path, reason) from exc


def encode_array(arr: np.ndarray) -> dict:
    """Encode an array as ``{"dtype", "shape", "data"}`` with little-endian base64 bytes."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"only bool, integer and float arrays can be stored; got {arr.dtype}.")
    little = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
    data = np.ascontiguousarray(little).tobytes()
    return {"dtype": little.dtype.str, "shape": list(arr.shape),
            "data": base64.b64encode(data).decode("ascii")}


def decode_array(obj: dict) -> np.ndarray:
    """Inverse of :func:`encode_array`; returns a native-endian, writeable array."""
    try:
        if not isinstance(obj["dtype"], str):
            raise TypeError(f"dtype is {obj['dtype']!r:.40}, not a string")
        dtype = np.dtype(obj["dtype"])
        shape = obj["shape"]
        if not isinstance(shape, list) or len(shape) > 32 or not all(
                type(d) is int and d >= 0 for d in shape):
            raise ValueError(f"shape {shape!r:.60} is not a list of non-negative integers")
        shape = tuple(shape)
        raw = base64.b64decode(obj["data"], validate=True)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed array entry in model document: {exc}") from exc
    if dtype.kind not in "biuf":
        raise ValueError(f"model document holds an array of unsupported dtype {dtype}.")
    expected = math.prod(shape) * dtype.itemsize  # Python ints: no overflow
    if len(raw) != expected:
        raise ValueError(
            f"model document array of shape {shape} and dtype {dtype} needs {expected} bytes "
            f"but holds {len(raw)}; the file is truncated or corrupt."
        )
    return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def make_document(kind: str, meta: dict, arrays: dict) -> dict:
    """Build a model document (a plain dict ready for ``json.dump``)."""
    return {
        "format": FORMAT_NAME,
        "schema_version": f"{SCHEMA_VERSION[0]}.{SCHEMA_VERSION[1]}",
        "skltr_version": __version__,
        "kind": kind,
        "meta": meta,
        "arrays": {name: encode_array(a) for name, a in arrays.items()},
    }


def read_document(doc: dict, expected_kind: str | None = None) -> tuple[dict, dict]:
    """Check a model document's header and return ``(meta, arrays)``.

    Raises
    ------
    ValueError
        When the document is not a skltr model, is of another kind, or has a schema major
        version this skltr does not read.
    """
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise ValueError(
            "not a skltr model document (missing 'format': 'skltr-model'); XGBoost or "
            "LightGBM models are read with skltr.convert.from_xgboost / from_lightgbm."
        )
    version = str(doc.get("schema_version", ""))
    try:
        major, minor = (int(p) for p in version.split("."))
    except ValueError as exc:
        raise ValueError(f"model document has an invalid schema_version {version!r}.") from exc
    if major != SCHEMA_VERSION[0]:
        raise ValueError(
            f"model document has schema version {version}, written by skltr "
            f"{doc.get('skltr_version', '?')}; this skltr {__version__} reads schema "
            f"{SCHEMA_VERSION[0]}.x only. Use a skltr release that matches the file."
        )
    if minor > SCHEMA_VERSION[1]:
        warnings.warn(
            f"model document has schema {version}, newer than this skltr's "
            f"{SCHEMA_VERSION[0]}.{SCHEMA_VERSION[1]}; fields it does not know are ignored.",
            UserWarning,
            stacklevel=3,
        )
    kind = doc.get("kind")
    if expected_kind is not None and kind != expected_kind:
        raise ValueError(f"model document holds a {kind!r:.60}, not a {expected_kind!r}.")
    meta, arrays = doc.get("meta", {}), doc.get("arrays", {})
    for name, value in (("meta", meta), ("arrays", arrays)):
        if not isinstance(value, dict):
            raise ValueError(f"the document's {name!r} is a {type(value).__name__}, not a JSON "
                             f"object; the file is corrupt or was edited.")
    arrays = {name: decode_array(obj) for name, obj in arrays.items()}
    return dict(meta), arrays


def save_document(doc: dict, path) -> None:
    """Write a model document as compact UTF-8 JSON.

    The document is serialised before the file is opened, so that a value JSON cannot hold
    raises without touching ``path``; the file is written atomically (a temporary file
    renamed over ``path``: :func:`skltr.utils._atomic.atomic_write`), so a failed write
    leaves an existing file at ``path`` as it was.
    """
    from ._atomic import atomic_write  # noqa: PLC0415

    text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def load_document(path) -> dict:
    """Read a model document written by :func:`save_document`.

    Raises
    ------
    ModelFileError
        When the file is not UTF-8 JSON (e.g. truncated) or does not hold a JSON object;
        the message names the file.
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8") as fh:
        try:
            doc = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ModelFileError(path, f"not valid JSON ({exc}); the file is truncated or "
                                       f"corrupt") from exc
        except UnicodeDecodeError as exc:
            raise ModelFileError(path, f"not UTF-8 text ({exc}); a skltr model is a JSON "
                                       f"file") from exc
        except RecursionError as exc:
            raise ModelFileError(path, "its JSON nests arrays or objects too deeply to be a "
                                       "model; the file is corrupt") from exc
    if not isinstance(doc, dict):
        raise ModelFileError(path, f"holds a JSON {type(doc).__name__}, not a skltr model "
                                   f"document (a JSON object)")
    return doc


class VersionedPickleMixin:
    """Record the skltr version in pickles and warn when unpickling under another version.

    scikit-learn's ``BaseEstimator`` does the same for its own version; this adds skltr's.
    """

    def __getstate__(self):
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__
        state = dict(state)
        state["_skltr_version"] = __version__
        return state

    def __setstate__(self, state):
        pickled = state.pop("_skltr_version", None)
        if pickled is not None and pickled != __version__:
            warnings.warn(
                f"Unpickling a {type(self).__name__} saved by skltr {pickled} with skltr "
                f"{__version__}; this may break or give different results. Prefer the "
                f"versioned JSON format (save_model / load_model) to move models between "
                f"versions.",
                UserWarning,
                stacklevel=2,
            )
        if hasattr(super(), "__setstate__"):
            super().__setstate__(state)
        else:
            self.__dict__.update(state)
