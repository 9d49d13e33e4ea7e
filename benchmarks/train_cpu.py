"""Training on the CPU: skltr GPUHistGBDTRanker vs LightGBM lambdarank vs XGBoost rank:ndcg.

One run per engine and bin count on the same data (``make_ranking``, 136 features, split by
query 80/20): wall time of the whole fit, time of the binning step alone (skltr's BinMapper vs
LightGBM's Dataset construction vs XGBoost's QuantileDMatrix), peak memory, and test NDCG@10.
Every engine fits in a fresh child process (multiprocessing, "spawn"), after a small untimed
warm-up fit in that child (numba loads its compiled kernels, the libraries their thread
pools); the child reports its own peak resident memory (``getrusage(RUSAGE_SELF).ru_maxrss``)
minus its resident memory just before the fit, so engines never mix. The data are generated
once, saved to ``.npy`` files in a temporary folder and loaded by each child.

Same hyper-parameters everywhere: 200 trees, 255 leaves (XGBoost: ``max_leaves=255``,
``grow_policy="lossguide"``, ``max_depth=0``), learning rate 0.1, 20 rows per leaf
(LightGBM ``min_data_in_leaf``; XGBoost has no such parameter), minimum hessian 1e-3, no
regularisation, LightGBM's lambdarank truncation level 30, no early stopping.

``--repeat N`` fits every engine N times, in alternating order (skltr, lightgbm, xgboost,
then xgboost, lightgbm, skltr, ...), and reports each engine's fastest fit (all fit times
are kept under ``raw``): on a shared virtual machine whose speed drifts by tens of percent
over minutes, the alternation exposes every engine to the same drift.

Usage: python benchmarks/train_cpu.py [--rows 500000] [--trees 200] [--bins 255 63]
       [--threads N] [--engines skltr lightgbm xgboost] [--repeat 1] [--no-write]
Quick check: python benchmarks/train_cpu.py --rows 20000 --trees 10 --no-write
"""

import argparse
import multiprocessing as mp
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from _harness import lightgbm_lambdarank_params, query_sizes, ranking_data, row, write_result

LEAVES = 255
LEARNING_RATE = 0.1
MIN_LEAF = 20
MIN_HESS = 1e-3
TRUNCATION = 30


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="utf-8") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def save_data(data_dir, X, Xt, y, yt, qid, qt):
    """Save :func:`ranking_data`'s arrays where :func:`run_engine` loads them."""
    for name, arr in zip(("X", "y", "qid", "Xt", "yt", "qt"), (X, y, qid, Xt, yt, qt)):
        np.save(Path(data_dir) / f"{name}.npy", arr)


def _load(data_dir):
    d = Path(data_dir)
    return [np.load(d / f"{name}.npy") for name in ("X", "y", "qid", "Xt", "yt", "qt")]


def _fit_skltr(X, y, qid, trees, bins, threads):
    from skltr import GPUHistGBDTRanker

    model = GPUHistGBDTRanker(n_estimators=trees, learning_rate=LEARNING_RATE,
                              max_leaves=LEAVES, min_samples_leaf=MIN_LEAF,
                              min_child_weight=MIN_HESS, max_bins=bins,
                              lambdarank_truncation_level=TRUNCATION, early_stopping=False,
                              n_jobs=threads, random_state=0)
    model.fit(X, y, qid=qid)
    return model.predict, model.timings_["binning_s"]


def _fit_lightgbm(X, y, qid, trees, bins, threads):
    import lightgbm as lgb

    params = lightgbm_lambdarank_params(leaves=LEAVES, max_depth=-1,
                                        learning_rate=LEARNING_RATE, min_leaf=MIN_LEAF,
                                        min_hess=MIN_HESS, bins=bins, truncation=TRUNCATION,
                                        threads=threads)
    t = time.perf_counter()
    ds = lgb.Dataset(X, y, group=query_sizes(qid), params=params).construct()
    binning_s = time.perf_counter() - t
    booster = lgb.train(params, ds, num_boost_round=trees)
    return booster.predict, binning_s


def _fit_xgboost(X, y, qid, trees, bins, threads):
    import xgboost as xgb

    t = time.perf_counter()
    dm = xgb.QuantileDMatrix(X, y, qid=qid, max_bin=bins, nthread=threads)
    binning_s = time.perf_counter() - t
    booster = xgb.train({"objective": "rank:ndcg", "tree_method": "hist", "max_bin": bins,
                         "grow_policy": "lossguide", "max_leaves": LEAVES, "max_depth": 0,
                         "eta": LEARNING_RATE, "min_child_weight": MIN_HESS, "lambda": 0.0,
                         "nthread": threads, "seed": 0}, dm, num_boost_round=trees)
    return (lambda Xt: booster.predict(xgb.DMatrix(Xt, nthread=threads))), binning_s


_ENGINES = {"skltr": _fit_skltr, "lightgbm": _fit_lightgbm, "xgboost": _fit_xgboost}


