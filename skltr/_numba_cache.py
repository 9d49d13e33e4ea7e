"""Where numba keeps the compiled kernels of skltr: a private per-user cache, never the install.

numba's default puts ``cache=True`` kernels in ``__pycache__`` beside their source file. For an
installed package that is ``site-packages/skltr/**/__pycache__``: uninstalling leaves those
folders behind (pip removes only what it installed), and Python then imports the leftover
``skltr/`` folder as an empty namespace package, so every later ``import skltr`` fails. The
locator below sends the kernels of skltr's own source files to

1. ``$NUMBA_CACHE_DIR`` when the user set it (numba's own rule, left to numba and trusted as
   the user's choice; likewise ``$NUMBA_CACHE_LOCATOR_CLASSES``);
2. else ``$SKLTR_CACHE_DIR``, else the platform's user cache directory
   (``~/.cache/skltr`` on Linux), in a folder named for the skltr, Python and numba versions,
   so an upgrade starts a fresh cache instead of sifting through stale entries;
3. else nowhere: the kernels are compiled in memory, in every process, and skltr says why
   once on stderr.

A cache folder is trusted code: numba reads its index files with ``pickle.load``, so whoever
can write the folder can run code in our process (issue #26: another local user created the
old fallback ``<tmp>/skltr-cache-<uid>`` first, mode 777, and planted index files). So the
folder of step 2 is used only when :func:`_check_folder` finds that nobody else can write it
or swap it: it is owned by us and not writable by group or others, it is not a symbolic link,
and every folder above it is owned by us or root and either not writable by others or sticky
(like ``/tmp``, where others cannot rename what is ours). Missing folders are created one by
one with mode 0700 and then checked like existing ones (``os.mkdir`` fails on a name someone
else took first; a folder someone else made is never chmod-ed). There is no fallback under the
shared temporary directory any more: a predictable name there is the attack, and a
process-private ``mkdtemp`` folder would save nothing (a new process starts it empty).
Windows has no POSIX owner or mode (``os.geteuid`` is missing): there the folder is only
created, and its protection is the per-user ACL of ``%LOCALAPPDATA%``.

"In memory" is numba's ``NullCache``: when no folder is safe, ``Dispatcher.enable_caching`` is
skipped for skltr's functions, so nothing is read from or written to disk for them. A locator
cannot do this: one that declines (returns None) hands the function to numba's own locators,
which would write the ``__pycache__`` in the install or ``~/.cache/numba`` unchecked.

So the package directory is never written and a read-only install works. numba still checks
each entry against a hash of its source file, so editing a kernel recompiles it.

**Shipped kernels.** A wheel may carry compiled kernels in ``skltr/_kernels/<tag>`` (the same
tag and layout as the per-user folder), built by ``python -m skltr._shipped_kernels`` for the
portable CPU level :data:`SHIPPED_CPU` (``NUMBA_CPU_NAME``, no extra features). numba keys a
cache entry by the CPU it was compiled for (``magic_tuple()``: target triple, CPU name,
features), so a kernel the per-user cache lacks is looked up there under that level's key --
only on a host whose CPU has the level's features (:data:`SHIPPED_CPU_FEATURES`), only when
they were built from this package's very sources (:func:`sources_digest`: numba checks a kernel
against its own file only, not the helpers it calls in others), and only when every folder and
file there is owned by us or root and writable by nobody else (the install is trusted as its
code is; the same checks as above). Those kernels are read, never written;
new ones go to the per-user cache as before. ``SKLTR_SHIPPED_KERNELS=0`` ignores them.

:func:`install` runs when a kernel module is imported (``skltr._cpu`` and the few other modules
with ``cache=True`` kernels import this module first); ``import skltr`` itself does not import
numba.
"""

from __future__ import annotations

import inspect
import os
import stat
import sys
import tempfile

from numba.core import caching, config
from numba.core.dispatcher import Dispatcher
from numba.misc.appdirs import AppDirs

from ._version import __version__

