"""Shared benchmark harness: timing, peak memory, machine facts, result files.

Every benchmark runs skltr and its peer on the same data in one process and writes
``benchmarks/results/<benchmark>-<machine>-<date>.json``::

    {"benchmark", "machine", "cpu", "cores", "gpu", "commit", "date", "versions", "params",
     "rows": [{"case", "metric", "skltr", "peer", "peer_name", "unit", "ratio"}]}

``ratio`` is skltr's figure divided by the peer's in that unit; for times, below 1 means skltr
is faster.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import statistics
import subprocess
import threading
import time
from importlib import metadata
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"

# Benchmarks time warm kernels. On a cold kernel cache the pre-compiler
# (skltr._gbdt.precompile) would leave the compiled leaf-wise grower to its background
# stage, and the first timed fits to the driver: every kernel compiles in the benchmark's
# process instead (cold_start.py sets the variable for its own runs).
os.environ.setdefault("SKLTR_PRECOMPILE", "0")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_caches() -> dict:
    """CPU 0's cache sizes by level and type (Linux sysfs, e.g. ``{"L1d": "48K", "L2":
    "1024K"}``) and the logical CPUs sharing its core (more than one: SMT siblings)."""
    base = Path("/sys/devices/system/cpu/cpu0")
    out = {}
    for index in sorted(base.glob("cache/index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        out[f"L{level}{suffix}"] = size
    try:
        out["core_siblings"] = (base / "topology/thread_siblings_list").read_text().strip()
    except OSError:
        pass
    return out


def gpu_info() -> dict | None:
    """GPU name, driver and CuPy version when a GPU is usable, else None."""
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        return {"name": props["name"].decode(), "driver": cupy.cuda.runtime.driverGetVersion(),
                "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
                "cupy": cupy.__version__}
    except Exception:  # noqa: BLE001 - no CuPy or no GPU
        return None


def git_commit() -> str:
    """The checkout's commit, or ``$SKLTR_COMMIT`` when set (a copy sent to another machine
    carries stale git metadata: the caller names the commit that runs)."""
    if os.environ.get("SKLTR_COMMIT"):
        return os.environ["SKLTR_COMMIT"]
    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=root, text=True,
                                      stderr=subprocess.DEVNULL).strip()
        dirty = subprocess.check_output(["git", "status", "--porcelain", "--untracked-files=no"],
                                        cwd=root, text=True, stderr=subprocess.DEVNULL).strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("SKLTR_COMMIT", "unknown")


def versions(*packages: str) -> dict:
    out = {"python": platform.python_version()}
    for name in ("skltr", "numpy", "numba", "scikit-learn", *packages):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def time_median(fn, *, repeat: int = 5, warmup: int = 1, sync=None) -> float:
    """Median wall time of ``fn()`` in seconds after ``warmup`` untimed calls.

    ``sync`` (e.g. a CUDA synchronise) is called before each clock read.
    """
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        if sync:
            sync()
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gpu_time(fn, repeat: int = 7, warmup: int = 1) -> float:
    """Median GPU seconds of ``fn`` (CUDA events around each call), after ``warmup`` calls."""
    import cupy

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return float(statistics.median(times))


def gpu_copy_bandwidth(nbytes: int = 1 << 30) -> float:
    """The GPU's device-to-device copy rate in GB/s: (bytes read + bytes written) a second."""
    import cupy

    a = cupy.ones(nbytes, cupy.uint8)
    b = cupy.empty_like(a)
    return 2 * nbytes / gpu_time(lambda: b.__setitem__(Ellipsis, a), repeat=10) / 1e9


