"""Atomic file writes: a file is either its old content or its whole new content.

:func:`atomic_write` writes to a temporary file in the target's folder (so the final rename
stays on one file system), flushes and fsyncs it, and moves it over the target with
:func:`os.replace`, which is atomic on POSIX and Windows. When anything fails on the way --
a full disk, an interrupted process, an exception in the caller's block -- the temporary
file is removed and the target keeps its old content (or stays absent).
"""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["atomic_write", "check_writable"]


def _open_temp(folder: str, prefix: str, mode: str, **kwargs):
    """A new temporary file in ``folder`` opened with ``mode``; returns ``(file, path)``."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=folder)
    try:
        return os.fdopen(fd, mode, **kwargs), tmp
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", **kwargs):
    """Open ``path`` for writing so that it changes only when the block succeeds.

    Parameters
    ----------
    path : str or path-like
        The file to (over)write.
    mode : {"w", "wb"}
        Text or binary; ``kwargs`` (``encoding``, ``newline``) go to :func:`open`.

    Yields
    ------
    file object
        A temporary file in ``path``'s folder; on success it is flushed, fsynced and
        renamed to ``path`` (with the permissions of the file it replaces, or of a new
        file). On any error it is removed and ``path`` is left as it was. A symbolic link
        at ``path`` is replaced by the file, not written through.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write opens files with mode 'w' or 'wb'; got {mode!r}.")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fh, tmp = _open_temp(folder, f".{os.path.basename(path)}.", mode, **kwargs)
    try:
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        _set_mode(tmp, path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _set_mode(tmp: str, path: str) -> None:
    """mkstemp creates files readable by the owner only: give the file the permissions of
    the file it replaces, or those ``open`` gives a new file (0o666 less the umask)."""
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    with contextlib.suppress(OSError):
        os.chmod(tmp, mode)


def check_writable(path, what: str = "output file") -> None:
    """Raise a one-line ``ValueError`` saying why when ``path`` cannot be written.

    Checks, before any long work, that ``path`` is not a folder, that its folder exists and
    is a folder, and that the user may create files in it. (The final write can still fail,
    e.g. on a full disk; :func:`atomic_write` then leaves ``path`` as it was.)
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"{what} {path} is a directory; give a file path inside it, e.g. "
                         f"{os.path.join(path, 'model.json')}.")
    if not os.path.exists(folder):
        raise ValueError(f"cannot write {what} {path}: no such directory {folder}; create it "
                         f"first (mkdir -p {folder}).")
    if not os.path.isdir(folder):
        raise ValueError(f"cannot write {what} {path}: {folder} is not a directory.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write {what} {path}: the directory {folder} is not "
                         f"writable.")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        # os.replace would succeed anyway (the folder is writable), but a read-only file
        # says its owner does not want it changed
        raise ValueError(f"cannot write {what} {path}: the file is not writable.")