def fit_in_turn(raw, key, engines, repeat, run_args):
    """``repeat`` rounds of one fit per engine, in alternating order, each in a fresh child
    process (``run_engine(engine, *run_args)``: its peak memory is its own); keeps each
    engine's fastest result under ``raw[(engine, key)]`` with every fit time in
    ``all_fit_s``, and yields ``(engine, result)`` per fit."""
    ctx = mp.get_context("spawn")
    for rep in range(repeat):
        for engine in engines if rep % 2 == 0 else engines[::-1]:
            with ctx.Pool(1) as pool:
                res = pool.apply(run_engine, (engine, *run_args))
            best = raw.get((engine, key))
            fits = (best["all_fit_s"] if best else []) + [res["fit_s"]]
            raw[(engine, key)] = dict(res if best is None or res["fit_s"] < best["fit_s"]
                                      else best, all_fit_s=fits)
            yield engine, res


def run_engine(engine, data_dir, trees, bins, threads, stages=False):
    """Child process: warm up, fit once, return fit time, binning time, peak memory, NDCG.

    ``stages``: also time skltr's training stages (:mod:`skltr.utils._profile`; a few clock
    reads per node) in a second fit, after the timed one -- so that ``fit_s`` is a fit
    without the timer, as the peers' -- and add them as ``stages``: ``{name: {"s",
    "calls", "bytes"}}``, with that fit's own times as ``profiled_fit_s`` and
    ``profiled_binning_s``.
    """
    from skltr.metrics import ndcg_score
    from skltr.utils._profile import profiling

    X, y, qid, Xt, yt, qt = _load(data_dir)
    fit = _ENGINES[engine]
    n_warm = int(np.searchsorted(qid, qid[min(2000, len(qid) - 1)]))  # whole queries
    fit(X[:n_warm], y[:n_warm], qid[:n_warm], 2, bins, threads)
    before = _rss_bytes()
    t = time.perf_counter()
    predict, binning_s = fit(X, y, qid, trees, bins, threads)
    fit_s = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    out = {"fit_s": fit_s, "binning_s": binning_s, "peak_mb": max(peak - before, 0) / 2**20,
           "ndcg@10": float(ndcg_score(yt, predict(Xt), qid=qt, k=10))}
    if stages and engine == "skltr":
        with profiling() as timer:
            t = time.perf_counter()
            _, out["profiled_binning_s"] = fit(X, y, qid, trees, bins, threads)
            out["profiled_fit_s"] = time.perf_counter() - t
        calls, nbytes = timer.calls(), timer.bytes()
        out["stages"] = {k: {"s": v, "calls": calls[k], "bytes": nbytes[k]}
                         for k, v in timer.summary().items()}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000, help="training rows (about)")
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--bins", type=int, nargs="+", default=[255, 63])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--engines", nargs="+", default=list(_ENGINES), choices=list(_ENGINES))
    parser.add_argument("--repeat", type=int, default=1,
                        help="fits per engine, in alternating order; the fastest is reported")
    parser.add_argument("--no-write", action="store_true", help="print only, no result file")
    args = parser.parse_args()

    # 100 documents per query on average; 20 % of the queries are held out for testing.
    X, Xt, y, yt, qid, qt = ranking_data(args.rows, 100)
    print(f"train {X.shape[0]} x {X.shape[1]} ({len(np.unique(qid))} queries), test "
          f"{Xt.shape[0]} rows; {args.trees} trees, {LEAVES} leaves, {args.threads} threads")

    rows, raw = [], {}
    with tempfile.TemporaryDirectory(prefix="skltr-train-bench-") as tmp:
        save_data(tmp, X, Xt, y, yt, qid, qt)
        del X, Xt
        for bins in args.bins:
            for engine, res in fit_in_turn(raw, bins, args.engines, args.repeat,
                                           (tmp, args.trees, bins, args.threads)):
                print(f"  {bins:3d} bins  {engine:<9} fit {res['fit_s']:8.2f} s  binning "
                      f"{res['binning_s']:6.2f} s  peak +{res['peak_mb']:7.0f} MB  "
                      f"NDCG@10 {res['ndcg@10']:.4f}", flush=True)
    if "skltr" not in args.engines:
        return
    for bins in args.bins:
        ours = raw[("skltr", bins)]
        for peer in (e for e in args.engines if e != "skltr"):
            theirs = raw[(peer, bins)]
            case = f"{len(y)} rows, {bins} bins"
            rows += [row(case, "fit", ours["fit_s"], theirs["fit_s"], peer, "s"),
                     row(case, "binning", ours["binning_s"], theirs["binning_s"], peer, "s"),
                     row(case, "peak memory", ours["peak_mb"], theirs["peak_mb"], peer, "MB"),
                     row(case, "test NDCG@10", ours["ndcg@10"], theirs["ndcg@10"], peer,
                         "ndcg")]
    params = {"rows": int(len(y)), "test_rows": int(len(yt)), "features": 136,
              "trees": args.trees, "leaves": LEAVES, "bins": args.bins,
              "learning_rate": LEARNING_RATE, "min_samples_leaf": MIN_LEAF,
              "threads": args.threads, "truncation_level": TRUNCATION,
              "repeat": args.repeat,
              "raw": {f"{e}/{b}": v for (e, b), v in raw.items()}}
    if args.no_write:
        from _harness import print_table

        print_table({"benchmark": "train_cpu", "machine": "(not written)", "cores":
                     os.cpu_count(), "commit": "-", "rows": rows})
    else:
        write_result("train_cpu", rows, params=params, packages=("lightgbm", "xgboost"))


if __name__ == "__main__":
    main()
