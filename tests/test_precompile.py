"""The parallel pre-compiler (skltr._gbdt.precompile): on a cold kernel cache a worker process
compiles the grower's and predict's kernels into the disk cache, and the fit's process loads
them instead of compiling; nothing starts on a warm cache. Each test runs a fresh process on
its own empty cache folder (no timing is asserted)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import skltr

PACKAGE = Path(skltr.__file__).resolve().parent

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no pre-compiler on Windows")

# prints, as JSON, the skltr kernels this process compiled (module.qualname) during BODY
_RUN = r"""
import json, sys
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        fn = ev.data["dispatcher"].py_func
        if fn.__module__.startswith("skltr."):
            compiled.append(f"{fn.__module__}.{fn.__qualname__}")
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
from skltr._gbdt import precompile
out = {}
BODY
out["compiled"] = compiled
print(json.dumps(out))
"""

_SPEC = {"tree": {"max_leaves": 7, "min_samples_leaf": 5, "hist_mode": "quantised",
                  "min_samples_leaf_counts": "hessian"},
         "n_rows": 3000, "n_features": 5, "max_bins": 63, "n_threads": 2, "x_dtype": "float32"}

_FIT = """
from skltr import GPUHistGBDTRanker
from skltr.datasets import make_ranking
X, y, qid = make_ranking(n_queries=60, docs_per_query=50, n_features=6, n_informative=4,
                         random_state=0)
starts = []
real_start = precompile.start
precompile.start = lambda *a: starts.append(real_start(*a)) or starts[-1]
m = GPUHistGBDTRanker(n_estimators=3, max_leaves=7, random_state=0, n_jobs=2).fit(
    X, y, qid=qid)
