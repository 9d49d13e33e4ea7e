"""Compiled-kernel caches live outside the package (skltr/_numba_cache.py).

Each test runs a fresh interpreter that compiles a few small kernels (the metrics'), so what
it writes, and where, is what a user's first call writes.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import skltr

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

    assert announce().count("skltr: compiling numba kernels, once") == 1  # once a process
    _run({"SKLTR_CACHE_DIR": env["SKLTR_CACHE_DIR"]}, tmp_path)  # caches the metric kernels
    assert "compiling" not in announce()
