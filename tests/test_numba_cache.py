"""Compiled-kernel caches live outside the package (skltr/_numba_cache.py).

Each test runs a fresh interpreter that compiles a few small kernels (the metrics'), so what
it writes, and where, is what a user's first call writes.
"""

import os
import pickle
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import skltr
from skltr import _numba_cache

PACKAGE = Path(skltr.__file__).resolve().parent
SCRIPT = ("import numpy as np; from skltr.metrics import ndcg_score; "
          "print(ndcg_score(np.array([2., 1, 0]), np.array([.3, .2, .1]), qid=np.zeros(3), k=3))")


def _run(env_extra, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "SKLTR_CACHE_DIR")}
    env.update(env_extra)
    env["PYTHONPATH"] = str(PACKAGE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == 1.0
    return out


def _new_cache_files(root: Path, since: float):
    return [p for p in root.rglob("*.nb[ic]") if p.stat().st_mtime >= since]


def test_kernels_are_cached_in_the_user_cache_not_the_package(tmp_path):
    start = time.time() - 1
    cache = tmp_path / "cache"
    _run({"SKLTR_CACHE_DIR": str(cache)}, tmp_path)
    written = list(cache.rglob("*.nbi"))
    assert written and all("metrics" in p.parts for p in written)
    assert all(p.relative_to(cache).parts[0].startswith(skltr.__version__) for p in written)
    assert not _new_cache_files(PACKAGE, start)


def test_an_unwritable_cache_dir_falls_back_and_still_works(tmp_path):
    # a path below a file cannot be created, whoever runs the test (root included)
    blocker = tmp_path / "file"
    blocker.write_text("")
    start = time.time() - 1
    _run({"SKLTR_CACHE_DIR": str(blocker / "cache")}, tmp_path)
    assert not _new_cache_files(PACKAGE, start)


def test_numba_cache_dir_is_respected(tmp_path):
    start = time.time() - 1
    _run({"NUMBA_CACHE_DIR": str(tmp_path / "numba"),
          "SKLTR_CACHE_DIR": str(tmp_path / "skltr")}, tmp_path)
    assert list((tmp_path / "numba").rglob("*.nbi"))
    assert not (tmp_path / "skltr").exists()
    assert not _new_cache_files(PACKAGE, start)


ANNOUNCE = "from skltr._numba_cache import announce_first_compile; announce_first_compile()"


def test_the_first_compile_is_announced_once(tmp_path):
    # announced when this skltr / numba has no cached kernel; quiet once one is cached
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "SKLTR_CACHE_DIR", "SKLTR_QUIET")}
    env["SKLTR_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = str(PACKAGE.parent) + os.pathsep + env.get("PYTHONPATH", "")

    def announce():
        out = subprocess.run([sys.executable, "-c", ANNOUNCE + "; " + ANNOUNCE], env=env,
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stderr

    first = announce()
    assert first.count("skltr: compiling numba kernels, once") == 1  # once a process
    used = os.path.join(env["SKLTR_CACHE_DIR"], Path(_numba_cache.cache_root()).name)
    assert f"load them from {used}\n" in first  # the folder actually used
    _run({"SKLTR_CACHE_DIR": env["SKLTR_CACHE_DIR"]}, tmp_path)  # caches the metric kernels
    assert "compiling" not in announce()


# --- which folders are trusted (issue #26) --------------------------------------------------
# numba reads a kernel cache's index files with pickle.load, so a folder that someone else can
# write is a way to run their code in our process: such folders are never used.

posix = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="chown needs root")
OTHER_UID = 12345
SMALL = ("import numpy as np; from skltr.metrics._kernels import _count_relevant as f; "
         "print(f(np.array([1., 0, 2]), 0.5))")


def _run_small(tmp_path, cache_dir, script=SMALL):
    """Run ``script`` in a fresh interpreter with ``SKLTR_CACHE_DIR=cache_dir`` and a home that
    cannot be written (so no per-user folder can stand in); return its stderr."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "SKLTR_CACHE_DIR", "SKLTR_QUIET", "XDG_CACHE_HOME",
                        "NUMBA_CACHE_LOCATOR_CLASSES")}
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    env["HOME"] = str(blocker / "home")  # below a file: cannot be created, even by root
    env["SKLTR_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = str(PACKAGE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    start = time.time() - 1
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    if script == SMALL:
        assert out.stdout.strip() == "2"
    assert not _new_cache_files(PACKAGE, start)  # never numba's __pycache__ beside the source
    return out.stderr


def _tree(folder: Path):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _other_writable(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    return folder, folder, "writable by others"


def _other_owner(tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o755)
    os.chown(folder, OTHER_UID, OTHER_UID)
    return folder, folder, f"owned by uid {OTHER_UID}"


def _symlinked(tmp_path):
    # the versioned folder itself is a link to a folder of ours: refused (never followed)
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    base = tmp_path / "base"
    base.mkdir(mode=0o700)
    (base / Path(_numba_cache.cache_root()).name).symlink_to(target)
    return base, target, "symbolic link"


def _open_parent(tmp_path):
    parent = tmp_path / "public"
    parent.mkdir()
    parent.chmod(0o777)  # world-writable, no sticky bit: anyone can swap the folder below
    (parent / "mine").mkdir(mode=0o700)
    return parent / "mine", parent, "writable by others"


UNSAFE = [pytest.param(_other_writable, marks=posix, id="other-writable"),
          pytest.param(_other_owner, marks=as_root, id="other-owner"),
          pytest.param(_symlinked, marks=posix, id="symlink"),
          pytest.param(_open_parent, marks=posix, id="open-parent")]


@pytest.mark.parametrize("make", UNSAFE)
def test_an_unsafe_cache_dir_is_never_used(tmp_path, make):
    cache_dir, watched, reason = make(tmp_path)
    before = _tree(watched)
    stat = os.lstat(cache_dir)
    err = _run_small(tmp_path, cache_dir)
    assert _tree(watched) == before  # nothing written there (kernels compiled in memory)
    after = os.lstat(cache_dir)
    assert (after.st_mode, after.st_uid) == (stat.st_mode, stat.st_uid)  # never chmod/chown
    assert err.count("skltr: not caching compiled kernels") == 1, err
    assert reason in err and "SKLTR_CACHE_DIR" in err


def _payload(marker):
    """A pickle that creates ``marker`` when it is loaded: what a planted index file does."""
    class Payload:
        def __reduce__(self):
            return open, (str(marker), "w")
    return pickle.dumps(Payload())


@posix
def test_a_planted_index_file_in_an_unsafe_cache_dir_is_never_loaded(tmp_path):
    # another user made the cache folder first (mode 777) and planted an index file for every
    # metric kernel: numba would pickle.load it and run their code in our process
    from skltr.metrics import _kernels

    evil = tmp_path / "evil"
    kernels = evil / Path(_numba_cache.cache_root()).name / "metrics"
    kernels.mkdir(parents=True)
    for folder in (evil, kernels.parent, kernels):
        folder.chmod(0o777)
    marker = tmp_path / "pwned"
    check = tmp_path / "payload-works"
    pickle.loads(_payload(check)).close()
    assert check.exists()  # the payload does run when loaded
    abi = getattr(sys, "abiflags", "")
    planted = 0
    for obj in vars(_kernels).values():
        func = getattr(obj, "py_func", None)
        if func is None or func.__module__ != _kernels.__name__:
            continue
        name = (f"_kernels.{func.__qualname__}-{func.__code__.co_firstlineno}"
                f".py{sys.version_info[0]}{sys.version_info[1]}{abi}.nbi")
        (kernels / name).write_bytes(_payload(marker))
        planted += 1
    assert planted > 5 and list(kernels.glob("_kernels._count_relevant-*.nbi"))
    before = {p: p.read_bytes() for p in evil.rglob("*") if p.is_file()}

    err = _run_small(tmp_path, evil)

    assert not marker.exists(), "a planted index file was unpickled"
    assert {p: p.read_bytes() for p in evil.rglob("*") if p.is_file()} == before
    assert "skltr: not caching compiled kernels" in err
    assert str(evil) in err and "writable by others" in err


@posix
def test_a_new_cache_dir_is_created_private(tmp_path):
    cache = tmp_path / "a" / "b"
    _run_small(tmp_path, cache)
    tag = cache / Path(_numba_cache.cache_root()).name
    for folder in (tmp_path / "a", cache, tag, tag / "metrics"):
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700, folder
    assert list((tag / "metrics").glob("*.nbi"))


@posix
def test_the_notice_names_no_folder_when_the_cache_dir_is_refused(tmp_path):
    shared, _, _ = _other_writable(tmp_path)
    err = _run_small(tmp_path, shared, ANNOUNCE)
    assert "load them from" not in err and "no disk cache" in err, err


# the check itself, in this process


def _check(path, create=True):
    return _numba_cache._check_folder(str(path), create=create)


@posix
def test_check_creates_missing_folders_0700_and_accepts_them(tmp_path):
    assert _check(tmp_path / "x" / "y") is None
    for folder in (tmp_path / "x", tmp_path / "x" / "y"):
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700


@posix
@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757, 0o1777])
def test_check_refuses_a_folder_others_can_write_and_leaves_its_mode(tmp_path, mode):
    folder = tmp_path / "f"
    folder.mkdir()
    folder.chmod(mode)
    assert "writable by others" in _check(folder)
    assert stat.S_IMODE(os.lstat(folder).st_mode) == mode


@posix
def test_check_accepts_a_folder_of_ours_below_a_sticky_shared_folder(tmp_path):
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)  # like /tmp: others cannot rename or delete what is ours in it
    assert _check(sticky / "mine") is None
    open_parent = tmp_path / "open"
    open_parent.mkdir()
    open_parent.chmod(0o777)
    assert "writable by others" in _check(open_parent / "mine")
    assert not (open_parent / "mine").exists()  # nothing is created below an unsafe folder


@as_root
def test_check_refuses_folders_and_parents_owned_by_another_user(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    assert f"owned by uid {OTHER_UID}" in _check(theirs)
    assert f"owned by uid {OTHER_UID}" in _check(theirs / "mine")
    assert os.lstat(theirs).st_uid == OTHER_UID
    link = tmp_path / "link"
    (tmp_path / "ours").mkdir(mode=0o700)
    link.symlink_to(tmp_path / "ours")
    os.lchown(link, OTHER_UID, OTHER_UID)  # a link they made can point anywhere tomorrow
    assert f"owned by uid {OTHER_UID}" in _check(link / "mine")


@posix
def test_check_follows_only_our_links_in_the_parents_never_the_folder_itself(tmp_path):
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(ours)
    assert _check(link / "cache") is None  # like ~/.cache -> /data/me/cache
    assert "symbolic link" in _check(link)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    to_shared = tmp_path / "to-shared"
    to_shared.symlink_to(shared)
    assert "writable by others" in _check(to_shared / "cache")


@posix
def test_check_refuses_a_file(tmp_path):
    (tmp_path / "file").write_text("")
    assert _check(tmp_path / "file") is not None
    assert _check(tmp_path / "file" / "below") is not None


def test_check_without_posix_owners_still_creates_the_folder(tmp_path, monkeypatch):
    # Windows has no os.geteuid: no owner or mode to check, the folder is still made and used
    monkeypatch.delattr(os, "geteuid", raising=False)
    assert _check(tmp_path / "w" / "x") is None
    assert (tmp_path / "w" / "x").is_dir()
