"""How CPU scoring scales with threads: skltr QuickScorer / traversal vs XGBoost and LightGBM.

The models of ``benchmarks/predict_cpu.py`` (XGBoost 1,000 trees depth 6, LightGBM 1,000
trees x 64 leaves, trained on ``make_ranking`` data; cached in --cache) score --rows rows
at each thread count of --threads, every engine in this one process on the same rows:

* skltr ``QuickScorerPredictor`` with ``backend="quickscorer"`` and ``"traversal"``
  (``n_jobs=t``); ``backend="auto"`` is reported as the backend it picks (the same object
  would be timed twice); QuickScorer again for each of --tree-blocks other than the default
  (a block's tables should stay in a core's L2: the per-core L2 shrinks from machine to
  machine, and the L3 bandwidth each thread gets shrinks as threads are added);
* XGBoost ``inplace_predict`` (``nthread=t``, margins), LightGBM ``predict``
  (``num_threads=t``, raw scores).

Every skltr score is first compared with the library's own (max |diff| reported; the run
fails unless it is 0). Rows: us/doc per engine and thread count (ratio = skltr / peer, so
1/ratio is skltr's speed-up), QuickScorer's stages (input validation, input conversion,
kernel: the kernel is the rest of ``predict_raw``) and the bytes it moves against the
machine's copy bandwidth (a large NumPy copy). The parameters record the CPU's cache sizes
and SMT siblings (``cpu_caches``).

Usage: python benchmarks/scaling_predict_cpu.py [--threads 1 2 4 8 16] [--rows 200000]
       [--traversal-rows 50000] [--tree-blocks 1024 512] [--out DIR]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from _harness import cpu_caches, row, time_median, write_result
from predict_cpu import train_models
from skltr import QuickScorerPredictor
from skltr.datasets import make_ranking
from skltr.trees._traversal import _as_kernel_input


def copy_bandwidth(nbytes=1 << 29):
    """The machine's copy rate in GB/s, (bytes read + bytes written) a second, from a NumPy
    copy of ``nbytes`` (one thread: NumPy copies serially)."""
    a = np.ones(nbytes // 8)
    b = np.empty_like(a)
    np.copyto(b, a)  # first touch of b outside the clock
    return 2 * a.nbytes / time_median(lambda: np.copyto(b, a), repeat=5) / 1e9


def timed(fn, slow_s=1.0):
    """Median seconds of ``fn``: the result of a first (untimed) call is returned too and
    stands as the warm-up; 3 timed calls, or 1 when a call takes over ``slow_s``."""
    t0 = time.perf_counter()
    first = fn()
    once = time.perf_counter() - t0
    return time_median(fn, repeat=1 if once > slow_s else 3, warmup=0), first


def qs_stages(qs, X):
    """Seconds of QuickScorer's host stages: validation, input conversion (``None`` when X
    is read in place), and the rest of ``predict_raw`` (the kernel and its output)."""
    t_val = time_median(lambda: qs._validated(X), repeat=3)
    Xk = _as_kernel_input(qs.ensemble_, X)
    t_in = None if np.shares_memory(Xk, X) else time_median(
        lambda: _as_kernel_input(qs.ensemble_, X), repeat=3)
    return t_val, t_in


def main():
    parser = argparse.ArgumentParser()
    cores = os.cpu_count() or 1
    parser.add_argument("--threads", type=int, nargs="+",
                        default=[t for t in (1, 2, 4, 8, 16) if t <= cores])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--traversal-rows", type=int, default=50_000,
                        help="the traversal backend (about 10x slower) scores the first rows "
                             "only; us/doc are per document all the same")
    parser.add_argument("--tree-blocks", type=int, nargs="+", default=[1024, 512],
                        help="QuickScorer tree_block values (the first is the default's row)")
    parser.add_argument("--trees", type=int, default=1000)
    parser.add_argument("--train-queries", type=int, default=400)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "skltr-bench"))
    parser.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = parser.parse_args()

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    X, _, _ = make_ranking(n_queries=-(-args.rows // 100), docs_per_query=100, n_features=136,
                           random_state=2)
    X = np.ascontiguousarray(X, dtype=np.float64)[: args.rows]
    Xt = X[: args.traversal_rows]
    n, nt = X.shape[0], Xt.shape[0]
    bandwidth = copy_bandwidth()
    print(f"copy bandwidth (one thread): {bandwidth:.1f} GB/s")
    models = train_models(args.trees, max(args.threads), cache, args.train_queries)
    rows, notes = [], {}
    for library, booster in models.items():
        case0 = f"{library} {args.trees} trees"
        for t in args.threads:
            if library == "lightgbm":
                peer_name = "lightgbm predict"
                native = lambda A, b=booster, t=t: b.predict(  # noqa: E731
                    A, raw_score=True, num_threads=t)
            else:
                peer_name = "xgboost inplace_predict"
                booster.set_param({"nthread": t})
                native = lambda A, b=booster: b.inplace_predict(  # noqa: E731
                    A, predict_type="margin")
            t_native, expected = timed(lambda: native(X))
            case = f"{case0}, {t} threads"
            us = 1e6 / n
            seconds = {}
            runs = [("quickscorer", "quickscorer", {"tree_block": args.tree_blocks[0]}),
                    ("traversal", "traversal", {})]
            runs += [(f"quickscorer tb{tb}", "quickscorer", {"tree_block": tb})
                     for tb in args.tree_blocks[1:]]
            for name, backend, extra in runs:
                est = QuickScorerPredictor.from_model(booster, backend=backend, n_jobs=t,
                                                      **extra)
                A = X if backend == "quickscorer" else Xt
                t_s, got = timed(lambda: est.predict_raw(A))
                seconds[name] = t_s
                diff = float(np.max(np.abs(got - expected[: A.shape[0]])))
                assert diff == 0.0, f"{case} {name}: max |diff| {diff}"
                rows.append(row(case, name, t_s * 1e6 / A.shape[0], t_native * us,
                                peer_name, "us/doc"))
                rows.append(row(case, f"{name} max|diff|", diff, 0.0, peer_name, "1"))
            auto = QuickScorerPredictor.from_model(booster, backend="auto", n_jobs=t)
            notes[f"{case} auto"] = auto.backend_
            qs = QuickScorerPredictor.from_model(booster, backend="quickscorer", n_jobs=t,
                                                 tree_block=args.tree_blocks[0])
            t_qs = seconds["quickscorer"]
            t_val, t_in = qs_stages(qs, X)
            for stage, sec in (("qs validate", t_val), ("qs input", t_in),
                               ("qs kernel", t_qs - t_val - (t_in or 0.0))):
                if sec is not None:
                    rows.append(row(case, stage + " share", sec / t_qs, 1.0, "qs total", "1"))
            # Bytes: X read once (plus a converted copy written and read), the scores written;
            # the tables are read once per thread chunk (mostly from L2 / L3, not DRAM).
            dram = X.nbytes * (3 if t_in is not None else 1) + n * 8
            chunks = -(-n // 256)
            rows.append(row(case, "qs DRAM GB/s", dram / t_qs / 1e9, bandwidth,
                            "numpy copy GB/s", "GB/s"))
            rows.append(row(case, "qs table GB/s", qs.layout_nbytes_ * chunks / t_qs / 1e9,
                            bandwidth, "numpy copy GB/s", "GB/s"))
            print(f"{case}: qs {t_qs * us:.3f} us/doc (input {0 if t_in is None else t_in * us:.3f}"
                  f"), native {t_native * us:.3f}; speed-up {t_native / t_qs:.2f}x; auto picks "
                  f"{auto.backend_}", flush=True)
    write_result("scaling_predict_cpu", rows,
                 params={"rows": n, "traversal_rows": nt, "threads": args.threads,
                         "trees": args.trees, "train_queries": args.train_queries,
                         "tree_blocks": args.tree_blocks, "copy_bandwidth_GBps": bandwidth,
                         "caches": cpu_caches(), "auto": notes},
                 packages=("xgboost", "lightgbm"), out_dir=args.out)


if __name__ == "__main__":
    main()