__all__ = ["SHIPPED_CPU", "SHIPPED_CPU_FEATURES", "SHIPPED_DIR", "announce_first_compile",
           "cache_root", "host_runs_shipped_cpu", "index_path", "install", "is_shipped",
           "kernel_cache_dir", "set_load_hook", "shipped_root"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

#: The CPU level shipped kernels are compiled for: x86-64-v3 (AVX2, FMA, BMI2: the x86 servers
#: and desktops of the last decade); LLVM's name.
SHIPPED_CPU = "x86-64-v3"
#: The host CPU features (LLVM's names) that code for :data:`SHIPPED_CPU` may use.
SHIPPED_CPU_FEATURES = ("avx", "avx2", "bmi", "bmi2", "cx16", "f16c", "fma", "lzcnt", "movbe",
                        "popcnt", "sse4.1", "sse4.2", "ssse3", "xsave")
#: Where a wheel carries shipped kernels (one folder per :func:`cache_root` tag).
SHIPPED_DIR = os.path.join(_PACKAGE_DIR, "_kernels")


def cache_root() -> str:
    """The folder meant to hold skltr's kernel caches for this skltr / Python / numba (used
    only when :func:`kernel_cache_dir` finds it safe)."""
    import numba  # noqa: PLC0415 - already imported by numba.core above

    base = os.environ.get("SKLTR_CACHE_DIR") or AppDirs("skltr", appauthor=False).user_cache_dir
    tag = f"{__version__}-py{sys.version_info[0]}{sys.version_info[1]}-numba{numba.__version__}"
    return os.path.join(os.path.abspath(base), tag)


def _check_folder(path: str, create: bool = False) -> str | None:
    """Why ``path`` must not hold compiled kernels, or None when only we can write it (see the
    module docstring); ``create`` makes the missing folders, mode 0700, on the way."""
    path = os.path.abspath(path)
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # Windows: no owner or mode bits to check
        try:
            if create:
                os.makedirs(path, exist_ok=True)
        except OSError as exc:
            return f"{path} cannot be created ({exc.strerror})"
        return None if os.path.isdir(path) else f"{path} is not a folder"
    return _check_posix(path, create, geteuid(), final=True, links=0)


def _check_posix(path: str, create: bool, uid: int, final: bool, links: int) -> str | None:
    chain = [path]
    while os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    for folder in reversed(chain):  # "/", "/a", "/a/b", ... path
        last = final and folder == path
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            if not create:
                return f"{folder} does not exist"
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass  # made meanwhile, by us or by someone else: checked below either way
            except OSError as exc:
                return f"{folder} cannot be created ({exc.strerror})"
            try:
                st = os.lstat(folder)
            except OSError as exc:
                return f"{folder} cannot be examined ({exc.strerror})"
        except OSError as exc:
            return f"{folder} cannot be examined ({exc.strerror})"
        if st.st_uid != uid and (last or st.st_uid != 0):
            return f"{folder} is owned by uid {st.st_uid}"
        if stat.S_ISLNK(st.st_mode):
            if last:
                return f"{folder} is a symbolic link"
            if links >= 8:
                return f"{folder}: too many symbolic links"
            # a link of ours or root's, in a folder others cannot write: what it points to
            # must pass as a parent too (it is not followed when it is the folder itself)
            problem = _check_posix(os.path.realpath(folder), False, uid, False, links + 1)
            if problem:
                return problem
            continue
        if not stat.S_ISDIR(st.st_mode):
            return f"{folder} is not a folder"
        if st.st_mode & 0o022 and (last or not st.st_mode & stat.S_ISVTX):
            return f"{folder} is writable by others (mode {stat.S_IMODE(st.st_mode):#o})"
    return None


#: the verdict on each folder this process considered: None when safe, else the problem
_VERDICTS: dict[str, str | None] = {}
_REFUSAL_SAID = False


def _verdict(folder: str, probe: bool) -> str | None:
    if folder not in _VERDICTS:
        problem = _check_folder(folder, create=True)
        if problem is None and probe:
            try:
                tempfile.TemporaryFile(dir=folder).close()
            except OSError as exc:
                problem = f"{folder} cannot be written ({exc.strerror})"
        _VERDICTS[folder] = problem
        if problem:
            _say_refused(folder, problem)
    return _VERDICTS[folder]


def _say_refused(folder: str, problem: str) -> None:
    global _REFUSAL_SAID
    if _REFUSAL_SAID or os.environ.get("SKLTR_QUIET"):
        return
    _REFUSAL_SAID = True
    print(f"skltr: not caching compiled kernels in {folder}, so each process compiles them "
          f"again: {problem}; set SKLTR_CACHE_DIR to a folder only you can write",
          file=sys.stderr, flush=True)


def kernel_cache_dir() -> str | None:
    """The folder this process caches skltr's kernels in, or None when there is none (no safe
    folder: kernels are compiled in memory; or ``$NUMBA_CACHE_DIR`` /
    ``$NUMBA_CACHE_LOCATOR_CLASSES`` is set, and numba decides)."""
    if _left_to_numba():
        return None
    root = cache_root()
    return None if _verdict(root, probe=True) else root


_SHIPPED: list = []  # [the shipped kernels' folder or None], decided once


def shipped_root() -> str | None:
    """The folder of this skltr / Python / numba's shipped kernels, or None: there are none, the
    host CPU lacks :data:`SHIPPED_CPU`'s features, ``SKLTR_SHIPPED_KERNELS=0``, the cache is
    left to numba, or a folder or file there could be written by another user."""
    if not _SHIPPED:
        _SHIPPED.append(_find_shipped())
    return _SHIPPED[0]


def _find_shipped() -> str | None:
    if os.environ.get("SKLTR_SHIPPED_KERNELS", "1") == "0" or _left_to_numba():
        return None
    root = os.path.join(SHIPPED_DIR, os.path.basename(cache_root()))
    if not os.path.isdir(root) or not host_runs_shipped_cpu():
        return None
    problem = _check_shipped(root)
    if problem is None:
        try:
            with open(os.path.join(root, SOURCES_FILE), encoding="ascii") as f:
                built_from = f.read(200).strip()
        except OSError:
            built_from = None
        if built_from != sources_digest():
            # numba checks a kernel against its own file only; a kernel calling a helper of
            # another file that has changed since would load stale code
            problem = "they were built from other sources than this skltr's"
    if problem:
        if not os.environ.get("SKLTR_QUIET"):
            print(f"skltr: not reading the compiled kernels shipped in {root}: {problem}; "
                  f"they are compiled instead (SKLTR_SHIPPED_KERNELS=0 skips them)",
                  file=sys.stderr, flush=True)
        return None
    return root


#: The file of a shipped-kernels folder that holds :func:`sources_digest` at build time.
SOURCES_FILE = "sources.sha256"


def sources_digest() -> str:
    """SHA-256 of every Python source file of the package (paths and contents, in order)."""
    import hashlib  # noqa: PLC0415

    h = hashlib.sha256()
    for dirpath, dirs, files in os.walk(_PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d not in ("_kernels", "__pycache__"))
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, _PACKAGE_DIR).encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read())
            h.update(b"\0")
    return h.hexdigest()


