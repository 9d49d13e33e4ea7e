"""Gradient computation of the ranking objectives: skltr's kernels vs LightGBM's objective.

Data: ``--rows`` rows in queries of ``--docs`` documents, labels 0-4 uniform, scores N(0, 1).
skltr: median wall time of ``Objective.gradients`` after compilation. LightGBM does not
expose its gradients, so its objective's cost is estimated from training on the same rows
(one feature, ``max_bin=15``, ``num_leaves=2``): the per-round time of ``lambdarank``
(or ``rank_xendcg``) minus that of ``regression``, whose gradients are trivial; each is the
median over ``--repeat`` trainings of ``(T(rounds + 1) - T(1)) / rounds``.

The machine these run on is shared: wall times under load say little, so each case is also
measured as the **CPU time of one thread** (``time.process_time``, numba and LightGBM both
limited to one thread), which contention distorts far less. The load average is recorded.

Usage: python benchmarks/objectives_cpu.py [--rows 500000] [--docs 120] [--threads 2]
"""

import argparse
import os
import time

import numba
import numpy as np

from _harness import row, time_median, write_result
from skltr._dtypes import G_H_DTYPE
from skltr._gbdt.objectives import make_objective


def cpu_median(fn, repeat=7):
    """Median CPU time (this process, all threads) of ``fn()`` after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def lightgbm_round_seconds(objective, X, y, sizes, init, threads, rounds, repeat,
                           clock=time.perf_counter):
    import lightgbm as lgb

    params = {"objective": objective, "verbose": -1, "num_threads": threads, "num_leaves": 2,
              "max_bin": 15}
    ds = lgb.Dataset(X, y, group=sizes, init_score=init, params={"max_bin": 15,
                                                                 "verbose": -1})
    ds.construct()
    per_round = []
    for _ in range(repeat):
        t = []
        for n in (1, rounds + 1):
            t0 = clock()
            lgb.train(params, ds, n)
            t.append(clock() - t0)
        per_round.append((t[1] - t[0]) / rounds)
    return float(np.median(per_round))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n_queries = args.rows // args.docs
    sizes = np.full(n_queries, args.docs)
    n = int(sizes.sum())
    group_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    y = rng.integers(0, 5, n).astype(np.float64)
    scores = rng.normal(size=n)
    X = rng.normal(size=(n, 1))
    grad = np.empty(n, dtype=G_H_DTYPE)
    hess = np.empty(n, dtype=G_H_DTYPE)

    rows = []
    for threads, clock, metric in [(args.threads, time.perf_counter, "wall time"),
                                   (1, time.process_time, "cpu time 1 thr")]:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        timer = time_median if clock is time.perf_counter else cpu_median
        base = lightgbm_round_seconds("regression", X, y, sizes, scores, threads,
                                      args.rounds, args.repeat, clock)
        for name, peer in [("lambdarank", "lambdarank"), ("rank_xendcg", "rank_xendcg"),
                           ("rank_pairwise", None), ("regression", None)]:
            obj = make_objective(name, random_state=0)
            obj.init_score(y, group_ptr, None)

            def call():
                obj.gradients(scores, y, group_ptr, None, grad, hess, 1)

            ours = time_median(call, repeat=7, warmup=1) if timer is time_median else timer(call)
            if peer:
                theirs = lightgbm_round_seconds(peer, X, y, sizes, scores, threads,
                                                args.rounds, args.repeat, clock) - base
                peer_name = f"LightGBM {peer} round minus regression round"
            else:
                theirs, peer_name = float("nan"), "-"
            rows.append(row(f"{name}, {n} rows, {threads} thr", metric, ours, theirs,
                            peer_name, "s"))
    write_result("objectives_cpu", rows, packages=("lightgbm",),
                 params={"rows": n, "queries": n_queries, "docs_per_query": args.docs,
                         "threads": args.threads, "load_average": list(os.getloadavg())})


if __name__ == "__main__":
    main()
