"""Training on the GPU: skltr (CUDA) vs XGBoost rank:ndcg (CUDA), LightGBM and skltr on CPU.

One process, one data set (``make_ranking``: 136 features, ~120 documents per query, split
by query 80/20 so that about ``--rows`` rows train), every engine fitted on it in turn:

* ``skltr-gpu``: ``GPUHistGBDTRanker(device="cuda", growth="depthwise", max_depth=8)``;
* ``xgboost-gpu``: ``xgb.train`` with ``objective="rank:ndcg"``, ``tree_method="hist"``,
  ``device="cuda"``, ``max_depth=8`` (depth-wise), top-30 pairs
  (``lambdarank_pair_method="topk"``, ``lambdarank_num_pair_per_sample=30``), from a
  ``QuantileDMatrix`` built on CuPy arrays;
* ``lightgbm-cpu``: ``lambdarank`` (leaf-wise, ``num_leaves=256``, ``max_depth=8``) on all
  cores;
* ``skltr-cpu``: the same ``GPUHistGBDTRanker`` parameters on the CPU, all cores;
* ``skltr-gpu-leaf1`` (opt-in): ``skltr-gpu`` with ``min_samples_leaf=1``, XGBoost's rule
  (it has no rows-per-leaf minimum); its rows sit next to the ``skltr-gpu`` rows, which keep
  ``min_samples_leaf=20``;
* ``skltr-gpu-leafwise`` (opt-in): ``growth="leafwise"``, ``max_leaves=256``, ``max_depth=8``
  on the GPU -- LightGBM's tree shape (its natural peer is ``lightgbm-cpu``);
* ``skltr-gpu-lossguide`` and ``xgboost-gpu-lossguide`` (opt-in, compared with each other):
  leaf-wise trees of 255 leaves and no depth limit (skltr ``growth="leafwise"``,
  ``max_depth=None``; XGBoost ``grow_policy="lossguide"``, ``max_leaves=255``,
  ``max_depth=0``). ``--leafwise-batch N`` sets the most leaves skltr's GPU grower expands at
  once (``GPUTreeGrower.leafwise_batch``), to measure the choice.

Same hyper-parameters everywhere: 200 rounds, learning rate 0.1, depth 8, minimum hessian
1e-3, no L2, lambdarank truncation 30, 20 rows per leaf (skltr, LightGBM; XGBoost has no
such parameter), bins 255 (skltr's maximum: bins are one byte with the missing bin) and 63.
Each engine gets one untimed warm-up fit of 2 rounds on the first 2,000 queries (CUDA
modules, numba caches, thread pools), then ``--fits`` timed fits on the full data (default 2);
the rows compare each engine's last fit, ``raw`` keeps every fit (``fit_s_each``). Why two: a
process's first use of GPU memory costs about 1 ms per MB (measured on the H100, 2026-11-22:
the first 544 MB host-to-device copy of a process took 625 ms, the same copy into memory the
process had used before 57-68 ms), so the first full-size fit of whichever engine runs first
pays for the memory that the engines after it reuse (XGBoost's ``cupy.asarray(X)`` takes
blocks the CuPy pool kept from skltr's fit). A cold figure per engine needs one process per
engine (``--engines skltr-gpu --fits 1``, then ``--engines xgboost-gpu --fits 1``).
Reported per engine: fit wall time
(binning included), the rounds' time and time per round (skltr: ``timings_["boosting_s"]``;
XGBoost: ``xgb.train`` alone, without the ``QuantileDMatrix``), GPU memory peak (skltr: the
CuPy memory pool's high-water mark, ``total_bytes()`` after ``free_all_blocks()`` before the
fit; XGBoost allocates outside CuPy: not measured), test NDCG@10 (``skltr.metrics``).

``--profile`` adds one more skltr GPU fit of ``--profile-rounds`` rounds with per-stage CUDA
events (:mod:`skltr._gpu._profile`): GPU seconds per round of each stage and the host time
between them. ``--scale-rows N`` adds a skltr GPU fit on the training set tiled to N rows
(copies of the queries under new query ids: a timing of size, not of quality).

Usage: python benchmarks/train_gpu.py [--rows 1000000] [--trees 200] [--bins 255 63]
       [--engines skltr-gpu xgboost-gpu lightgbm-cpu skltr-cpu skltr-gpu-leaf1
       skltr-gpu-leafwise] [--fits 2]
       [--profile] [--scale-rows 10000000] [--out DIR]
(on a copy of the repository elsewhere, set SKLTR_COMMIT to the commit that runs)
Quick check: python benchmarks/train_gpu.py --rows 20000 --trees 5 --out /tmp

Measured on an H100 (80 GB HBM3) with 16 cores, 995,078 training rows, at 7f5bc11
(``benchmarks/results/train_gpu-h100-setup{,-xgbfirst,-cold-skltr,-cold-xgboost}-2026-11-22
.json``; the machine is shared: skltr's rounds took 9.1 to 13.1 ms in different fits of the
same code, XGBoost's 11.6 to 12.8 ms -- compare ratios from one file):

* whole fit (binning and validation included), skltr GPU / XGBoost GPU:

  ========================  =====================  =====================
                            255 bins               63 bins
  ========================  =====================  =====================
  skltr first, 2nd fits     2.00 / 2.67 s (0.75x)  2.63 / 2.43 s (1.08x)
  XGBoost first, 3rd fits   2.47 / 2.60 s (0.95x)  2.12 / 2.42 s (0.88x)
  one process each          2.49 / 2.95 s (0.84x)  1.95 / 2.43 s (0.80x)
  ========================  =====================  =====================

  ("one process each": a process per engine, one fit per bin count, 255 first: the 255-bin
  fit is the process's first full-size fit.) Target "<= XGBoost" met in 5 of the 6; the miss
  (1.08x) is a fit whose rounds ran slow (12.3 ms a round against 9.1-9.7 ms in the other two
  63-bin figures).
* set-up (fit minus rounds): skltr 0.13-0.17 s (binning 0.10-0.13 s, the rest validation and
  the model's assembly), XGBoost 0.10 s (``QuantileDMatrix`` with the upload of X) -- 0.48 to
  0.64 s on its first full-size fit of a process. Before (2fad299,
  ``train_gpu-h100-2026-11-22.json``) skltr's was 1.9 s (binning 1.34 s with the host
  BinMapper sample; validation with a float64 copy of X): whole fit 4.2 s vs 3.0 s (1.40x).
* per round: skltr 9.4 / 11.5 ms vs XGBoost 12.8 / 12.5 ms at 255 bins (0.73x / 0.93x), 12.3 /
  9.7 ms vs 11.7 / 11.6 ms at 63 bins (1.05x / 0.84x).
* a process's first use of GPU memory costs about 1 ms per MB (the first 544 MB copy of a
  process took 625-663 ms, later ones 57-68 ms): at 1dd605d skltr copied X to the GPU whole
  and its first full-size fit paid 0.5-0.6 s for it (``train_gpu-h100-resident-1dd605d-*``);
  7f5bc11 streams X through a 36 MB buffer (GPU pool 855 -> 405 MB).
* test NDCG@10: 0.6784 vs XGBoost 0.6800 at 255 bins (-0.0016, target missed then), 0.6792 vs
  0.6778 at 63 bins; LightGBM (16 cores, 26.3 s / 26.6 s a fit at 1dd605d): 0.6808 / 0.6793.
  ``skltr-gpu-leaf1`` (XGBoost's rows-per-leaf rule): 0.6785 / 0.6784 -- the gap was not
  ``min_samples_leaf``, but within skltr's own spread over the seed of the 200,000-row binning
  sample (``benchmarks/ndcg_gap_gpu.py``, ``ndcg_gap_gpu-h100-2026-11-22.json``).

Latest, at e6ee752 with count-balanced binning (``train_gpu-h100-countbins-e6ee752-2026-11-22
.json``): whole fit 1.90 vs 2.49 s (0.76x) at 255 bins, 2.28 vs 2.40 s (0.95x) at 63; test
NDCG@10 0.6807 vs 0.6800 and 0.6784 vs 0.6778 -- over five data sets a tie within noise
(``quality_gpu.py``); details in ``docs/gbdt_gpu.rst``.

Earlier figures (2fad299 and before, same machine kind): vs skltr's CPU path on the 16 cores
45x (255 bins, 201.6 s) and 48x (63 bins) faster fits; 10M rows x 136 (tiled): 63-70 ms a
round, 2.2 GB CuPy pool peak (``train_gpu-h100-255bins-2026-11-22.json``).

Profile (CUDA events per stage, ms a round, 255 / 63 bins, 7f5bc11): histogram 4.5 / 4.1,
partition 2.5 / 2.5, split 1.5 / 1.1, gradients 0.6, quantise 0.15, subtract 0.1, host and
launch gaps 4.8 / 4.9 (14.2 / 13.4 ms a profiled round). The histogram kernel dominates the GPU
time; host orchestration (Python between launches and one device-to-host read a level) is as
large, and the likely source of skltr's fit-to-fit spread of the round time (not measured
fit by fit). What would move the figures:
keeping the level loop on the device (child ids computed on the GPU, the level's launches in
a CUDA graph), fewer shared atomics in the histogram (warp-aggregated updates on skewed
features), and a block-local stable partition instead of flags + global scan + scatter.

At 96d2dbc (the split search over feature groups, the partition's scan in raw kernels,
launched before the host plans the children; 200 rounds,
``train_gpu-h100-depthwise-lossguide-96d2dbc-200rounds-2026-11-28.json``): per profiled round
histogram 4.5, partition 1.1, split 0.7, gradients 0.8, quantise 0.25, host and launch gaps
4.7 ms; 9.33 ms a round against XGBoost's 12.54 (0.74x) on that machine, 0.87x on another
(``train_gpu-h100-depthwise-ba30c73-200rounds-2026-11-28.json``): the host's share of the
round makes the ratio move with the host's speed. With each level planned on the device and
the tree read once (``skltr._gpu.levels``, f87de96's code): 5.94 ms a round against 12.63
(0.47x) on an H100, 5.96 against 12.01 (0.50x) on an H200
(``train_gpu-h100-levels-1827397-200rounds-2026-11-28.json``,
``train_gpu-h200-levels-f87de96-200rounds-2026-11-28.json``).
"""

