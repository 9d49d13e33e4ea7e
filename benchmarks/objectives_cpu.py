"""Gradient computation of the ranking objectives: skltr's kernels vs LightGBM's objective.

Data: ``--rows`` rows in queries of ``--docs`` documents, labels 0-4 uniform, scores N(0, 1).
skltr: median wall time of ``Objective.gradients`` after compilation. LightGBM does not
expose its gradients, so its objective's cost is estimated from training on the same rows
(one feature, ``max_bin=15``, ``num_leaves=2``): the per-round time of ``lambdarank``
(or ``rank_xendcg``) minus that of ``regression``, whose gradients are trivial; each is the
median over ``--repeat`` trainings of ``(T(rounds + 1) - T(1)) / rounds``.

Usage: python benchmarks/objectives_cpu.py [--rows 500000] [--docs 120] [--threads 2]
"""

import argparse
import time

import numba
import numpy as np

from _harness import row, time_median, write_result
from skltr._dtypes import G_H_DTYPE
from skltr._gbdt.objectives import make_objective


def lightgbm_round_seconds(objective, X, y, sizes, init, threads, rounds, repeat):
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
            t0 = time.perf_counter()
            lgb.train(params, ds, n)
            t.append(time.perf_counter() - t0)
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
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))

    base = lightgbm_round_seconds("regression", X, y, sizes, scores, args.threads,
                                  args.rounds, args.repeat)
    rows = []
    for name, peer in [("lambdarank", "lambdarank"), ("rank_xendcg", "rank_xendcg"),
                       ("rank_pairwise", None), ("regression", None)]:
        obj = make_objective(name, random_state=0)
        obj.init_score(y, group_ptr, None)
        ours = time_median(lambda: obj.gradients(scores, y, group_ptr, None, grad, hess, 1),
                           repeat=7, warmup=1)
        if peer:
            theirs = lightgbm_round_seconds(peer, X, y, sizes, scores, args.threads,
                                            args.rounds, args.repeat) - base
            peer_name = f"LightGBM {peer} round minus regression round"
        else:
            theirs, peer_name = float("nan"), "-"
        rows.append(row(f"{name}, {n} rows / {n_queries} queries", "time", ours, theirs,
                        peer_name, "s"))
    write_result("objectives_cpu", rows, packages=("lightgbm",),
                 params={"rows": n, "docs_per_query": args.docs, "threads": args.threads,
                         "lightgbm_regression_round_s": base,
                         "load_average": list(__import__("os").getloadavg())})


if __name__ == "__main__":
    main()
