"""Dask worker settings against skltr's CPU fit: the worker's profiler and the GIL switch interval.

One ``LocalCluster`` per setting (--workers processes x --threads threads, default 4 x 4 on
the GPU machine's 16 cores), the data of ``benchmarks/train_dask.py`` (``make_ranking``, 1M x
136, one block per worker cut at query boundaries), ``DaskGPUHistGBDTRanker`` with --trees
trees of 31 leaves after an untimed warm-up fit. Settings:

* ``base``: the cluster as Dask makes it (its sampling profiler on, CPython's 5 ms switch
  interval);
* ``switch50ms``: ``sys.setswitchinterval(0.05)`` in every worker;
* ``noprofile``: ``distributed.worker.profile.enabled: False``;
* both;
* ``base`` again, last: clusters of one process differ by up to ~10% from run to run, and
  the first one may still compile kernels that the warm-up fit did not need.

Rows: fit seconds per setting against ``base``; the parameters hold every rank's boosting,
all-reduce and barrier seconds (``timings_["ranks"]``).

Usage: python benchmarks/dask_worker_settings.py [--rows 1000000] [--trees 100]
       [--workers 4] [--threads 4] [--out DIR]
"""

import argparse
import sys
import time

import numpy as np

from _harness import ranking_data, row, write_result
from train_dask import _blocks_at_queries, _skltr_params

SETTINGS = [("base", True, None), ("switch50ms", True, 0.05), ("noprofile", False, None),
            ("noprofile+switch50ms", False, 0.05), ("base-again", True, None)]


def _fit(X, y, qid, chunks, small, args, profile, interval):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    from skltr.dask import DaskGPUHistGBDTRanker

    with dask.config.set({"distributed.worker.profile.enabled": profile}), \
            LocalCluster(n_workers=args.workers, threads_per_worker=args.threads,
                         processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        if interval:
            client.run(sys.setswitchinterval, interval)
        Xd = client.persist(da.from_array(X, chunks=(chunks, -1)))
        yd = client.persist(da.from_array(y, chunks=(chunks,)))
        qd = client.persist(da.from_array(qid, chunks=(chunks,)))
        wait([Xd, yd, qd])
        params = _skltr_params(args.trees, args.threads)
        DaskGPUHistGBDTRanker(**{**params, "n_estimators": 2}).fit(
            X[small], y[small], qid=qid[small])  # warm-up: every worker loads kernels
        t0 = time.perf_counter()
        model = DaskGPUHistGBDTRanker(**params).fit(Xd, yd, qid=qd)
        return time.perf_counter() - t0, model.timings_["ranks"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    X, _, y, _, qid, _ = ranking_data(args.rows, 120)
    X = np.ascontiguousarray(X, dtype=np.float32)
    chunks = _blocks_at_queries(qid, args.workers)
    small = slice(0, int(np.searchsorted(qid, qid[min(20000, len(qid) - 1)])) or len(qid))
    case = f"{args.rows // 1000}k x 136, {args.trees} trees, {args.workers}x{args.threads} CPU"
    seconds, ranks = {}, {}
    for name, profile, interval in SETTINGS:
        seconds[name], ranks[name] = _fit(X, y, qid, chunks, small, args, profile, interval)
        print(name, f"{seconds[name]:.2f} s", flush=True)
    rows = [row(case, f"fit_s {name}", s, seconds["base"], "base", "s")
            for name, s in seconds.items()]
    write_result("dask_worker_settings", rows,
                 params={"rows": args.rows, "trees": args.trees, "workers": args.workers,
                         "threads_per_worker": args.threads, "ranks": ranks},
                 packages=("dask", "distributed", "numba"), out_dir=args.out)


if __name__ == "__main__":
    main()