import argparse
import os
import time

import numpy as np

from _harness import lightgbm_lambdarank_params, query_sizes, ranking_data, row, write_result

DEPTH = 8
LEARNING_RATE = 0.1
MIN_LEAF = 20
MIN_HESS = 1e-3
TRUNCATION = 30
DOCS = 120


#: skltr engines: name -> (device, min_samples_leaf, other parameters). "skltr-gpu-leaf1" is
#: the GPU fit with XGBoost's rows-per-leaf rule (none: min_samples_leaf=1; the hessian minimum
#: is matched in every engine); the main rows keep LightGBM's min_data_in_leaf=20.
SKLTR_ENGINES = {"skltr-gpu": ("cuda", MIN_LEAF, {}), "skltr-cpu": ("cpu", MIN_LEAF, {}),
                 "skltr-gpu-leaf1": ("cuda", 1, {}),
                 "skltr-gpu-leafwise": ("cuda", MIN_LEAF, {"growth": "leafwise",
                                                           "max_leaves": 2 ** DEPTH}),
                 "skltr-gpu-lossguide": ("cuda", MIN_LEAF, {"growth": "leafwise",
                                                            "max_leaves": 255,
                                                            "max_depth": None})}
#: the peer a skltr engine is compared with, where it is not every peer of the run
PEER_OF = {"skltr-gpu-lossguide": "xgboost-gpu-lossguide"}


