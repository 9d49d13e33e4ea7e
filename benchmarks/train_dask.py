"""Training on Dask: skltr's DaskGPUHistGBDTRanker vs the local fit, lightgbm.dask, xgboost.dask.

One machine's cores as a ``distributed.LocalCluster`` of ``--workers`` processes x
``--threads`` threads (default 4 x 4 on the GPU machine's 16 cores), the same data for every
engine: ``make_ranking`` (136 features), split by query 80/20, the training rows as a dask
Array in one block per worker cut at query boundaries and persisted on the cluster before
any timing. Each engine fits once after an untimed warm-up fit of 2 trees (skltr on Dask:
on the timed blocks, so that numba loads its kernels in every worker and the driver's path
for dask input has run; the local fit and the peers: LightGBM and XGBoost start their
thread pools):

* skltr ``DaskGPUHistGBDTRanker`` on the cluster (its model is checked equal, tree for tree,
  to the local fit's; the result's ``skltr_dask_timings`` say which all-reduce ran --
  ``communicator``: shared memory between the workers of this host -- and its seconds and
  calls; ``--compare-star`` fits again with the TCP star; ``--compare`` again under other
  worker settings, interleaved, ``--repeats`` times: ``share`` / ``all`` -- each worker
  sums and searches its share of the features / every worker all of them --, ``sleep`` /
  ``poll`` -- the barriers sleep at once / poll their socket 200 us first);
* skltr ``GPUHistGBDTRanker(n_jobs=workers * threads)`` in this process on numpy data;
* ``lightgbm.dask.DaskLGBMRanker`` (lambdarank) on the cluster;
* ``xgboost.dask`` (``rank:ndcg``, ``hist``, lossguide) on the cluster.

Same hyper-parameters everywhere: ``--trees`` trees of 31 leaves, learning rate 0.1, 20 rows
a leaf (XGBoost has no such parameter), 255 bins, no early stopping. Test NDCG@10 is skltr's
``ndcg_score`` of each engine's test scores.

``--gpus N`` adds GPU workers against the local fit on one GPU: clusters of 1 and ``N``
workers, one GPU each (``CUDA_VISIBLE_DEVICES`` per worker, as dask-cuda's
``LocalCUDACluster`` sets it), the rows in one block per worker cut at query boundaries;
depth-wise trees of depth 6 (the GPU's fast growth), the same data. The Dask model is checked
equal to the local GPU model; ``xgboost.dask`` (``device="cuda"``, depth 6) runs on the same
GPU workers where its CUDA build is installed (``--engines`` names it).

Usage: python benchmarks/train_dask.py [--rows 1000000] [--trees 200] [--workers 4]
       [--threads 4] [--local-threads N] [--gpus N] [--engines skltr lightgbm xgboost]
       [--no-cpu] [--compare-star] [--compare VARIANT ...]
       [--repeats N] [--no-write] [--out DIR]
Quick check: python benchmarks/train_dask.py --rows 20000 --trees 5 --workers 2 --threads 1
"""

import argparse
import time

import numpy as np

from _harness import query_sizes, ranking_data, row, write_result

LEAVES, LR, MIN_LEAF, BINS = 31, 0.1, 20, 255


def _skltr_params(trees, threads, **extra):
    return {**dict(n_estimators=trees, max_leaves=LEAVES, learning_rate=LR,
                   min_samples_leaf=MIN_LEAF, max_bins=BINS, random_state=0, n_jobs=threads),
            **extra}


