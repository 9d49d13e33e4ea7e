"""How a parallel node histogram is split into tasks: per node (integer layouts) or per tree.

A parallel histogram runs ``n_row_chunks x n_feature_blocks`` tasks
(``skltr/_cpu/histogram.py``). Float sums depend on the row chunks, so a float tree keeps one
split for all its nodes (``histogram_tasks``: feature blocks of >= 16 features first, the
rest row chunks). Integer sums (the quantised layouts, the default) do not, so each node gets
its own (``integer_histogram_tasks``: row chunks first, as many as keep 2,048 rows each, the
threads left over as feature blocks). Every row chunk after the first is a copy of the whole
histogram to zero and to add, which small nodes cannot pay for.

Per node size (rows drawn at random, sorted: a node deep in a tree) and feature count: the
time of ``build_histogram`` with its reduction, one-word layout, on all the machine's
threads, for the per-node rule (``skltr``), the per-tree rule (``peer``) and every power-of-two
split (``params.raw``). Minimum over ``--repeat`` blocks of 20 calls.

Usage: python benchmarks/histogram_tasks.py [--repeat 7] [--out DIR]
"""

import argparse
import time

import numba
import numpy as np

from _harness import row, write_result
from skltr._cpu.histogram import build_histogram, build_histogram_serial
from skltr._engine.histogram import histogram_tasks, integer_histogram_tasks

SIZES = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


def _time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(20):
            fn()
        best = min(best, (time.perf_counter() - t) / 20)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = ap.parse_args()
    threads = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(threads)
    rng = np.random.default_rng(0)
    n_total = 240_000
    rows_out, raw = [], {}
    for n_features in (30, 136):
        X = rng.integers(0, 255, size=(n_total, n_features), dtype=np.uint8)
        words = rng.integers(-2**20, 2**20, size=n_total).astype(np.int64)
        out = np.empty((n_features, 259, 1), np.int64)
        scratch = np.empty((threads, out.size), np.int64)
        splits = [(c, threads // c) for c in (2 ** k for k in range(16)) if c <= threads]
        for n in SIZES:
            rows = np.sort(rng.choice(n_total, n, replace=False)).astype(np.uint32)

            def build(c, b):
                return lambda: build_histogram(X, words, words, rows, 0, n, True, out, scratch,
                                               c, min(b, n_features), True)
            times = {f"{c}x{b}": _time(build(c, b), args.repeat) for c, b in splits}
            times["serial"] = _time(lambda: build_histogram_serial(X, words, words, rows, 0, n,
                                                                   True, out), args.repeat)
            per_node = "%dx%d" % integer_histogram_tasks(threads, n_features, n)
            per_tree = "%dx%d" % histogram_tasks(threads, n_features)
            ours = _time(build(*integer_histogram_tasks(threads, n_features, n)), args.repeat)
            theirs = _time(build(*histogram_tasks(threads, n_features)), args.repeat)
            raw[f"{n_features} features, {n} rows"] = {k: v * 1e6 for k, v in times.items()}
            rows_out.append(row(f"{n_features} features, {n} rows, {threads} thr",
                                f"histogram {per_node} vs {per_tree}", ours * 1e6,
                                theirs * 1e6, "per-tree tasks", "us"))
            print(f"{n_features:4d} features {n:7d} rows  per node {per_node} "
                  f"{ours * 1e6:8.1f} us  per tree {per_tree} {theirs * 1e6:8.1f} us  "
                  f"best {min(times, key=times.get)}", flush=True)
    write_result("histogram_tasks", rows_out, out_dir=args.out,
                 params={"threads": threads, "repeat": args.repeat, "rows_total": n_total,
                         "layout": "one-word", "raw_us": raw})


if __name__ == "__main__":
    main()
