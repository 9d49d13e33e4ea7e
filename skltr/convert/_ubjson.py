"""A bounded Universal Binary JSON (draft 12) reader, enough for XGBoost's ``.ubj`` models.

Model files are untrusted input, so every length and count the data gives is checked
against the bytes that are left before anything is read or allocated: a truncated or
corrupt file ends in a ``ValueError`` that names the byte offset, never in a loop, a huge
allocation or a ``RecursionError``. Typed numeric arrays (``[$d#<n>...``) come back as
NumPy arrays read in one go (big-endian, as UBJSON stores them); float32 values (``d``) are
kept exactly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["read_ubjson", "MAX_DEPTH"]

#: Deepest nesting of containers accepted. XGBoost's model documents nest about 10 levels;
#: the bound keeps the recursive reader far from Python's recursion limit.
MAX_DEPTH = 100

_FIXED = {
    b"i": np.dtype(">i1"), b"U": np.dtype(">u1"), b"I": np.dtype(">i2"),
    b"l": np.dtype(">i4"), b"L": np.dtype(">i8"), b"d": np.dtype(">f4"),
    b"D": np.dtype(">f8"),
}
_INTEGERS = (b"i", b"U", b"I", b"l", b"L")
_NO_PAYLOAD = (b"Z", b"T", b"F")  # values that take no byte after their marker


def read_ubjson(raw: bytes, *, what: str = "the UBJSON data"):
    """Decode UBJSON bytes whose top-level value is an object.

    Parameters
    ----------
    raw : bytes
        The whole document.
    what : str
        How error messages name the data (e.g. the file's path).

    Returns
    -------
    dict
        Objects as dicts, arrays as lists, typed numeric arrays as NumPy arrays.

    Raises
    ------
    ValueError
        On truncated data, a length or count beyond the bytes left, a negative length, an
        unknown marker, invalid UTF-8 in a string, nesting deeper than :data:`MAX_DEPTH`,
        bytes after the top-level object, or a top-level value that is not an object. The
        message names ``what`` and the byte offset.
    """
    reader = _Reader(raw, what)
    value = reader.value(reader.marker(), 0)
    if not isinstance(value, dict):
        raise ValueError(f"{what}: the top-level UBJSON value is not an object")
    if raw[reader.pos:].strip(b"N \t\r\n"):  # trailing no-ops / whitespace are harmless
        raise reader.error("unexpected bytes after the top-level object", reader.pos)
    return value


class _Reader:
    def __init__(self, raw: bytes, what: str):
        self.buf = memoryview(raw)
        self.pos = 0
        self.what = what

    def error(self, text: str, offset: int) -> ValueError:
        return ValueError(f"{self.what}: {text} at byte {offset} of {len(self.buf)}; the file "
                          f"is truncated or corrupt, or is not UBJSON")

    def left(self) -> int:
        return len(self.buf) - self.pos

    def take(self, n: int) -> memoryview:
        if n < 0 or n > self.left():
            raise self.error(f"a length of {n} bytes runs past the end of the data", self.pos)
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def marker(self) -> bytes:
        while True:
            if self.pos >= len(self.buf):
                raise self.error("unexpected end of data", self.pos)
            m = bytes(self.buf[self.pos:self.pos + 1])
            self.pos += 1
            if m != b"N":  # no-op
                return m

    def integer(self, marker: bytes) -> int:
        if marker not in _INTEGERS:
            raise self.error(f"expected an integer marker, found {marker!r}", self.pos - 1)
        dt = _FIXED[marker]
        return int(np.frombuffer(self.take(dt.itemsize), dtype=dt)[0])

    def length(self, marker: bytes, per_item: int, what: str) -> int:
        """A length or count that the data gives, checked against the bytes left: each of
        the ``n`` items takes at least ``per_item`` bytes."""
        at = self.pos - 1
        n = self.integer(marker)
        if n < 0:
            raise self.error(f"negative {what} {n}", at)
        if n * per_item > self.left():
            raise self.error(f"{what} {n} needs at least {n * per_item} bytes but only "
                             f"{self.left()} are left", at)
        return n

    def string(self, marker: bytes | None = None) -> str:
        at = self.pos
        n = self.length(self.marker() if marker is None else marker, 1, "string length")
        try:
            return bytes(self.take(n)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"a string is not valid UTF-8 ({exc.reason})", at) from None

    def value(self, m: bytes, depth: int):
        if m in _FIXED:
            dt = _FIXED[m]
            v = np.frombuffer(self.take(dt.itemsize), dtype=dt)[0]
            return float(v) if dt.kind == "f" else int(v)
        if m == b"S":
            return self.string()
        if m == b"H":  # high-precision number, as a string
            at = self.pos
            s = self.string()
            try:
                return float(s) if any(c in s for c in ".eE") else int(s)
            except ValueError:
                raise self.error(f"high-precision number {s[:40]!r} is not a number",
                                 at) from None
        if m == b"C":
            return bytes(self.take(1)).decode("latin-1")
        if m == b"T":
            return True
        if m == b"F":
            return False
        if m == b"Z":
            return None
        if m in (b"[", b"{"):
            if depth >= MAX_DEPTH:
                raise self.error(f"containers nested deeper than {MAX_DEPTH} levels",
                                 self.pos - 1)
            return self.array(depth + 1) if m == b"[" else self.object(depth + 1)
        raise self.error(f"unknown UBJSON marker {m!r}", self.pos - 1)

    def header(self, per_key: int):
        """Optional ``$type`` and ``#count`` of an optimised container; ``per_key``: bytes
        each entry takes besides its value (an object's key takes at least 2)."""
        typ = count = None
        m = self.marker()
        if m == b"$":
            typ = bytes(self.take(1))
            if typ not in _FIXED and typ not in (b"S", b"H", b"C", b"[", b"{", *_NO_PAYLOAD):
                raise self.error(f"unknown container type {typ!r}", self.pos - 1)
            m = self.marker()
            if m != b"#":
                raise self.error("a typed UBJSON container must give its count", self.pos - 1)
        if m == b"#":
            # Every entry takes at least one byte (its marker or payload), except values
            # that have neither (typed null / true / false): those still may not outnumber
            # the bytes left, which keeps the result's size linear in the file's.
            if typ in _FIXED:
                per_item = _FIXED[typ].itemsize
            elif typ in _NO_PAYLOAD:
                per_item = 0
            else:
                per_item = 1
            count = self.length(self.marker(), max(per_item + per_key, 1), "container count")
            m = None
        return typ, count, m

    def array(self, depth: int):
        typ, count, m = self.header(per_key=0)
        if count is not None:
            if typ in _FIXED:
                dt = _FIXED[typ]
                return np.frombuffer(self.take(dt.itemsize * count), dtype=dt).copy()
            return [self.value(typ if typ is not None else self.marker(), depth)
                    for _ in range(count)]
        out = []
        while m != b"]":
            out.append(self.value(m, depth))
            m = self.marker()
        return out

    def object(self, depth: int):
        typ, count, m = self.header(per_key=2)
        out = {}
        if count is not None:
            for _ in range(count):
                key = self.string()
                out[key] = self.value(typ if typ is not None else self.marker(), depth)
            return out
        while m != b"}":
            key = self.string(m)
            out[key] = self.value(self.marker(), depth)
            m = self.marker()
        return out
