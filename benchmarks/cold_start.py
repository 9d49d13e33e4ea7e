"""Cold start: what the first run costs, with empty kernel caches and with warm ones.

Each measurement is a fresh Python process with its own kernel cache folder
(``SKLTR_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` unset, so skltr's per-user cache locator is used,
pointed at a new temporary folder for the cold runs):

* ``demo``: the whole ``skltr demo --quiet`` command (the README's first command after the
  install), cold (empty cache) and warm (the cache the cold run filled);
* ``first_fit_predict``: in one process, ``GPUHistGBDTRanker().fit`` + ``predict`` on the
  demo's data (make_ranking, 2,000 queries x 50 documents x 136 features, 80/20 split), then
  the same fit + predict again in the same process: the first minus the second is what
  loading (warm) or compiling (cold) the kernels costs; reported with process CPU time too,
  since wall time on a shared machine drifts.
* ``first_fit_predict_10k``: the same on 10,000 rows (200 queries x 50 documents x 136
  features; fit on all of them, then predict all of them): the smallest first use, where
  the cold run is nearly all compilation.

Targets (issue #12): cold ``skltr demo`` <= 15 s; warm first fit + predict <= 1 s above the
fit itself, on the 2-core machine. Issue #28: cold first fit + predict of 10k rows <= 5 s.

* ``compile_profile``: the cold demo once more, recording numba's compile events: the seconds
  spent compiling each kernel (wall, and CPU of the compiling thread: the wall time of a
  shared machine drifts; the largest 40, with how many signatures each got) and their
  total; ``compile_profile_10k``: the same for the cold 10k fit + predict. Both run without
  the parallel pre-compiler (``SKLTR_PRECOMPILE=0``), so that every kernel is compiled, and
  counted, in the one process.

CPU time: every run records its process's own CPU seconds (user + system) and its
children's (the pre-compiler's worker, ``skltr._gbdt.precompile``): on a shared machine the
wall time drifts with the other jobs, the CPU time much less. ``--precompile both`` measures
every cold run with the pre-compiler off and on in turn (``off``: ``SKLTR_PRECOMPILE=0``;
default: what a user gets).

Usage: python benchmarks/cold_start.py [--repeat 2] [--cases demo,fit,fit_10k,profile,profile_10k]
       [--precompile default|off|both] [--note TEXT] [--out DIR]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from _harness import row, write_result

_FIT_SCRIPT = r"""
import json, resource, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from skltr import GPUHistGBDTRanker
try:
    from skltr._gbdt import precompile
except ImportError:  # a commit before the pre-compiler
    precompile = None
from skltr.datasets import make_ranking
from skltr.model_selection import train_test_split_by_query
n_queries = int(sys.argv[1])
X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=50, n_features=136,
                         n_informative=20, random_state=0)
if n_queries >= 2000:  # the demo's data and split
    X_tr, X_te, y_tr, y_te, q_tr, q_te = train_test_split_by_query(
        X, y, qid=qid, test_size=0.2, random_state=0)
else:  # fit and predict all rows
    X_tr, y_tr, q_tr, X_te = X, y, qid, X
t_import = time.perf_counter() - t0
out = {"import_and_data_s": t_import}
for k in (1, 2):
    t = time.perf_counter(); c = time.process_time()
    m = GPUHistGBDTRanker(random_state=0).fit(X_tr, y_tr, qid=q_tr)
    t_fit = time.perf_counter() - t
    m.predict(X_te)
    out[f"fit_predict_{k}_s"] = time.perf_counter() - t
    out[f"fit_{k}_s"] = t_fit
    out[f"fit_predict_{k}_cpu_s"] = time.process_time() - c
if precompile is not None:
    precompile.stop()  # (done by then) waited for: its CPU time is in RUSAGE_CHILDREN