def host_runs_shipped_cpu(features=None, triple=None) -> bool:
    """Whether this host (or the given LLVM feature map and target triple) runs code compiled
    for :data:`SHIPPED_CPU`."""
    from llvmlite import binding as ll  # noqa: PLC0415 - numba's, already imported

    triple = ll.get_process_triple() if triple is None else triple
    if not triple.startswith("x86_64"):
        return False
    if features is None:
        try:
            features = ll.get_host_cpu_features()
        except RuntimeError:  # LLVM cannot tell
            return False
    return all(features.get(name, False) for name in SHIPPED_CPU_FEATURES)


def _check_shipped(root: str) -> str | None:
    """Why the shipped kernels under ``root`` must not be loaded, or None: every folder above
    and below it and every file in it owned by us or root and writable by nobody else."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # Windows: the install's ACL protects it
        return None
    uid = geteuid()
    problem = _check_posix(root, False, uid, final=False, links=0)
    if problem:
        return problem
    for dirpath, dirs, files in os.walk(root):
        for name in [dirpath, *(os.path.join(dirpath, f) for f in dirs + files)]:
            st = os.lstat(name)
            if st.st_uid not in (uid, 0):
                return f"{name} is owned by uid {st.st_uid}"
            if stat.S_ISLNK(st.st_mode):
                return f"{name} is a symbolic link"
            if st.st_mode & 0o022:
                return f"{name} is writable by others (mode {stat.S_IMODE(st.st_mode):#o})"
    return None


def _shipped_folder(py_file: str) -> str | None:
    root = shipped_root()
    if root is None:
        return None
    rel = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), _PACKAGE_DIR)
    return os.path.normpath(os.path.join(root, rel))


def _kernel_folder(py_file: str) -> str | None:
    """The checked folder for the kernels of one skltr source file, or None (no disk cache)."""
    root = kernel_cache_dir()
    if root is None:
        return None
    rel = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), _PACKAGE_DIR)
    folder = os.path.normpath(os.path.join(root, rel))
    return None if _verdict(folder, probe=False) else folder


def _left_to_numba() -> bool:
    return bool(config.CACHE_DIR or getattr(config, "CACHE_LOCATOR_CLASSES", None))


def _is_skltr_source(py_file: str) -> bool:
    return os.path.abspath(py_file).startswith(_PACKAGE_DIR + os.sep)


#: numba's cache implementation class holding the locator list (renamed in numba 0.60)
_CACHE_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl


class _SkltrCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba cache locator for skltr's own source files (see the module docstring)."""

    def __init__(self, py_func, py_file, cache_path):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = cache_path

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):
        # numba calls this before every save; check again instead of numba's plain makedirs
        # (the folder may have been removed since), never creating anything below an unsafe
        # folder
        problem = _check_folder(self._cache_path, create=True)
        if problem:
            raise OSError(f"skltr: will not cache compiled kernels: {problem}")
        tempfile.TemporaryFile(dir=self._cache_path).close()

    @classmethod
    def from_function(cls, py_func, py_file):
        if _left_to_numba() or not _is_skltr_source(py_file):
            return None  # NUMBA_CACHE_DIR, or not skltr's code: numba's own locators
        folder = _kernel_folder(py_file)
        if folder is None:
            # _enable_caching keeps skltr's functions uncached when no folder is safe, so only
            # a caller going around it gets here: fail rather than return None, which would
            # hand the function to numba's locators (the install's __pycache__, unchecked)
            raise RuntimeError(f"skltr: no safe folder to cache {py_func.__qualname__} in")
        return cls(py_func, py_file, folder)


