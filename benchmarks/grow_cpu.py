"""Tree growing speed on the CPU: skltr's histogram grower vs LightGBM, same fixed gradients.

Both engines grow trees from one fixed set of random gradients/hessians (so the objective's
cost is out of the picture) on ``make_ranking`` data, 136 features: skltr through
``TreeGrower`` on ``BinMapper`` bins, LightGBM through ``lgb.train`` with a callable
objective returning the same arrays. Binning / Dataset construction is timed separately.
Prints ms per tree (the median of a few repeats of ``--trees`` trees; for LightGBM the time of
``1 + trees`` rounds minus that of 1 round, which removes lgb.train's fixed cost). Writes no
result file.

Usage: PYTHONPATH=. python benchmarks/grow_cpu.py [--rows 500000] [--trees 20]
       [--leaves 255] [--max-bins 255] [--threads 2] [--modes float quantised] [--no-lgb]
"""

import argparse
import time

import numpy as np

from skltr._gbdt.binning import BinMapper
from skltr._gbdt.grower import HistogramPool, TreeGrower
from skltr.datasets import make_ranking


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=2)
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

    for mode in args.modes:
        pool = None

        def grow_one():
            nonlocal pool
            g = TreeGrower(Xb, grad, hess, n_bins=bm.n_bins, missing_bin=bm.missing_bin,
                           has_missing=bm.has_missing, max_leaves=args.leaves,
                           min_samples_leaf=20, min_child_weight=1e-3, hist_mode=mode,
                           n_threads=args.threads, pool=pool, X_binned_T=XbT)
            tree = g.grow()
            pool = g.pool
            return tree

        tree = grow_one()  # compile, warm the pool
        times, cpu = [], []
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            for _ in range(args.trees):
                grow_one()
            times.append((time.perf_counter() - t) / args.trees * 1e3)
            cpu.append((time.process_time() - c) / args.trees * 1e3)
        print(f"skltr {mode:9s}: {np.median(times):8.1f} ms/tree wall, {np.median(cpu):8.1f} "
              f"ms/tree CPU (leaves {tree.n_leaves}, runs {['%.1f' % v for v in times]})")

    if args.no_lgb:
        return
    import lightgbm as lgb

    params = {"num_leaves": args.leaves, "max_bin": args.max_bins, "min_data_in_leaf": 20,
              "min_sum_hessian_in_leaf": 1e-3, "lambda_l2": 0.0, "learning_rate": 0.1,
              "num_threads": args.threads, "verbose": -1, "seed": 0,
              "deterministic": False}
    if args.lgb_force == "row":
        params["force_row_wise"] = True
    elif args.lgb_force == "col":
        params["force_col_wise"] = True

    def objective(preds, data):
        return grad, hess

    t = time.perf_counter()
    # The Dataset gets the training parameters too: otherwise lgb.train finds them changed
    # and rebuilds the bins inside the timed call.
    ds = lgb.Dataset(X, params=dict(params), free_raw_data=False).construct()
    params["objective"] = objective
    print(f"lightgbm Dataset: {time.perf_counter() - t:.2f} s")
    # lgb.train has a fixed cost per call (row-/col-wise test, setup): time 1 round and
    # 1 + trees rounds and take the difference.
    times, cpu = [], []
    for _ in range(args.repeat):
        t, c = time.perf_counter(), time.process_time()
        lgb.train(params, ds, num_boost_round=1)
        t1, c1 = time.perf_counter() - t, time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        booster = lgb.train(params, ds, num_boost_round=1 + args.trees)
        times.append((time.perf_counter() - t - t1) / args.trees * 1e3)
        cpu.append((time.process_time() - c - c1) / args.trees * 1e3)
    leaves = booster.dump_model()["tree_info"][0]["num_leaves"]
    print(f"lightgbm ({args.lgb_force}): {np.median(times):8.1f} ms/tree wall, "
          f"{np.median(cpu):8.1f} ms/tree CPU "
          f"(leaves {leaves}, runs {['%.1f' % v for v in times]})")


if __name__ == "__main__":
    main()