def _skltr(device, trees, bins, threads, min_leaf=MIN_LEAF, **params):
    from skltr import GPUHistGBDTRanker

    return GPUHistGBDTRanker(n_estimators=trees, learning_rate=LEARNING_RATE, max_depth=DEPTH,
                             max_leaves=None, growth="depthwise", min_samples_leaf=min_leaf,
                             min_child_weight=MIN_HESS, max_bins=bins,
                             lambdarank_truncation_level=TRUNCATION, early_stopping=False,
                             device=device, n_jobs=threads, random_state=0).set_params(**params)


def fit_skltr(device, X, y, qid, trees, bins, threads, min_leaf=MIN_LEAF, **params):
    pool = None
    if device != "cpu":
        import cupy

        pool = cupy.get_default_memory_pool()
        pool.free_all_blocks()
    model = _skltr(device, trees, bins, threads, min_leaf, **params)
    t = time.perf_counter()
    model.fit(X, y, qid=qid)  # returns after the last tree is on the host: synchronised
    fit_s = time.perf_counter() - t
    peak = None if pool is None else pool.total_bytes()
    return {"fit_s": fit_s, "rounds_s": model.timings_["boosting_s"],
            "binning_s": model.timings_["binning_s"],
            "gpu_peak_mb": None if peak is None else peak / 2**20,
            "predict": model.predict, "n_trees": model.n_estimators_}


