"""Test NDCG@10 over several data sets: skltr on the GPU vs XGBoost on the GPU.

``train_gpu.py`` compares one data set (``make_ranking`` seed 0): its NDCG@10 difference is one
draw, and skltr's own figure moves by +-0.001 with the seed of its 200,000-row binning sample
alone (``ndcg_gap_gpu.py``). Here every engine is fitted on ``--seeds`` data sets
(``ranking_data(rows, 120, seed=s)``: ``make_ranking`` and its 80/20 query split with seed
``s``), same parameters as ``train_gpu.py`` (depth 8, 200 rounds, learning rate 0.1, top-30
pairs, no L2, minimum hessian 1e-3; skltr 20 rows per leaf), at each of ``--bins``:

* ``skltr-gpu``: ``GPUHistGBDTRanker(device="cuda")`` as in ``train_gpu.py``;
* ``skltr-gpu-quantile``: the same with the binning rule skltr used before (cuts at
  equal-step quantiles, ``np.percentile(method="midpoint")``, duplicates dropped), put in
  place of the GPU cut kernel for the fit (the A/B of the count-balanced rule);
* ``xgboost-gpu``: ``rank:ndcg``, ``tree_method="hist"``, ``device="cuda"`` (deterministic:
  no sampling).

Reported: NDCG@10 of every fit, and per bin count the mean over the data sets of each engine,
the mean paired difference skltr - XGBoost with its standard error, and the number of data
sets skltr wins. Timings are not the point here (``train_gpu.py``).

Usage: python benchmarks/quality_gpu.py [--rows 1000000] [--seeds 0 1 2 3 4] [--bins 255 63]
       [--engines skltr-gpu skltr-gpu-quantile xgboost-gpu] [--out DIR]
"""

import argparse
import os
import statistics
import time

import numpy as np

from _harness import ranking_data, row, write_result
from train_gpu import DOCS, fit_skltr, fit_xgboost


def quantile_cuts(sorted_columns, max_bins):
    """The previous cut rule, on the host, in ``column_cuts``' output form."""
    cols = sorted_columns.get()
    cuts = np.zeros((cols.shape[0], max_bins - 1))
    n_cuts = np.zeros(cols.shape[0], np.int64)
    for f, col in enumerate(cols.astype(np.float64)):
        finite = col[np.isfinite(col)]
        distinct = np.unique(finite)
        if distinct.size <= max_bins:
            lo, hi = distinct[:-1], distinct[1:]
            mid = 0.5 * lo + 0.5 * hi
            c = np.where((mid >= lo) & (mid < hi), mid, lo)
        else:
            c = np.unique(np.percentile(finite, np.linspace(0, 100, max_bins + 1)[1:-1],
                                        method="midpoint"))
            c = c[c < distinct[-1]]
        cuts[f, :c.size] = c
        n_cuts[f] = c.size
    return cuts, n_cuts


def fit(engine, X, y, qid, trees, bins, threads):
    if engine == "xgboost-gpu":
        return fit_xgboost(X, y, qid, trees, bins, threads)
    if engine == "skltr-gpu":
        return fit_skltr("cuda", X, y, qid, trees, bins, threads)
    from skltr._gpu import binning

    kernel = binning.column_cuts
    binning.column_cuts = quantile_cuts
    try:
        return fit_skltr("cuda", X, y, qid, trees, bins, threads)
    finally:
        binning.column_cuts = kernel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--bins", type=int, nargs="+", default=[255, 63])
    parser.add_argument("--engines", nargs="+",
                        default=["skltr-gpu", "skltr-gpu-quantile", "xgboost-gpu"],
                        choices=["skltr-gpu", "skltr-gpu-quantile", "xgboost-gpu"])
    parser.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = parser.parse_args()

    from skltr.metrics import ndcg_score

    threads = os.cpu_count()
    ndcg = {}  # (engine, bins) -> [NDCG@10 per seed]
    raw = []
    params = {"rows": args.rows,
              "seeds": args.seeds, "trees": args.trees, "bins": args.bins,
              "engines": args.engines, "raw": raw}

    def record():
        rows = []
        for bins in args.bins:
            ours = ndcg.get(("skltr-gpu", bins), [])
            for peer in (e for e in args.engines if e != "skltr-gpu"):
                theirs = ndcg.get((peer, bins), [])
                k = min(len(ours), len(theirs))
                if k == 0:
                    continue
                diff = [a - b for a, b in zip(ours[:k], theirs[:k])]
                case = f"{bins} bins, {k} data sets"
                rows.append(row(case, "mean NDCG@10", statistics.fmean(ours[:k]),
                                statistics.fmean(theirs[:k]), peer, "ndcg"))
                se = statistics.stdev(diff) / k ** 0.5 if k > 1 else float("nan")
                params[f"skltr-gpu - {peer}/{bins}"] = {
                    "mean_diff": statistics.fmean(diff), "stderr": se,
                    "wins": sum(d > 0 for d in diff), "data_sets": k, "diffs": diff}
        return write_result("quality_gpu", rows, params=params,
                            packages=("cupy-cuda13x", "xgboost-cu12"), out_dir=args.out)

    for seed in args.seeds:
        t = time.perf_counter()
        X, Xt, y, yt, qid, qt = ranking_data(args.rows, DOCS, seed=seed)
        print(f"seed {seed}: data {time.perf_counter() - t:.1f} s, {len(y)} training rows",
              flush=True)
        for bins in args.bins:
            for engine in args.engines:
                res = fit(engine, X, y, qid, args.trees, bins, threads)
                score = float(ndcg_score(yt, res["predict"](Xt), qid=qt, k=10))
                ndcg.setdefault((engine, bins), []).append(score)
                raw.append({"seed": seed, "bins": bins, "engine": engine, "ndcg@10": score,
                            "fit_s": res["fit_s"]})
                print(f"  {bins:3d} bins  {engine:<20} NDCG@10 {score:.4f}  "
                      f"fit {res['fit_s']:.2f} s", flush=True)
        record()  # a partial file survives a time-out
    for key, value in params.items():
        if key.startswith("skltr-gpu - "):
            print(f"{key}: mean diff {value['mean_diff']:+.4f} +- {value['stderr']:.4f} "
                  f"(wins {value['wins']}/{value['data_sets']})")


if __name__ == "__main__":
    main()
