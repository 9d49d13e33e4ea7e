"""Shipped kernels (``skltr._numba_cache``, ``skltr._shipped_kernels``): a kernel compiled for the
portable CPU level into a folder like ``skltr/_kernels/<tag>`` is loaded by a process whose
per-user cache lacks it -- without compiling, with the same results -- only where the host runs
that level and nobody else can write the folder; ``SKLTR_SHIPPED_KERNELS=0`` ignores it."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from skltr import _numba_cache

# A child process: compile (or load) one skltr kernel, skltr._cpu.binning.map_to_bins, on
# float64 rows; report its compile events, its output and what the cache layer decided.
_CHILD = r"""
import json, sys
import numpy as np
import skltr._numba_cache as nc
nc.SHIPPED_DIR = sys.argv[1]
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
from skltr._cpu.binning import map_to_bins
X = np.array([[0.5, np.nan], [2.5, -1.0], [9.0, 3.0]])
out = np.empty(X.shape, np.uint8)
map_to_bins(X, np.array([0, 2, 3]), np.array([1.0, 3.0, 0.0]), 9, out)
from skltr.metrics import ndcg_score
rng = np.random.default_rng(0)
y, s, q = rng.integers(0, 5, 600), rng.normal(size=600), np.repeat(np.arange(20), 30)
ndcg = ndcg_score(y, s, qid=q, k=10)
print(json.dumps({"compiled": compiled, "codes": out.tolist(), "ndcg": float(ndcg).hex(),
                  "shipped": nc.shipped_root(), "is_shipped": nc.is_shipped(map_to_bins)}))
"""


def _run(shipped_dir, cache_dir, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "SKLTR_"))}
    run = subprocess.run([sys.executable, "-c", _CHILD, str(shipped_dir)],
                         env={**clean, "SKLTR_CACHE_DIR": str(cache_dir), **env},
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1]), run.stderr


def _private(path):
    path.mkdir(mode=0o700)
    return path


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A shipped-kernels folder holding map_to_bins compiled for the portable CPU level."""
    if not _numba_cache.host_runs_shipped_cpu():
        pytest.skip(f"this host does not run code for {_numba_cache.SHIPPED_CPU}")
    root = tmp_path_factory.mktemp("shipped")
    build = _private(root / "build")
    got, _ = _run(root / "none", build, NUMBA_CPU_NAME=_numba_cache.SHIPPED_CPU,
                  NUMBA_CPU_FEATURES="", SKLTR_SHIPPED_KERNELS="0")
    assert "map_to_bins" in got["compiled"]
    host, _ = _run(root / "none", _private(root / "host"), SKLTR_SHIPPED_KERNELS="0")
    assert got["ndcg"] == host["ndcg"]  # compiled for the level or the host: the same bits
    shipped_dir = root / "kernels"
    tag = os.path.basename(_numba_cache.cache_root())
    shutil.copytree(build / tag, shipped_dir / tag)
    (shipped_dir / tag / _numba_cache.SOURCES_FILE).write_text(_numba_cache.sources_digest())
    for dirpath, _dirs, files in os.walk(shipped_dir):
        os.chmod(dirpath, 0o755)
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o644)
    os.chmod(root, 0o755)
    return shipped_dir, got["codes"], got["ndcg"]


def test_a_shipped_kernel_loads_without_compiling_and_gives_the_same_codes(shipped, tmp_path):
    shipped_dir, codes, ndcg = shipped
    got, _ = _run(shipped_dir, _private(tmp_path / "user"))
    assert got["compiled"] == []  # map_to_bins and the NDCG kernels: all shipped
    assert got["codes"] == codes == [[0, 9], [1, 0], [2, 1]]
    assert got["ndcg"] == ndcg
    assert got["shipped"] and got["is_shipped"]
    # the per-user cache gets nothing of it: the shipped kernel is read where it is
    assert not any(f.endswith(".nbi") and f.startswith("binning.map_to_bins")
                   for _d, _s, files in os.walk(tmp_path / "user") for f in files)