def fit_xgboost(X, y, qid, trees, bins, threads, lossguide=False):
    import cupy
    import xgboost as xgb

    shape = ({"grow_policy": "lossguide", "max_leaves": 255, "max_depth": 0} if lossguide
             else {"max_depth": DEPTH, "grow_policy": "depthwise"})

    t = time.perf_counter()
    dm = xgb.QuantileDMatrix(cupy.asarray(X), cupy.asarray(y), qid=cupy.asarray(qid),
                             max_bin=bins)
    t_rounds = time.perf_counter()
    booster = xgb.train({"objective": "rank:ndcg", "tree_method": "hist", "device": "cuda",
                         "max_bin": bins, **shape, "eta": LEARNING_RATE,
                         "min_child_weight": MIN_HESS, "lambda": 0.0,
                         "lambdarank_pair_method": "topk",
                         "lambdarank_num_pair_per_sample": TRUNCATION, "seed": 0},
                        dm, num_boost_round=trees)
    cupy.cuda.Device().synchronize()
    end = time.perf_counter()
    return {"fit_s": end - t, "rounds_s": end - t_rounds, "binning_s": t_rounds - t,
            "gpu_peak_mb": None,
            "predict": lambda Xt: booster.inplace_predict(cupy.asarray(Xt)).get(),
            "n_trees": trees}


def fit_lightgbm(X, y, qid, trees, bins, threads):
    import lightgbm as lgb

    params = lightgbm_lambdarank_params(leaves=2 ** DEPTH, max_depth=DEPTH,
                                        learning_rate=LEARNING_RATE, min_leaf=MIN_LEAF,
                                        min_hess=MIN_HESS, bins=bins, truncation=TRUNCATION,
                                        threads=threads)
    t = time.perf_counter()
    ds = lgb.Dataset(X, y, group=query_sizes(qid), params=params).construct()
    t_rounds = time.perf_counter()
    booster = lgb.train(params, ds, num_boost_round=trees)
    end = time.perf_counter()
    return {"fit_s": end - t, "rounds_s": end - t_rounds, "binning_s": t_rounds - t,
            "gpu_peak_mb": None, "predict": booster.predict, "n_trees": trees}


def run(engine, X, y, qid, trees, bins, threads):
    if engine in SKLTR_ENGINES:
        device, min_leaf, params = SKLTR_ENGINES[engine]
        return fit_skltr(device, X, y, qid, trees, bins, threads, min_leaf, **params)
    if engine.startswith("xgboost-gpu"):
        return fit_xgboost(X, y, qid, trees, bins, threads, engine.endswith("lossguide"))
    return fit_lightgbm(X, y, qid, trees, bins, threads)


