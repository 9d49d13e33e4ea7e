"""GPU scoring: skltr's GPU backends against XGBoost's own GPU predictor, same process.

XGBoost models of 1,000, 5,000 and 20,000 trees of depth 6 (prefixes of one 20,000-round
booster, trained on the GPU) and a LightGBM model of 255-leaf trees, on 136-feature
``make_ranking`` data: 1M rows (throughput) and 100 rows (one query's latency). Inputs are
CuPy float32 arrays on both sides (XGBoost ``inplace_predict``; skltr
``QuickScorerPredictor(device="cuda").predict_raw``, whose output stays on the GPU). Every
strategy (traversal placements, GPU-QuickScorer with 1, 2 and 4 documents a block) is also
timed alone at both batch sizes, with the one ``backend="auto"`` measured and kept, and the
traversal placements again after ``calibrate`` on 20,000 training rows (visit-frequency node
order); scores are checked equal to the library's. Ceilings: bytes moved (X read once,
scores written) against the measured copy bandwidth, node visits a second (rows x trees x
mean leaf depth on a sample), and for GPU-QuickScorer the false nodes (mask ANDs) a second.
Target (issue #15): at least 3x XGBoost's throughput at 1,000 and 5,000 trees and a lower
single-query latency.

Usage: python benchmarks/predict_gpu.py [--rows 1000000] [--train-rows 50000] [--out DIR]
"""

import argparse
import time

import numpy as np

from _harness import gpu_copy_bandwidth, gpu_time, row, write_result


def wall_time(fn, repeat=200):
    """Median host wall time of ``fn`` including a device synchronisation (latency)."""
    import cupy

    fn()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def mean_leaf_depth(ens, X):
    """Mean depth of the leaves reached by the rows of ``X`` (node visits per tree)."""
    depth = np.zeros(ens.tree_ptr[-1], np.int64)
    starts = np.repeat(ens.tree_ptr[:-1], np.diff(ens.tree_ptr))
    inner = np.flatnonzero(ens.left >= 0)
    for _ in range(64):  # propagate parent depth + 1 down the trees
        new = depth.copy()
        new[starts[inner] + ens.left[inner]] = depth[inner] + 1
        new[starts[inner] + ens.right[inner]] = depth[inner] + 1
        if np.array_equal(new, depth):
            break
        depth = new
    from skltr.trees._traversal import apply

    leaves = apply(ens, X) + ens.tree_ptr[:-1][None, :]
    return float(depth[leaves].mean())