out["starts"] = starts
out["pred"] = m.predict(X).tolist()
out["pending_after"] = [] if precompile._ACTIVE is None else precompile._ACTIVE.pending
"""


def _wait_for_kernel(cache, name, timeout=600.0):
    """Wait until the cache index of kernel ``name`` (``module.qualname``: numba's index
    file name, written after its data) is in ``cache`` (a detached worker's)."""
    deadline = time.monotonic() + timeout
    while not list(cache.rglob(f"{name}-*.nbi")):
        assert time.monotonic() < deadline, f"no cached {name} after {timeout} s"
        time.sleep(0.5)


def _run(folder, body, **env_extra):
    env = dict(os.environ, SKLTR_CACHE_DIR=str(folder / "cache"), SKLTR_QUIET="1",
               NUMBA_NUM_THREADS="2")
    for name in ("NUMBA_CACHE_DIR", "SKLTR_PRECOMPILE", "NUMBA_CACHE_LOCATOR_CLASSES"):
        env.pop(name, None)
    env.update(env_extra)
    env["PYTHONPATH"] = str(PACKAGE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _RUN.replace("BODY", body)], env=env,
                         cwd=folder, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("stage", sorted(["grow", "score", "grow_tree"]))
def test_each_stage_compiles_only_kernels_of_its_modules(tmp_path, stage):
    # the claim rule (one process per kernel) holds only if a stage's recipe compiles no
    # skltr kernel outside the modules the fit's process waits on; the background stage,
    # compiled after "grow", may add signatures to the latter's kernels (the fit compiles
    # none of them meanwhile), and alone compiles the driver's kernels too
    stages = precompile_stages()
    res = _run(tmp_path, f"precompile._RECIPES[{stage!r}]({_SPEC!r})")
    modules = {name.rsplit(".", 1)[0] for name in res["compiled"]}
    allowed = set(stages[stage]) | (set(stages["grow"]) if stage == "grow_tree" else set())
    assert res["compiled"] and modules <= allowed, modules
    if stage == "grow_tree":
        assert "skltr._cpu.grow_leafwise.grow_leafwise" in res["compiled"]
    if stage == "grow":  # the driver's tree: the compiled grower is the background stage's
        assert not modules & set(stages["grow_tree"])


def precompile_stages():
    from skltr._gbdt import precompile

    return precompile.STAGES


def test_a_cold_fit_starts_the_worker_and_loads_its_kernels(tmp_path):
    # the fit starts the worker, waits for (or steals) its stages, and compiles none of the
    # stages' kernels itself that the worker compiled; the scores are the same as without
    # the pre-compiler (another empty cache)
    res = _run(tmp_path, _FIT)
    # left running (when it is) with the background stage only: the compiled grower
    assert res["starts"] == [True] and res["pending_after"] in ([], ["grow_tree"])
    assert "skltr._cpu.grow_leafwise.grow_leafwise" not in res["compiled"]
    grow = [k for k in res["compiled"]
            if k.rsplit(".", 1)[0] in precompile_stages()["grow"]]
    score = [k for k in res["compiled"]
             if k.rsplit(".", 1)[0] in precompile_stages()["score"]]
    # the grower's kernels came from the worker, or were all compiled here (the fit reached
    # the grower before the worker started them: then it claimed the stage)
    assert not grow or "skltr._cpu.split_children.find_child_splits" in grow
    off = tmp_path / "off"
    off.mkdir()
    ref = _run(off, _FIT, SKLTR_PRECOMPILE="0")
    assert ref["starts"] == [False]
    assert res["pred"] == ref["pred"]
    # between them, the two processes compiled each stage once: a warm run compiles nothing
    # (once the worker, left to finish the background stage at the exit, is done)
    _wait_for_kernel(tmp_path / "cache", "grow_leafwise.grow_leafwise")
    again = _run(tmp_path, _FIT)
    assert again["starts"] == [False] and again["compiled"] == []
    assert again["pred"] == ref["pred"]
    assert score == [] or "skltr._cpu.quickscorer.predict_raw_quickscorer" in score


def test_nothing_starts_when_turned_off_single_threaded_or_warm(tmp_path):
    body = """
import numpy as np
from skltr._gbdt.params import BoostParams
X = np.zeros((10, 2), np.float32)
p = BoostParams(objective_name="lambdarank", n_estimators=1, max_bins=15)
out["off"] = precompile.start(X, p, 2)
"""
    assert _run(tmp_path, body, SKLTR_PRECOMPILE="0")["off"] is False
    body = body.replace('out["off"] = precompile.start(X, p, 2)',
                        'out["one_thread"] = precompile.start(X, p, 1)')
    assert _run(tmp_path, body)["one_thread"] is False
    # a warm cache (every stage's probe cached): nothing starts
    warm = f"""
precompile._RECIPES["grow"]({_SPEC!r})
precompile._RECIPES["score"]({_SPEC!r})
precompile._RECIPES["grow_tree"]({_SPEC!r})
""" + body.replace('out["one_thread"] = precompile.start(X, p, 1)',
                   'out["warm"] = precompile.start(X, p, 2)')
    res = _run(tmp_path, warm)
    assert res["warm"] is False


def test_worker_skips_the_background_stage_when_the_fit_compiled_the_grower(tmp_path):
    # the fit claimed "grow" (it reached the grower first): the background stage's compile
    # would write the kernels the fit is writing, so the worker gives it up, and the
    # process grows through the driver from then on
    folder = tmp_path / "claims"
    folder.mkdir(mode=0o700)
    (folder / "grow").touch()
    code = "from skltr._gbdt.precompile import _main; _main()"
    spec = json.dumps({"stages": ["grow", "grow_tree"], **_SPEC})
    env = dict(os.environ, SKLTR_CACHE_DIR=str(tmp_path / "cache"), SKLTR_PRECOMPILE="0")
    env["PYTHONPATH"] = str(PACKAGE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code, str(folder), spec], env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["grow", "grow_tree skipped"]
    assert not folder.exists()  # the worker removed its claim folder
    # "grow" cached already (not a stage of this worker): the background stage is not
    # skipped (here claimed by another, so nothing compiles)
    folder.mkdir(mode=0o700)
    (folder / "grow_tree").touch()
    spec = json.dumps({"stages": ["grow_tree"], **_SPEC})
    out = subprocess.run([sys.executable, "-c", code, str(folder), spec], env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:1] == ["grow_tree"]
    # another process holds the stage's lock (a worker left to finish it after its fit's
    # exit): skipped, not compiled beside it
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from skltr._gbdt.precompile import "
         "_lock_background as f; print(f(), flush=True); time.sleep(120)"],
        env=env, stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert holder.stdout.readline().strip() == "True"
        folder.mkdir(mode=0o700)
        out = subprocess.run([sys.executable, "-c", code, str(folder), spec], env=env,
                             capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split("\n")[:1] == ["grow_tree skipped"]
    finally:
        holder.kill()
        holder.wait()

    from skltr._gbdt import precompile

    try:
        precompile._SKIPPED.add("grow_tree")
        assert precompile.compiled_growth() is False
    finally:
        precompile._SKIPPED.discard("grow_tree")
    assert precompile.compiled_growth() is True
