"""Training on the CPU at 1, 2, 4, 8, 16 threads: skltr vs LightGBM vs XGBoost, with skltr's stages.

How training time scales with cores. For every thread count, each engine fits in a fresh
child process (``train_cpu.run_engine``: ``spawn``, an untimed warm-up fit first; skltr's
``n_jobs``, LightGBM's ``num_threads``, XGBoost's ``nthread``) on the same data
(``ranking_data``, 136 features, split by query 80/20) with ``train_cpu``'s hyper-parameters
(255 leaves leaf-wise / ``lossguide``, learning rate 0.1, 20 rows per leaf, truncation 30):
fit time, test NDCG@10, and the ratios skltr / LightGBM and skltr / XGBoost.

skltr's stages are timed in a second fit after the timed one (:mod:`skltr.utils._profile`, a
few clock reads per node; the reported fit time is the unprofiled fit's, as the peers'):
``histograms`` (building and the subtraction trick), ``split search``, ``partition`` --
or, for trees grown in one numba call (leaf-wise, one process: the default), the three as
``tree growth (compiled)`` --, ``gradients``, ``binning`` (once a fit) and ``other``
(quantisation, score updates, the driver's Python). Each stage also reports the bytes it
moves (row bins, gradient words, row ids, histograms: an estimate from sizes, a lower bound
where rows are scattered); divided
by the stage's time and by the machine's copy bandwidth at the same thread count
(``copy_bandwidth``, a numpy copy split over the threads, read + written bytes a second) it
says which stages run near the memory's speed (memory-bound) and which leave it idle.

Usage: python benchmarks/scaling_train_cpu.py [--threads 1 2 4 8 16] [--rows 250000]
       [--trees 20] [--bins 255] [--repeat 1] [--engines skltr lightgbm xgboost] [--no-write]
       [--out DIR]
Quick check: python benchmarks/scaling_train_cpu.py --rows 20000 --trees 3 --no-write
"""

import argparse
import os
import tempfile


from _harness import copy_bandwidth, print_table, ranking_data, row, write_result
from train_cpu import (_ENGINES, LEARNING_RATE, LEAVES, MIN_LEAF, TRUNCATION, fit_in_turn,
                       save_data)

#: skltr's timed stages (``skltr.utils._profile`` names) grouped as reported.
#: A leaf-wise tree of one process grows in one numba call (``skltr._cpu.grow_leafwise``):
#: its histograms, split search and partition are one stage, ``grow``.
GROUPS = {"histograms": ("histogram", "subtract"), "split search": ("split",),
          "partition": ("partition",), "tree growth (compiled)": ("grow",),
          "gradients": ("gradients",)}


def stage_report(res, bandwidth_gbs, trees):
    """skltr's stage shares of its fit time, and per stage its seconds and bytes per round
    and the fraction of the copy bandwidth it reaches."""
    stages = res["stages"]
    # the shares are of the profiled fit, whose stages they are (train_cpu.run_engine)
    res = {"fit_s": res["profiled_fit_s"], "binning_s": res["profiled_binning_s"]}
    out = {}
    for group, names in GROUPS.items():
        s = sum(stages[n]["s"] for n in names if n in stages)
        nbytes = sum(stages[n]["bytes"] for n in names if n in stages)
        out[group] = {"share": s / res["fit_s"], "s_per_round": s / trees,
                      "bytes_per_round": nbytes / trees,
                      "bandwidth_fraction": nbytes / s / 1e9 / bandwidth_gbs if s else 0.0}
    # binning: once a fit, not a round (BinMapper, inside the timed fit as LightGBM's
    # Dataset construction is in its own)
    out["binning"] = {"share": res["binning_s"] / res["fit_s"], "s": res["binning_s"]}
    timed = sum(v["s_per_round"] for v in out.values() if "s_per_round" in v) * trees
    other = res["fit_s"] - timed - res["binning_s"]
    out["other"] = {"share": other / res["fit_s"], "s_per_round": other / trees}
    return out


def main():
    cores = os.cpu_count()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+",
                        default=[t for t in (1, 2, 4, 8, 16) if t <= cores])
    parser.add_argument("--rows", type=int, default=250_000, help="training rows (about)")
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--bins", type=int, default=255)
    parser.add_argument("--engines", nargs="+", default=list(_ENGINES), choices=list(_ENGINES))
    parser.add_argument("--repeat", type=int, default=1,
                        help="fits per engine and thread count, in alternating order; the "
                             "fastest is reported")
    parser.add_argument("--no-write", action="store_true", help="print only, no result file")
    parser.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = parser.parse_args()

    X, Xt, y, yt, qid, qt = ranking_data(args.rows, 100)
    print(f"train {X.shape[0]} x {X.shape[1]}, test {Xt.shape[0]} rows; {args.trees} trees, "
          f"{LEAVES} leaves, {args.bins} bins; threads {args.threads}", flush=True)
    bandwidth = {t: copy_bandwidth(t) for t in args.threads}
    print("copy bandwidth GB/s (read + written):",
          {t: round(v, 1) for t, v in bandwidth.items()}, flush=True)

    raw = {}
    with tempfile.TemporaryDirectory(prefix="skltr-scaling-bench-") as tmp:
        save_data(tmp, X, Xt, y, yt, qid, qt)
        del X, Xt
        for t in args.threads:
            for engine, res in fit_in_turn(raw, t, args.engines, args.repeat,
                                           (tmp, args.trees, args.bins, t, True)):
                print(f"  {t:2d} threads  {engine:<9} fit {res['fit_s']:7.2f} s  "
                      f"NDCG@10 {res['ndcg@10']:.4f}", flush=True)

    rows, stages = [], {}
    for t in args.threads:
        case = f"{len(y)} rows, {t} threads"
        if "skltr" in args.engines:
            ours = raw[("skltr", t)]
            stages[t] = stage_report(ours, bandwidth[t], args.trees)
            print(f"  {t:2d} threads skltr stages: " + ", ".join(
                f"{g} {v['share']:.0%}" + (f" ({v['bandwidth_fraction']:.0%} of bw)"
                                           if "bandwidth_fraction" in v else "")
                for g, v in stages[t].items()))
            for peer in (e for e in args.engines if e != "skltr"):
                theirs = raw[(peer, t)]
                rows += [row(case, "fit", ours["fit_s"], theirs["fit_s"], peer, "s"),
                         row(case, "test NDCG@10", ours["ndcg@10"], theirs["ndcg@10"], peer,
                             "ndcg")]
    params = {"rows": int(len(y)), "test_rows": int(len(yt)), "features": 136,
              "trees": args.trees, "leaves": LEAVES, "bins": args.bins,
              "learning_rate": LEARNING_RATE, "min_samples_leaf": MIN_LEAF,
              "truncation_level": TRUNCATION, "threads": args.threads, "repeat": args.repeat,
              "copy_bandwidth_gbs": bandwidth, "skltr_stages": stages,
              "raw": {f"{e}/{t}": v for (e, t), v in raw.items()}}
    if args.no_write:
        print_table({"benchmark": "scaling_train_cpu", "machine": "(not written)",
                     "cores": cores, "commit": "-", "rows": rows})
    else:
        write_result("scaling_train_cpu", rows, params=params,
                     packages=("lightgbm", "xgboost"), out_dir=args.out)


if __name__ == "__main__":
    main()