def _blocks_at_queries(qid, n_blocks):
    """Row chunks of about equal size, each cut at a query boundary."""
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cuts = [starts[np.searchsorted(starts, k * len(qid) / n_blocks)]
            for k in range(1, n_blocks)]
    bounds = [0, *cuts, len(qid)]
    return tuple(int(b - a) for a, b in zip(bounds[:-1], bounds[1:]))


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--docs", type=int, default=120)
    ap.add_argument("--local-threads", type=int, default=None,
                    help="threads of the local fit (default workers x threads)")
    ap.add_argument("--gpus", type=int, default=0, help="GPU workers (0: no GPU runs)")
    ap.add_argument("--no-cpu", action="store_true", help="skip the CPU cluster runs")
    ap.add_argument("--compare-star", action="store_true",
                    help="fit skltr on the cluster again with the TCP star all-reduce")
    ap.add_argument("--compare", nargs="+", default=[], choices=sorted(_VARIANTS),
                    help="fit skltr on the cluster again under these worker settings, "
                         "interleaved, --repeats times each")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--engines", nargs="+", default=["skltr", "lightgbm", "xgboost"])
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = ap.parse_args(argv)

    from skltr.metrics import ndcg_score

    X, Xt, y, yt, qid, qt = ranking_data(args.rows, args.docs)
    X = np.ascontiguousarray(X, dtype=np.float32)
    chunks = _blocks_at_queries(qid, args.workers)
    print(f"train {X.shape}, test {Xt.shape}, {len(np.unique(qid))} queries, blocks {chunks}")
    ndcg = lambda s: float(ndcg_score(yt, s, qid=qt, k=10))  # noqa: E731
    rows, extra = [], {}
    small = slice(0, int(np.searchsorted(qid, qid[min(20000, len(qid) - 1)])) or len(qid))
    results = {}
    if not args.no_cpu:
        _cpu_runs(args, X, y, qid, Xt, ndcg, chunks, small, rows, extra, results)
    if args.gpus:
        _gpu_runs(args, X, y, qid, Xt, ndcg, small, rows, extra)

    params = {"rows": args.rows, "test_rows": int(len(yt)), "trees": args.trees,
              "workers": args.workers, "threads_per_worker": args.threads,
              "local_threads": args.local_threads or args.workers * args.threads,
              "leaves": LEAVES, "learning_rate": LR, "min_leaf": MIN_LEAF, "bins": BINS,
              "blocks": list(chunks), **extra,
              "ndcg@10": {k: v[1] for k, v in results.items()},
              "fit_s": {k: v[0] for k, v in results.items()}}
    if not args.no_write:
        write_result("train_dask" + ("_gpu" if args.no_cpu else ""), rows, params=params,
                     packages=("dask", "distributed", "lightgbm", "xgboost", "numba", "cupy"),
                     out_dir=args.out)
    else:
        print(params)