def profile_skltr(X, y, qid, rounds, bins, threads):
    """Per-stage GPU seconds per round of a skltr GPU fit (CUDA events)."""
    import cupy

    from skltr._gpu._profile import profiling

    model = _skltr("cuda", rounds, bins, threads)
    with profiling() as timer:
        model.fit(X, y, qid=qid)
        cupy.cuda.Device().synchronize()
    stages = {k: v / rounds for k, v in timer.summary().items()}
    wall = model.timings_["boosting_s"] / rounds
    stages["host and launch gaps"] = wall - sum(stages.values())
    return {"rounds": rounds, "wall_per_round_s": wall, "stage_s_per_round": stages}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--bins", type=int, nargs="+", default=[255, 63])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--engines", nargs="+",
                        default=["skltr-gpu", "xgboost-gpu", "lightgbm-cpu", "skltr-cpu"],
                        choices=list(SKLTR_ENGINES) + ["xgboost-gpu", "lightgbm-cpu",
                                                       "xgboost-gpu-lossguide"])
    parser.add_argument("--fits", type=int, default=2,
                        help="timed full-size fits per engine after its warm-up; the rows "
                             "compare the last one, raw keeps every one")
    parser.add_argument("--leafwise-batch", type=int, default=None)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--profile-rounds", type=int, default=30)
    parser.add_argument("--profile-configs", nargs="*", default=[],
                        help="extra profiled fits with launch sizes, e.g. "
                             "HIST_TARGET_BLOCKS=4096,HIST_ROWS_PER_BLOCK=8192")
    parser.add_argument("--scale-rows", type=int, default=0)
    parser.add_argument("--scale-trees", type=int, default=20)
    parser.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = parser.parse_args()

    from skltr.metrics import ndcg_score

    if args.leafwise_batch is not None:
        from skltr._gbdt.grower_cuda import GPUTreeGrower

        GPUTreeGrower.leafwise_batch = args.leafwise_batch

    t = time.perf_counter()
    X, Xt, y, yt, qid, qt = ranking_data(args.rows, DOCS)
    print(f"data {time.perf_counter() - t:.1f} s: train {X.shape[0]} x {X.shape[1]} "
          f"({len(np.unique(qid))} queries), test {Xt.shape[0]} rows; {args.trees} rounds, "
          f"depth {DEPTH}, {args.threads} threads", flush=True)
    n_warm = int(np.searchsorted(qid, qid[min(2000 * DOCS, len(qid) - 1)]))

    raw, rows = {}, []
    params = {"fits": args.fits,
              "rows": int(len(y)), "test_rows": int(len(yt)), "features": 136,
              "docs_per_query": DOCS, "trees": args.trees, "max_depth": DEPTH,
              "bins": args.bins, "learning_rate": LEARNING_RATE, "min_samples_leaf": MIN_LEAF,
              "threads": args.threads, "truncation_level": TRUNCATION,
              "leafwise_batch": args.leafwise_batch, "raw": raw}

    def record():
        rows.clear()
        for bins in args.bins:
            for mine, label in (("skltr-gpu", ""), ("skltr-gpu-leaf1", ", min_samples_leaf=1"),
                                ("skltr-gpu-leafwise", ", skltr leaf-wise"),
                                ("skltr-gpu-lossguide", ", leaf-wise 255 leaves")):
                ours = raw.get(f"{mine}/{bins}")
                if ours is None:
                    continue
                case = f"{len(y)} rows, {bins} bins{label}"
                peers = [e for e in args.engines if not e.startswith("skltr-gpu")
                         and e not in PEER_OF.values()]
                for peer in [PEER_OF[mine]] if mine in PEER_OF else peers:
                    theirs = raw.get(f"{peer}/{bins}")
                    if theirs is None:
                        continue
                    rows.extend([
                        row(case, "fit", ours["fit_s"], theirs["fit_s"], peer, "s"),
                        row(case, "per round", ours["rounds_s"] / args.trees,
                            theirs["rounds_s"] / args.trees, peer, "s"),
                        row(case, "test NDCG@10", ours["ndcg@10"], theirs["ndcg@10"], peer,
                            "ndcg")])
        return write_result("train_gpu", rows, params=params,
                            packages=("cupy-cuda13x", "xgboost-cu12", "lightgbm"),
                            out_dir=args.out)

    for bins in args.bins:
        for engine in args.engines:
            run(engine, X[:n_warm], y[:n_warm], qid[:n_warm], 2, bins, args.threads)  # warm-up
            fits = []
            for k in range(max(args.fits, 1)):
                fits.append(run(engine, X, y, qid, args.trees, bins, args.threads))
                f = fits[-1]
                print(f"  {bins:3d} bins  {engine:<15} fit {k + 1}: {f['fit_s']:6.2f} s  rounds "
                      f"{f['rounds_s']:6.2f} s  binning {f['binning_s']:5.2f} s  GPU peak "
                      f"{f['gpu_peak_mb'] or float('nan'):6.0f} MB", flush=True)
            res = fits[-1]
            for name in ("fit_s", "rounds_s", "binning_s"):
                res[name + "_each"] = [f[name] for f in fits]
            predict = res.pop("predict")
            res["ndcg@10"] = float(ndcg_score(yt, predict(Xt), qid=qt, k=10))
            res["per_round_s"] = res["rounds_s"] / args.trees
            raw[f"{engine}/{bins}"] = res
            print(f"  {bins:3d} bins  {engine:<15} NDCG@10 {res['ndcg@10']:.4f}", flush=True)
            record()  # a partial file survives a time-out
    if args.profile:
        from skltr._gpu import _config

        for bins in args.bins:
            for cfg in [""] + list(args.profile_configs):
                values = dict((kv.split("=")[0], int(kv.split("=")[1]))
                              for kv in cfg.split(",") if kv)
                with _config.override(**values):
                    prof = profile_skltr(X, y, qid, args.profile_rounds, bins, args.threads)
                prof["launch_sizes"] = values
                raw[f"profile/{bins}" + (f"/{cfg}" if cfg else "")] = prof
                print(f"  profile {bins} bins {cfg}: {prof}", flush=True)
        record()
    if args.scale_rows:
        reps = -(-args.scale_rows // len(y))
        span = int(qid.max()) + 1
        Xs = np.concatenate([X] * reps)[:args.scale_rows]
        ys = np.concatenate([y] * reps)[:args.scale_rows]
        qs = np.concatenate([qid + k * span for k in range(reps)])[:args.scale_rows]
        del X
        for bins in args.bins[:1]:
            res = fit_skltr("cuda", Xs, ys, qs, args.scale_trees, bins, args.threads)
            res.pop("predict")
            res["per_round_s"] = res["rounds_s"] / args.scale_trees
            res["rows"], res["trees"] = int(len(ys)), args.scale_trees
            raw[f"skltr-gpu-scale/{bins}"] = res
            print(f"  scale {len(ys)} rows {bins} bins: {res}", flush=True)
        record()


if __name__ == "__main__":
    main()