# (not "own": the profile script runs this one with exec and keeps its counts in "own")
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
out["main_cpu_s"] = me.ru_utime + me.ru_stime
out["precompiler_cpu_s"] = kids.ru_utime + kids.ru_stime
out["precompiler"] = getattr(precompile, "STATS", None)
print(json.dumps(out))
"""


# A cold run again (the demo, or the first fit + predict of _FIT_SCRIPT), with numba's compile
# events: seconds per kernel (time inside nested compilations belongs to the inner kernel), to
# show where the first run goes.
_PROFILE_SCRIPT = r"""
import collections, contextlib, io, json, sys, time
from numba.core import event
stack, own, own_cpu, sigs = [], collections.Counter(), collections.Counter(), collections.Counter()
class Listener(event.Listener):
    def on_start(self, ev):
        stack.append([ev.data["dispatcher"].py_func, time.perf_counter(), 0.0,
                      time.thread_time(), 0.0])
    def on_end(self, ev):
        fn, t0, inner, c0, inner_cpu = stack.pop()
        dt, dc = time.perf_counter() - t0, time.thread_time() - c0
        name = f"{fn.__module__}.{fn.__qualname__}"
        own[name] += dt - inner
        own_cpu[name] += dc - inner_cpu
        sigs[name] += 1
        if stack:
            stack[-1][2] += dt
            stack[-1][4] += dc
event.register("numba:compile", Listener())
if sys.argv[1] == "demo":
    from skltr.cli import main
    try:
        main(["demo", "--quiet"])
    except SystemExit:
        pass
else:
    with contextlib.redirect_stdout(io.StringIO()):
        exec(FIT_SCRIPT)
print(json.dumps({"total_s": sum(own.values()), "total_cpu_s": sum(own_cpu.values()),
                  "n_kernels": len(sigs), "n_signatures": sum(sigs.values()),
                  "kernels": [{"kernel": k, "signatures": sigs[k], "s": own[k], "cpu_s": v}
                              for k, v in own_cpu.most_common(40)]}))
