"""Tree growing speed on the CPU: skltr's histogram grower vs LightGBM, same fixed gradients.

Both engines grow trees from one fixed set of random gradients/hessians (so the objective's
cost is out of the picture) on ``make_ranking`` data, 136 features: skltr through
``TreeGrower`` on ``BinMapper`` bins (float and quantised histograms), LightGBM through
``Booster.update`` with a callable objective returning the same arrays (one tree per call,
after one warm-up round; ``num_leaves``, ``max_bin``, ``min_data_in_leaf=20``,
``min_sum_hessian_in_leaf=1e-3``, ``num_threads`` as given). Binning / Dataset construction
is timed separately. Trees are grown interleaved (skltr float, skltr quantised, LightGBM,
again ...) so that a machine whose load changes treats every engine alike; the script prints
the median and the minimum, wall and CPU (process) time, in ms per tree. Writes no result
file.

Usage: PYTHONPATH=. python benchmarks/grow_cpu.py [--rows 500000] [--trees 8]
       [--leaves 255] [--max-bins 255] [--threads 2] [--modes float quantised]
       [--lgb-force auto|row|col] [--no-lgb]

Recorded 2026-11-22 (branch gbdt-tree) on an Intel Xeon 2.5 GHz with 2 vCPUs shared with
three other engineers' jobs (load average 7-10): wall times are about twice an idle
machine's, and parallel regions (OpenMP, LightGBM's and numba's) wait for time slices, which
ruins the 2-thread figures, LightGBM's most. CPU time is the steadier figure. 494k x 136,
255 leaves, ms per tree, median (min) of 6 interleaved trees:

    ========  =======  ==========  ============  ===============  ===============
    max_bins  threads  time        skltr float   skltr quantised  LightGBM 4.7
    ========  =======  ==========  ============  ===============  ===============
    255       1        CPU         506 (402)     375 (327)        376 (283)
    255       1        wall        822 (796)     657 (550)        590 (517)
    255 [*]   1        CPU         397 (377)     332 (316)        431 (423)
    255 [*]   1        wall        572 (551)     492 (450)        647 (607)
    63        1        CPU         239 (233)     202 (200)        190 (182)
    63        1        wall        272 (233)     208 (202)        227 (186)
    255       2        CPU         533 (490)     437 (418)        4080 (647)
    255       2        wall        1373 (1302)   1106 (1080)      9587 (1661)
    ========  =======  ==========  ============  ===============  ===============

[*] a later run (after the split-scan and quantisation-pass commits), same settings: the
spread between runs is the machine's load, so compare engines within one run only.
"""

import argparse
import time

import numpy as np

from skltr._engine.binning import BinMapper
from skltr._gbdt.grower_cpu import TreeGrower
from skltr.datasets import make_ranking


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--trees", type=int, default=8)
    ap.add_argument("--leaves", type=int, default=255)
    ap.add_argument("--max-bins", type=int, default=255)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--modes", nargs="+", default=["float", "quantised"])
    ap.add_argument("--no-lgb", action="store_true")
    ap.add_argument("--lgb-force", choices=["auto", "row", "col"], default="auto")
    args = ap.parse_args()

    X, y, qid = make_ranking(n_queries=args.rows // 100, docs_per_query=100, n_features=136,
                             random_state=0)
    rng = np.random.default_rng(0)
    grad = rng.normal(size=X.shape[0]).astype(np.float32)
    hess = rng.uniform(0.05, 1.0, size=X.shape[0]).astype(np.float32)
    print(f"data: {X.shape[0]} x {X.shape[1]}, leaves={args.leaves}, "
          f"max_bins={args.max_bins}, threads={args.threads}")

    t = time.perf_counter()
    bm = BinMapper(max_bins=args.max_bins, random_state=0, n_threads=args.threads)
    Xb = bm.fit_transform(X)
    XbT = np.ascontiguousarray(Xb.T)  # made once per data set, as the boosting loop does
    print(f"skltr binning: {time.perf_counter() - t:.2f} s (incl. compile on a cold cache)")

    engines = {}
    for mode in args.modes:
        state = {"pool": None}

        def grow_one(mode=mode, state=state):
            g = TreeGrower(Xb, grad, hess, n_bins=bm.n_bins, missing_bin=bm.missing_bin,
                           has_missing=bm.has_missing, max_leaves=args.leaves,
                           min_samples_leaf=20, min_child_weight=1e-3, hist_mode=mode,
                           n_threads=args.threads, pool=state["pool"], X_binned_T=XbT)
            tree = g.grow()
            state["pool"] = g.pool
            return tree.n_leaves

        engines[f"skltr {mode}"] = grow_one

    if not args.no_lgb:
        import lightgbm as lgb

        params = {"objective": "none", "num_leaves": args.leaves, "max_bin": args.max_bins,
                  "min_data_in_leaf": 20, "min_sum_hessian_in_leaf": 1e-3, "lambda_l2": 0.0,
                  "learning_rate": 0.1, "num_threads": args.threads, "verbose": -1,
                  "seed": 0}
        if args.lgb_force == "row":
            params["force_row_wise"] = True
        elif args.lgb_force == "col":
            params["force_col_wise"] = True
        t = time.perf_counter()
        ds = lgb.Dataset(X, params=dict(params), free_raw_data=False).construct()
        print(f"lightgbm Dataset: {time.perf_counter() - t:.2f} s")
        booster = lgb.Booster(params, ds)

        def fobj(preds, data):
            return grad, hess

        def lgb_one():
            booster.update(fobj=fobj)

        engines[f"lightgbm ({args.lgb_force})"] = lgb_one

    for fn in engines.values():  # compile / warm up
        fn()
    wall = {k: [] for k in engines}
    cpu = {k: [] for k in engines}
    for _ in range(args.trees):
        for name, fn in engines.items():
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall[name].append((time.perf_counter() - t) * 1e3)
            cpu[name].append((time.process_time() - c) * 1e3)
    for name in engines:
        print(f"{name:22s} ms/tree  wall median {np.median(wall[name]):7.1f} min "
              f"{np.min(wall[name]):7.1f}   CPU median {np.median(cpu[name]):7.1f} min "
              f"{np.min(cpu[name]):7.1f}")
    if not args.no_lgb:
        leaves = [t["num_leaves"] for t in booster.dump_model()["tree_info"]]
        print(f"lightgbm leaves per tree: min {min(leaves)}, max {max(leaves)}")


if __name__ == "__main__":
    main()