_NUMBA_ENABLE_CACHING = getattr(Dispatcher.enable_caching, "_skltr_wraps",
                                Dispatcher.enable_caching)


def _enable_caching(self):
    """``Dispatcher.enable_caching`` (what ``cache=True`` calls), except that a skltr function
    keeps numba's ``NullCache`` (compiled in memory) when no cache folder is safe."""
    try:
        py_file = inspect.getfile(self.py_func)
    except TypeError:
        py_file = ""
    if (py_file and _is_skltr_source(py_file) and not _left_to_numba()
            and _kernel_folder(py_file) is None):
        return
    _NUMBA_ENABLE_CACHING(self)
    if py_file and _is_skltr_source(py_file):
        _hook_loads(self._cache, self.py_func, _shipped_folder(py_file))


_enable_caching._skltr_wraps = _NUMBA_ENABLE_CACHING

#: Called with a skltr kernel's Python function before numba looks one of its signatures up
#: in the disk cache, and again when it is absent (numba is about to compile it): the
#: parallel pre-compiler (``skltr._gbdt.precompile``) waits there while its worker process
#: compiles that kernel, or writes the same kernel's index
_LOAD_HOOK = None


def set_load_hook(hook) -> None:
    """Call ``hook(py_func, False)`` before each disk-cache look-up of a skltr kernel and
    ``hook(py_func, True)`` after one that found nothing; when the latter returns True (it
    waited), the look-up is made again (None: no hook)."""
    global _LOAD_HOOK
    _LOAD_HOOK = hook