def copy_bandwidth(threads: int = 1, nbytes: int = 1 << 29, repeat: int = 5) -> float:
    """The host's memory copy rate in GB/s, (bytes read + bytes written) a second, of
    ``threads`` threads each copying its slice of one ``nbytes`` array (numpy releases the
    GIL in a copy); best of ``repeat``. One thread is a plain numpy copy."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    a = np.ones(nbytes, np.uint8)
    b = np.empty_like(a)
    bounds = np.linspace(0, nbytes, threads + 1).astype(np.int64)
    parts = [(b[lo:hi], a[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    best = np.inf
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeat + 1):  # the first copy also faults b's pages in
            t = time.perf_counter()
            list(pool.map(lambda p: np.copyto(*p), parts))
            best = min(best, time.perf_counter() - t)
    return 2 * nbytes / best / 1e9


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="utf-8") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_during(fn, interval: float = 0.005):
    """Run ``fn()`` and return ``(result, peak RSS increase in bytes)``.

    RSS is sampled from /proc every ``interval`` seconds, so memory held by native libraries
    (LightGBM, XGBoost) counts too, not only Python allocations.
    """
    base = _rss_bytes()
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss_bytes())
            time.sleep(interval)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        result = fn()
    finally:
        done.set()
        thread.join()
    peak[0] = max(peak[0], _rss_bytes())
    return result, peak[0] - base


def ranking_data(rows: int, docs_per_query: int, n_features: int = 136, seed: int = 0):
    """The training benchmarks' data: ``make_ranking`` split by query 80/20 (``seed``).

    About ``rows`` rows train; the training part is sorted by query (contiguous queries:
    what LightGBM and XGBoost need). Returns ``X, Xt, y, yt, qid, qt``.
    """
    from skltr.datasets import make_ranking
    from skltr.model_selection import train_test_split_by_query
    from skltr.utils import group_by_qid

    n_queries = max(int(round(rows / 0.8 / docs_per_query)), 10)
    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=docs_per_query,
                             n_features=n_features, random_state=seed)
    X, Xt, y, yt, qid, qt = train_test_split_by_query(X, y, qid=qid, test_size=0.2,
                                                      random_state=seed)
    order = group_by_qid(qid).order
    return X[order], Xt, y[order], yt, qid[order], qt


def query_sizes(qid):
    """Sizes of the runs of equal ``qid`` (contiguous queries), LightGBM's ``group``."""
    import numpy as np

    return np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True]))


def lightgbm_lambdarank_params(*, leaves, max_depth, learning_rate, min_leaf, min_hess, bins,
                               truncation, threads) -> dict:
    """LightGBM ``lambdarank`` parameters of the training benchmarks (seed 0, quiet)."""
    return {"objective": "lambdarank", "num_leaves": leaves, "max_depth": max_depth,
            "learning_rate": learning_rate, "min_data_in_leaf": min_leaf,
            "min_sum_hessian_in_leaf": min_hess, "max_bin": bins,
            "lambdarank_truncation_level": truncation, "num_threads": threads,
            "verbose": -1, "seed": 0}


def row(case: str, metric: str, skltr: float, peer: float, peer_name: str, unit: str) -> dict:
    return {"case": case, "metric": metric, "skltr": skltr, "peer": peer,
            "peer_name": peer_name, "unit": unit,
            "ratio": (skltr / peer) if peer else None}


def write_result(benchmark: str, rows: list, *, params: dict | None = None,
                 packages: tuple = (), out_dir: Path | str | None = None) -> Path:
    """Write the JSON result file and print a table; return the file's path."""
    gpu = gpu_info()
    machine = gpu["name"] if gpu else cpu_model()
    now = _dt.datetime.now(_dt.timezone.utc)
    doc = {"benchmark": benchmark, "machine": machine, "cpu": cpu_model(),
           "cores": os.cpu_count(), "gpu": gpu, "commit": git_commit(),
           "date": now.isoformat(timespec="seconds"), "versions": versions(*packages),
           "params": params or {}, "rows": rows}
    out = Path(out_dir) if out_dir else RESULTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", machine).strip("-").lower()[:40]
    path = out / f"{benchmark}-{slug}-{now.date().isoformat()}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print_table(doc)
    print(f"\nwritten: {path}")
    return path


def write_json(name: str, doc: dict, out_dir: Path | str) -> Path:
    """Write a free-form result ``doc`` (the tables of write_result do not fit it) as
    ``<out_dir>/<name>.json``, with the GPU and the commit added; return the path."""
    path = Path(out_dir) / f"{name}.json"
    doc = {"gpu": gpu_info(), "commit": git_commit(), **doc}
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print("wrote", path)
    return path


def print_table(doc: dict) -> None:
    print(f"{doc['benchmark']} on {doc['machine']} ({doc['cores']} cores), commit "
          f"{doc['commit'][:12]}")
    header = (f"{'case':<38} {'metric':<14} {'skltr':>12} {'peer':>12} {'unit':<8} "
              f"{'ratio':>7}  peer")
    print(header)
    print("-" * len(header))
    def num(v):
        return f"{'-':>12}" if v is None else f"{v:>12.6g}"

    for r in doc["rows"]:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.3f}"
        print(f"{r['case']:<38} {r['metric']:<14} {num(r['skltr'])} {num(r['peer'])} "
              f"{r['unit']:<8} {ratio:>7}  {r['peer_name']}")