def false_nodes_per_row(ens, X):
    """Mean number of internal nodes whose test is false (GPU-QuickScorer's mask ANDs) per
    row of ``X`` (no NaN; float32 thresholds compared as the model does)."""
    inner = np.flatnonzero(ens.left >= 0)
    f, thr = ens.feature[inner], ens.threshold[inner]
    total = 0
    for s in range(0, inner.size, 20_000):
        xv = X[:, f[s:s + 20_000]].astype(np.float64)
        t = thr[s:s + 20_000]
        total += int((xv >= t).sum() if ens.decision == "<" else (xv > t).sum())
    return total / X.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--train-rows", type=int, default=50_000)
    ap.add_argument("--trees", default="1000,5000,20000")
    ap.add_argument("--lgb-trees", type=int, default=1000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import cupy
    import lightgbm as lgb
    import xgboost as xgb

    from skltr import QuickScorerPredictor
    from skltr._gpu.quickscorer import QuickScorerTables
    from skltr.datasets import make_ranking

    trees = [int(t) for t in args.trees.split(",")]
    n_q = -(-(args.rows + args.train_rows) * 11 // (10 * 50))
    X, y, _ = make_ranking(n_queries=n_q, docs_per_query=50, n_features=136, random_state=0)
    X = X.astype(np.float32)
    Xtr, ytr = X[:args.train_rows], y[:args.train_rows]
    Xte = X[args.train_rows:args.train_rows + args.rows]
    Xd = cupy.asarray(Xte)
    X100 = cupy.asarray(Xte[:100])
    copy_gbs = gpu_copy_bandwidth()
    print(f"{Xte.shape[0]} x 136 float32 rows; copy bandwidth {copy_gbs:.0f} GB/s")

    t = time.perf_counter()
    booster = xgb.train({"max_depth": 6, "eta": 0.05, "device": "cuda", "tree_method": "hist",
                         "min_child_weight": 0.0, "lambda": 1.0},
                        xgb.QuantileDMatrix(Xtr, ytr), num_boost_round=max(trees))
    print(f"XGBoost trained {max(trees)} rounds in {time.perf_counter() - t:.0f} s")
    t = time.perf_counter()
    lgbm = lgb.LGBMRegressor(n_estimators=args.lgb_trees, num_leaves=255, learning_rate=0.05,
                             min_child_samples=5, verbose=-1).fit(Xtr, ytr)
    print(f"LightGBM trained {args.lgb_trees} trees in {time.perf_counter() - t:.0f} s")

    rows, details = [], {}
    models = [(f"xgboost {n} trees depth 6", booster[0:n]) for n in trees]
    models.append((f"lightgbm {args.lgb_trees} trees 255 leaves", lgbm))
    for name, model in models:
        qs = QuickScorerPredictor.from_model(model, device="cuda")
        ens, layout = qs.ensemble_, qs.layout_
        got = qs.predict_raw(Xd)  # measures and keeps the auto placement for 1M rows
        qs.predict_raw(X100)
        auto_big = layout.placement(Xd, cupy.empty((Xd.shape[0], 1)))
        auto_small = layout.placement(X100, cupy.empty((100, 1)))
        skltr_s = gpu_time(lambda: qs.predict_raw(Xd))
        skltr_lat = wall_time(lambda: qs.predict_raw(X100))
        out = cupy.empty((Xd.shape[0], ens.n_outputs), cupy.float64)
        out100 = cupy.empty((100, ens.n_outputs), cupy.float64)
        per_placement = {p: gpu_time(lambda p=p: layout.run(p, Xd, out))
                         for p in layout.eligible(Xd)}
        per_placement_100 = {p: gpu_time(lambda p=p: layout.run(p, X100, out100))
                             for p in layout.eligible(X100)}
        qs_docs = {}
        if layout.qs is not None and ens.n_trees <= 5000:  # 20,000 trees: minutes a docs
            for docs in (1, 2, 4):
                tables = QuickScorerTables.build(ens, layout, docs=docs)
                qs_docs[docs] = {"1M_s": gpu_time(lambda t=tables: t.run(layout, Xd, out)),
                                 "100_s": gpu_time(lambda t=tables: t.run(layout, X100,
                                                                          out100))}
        if layout.qs is not None:
            false_nodes = false_nodes_per_row(ens, Xte[:500])
        cal = QuickScorerPredictor.from_model(model, device="cuda").calibrate(Xtr[:20_000])
        calibrated = {p: gpu_time(lambda p=p: cal.layout_.run(p, Xd, out))
                      for p in ("direct", "shared_data", "shared_forest")
                      if p in cal.layout_.eligible(Xd)}
        assert cupy.array_equal(cal.predict_raw(Xd), got)
        depth = mean_leaf_depth(ens, Xte[:2000])
        visits = Xte.shape[0] * ens.n_trees * depth
        moved = Xte.nbytes + Xte.shape[0] * 4
        rec = {"trees": int(ens.n_trees), "auto_1M": auto_big, "auto_100": auto_small,
               "skltr_s": skltr_s, "skltr_latency_100_s": skltr_lat,
               "placements_s": per_placement, "placements_100_rows_s": per_placement_100,
               "calibrated_placements_s": calibrated, "mean_leaf_depth": depth,
               "node_visits_per_s": visits / skltr_s,
               "bandwidth_fraction": moved / skltr_s / 1e9 / copy_gbs}
        if layout.qs is not None:
            rec.update(quickscorer_docs_per_block=qs_docs,
                       quickscorer_false_nodes_per_row=false_nodes,
                       quickscorer_mask_ands_per_s=false_nodes * Xte.shape[0]
                       / per_placement["quickscorer"])
        if name.startswith("xgboost"):
            booster_n = model
            booster_n.set_param({"device": "cuda"})
            want = booster_n.inplace_predict(Xd)
            # XGBoost's GPU predictor sums in its own order; skltr reproduces its CPU
            # predictor, bit for bit (checked on 100k rows), and the GPU one to rounding
            rec["max_abs_diff_vs_xgboost_gpu"] = float(cupy.abs(got - want).max())
            cpu_booster = model.copy()
            cpu_booster.set_param({"device": "cpu"})
            sub = Xte[:100_000]
            rec["equal_to_xgboost_cpu_predict"] = bool(np.array_equal(
                qs.predict_raw(sub), cpu_booster.inplace_predict(sub)))
            peer_s = gpu_time(lambda: booster_n.inplace_predict(Xd))
            peer_lat = wall_time(lambda: booster_n.inplace_predict(X100))
            rec.update(xgboost_s=peer_s, xgboost_latency_100_s=peer_lat)
            rows.append(row(f"{name}, 1M rows (throughput)", "s", skltr_s, peer_s,
                            "XGBoost GPU inplace_predict", "s"))
            rows.append(row(f"{name}, 100 rows (latency)", "s", skltr_lat, peer_lat,
                            "XGBoost GPU inplace_predict", "s"))
        else:
            sub = Xte[:200_000]
            want = model.predict(sub, raw_score=True)
            rec["equal_to_lightgbm"] = bool(np.array_equal(qs.predict_raw(sub), want))
            peer_s = min(_host_time(lambda: model.predict(sub, raw_score=True))
                         for _ in range(2)) * Xte.shape[0] / sub.shape[0]
            rec.update(lightgbm_cpu_s_scaled_to_rows=peer_s)
            rows.append(row(f"{name}, 1M rows (throughput)", "s", skltr_s, peer_s,
                            "LightGBM predict, 16 CPU cores (200k rows, scaled)", "s"))
        details[name] = rec
        print(name, {k: (round(v, 5) if isinstance(v, float) else v) for k, v in rec.items()})
    write_result("predict_gpu", rows,
                 params={"rows": int(Xte.shape[0]), "features": 136,
                         "train_rows": args.train_rows, "copy_gb_per_s": copy_gbs,
                         "xgboost": xgb.__version__, "lightgbm": lgb.__version__,
                         "models": details},
                 out_dir=args.out)


def _host_time(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