"""


def _profile(what):
    """The compile profile of a cold run of ``what`` (``"demo"`` or a number of queries),
    without the pre-compiler (every kernel compiles in the one process)."""
    with tempfile.TemporaryDirectory() as cache:
        script = f"FIT_SCRIPT = {_FIT_SCRIPT!r}\n" + _PROFILE_SCRIPT
        wall, cpu, out = _timed([sys.executable, "-c", script, str(what)],
                                _env(cache, "off"))
    return {"process_wall_s": wall, "process_cpu_s": cpu,
            **json.loads(out.strip().splitlines()[-1])}


def _first_fits(n_queries, precompile):
    """Cold then warm ``_FIT_SCRIPT`` processes on a fresh cache folder."""
    fits = {"precompile": precompile}
    with tempfile.TemporaryDirectory() as cache:
        for state in ("cold", "warm"):
            wall, cpu, out = _timed([sys.executable, "-c", _FIT_SCRIPT, str(n_queries)],
                                    _env(cache, precompile))
            fits[state] = {"process_wall_s": wall, "process_cpu_s": cpu,
                           **json.loads(out.strip().splitlines()[-1])}
    return fits


def _env(cache_dir, precompile="default"):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "SKLTR_PRECOMPILE")}
    env["SKLTR_CACHE_DIR"] = cache_dir
    if precompile == "off":
        env["SKLTR_PRECOMPILE"] = "0"
    return env


def _timed(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, run.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="cold/warm pairs of each kind")
    parser.add_argument("--cases", default="demo,fit,fit_10k,profile,profile_10k",
                        help="comma-separated subset of demo, fit, fit_10k, profile, "
                             "profile_10k")
    parser.add_argument("--precompile", choices=("default", "off", "both"), default="default",
                        help="the pre-compiler in the cold runs: as a user gets it, off "
                             "(SKLTR_PRECOMPILE=0), or off and on in turn")
    parser.add_argument("--note", default="", help="stored with the results (the machine's "
                                                   "load, what was compared...)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    cases = set(args.cases.split(","))
    modes = ("off", "default") if args.precompile == "both" else (args.precompile,)
    rows, raw = [], {"demo": [], "fit": [], "fit_10k": []}
    for _ in range(args.repeat):
        for mode in modes:
            if "demo" in cases:
                with tempfile.TemporaryDirectory() as cache:
                    demo = [sys.executable, "-m", "skltr", "demo", "--quiet"]
                    cold = _timed(demo, _env(cache, mode))
                    warm = _timed(demo, _env(cache, mode))
                    raw["demo"].append({"precompile": mode, "cold_wall_s": cold[0],
                                        "cold_cpu_s": cold[1], "warm_wall_s": warm[0],
                                        "warm_cpu_s": warm[1]})
            if "fit" in cases:
                raw["fit"].append(_first_fits(2000, mode))
            if "fit_10k" in cases:
                raw["fit_10k"].append(_first_fits(200, mode))
    if "profile" in cases:
        raw["compile_profile"] = _profile("demo")
    if "profile_10k" in cases:
        raw["compile_profile_10k"] = _profile(200)
    for mode in modes:
        tag = "" if args.precompile != "both" else f" (pre-compiler {mode})"
        demos = [r for r in raw["demo"] if r["precompile"] == mode]
        if demos:
            best = min(demos, key=lambda r: r["cold_wall_s"])
            rows.append(row(f"skltr demo, empty caches vs warm{tag}", "wall_s",
                            best["cold_wall_s"], best["warm_wall_s"],
                            "skltr demo (warm caches)", "s"))
            rows.append(row(f"skltr demo, empty caches vs 15 s target{tag}", "wall_s",
                            best["cold_wall_s"], 15.0, "target", "s"))
            cpu = min(demos, key=lambda r: r["cold_cpu_s"])
            rows.append(row(f"skltr demo CPU (with pre-compiler), empty vs warm caches{tag}",
                            "cpu_s", cpu["cold_cpu_s"], cpu["warm_cpu_s"],
                            "skltr demo (warm caches)", "s"))
        for key, data in (("fit", ""), ("fit_10k", ", 10k rows")):
            runs = [r for r in raw[key] if r["precompile"] == mode]
            if not runs:
                continue
            for state in ("cold", "warm"):
                f = min((r[state] for r in runs), key=lambda r: r["fit_predict_1_s"])
                rows.append(row(f"first fit+predict in a process{data}, {state} cache{tag}",
                                "wall_s", f["fit_predict_1_s"], f["fit_predict_2_s"],
                                "second fit+predict, same process", "s"))
            f = min((r["cold"] for r in runs), key=lambda r: r["fit_predict_1_cpu_s"])
            rows.append(row(f"first fit+predict{data}, cold: CPU of the fit's process{tag}",
                            "cpu_s", f["fit_predict_1_cpu_s"], f["fit_predict_2_cpu_s"],
                            "second fit+predict, same process", "s"))
            rows.append(row(f"cold process{data}: CPU of the pre-compiler's worker{tag}",
                            "cpu_s", f["precompiler_cpu_s"], f["main_cpu_s"],
                            "the fit's process (import, data, 2 fits + predicts)", "s"))
            if key == "fit_10k":
                f = min((r["cold"] for r in runs), key=lambda r: r["fit_predict_1_s"])
                rows.append(row(f"first fit+predict, 10k rows, cold cache, vs 5 s target{tag}",
                                "wall_s", f["fit_predict_1_s"], 5.0, "target", "s"))
    for key, label in (("compile_profile", "demo"), ("compile_profile_10k", "10k fit+predict")):
        if key in raw:
            rows.append(row(f"numba compilation CPU in the cold {label} (one process)", "cpu_s",
                            raw[key]["total_cpu_s"], raw[key]["process_cpu_s"],
                            "the whole cold process's CPU", "s"))
    write_result("cold_start", rows, params={"data": "make_ranking 2000 x 50 x 136, 80/20; "
                                                     "10k: 200 x 50 x 136, all rows",
                                             "repeat": args.repeat, "cases": sorted(cases),
                                             "precompile": args.precompile,
                                             "load_average": os.getloadavg(),
                                             "note": args.note, "raw": raw},
                 packages=("numpy", "numba", "scikit-learn"), out_dir=args.out)


if __name__ == "__main__":
    main()
