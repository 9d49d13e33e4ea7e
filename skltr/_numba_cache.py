"""Where numba keeps the compiled kernels of skltr: a per-user cache, never the install.

numba's default puts ``cache=True`` kernels in ``__pycache__`` beside their source file. For an
installed package that is ``site-packages/skltr/**/__pycache__``: uninstalling leaves those
folders behind (pip removes only what it installed), and Python then imports the leftover
``skltr/`` folder as an empty namespace package, so every later ``import skltr`` fails. The
locator below sends the kernels of skltr's own source files to

1. ``$NUMBA_CACHE_DIR`` when the user set it (numba's own rule, left to numba);
2. else ``$SKLTR_CACHE_DIR``, else the platform's user cache directory
   (``~/.cache/skltr`` on Linux), in a folder named for the skltr, Python and numba versions,
   so an upgrade starts a fresh cache instead of sifting through stale entries;
3. else, when that is not writable (a read-only home), a folder under the system's temporary
   directory, and if even that fails a new temporary folder for this process.

So the package directory is never written and a read-only install works. numba still checks
each entry against a hash of its source file, so editing a kernel recompiles it.

:func:`install` runs when a kernel module is imported (``skltr._cpu`` and the few other modules
with ``cache=True`` kernels import this module first); ``import skltr`` itself does not import
numba.
"""

from __future__ import annotations

import os
import sys
import tempfile

from numba.core import caching, config
from numba.misc.appdirs import AppDirs

from ._version import __version__

__all__ = ["announce_first_compile", "cache_root", "install"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def cache_root() -> str:
    """The folder that holds skltr's kernel caches for this skltr / Python / numba."""
    import numba  # noqa: PLC0415 - already imported by numba.core above

    base = os.environ.get("SKLTR_CACHE_DIR") or AppDirs("skltr", appauthor=False).user_cache_dir
    tag = f"{__version__}-py{sys.version_info[0]}{sys.version_info[1]}-numba{numba.__version__}"
    return os.path.join(base, tag)


#: numba's cache implementation class holding the locator list (renamed in numba 0.60)
_CACHE_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl


class _SkltrCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba cache locator for skltr's own source files (see the module docstring)."""

    def __init__(self, py_func, py_file, root):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        rel = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), _PACKAGE_DIR)
        self._cache_path = os.path.join(root, rel)

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        path = os.path.abspath(py_file)
        if config.CACHE_DIR or not path.startswith(_PACKAGE_DIR + os.sep):
            return None  # NUMBA_CACHE_DIR, or not skltr's code: numba's own locators
        fallback = os.path.join(tempfile.gettempdir(), f"skltr-cache-{_user()}")
        for root in (cache_root(), os.path.join(fallback, os.path.basename(cache_root()))):
            locator = cls(py_func, py_file, root)
            try:
                locator.ensure_cache_path()
                return locator
            except OSError:
                continue
        locator = cls(py_func, py_file, _process_dir())
        locator.ensure_cache_path()
        return locator


def _user() -> str:
    try:
        return str(os.getuid())
    except AttributeError:  # Windows
        return os.environ.get("USERNAME", "user")


_PROCESS_DIR = None


def _process_dir() -> str:
    global _PROCESS_DIR
    if _PROCESS_DIR is None:
        _PROCESS_DIR = tempfile.mkdtemp(prefix="skltr-cache-")
    return _PROCESS_DIR


_ANNOUNCED = False


def _has_cached_kernels(root: str) -> bool:
    for _dirpath, _dirs, files in os.walk(root):
        if any(f.endswith(".nbi") for f in files):
            return True
    return False


def announce_first_compile() -> None:
    """Say once, on stderr, that kernels are being compiled when this skltr / numba has no
    cached kernels yet (a first run spends about 30 s of a 2-core machine compiling them:
    ``benchmarks/cold_start.py``); quiet afterwards, and with ``SKLTR_QUIET=1``."""
    global _ANNOUNCED
    if _ANNOUNCED or os.environ.get("SKLTR_QUIET"):
        return
    _ANNOUNCED = True
    root = config.CACHE_DIR or cache_root()
    if _has_cached_kernels(root):
        return
    print(f"skltr: compiling numba kernels, once for this skltr and numba version (about "
          f"30 s on 2 cores); later runs load them from {root}", file=sys.stderr, flush=True)


def install() -> None:
    """Put the skltr locator first in numba's list (once)."""
    classes = _CACHE_IMPL._locator_classes
    if _SkltrCacheLocator not in classes:
        classes.insert(0, _SkltrCacheLocator)


install()
