"""How CPU scoring scales with threads: skltr QuickScorer / traversal vs XGBoost and LightGBM.

The models of ``benchmarks/predict_cpu.py`` (XGBoost 1,000 trees depth 6, LightGBM 1,000
trees x 64 leaves, trained on ``make_ranking`` data; cached in --cache) score the same rows
at each thread count of --threads, every engine in this one process:

* skltr ``QuickScorerPredictor`` with ``backend="quickscorer"`` (``n_jobs=t``; its tree block
  sized from this machine's L2, reported as ``auto_tree_block``) and again for each of
  --tree-blocks; ``backend="traversal"`` on the first --traversal-rows rows (0: not timed);
  ``backend="auto"`` is reported as the backend it picks;
* XGBoost ``inplace_predict`` (``nthread=t``, margins), LightGBM ``predict``
  (``num_threads=t``, raw scores).

Every skltr score is first compared with the library's own (max |diff| reported; the run
fails unless it is 0). Timing: after one warm-up call each, --rounds rounds call every
engine once, in an order that rotates and reverses from round to round (no engine always
runs right after the same one, and a slow spell of the machine is shared out); an engine's
figure is the median of its rounds, and ``spread`` rows give (max - min) / median of each.
``speed-up worst round`` is the smallest ratio peer / QuickScorer of calls made in the same
round. Rows: us/doc per engine (ratio = skltr / peer, so 1/ratio is skltr's speed-up),
QuickScorer's stages (input validation, input conversion, kernel: the rest of
``predict_raw``) and the bytes it moves against the machine's copy bandwidth. The parameters
record the CPU's cache sizes, numba's threading layer, the rows scored and QuickScorer's
chunk size at each thread count, and every round's us/doc.

--rows-per-thread N scores min(--rows, N x threads) rows at each thread count (the same
rows for every engine at that count): each thread then has the same work at every count,
and the one- and two-thread rounds do not take most of the run.

Usage: python benchmarks/scaling_predict_cpu.py [--threads 1 2 4 8 16] [--rows 200000]
       [--rows-per-thread N] [--rounds 5] [--traversal-rows 20000] [--tree-blocks 256 1024]
       [--models xgboost lightgbm] [--out DIR]
"""

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from _harness import cpu_caches, row, time_median, write_result
from predict_cpu import train_models
from skltr import QuickScorerPredictor
from skltr.datasets import make_ranking
from skltr.trees._quickscorer import chunk_docs
from skltr.utils._cpu_cache import l2_cache_bytes
from skltr.trees._traversal import _as_kernel_input