def _cpu_runs(args, X, y, qid, Xt, ndcg, chunks, small, rows, extra, results):
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    from skltr import GPUHistGBDTRanker
    from skltr.dask import DaskGPUHistGBDTRanker

    n_threads = args.local_threads or args.workers * args.threads
    case = f"{args.rows // 1000}k x 136, {args.trees} trees, {args.workers}x{args.threads} CPU"
    with LocalCluster(n_workers=args.workers, threads_per_worker=args.threads,
                      processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        Xd = client.persist(da.from_array(X, chunks=(chunks, -1)))
        yd = client.persist(da.from_array(y, chunks=(chunks,)))
        qd = client.persist(da.from_array(qid, chunks=(chunks,)))
        wait([Xd, yd, qd])
        if "skltr" in args.engines:
            params = _skltr_params(args.trees, args.threads)
            # warm-up on the timed blocks: every worker loads its kernels for these types,
            # the driver's path for dask input runs once
            DaskGPUHistGBDTRanker(**{**params, "n_estimators": 2}).fit(Xd, yd, qid=qd)
            dist, t_dist = _timed(lambda: DaskGPUHistGBDTRanker(**params).fit(Xd, yd, qid=qd))
            local_params = {**params, "n_jobs": n_threads}
            GPUHistGBDTRanker(**{**local_params, "n_estimators": 2}).fit(
                X[small], y[small], qid=qid[small])
            local, t_local = _timed(lambda: GPUHistGBDTRanker(**local_params).fit(
                X, y, qid=qid))
            equal = dist.ensemble_.to_document() == local.ensemble_.to_document()
            extra["skltr_dask_equals_local"] = bool(equal)
            extra["skltr_dask_timings"] = dist.timings_
            extra["skltr_local_timings"] = local.timings_
            results["skltr"] = (t_dist, ndcg(dist.predict(Xt)))
            rows.append(row(case, "fit_s", t_dist, t_local, "skltr local, "
                            f"{n_threads} threads", "s"))
            print(f"skltr dask {t_dist:.2f} s, local {t_local:.2f} s, equal={equal}")
            _print_allreduce(dist.timings_)
            if args.compare_star:
                _star_run(Xd, yd, qd, params, t_dist, local, case, rows, extra)
            for k in range(args.repeats if args.compare else 0):  # interleaved
                for name in args.compare:
                    _variant_run(client, name, Xd, yd, qd, params, t_dist, local, case, rows,
                                 extra, k)
        if "lightgbm" in args.engines:
            import lightgbm as lgb

            bounds = np.cumsum((0,) + chunks)
            sizes = [query_sizes(qid[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
            gd = da.from_array(np.concatenate(sizes), chunks=(tuple(map(len, sizes)),))
            lgb_params = dict(n_estimators=args.trees, num_leaves=LEAVES, learning_rate=LR,
                              min_child_samples=MIN_LEAF, max_bin=BINS, verbose=-1,
                              random_state=0, n_jobs=args.threads)
            lgb.DaskLGBMRanker(**{**lgb_params, "n_estimators": 2}).fit(
                Xd, yd, group=gd)
            model, t = _timed(lambda: lgb.DaskLGBMRanker(**lgb_params).fit(Xd, yd, group=gd))
            results["lightgbm"] = (t, ndcg(model.to_local().predict(Xt)))
            print(f"lightgbm.dask {t:.2f} s")
        if "xgboost" in args.engines:
            import xgboost as xgb
            from xgboost import dask as dxgb

            def fit_xgb(trees):
                dm = dxgb.DaskQuantileDMatrix(client, Xd, yd, qid=qd, max_bin=BINS)
                return dxgb.train(client, {"objective": "rank:ndcg", "tree_method": "hist",
                                           "grow_policy": "lossguide", "max_leaves": LEAVES,
                                           "max_depth": 0, "eta": LR, "max_bin": BINS,
                                           "nthread": args.threads, "seed": 0},
                                  dm, num_boost_round=trees)
            fit_xgb(2)
            out, t = _timed(lambda: fit_xgb(args.trees))
            results["xgboost"] = (t, ndcg(out["booster"].predict(xgb.DMatrix(Xt))))
            print(f"xgboost.dask {t:.2f} s")
        if "skltr" in results:
            t_s, n_s = results["skltr"]
            for peer, name in (("lightgbm", "lightgbm.dask"), ("xgboost", "xgboost.dask")):
                if peer in results:
                    rows.append(row(case, "fit_s", t_s, results[peer][0], name, "s"))
                    rows.append(row(case, "test_ndcg@10", n_s, results[peer][1], name, "ndcg"))


def _print_allreduce(timings):
    print(f"  {timings.get('communicator')}: {timings.get('allreduce_s', 0):.2f} s in "
          f"{timings.get('allreduce_calls')} all-reduces, boosting "
          f"{timings.get('boosting_s', 0):.2f} s, driver preparation "
          f"{timings.get('prepare_s', 0):.2f} s", flush=True)


def _star_run(Xd, yd, qd, params, t_dist, local, case, rows, extra):
    """The Dask fit again with the TCP star between the workers (no shared memory)."""
    from skltr.dask import DaskGPUHistGBDTRanker

    star = DaskGPUHistGBDTRanker(**params)
    star._shared_memory = False  # the benchmark's switch, not a parameter
    star, t_star = _timed(lambda: star.fit(Xd, yd, qid=qd))
    equal = star.ensemble_.to_document() == local.ensemble_.to_document()
    extra["skltr_dask_star_equals_local"] = bool(equal)
    extra["skltr_dask_star_timings"] = star.timings_
    rows.append(row(case, "fit_s", t_dist, t_star, "skltr dask, TCP star", "s"))
    print(f"skltr dask, TCP star {t_star:.2f} s, equal={equal}")
    _print_allreduce(star.timings_)


def _set_worker_settings(share, spin):
    """Set (share, spin) on this worker; returns the settings it had."""
    import skltr._gbdt.grower_cpu as grower_cpu
    import skltr.dask._collective as collective

    before = (grower_cpu.DISTRIBUTED_FEATURE_SHARE, collective.SPIN_S)
    grower_cpu.DISTRIBUTED_FEATURE_SHARE, collective.SPIN_S = share, spin
    return before


#: the variants of the Dask fit (``--compare``): what each is, and its worker settings
#: ``(grower_cpu.DISTRIBUTED_FEATURE_SHARE, _collective.SPIN_S)``
_VARIANTS = {
    "share-sleep": ("each worker its share of the features, barriers sleeping", (True, 0.0)),
    "all-sleep": ("every worker every feature, barriers sleeping", (False, 0.0)),
    "share-poll": ("each worker its share, barriers polling 200 us", (True, 200e-6)),
    "all-poll": ("every worker every feature, barriers polling 200 us", (False, 200e-6)),
}


def _variant_run(client, name, Xd, yd, qd, params, t_dist, local, case, rows, extra, k):
    """The Dask fit again under the worker settings of variant ``name`` (its ``k``-th run)."""
    from skltr.dask import DaskGPUHistGBDTRanker

    what, settings = _VARIANTS[name]
    before = client.run(_set_worker_settings, *settings)
    try:
        other, t_other = _timed(lambda: DaskGPUHistGBDTRanker(**params).fit(Xd, yd, qid=qd))
    finally:
        for addr, old in before.items():
            client.run(_set_worker_settings, *old, workers=[addr])
    equal = other.ensemble_.to_document() == local.ensemble_.to_document()
    extra.setdefault("skltr_dask_variants", []).append(
        {"variant": name, "run": k, "fit_s": t_other, "equals_local": bool(equal),
         "timings": other.timings_})
    rows.append(row(case, "fit_s", t_dist, t_other, f"skltr dask, {what} (run {k})", "s"))
    print(f"skltr dask, {name} (run {k}) {t_other:.2f} s, equal={equal}")
    _print_allreduce(other.timings_)


def _gpu_cluster(n_workers, threads):
    """``n_workers`` Dask workers with a GPU each (``CUDA_VISIBLE_DEVICES``, as dask-cuda's
    ``LocalCUDACluster``)."""
    from distributed import Nanny, Scheduler, SpecCluster

    spec = {i: {"cls": Nanny, "options": {"nthreads": threads,
                                           "env": {"CUDA_VISIBLE_DEVICES": str(i)}}}
            for i in range(n_workers)}
    return SpecCluster(workers=spec, scheduler={"cls": Scheduler,
                                                "options": {"dashboard_address": ":0"}})


def _placed(client, a, chunks):
    """``a`` as a dask Array whose block ``i`` (``chunks[i]`` rows) lives on worker ``i``."""
    import dask.array as da

    workers = sorted(client.nthreads())
    bounds = np.cumsum((0,) + chunks)
    return da.concatenate([
        da.from_delayed(client.scatter(a[lo:hi], workers=[w]), (hi - lo,) + a.shape[1:],
                        a.dtype)
        for w, lo, hi in zip(workers, bounds[:-1], bounds[1:])])


def _gpu_runs(args, X, y, qid, Xt, ndcg, small, rows, extra):
    from distributed import Client, wait

    from skltr import GPUHistGBDTRanker
    from skltr.dask import DaskGPUHistGBDTRanker

    gparams = _skltr_params(args.trees, args.threads, device="cuda", growth="depthwise",
                            max_depth=6, max_leaves=None)
    GPUHistGBDTRanker(**{**gparams, "n_estimators": 2}).fit(X[small], y[small],
                                                             qid=qid[small])
    glocal, t_gl = _timed(lambda: GPUHistGBDTRanker(**gparams).fit(X, y, qid=qid))
    extra["skltr_local_gpu_timings"] = glocal.timings_
    extra["skltr_local_gpu_ndcg@10"] = ndcg(glocal.predict(Xt))
    print(f"local GPU {t_gl:.2f} s")
    base = f"{args.rows // 1000}k x 136, {args.trees} depth-6 trees"
    for n in sorted({1, args.gpus}):
        chunks = _blocks_at_queries(qid, n)
        with _gpu_cluster(n, args.threads) as cluster, Client(cluster) as client:
            Xd, yd, qd = (_placed(client, a, chunks) for a in (X, y, qid))
            wait([Xd, yd, qd])
            DaskGPUHistGBDTRanker(**{**gparams, "n_estimators": 2}).fit(
                Xd, yd, qid=qd)  # warm-up on the timed blocks (as the CPU runs)
            gdist, t_gd = _timed(lambda: DaskGPUHistGBDTRanker(**gparams).fit(Xd, yd, qid=qd))
            equal = gdist.ensemble_.to_document() == glocal.ensemble_.to_document()
            extra[f"skltr_{n}gpu_workers"] = {"fit_s": t_gd, "equals_local_gpu": bool(equal),
                                              "timings": gdist.timings_, "blocks": chunks}
            rows.append(row(f"{base}, {n} GPU worker(s)", "fit_s", t_gd, t_gl,
                            "skltr local, 1 GPU", "s"))
            print(f"{n} GPU worker(s) {t_gd:.2f} s, equal={equal}", flush=True)
            if "xgboost" in args.engines:
                _xgboost_gpu(client, Xd, yd, qd, Xt, ndcg, args, n, t_gd, base, rows, extra)


def _xgboost_gpu(client, Xd, yd, qd, Xt, ndcg, args, n, t_skltr, base, rows, extra):
    """xgboost.dask on the same GPU workers (its CUDA build; an error is recorded)."""
    try:
        import xgboost as xgb
        from xgboost import dask as dxgb

        def fit(trees):
            dm = dxgb.DaskQuantileDMatrix(client, Xd, yd, qid=qd, max_bin=BINS)
            return dxgb.train(client, {"objective": "rank:ndcg", "tree_method": "hist",
                                       "device": "cuda", "max_depth": 6, "eta": LR,
                                       "max_bin": BINS, "seed": 0},
                              dm, num_boost_round=trees)
        fit(2)
        out, t = _timed(lambda: fit(args.trees))
        booster = out["booster"]
        booster.set_param({"device": "cpu"})
        score = ndcg(booster.predict(xgb.DMatrix(Xt)))
    except Exception as exc:  # noqa: BLE001 -- recorded in the result, not hidden
        extra[f"xgboost_dask_{n}gpu_error"] = f"{type(exc).__name__}: {exc}"[:2000]
        print(f"xgboost.dask on {n} GPU(s) failed: {exc}", flush=True)
        return
    extra[f"xgboost_dask_{n}gpu"] = {"fit_s": t, "ndcg@10": score}
    rows.append(row(f"{base}, {n} GPU worker(s)", "fit_s", t_skltr, t, "xgboost.dask, "
                    "same GPUs", "s"))
    print(f"xgboost.dask {n} GPU(s) {t:.2f} s", flush=True)

if __name__ == "__main__":
    main()