def test_shipped_kernels_can_be_turned_off(shipped, tmp_path):
    shipped_dir, codes, _ = shipped
    got, _ = _run(shipped_dir, _private(tmp_path / "user"), SKLTR_SHIPPED_KERNELS="0")
    assert "map_to_bins" in got["compiled"] and got["codes"] == codes
    assert got["shipped"] is None and not got["is_shipped"]


def test_shipped_kernels_others_can_write_are_refused(shipped, tmp_path):
    shipped_dir, codes, _ = shipped
    copy = tmp_path / "kernels"
    shutil.copytree(shipped_dir, copy)
    index = next(os.path.join(d, f) for d, _s, files in os.walk(copy) for f in files
                 if f.endswith(".nbi"))
    os.chmod(index, 0o666)
    got, err = _run(copy, _private(tmp_path / "user"))
    assert "map_to_bins" in got["compiled"] and got["codes"] == codes
    assert got["shipped"] is None and "writable by others" in err


def test_shipped_kernels_of_other_sources_are_refused(shipped, tmp_path):
    # a kernel calling a helper in another file would load stale code: only kernels built
    # from this very package's sources are read
    shipped_dir, codes, _ = shipped
    copy = tmp_path / "kernels"
    shutil.copytree(shipped_dir, copy)
    tag = os.path.basename(_numba_cache.cache_root())
    digest = copy / tag / _numba_cache.SOURCES_FILE
    os.chmod(digest, 0o644)
    digest.write_text("0" * 64)
    got, err = _run(copy, _private(tmp_path / "user"))
    assert "map_to_bins" in got["compiled"] and got["codes"] == codes
    assert got["shipped"] is None and "other sources" in err


def test_the_host_check_wants_every_feature_of_the_level_on_x86_64():
    every = {name: True for name in _numba_cache.SHIPPED_CPU_FEATURES}
    x86 = "x86_64-unknown-linux-gnu"
    assert _numba_cache.host_runs_shipped_cpu(every, x86)
    assert not _numba_cache.host_runs_shipped_cpu({**every, "avx2": False}, x86)
    assert not _numba_cache.host_runs_shipped_cpu({k: v for k, v in every.items()
                                                    if k != "fma"}, x86)
    assert not _numba_cache.host_runs_shipped_cpu(every, "aarch64-unknown-linux-gnu")


def test_the_builder_runs_the_demo_and_first_fits_for_the_level(monkeypatch, tmp_path):
    # what ``python -m skltr._shipped_kernels`` asks of its child (the child itself is the
    # demo and two fits: minutes of compiling, measured in benchmarks/results instead)
    from skltr import _shipped_kernels

    calls = []

    def fake_run(cmd, env, check, stdout):
        calls.append(env)
        tag = os.path.basename(_numba_cache.cache_root())
        folder = os.path.join(env["SKLTR_CACHE_DIR"], tag, "_cpu")
        os.makedirs(folder)
        with open(os.path.join(folder, "k.nbi"), "wb") as f:
            f.write(b"index")

    monkeypatch.setattr(_shipped_kernels.subprocess, "run", fake_run)
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/elsewhere")
    target = _shipped_kernels.build(str(tmp_path / "out"))
    (env,) = calls
    assert env["NUMBA_CPU_NAME"] == _numba_cache.SHIPPED_CPU and env["NUMBA_CPU_FEATURES"] == ""
    assert env["SKLTR_SHIPPED_KERNELS"] == "0" and "NUMBA_CACHE_DIR" not in env
    assert os.path.isfile(os.path.join(target, "_cpu", "k.nbi"))
    assert os.stat(os.path.join(target, "_cpu", "k.nbi")).st_mode & 0o777 == 0o644
    with open(os.path.join(target, _numba_cache.SOURCES_FILE)) as f:
        assert f.read().strip() == _numba_cache.sources_digest()