def copy_bandwidth(nbytes=1 << 29):
    """The machine's copy rate in GB/s, (bytes read + bytes written) a second, from a NumPy
    copy of ``nbytes`` (one thread: NumPy copies serially)."""
    a = np.ones(nbytes // 8)
    b = np.empty_like(a)
    np.copyto(b, a)  # first touch of b outside the clock
    return 2 * a.nbytes / time_median(lambda: np.copyto(b, a), repeat=5) / 1e9


def interleaved(engines, rounds):
    """Seconds of every call of ``engines`` (name -> (fn, rows)), ``rounds`` rounds after one
    warm-up call each; round r starts at engine r mod n and runs backwards every other round.
    Returns (name -> list of seconds, name -> the warm-up call's result)."""
    names = list(engines)
    first = {name: engines[name][0]() for name in names}
    times = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in (order if r % 2 == 0 else order[::-1]):
            t0 = time.perf_counter()
            engines[name][0]()
            times[name].append(time.perf_counter() - t0)
    return times, first


def qs_stages(qs, X):
    """Seconds of QuickScorer's host stages: validation, input conversion (``None`` when X
    is read in place)."""
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
    parser.add_argument("--rows-per-thread", type=int, default=None,
                        help="score min(--rows, this x threads) rows at each thread count")
    parser.add_argument("--rounds", type=int, default=5,
                        help="timed calls of each engine (interleaved), after one warm-up")
    parser.add_argument("--traversal-rows", type=int, default=20_000,
                        help="the traversal backend (about 10x slower) scores the first rows "
                             "only (us/doc are per document all the same); 0: skip it")
    parser.add_argument("--tree-blocks", type=int, nargs="*", default=[256, 1024],
                        help="QuickScorer tree_block values timed besides the default")
    parser.add_argument("--trees", type=int, default=1000)
    parser.add_argument("--models", nargs="+", choices=("xgboost", "lightgbm"),
                        default=["xgboost", "lightgbm"],
                        help="which peer models to score (one per run keeps a run short)")
    parser.add_argument("--train-queries", type=int, default=400)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "skltr-bench"))
    parser.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = parser.parse_args()

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    X_all, _, _ = make_ranking(n_queries=-(-args.rows // 100), docs_per_query=100,
                               n_features=136, random_state=2)
    X_all = np.ascontiguousarray(X_all, dtype=np.float64)[: args.rows]
    bandwidth = copy_bandwidth()
    print(f"copy bandwidth (one thread): {bandwidth:.1f} GB/s")
    models = train_models(args.trees, max(args.threads), cache, args.train_queries)
    rows, notes, samples, rows_at = [], {}, {}, {}
    for library, booster in models.items():
        if library not in args.models:
            continue
        case0 = f"{library} {args.trees} trees"
        # Built once (model conversion and tables); n_jobs is read at each call.
        qs = QuickScorerPredictor.from_model(booster, backend="quickscorer")
        notes[f"{case0} auto_tree_block"] = qs.layout_.tree_block
        variants = {f"quickscorer tb{tb}": QuickScorerPredictor.from_model(
            booster, backend="quickscorer", tree_block=tb) for tb in args.tree_blocks}
        if args.traversal_rows:
            variants["traversal"] = QuickScorerPredictor.from_model(booster,
                                                                    backend="traversal")
        notes[f"{case0} auto"] = QuickScorerPredictor.from_model(booster).backend_
        for t in args.threads:
            n = X_all.shape[0] if args.rows_per_thread is None else min(
                X_all.shape[0], args.rows_per_thread * t)
            X = X_all[:n]
            Xt = X[: args.traversal_rows]
            rows_at[t] = n
            if library == "lightgbm":
                peer_name = "lightgbm predict"
                native = lambda A, b=booster, t=t: b.predict(  # noqa: E731
                    A, raw_score=True, num_threads=t)
            else:
                peer_name = "xgboost inplace_predict"
                booster.set_param({"nthread": t})
                native = lambda A, b=booster: b.inplace_predict(  # noqa: E731
                    A, predict_type="margin")
            case = f"{case0}, {t} threads"
            engines = {peer_name: (lambda A=X: native(A), X),
                       "quickscorer": (lambda A=X, e=qs: e.predict_raw(A), X)}
            for name, est in variants.items():
                A = Xt if name == "traversal" else X
                engines[name] = (lambda A=A, e=est: e.predict_raw(A), A)
            for est in (qs, *variants.values()):
                est.set_params(n_jobs=t)
            times, first = interleaved(engines, args.rounds)
            expected = first[peer_name]
            us = {name: np.array(sec) * 1e6 / engines[name][1].shape[0]
                  for name, sec in times.items()}
            samples[case] = {name: [round(v, 4) for v in u] for name, u in us.items()}
            med = {name: statistics.median(u) for name, u in us.items()}
            spread = {name: (u.max() - u.min()) / med[name] for name, u in us.items()}
            for name in engines:
                if name == peer_name:
                    continue
                got = first[name]
                diff = float(np.max(np.abs(got - expected[: got.shape[0]]), initial=0.0))
                assert diff == 0.0, f"{case} {name}: max |diff| {diff}"
                rows.append(row(case, name, med[name], med[peer_name], peer_name, "us/doc"))
                rows.append(row(case, f"{name} spread", spread[name], spread[peer_name],
                                peer_name, "1"))
                rows.append(row(case, f"{name} max|diff|", diff, 0.0, peer_name, "1"))
            worst = min(p / q for p, q in zip(us[peer_name], us["quickscorer"]))
            rows.append(row(case, "quickscorer speed-up worst round", worst, 1.0, peer_name,
                            "x"))
            t_qs = med["quickscorer"] * n / 1e6
            t_val, t_in = qs_stages(qs, X)
            for stage, sec in (("qs validate", t_val), ("qs input", t_in),
                               ("qs kernel", t_qs - t_val - (t_in or 0.0))):
                if sec is not None:
                    rows.append(row(case, stage + " share", sec / t_qs, 1.0, "qs total", "1"))
            # Bytes: X read once (plus a converted copy written and read), the scores written;
            # the tables are read once per work chunk (mostly from L2 / L3, not DRAM).
            dram = X.nbytes * (3 if t_in is not None else 1) + n * 8
            layout = qs.layout_
            chunk = chunk_docs(n, t, layout.used_feature.size, layout.node_thr.itemsize)
            notes[f"{case} chunk_docs"] = chunk
            rows.append(row(case, "qs DRAM GB/s", dram / t_qs / 1e9, bandwidth,
                            "numpy copy GB/s", "GB/s"))
            rows.append(row(case, "qs table GB/s",
                            qs.layout_nbytes_ * -(-n // chunk) / t_qs / 1e9, bandwidth,
                            "numpy copy GB/s", "GB/s"))
            others = "".join(f"; {k} {v:.3f}" for k, v in med.items()
                             if k not in ("quickscorer", peer_name))
            print(f"{case} ({n} rows): qs {med['quickscorer']:.3f} us/doc "
                  f"[{us['quickscorer'].min():.3f}-{us['quickscorer'].max():.3f}], native "
                  f"{med[peer_name]:.3f} [{us[peer_name].min():.3f}-"
                  f"{us[peer_name].max():.3f}]; speed-up {med[peer_name] / med['quickscorer']:.2f}x"
                  f" (worst round {worst:.2f}x){others}; auto picks "
                  f"{notes[case0 + ' auto']}", flush=True)
    write_result("scaling_predict_cpu", rows,
                 params={"rows": X_all.shape[0], "rows_per_thread": args.rows_per_thread,
                         "rows_at_threads": rows_at, "traversal_rows": args.traversal_rows,
                         "threads": args.threads, "rounds": args.rounds, "trees": args.trees,
                         "train_queries": args.train_queries, "models": args.models,
                         "tree_blocks": args.tree_blocks,
                         "copy_bandwidth_GBps": bandwidth, "caches": cpu_caches(),
                         "l2_bytes": l2_cache_bytes(), "auto": notes,
                         "numba_threading_layer": numba.threading_layer(),
                         "numba_num_threads": numba.config.NUMBA_NUM_THREADS,
                         "us_per_doc_rounds": samples},
                 packages=("xgboost", "lightgbm"), out_dir=args.out)


if __name__ == "__main__":
    main()