def _hook_loads(cache, py_func, shipped_folder=None) -> None:
    load = cache.load_overload
    shipped = None if shipped_folder is None else caching.IndexDataCacheFile(
        cache_path=shipped_folder, filename_base=cache._impl.filename_base,
        source_stamp=cache._impl.locator.get_source_stamp())

    def load_overload(sig, target_context):
        if _LOAD_HOOK is not None:
            _LOAD_HOOK(py_func, False)
        found = load(sig, target_context)
        if found is None and shipped is not None:
            found = _load_shipped(cache, shipped, sig, target_context)
        if found is None and _LOAD_HOOK is not None and _LOAD_HOOK(py_func, True):
            found = load(sig, target_context)
        return found

    cache.load_overload = load_overload
    cache._skltr_shipped = shipped


def _load_shipped(cache, shipped, sig, target_context):
    """The kernel of ``sig`` from the shipped kernels (compiled for :data:`SHIPPED_CPU`: looked
    up under that CPU's key), rebuilt for this process, or None."""
    key = cache._index_key(sig, target_context.codegen())
    triple = key[1][0]
    data = shipped.load((key[0], (triple, SHIPPED_CPU, ""), *key[2:]))
    return None if data is None else cache._impl.rebuild(target_context, data)


def index_path(dispatcher) -> str | None:
    """The path of a kernel's cache index file (it exists once a signature of it is cached),
    or None when the kernel has no disk cache."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    return getattr(cache_file, "_index_path", None)


def is_shipped(dispatcher) -> bool:
    """Whether the shipped kernels (:func:`shipped_root`) hold an index of this kernel."""
    shipped = getattr(getattr(dispatcher, "_cache", None), "_skltr_shipped", None)
    return shipped is not None and os.path.exists(shipped._index_path)


_ANNOUNCED = False


def _has_cached_kernels(root: str) -> bool:
    for _dirpath, _dirs, files in os.walk(root):
        if any(f.endswith(".nbi") for f in files):
            return True
    return False


def announce_first_compile() -> None:
    """Say once, on stderr, that kernels are being compiled when this skltr / numba has no
    cached kernels yet (a first run spends about 30 s of a 2-core machine compiling them:
    ``benchmarks/cold_start.py``) or when there is no disk cache; quiet afterwards, and with
    ``SKLTR_QUIET=1``."""
    global _ANNOUNCED
    if _ANNOUNCED or os.environ.get("SKLTR_QUIET"):
        return
    _ANNOUNCED = True
    if _left_to_numba():
        root = config.CACHE_DIR  # "" with only NUMBA_CACHE_LOCATOR_CLASSES: numba's locators
        where = root or "numba's cache"
    else:
        root = where = kernel_cache_dir()
        if root is None:
            print("skltr: compiling numba kernels (about 30 s on 2 cores) with no disk cache, "
                  "so every process compiles them again", file=sys.stderr, flush=True)
            return
    if root and (_has_cached_kernels(root) or shipped_root() is not None):
        return
    print(f"skltr: compiling numba kernels, once for this skltr and numba version (about "
          f"30 s on 2 cores); later runs load them from {where}", file=sys.stderr, flush=True)


def install() -> None:
    """Put the skltr locator first in numba's list and route ``cache=True`` through
    :func:`_enable_caching` (once)."""
    classes = _CACHE_IMPL._locator_classes
    if _SkltrCacheLocator not in classes:
        classes.insert(0, _SkltrCacheLocator)
    if getattr(Dispatcher.enable_caching, "_skltr_wraps", None) is None:
        Dispatcher.enable_caching = _enable_caching


install()
