"""TreeSHAP: skltr's ``predict_contribs`` / ``predict_interactions`` against the peers' own.

Issue #31's cases, in one process: an XGBoost model of ``--trees`` trees of depth
``--depth`` (default 1,000 x 6) against ``Booster.predict(pred_contribs=True)``, and a
LightGBM model of ``--lgb-trees`` trees of 255 leaves against ``predict(pred_contrib=True)``,
on ``--rows`` rows (default 100,000) of 136-feature ``make_ranking`` data (the models trained
on every core), both libraries and skltr on ``--threads`` threads (the peers get their inputs
prepared: a DMatrix for XGBoost; skltr reads the NumPy array). Interaction values on
``--interaction-rows`` rows against XGBoost's ``pred_interactions``. Each row also records the
largest difference from the peer, relative to the row's largest value (float32 peers: about
1e-6).

``--device cuda``: skltr's CUDA kernel (CuPy input, output left on the GPU) against XGBoost's
GPU ``pred_contribs`` (GPUTreeShap, CuPy input); the LightGBM model against LightGBM's CPU
``pred_contrib`` (LightGBM has no GPU TreeSHAP). XGBoost's ``predict`` returns a NumPy
array, so its time includes copying the values to the host (55 MB at 100k rows x 137
columns of float32, a few ms); skltr's stay on the GPU.

On the CPU, ``first_call_s`` times the first ``predict_contribs`` of the XGBoost model (its
paths and per-pattern tables built, the kernels already compiled on another copy of the
model) against one ``pred_contribs`` call, and ``tables_mb`` is the size of those tables.
``--cpu-tables off`` runs skltr's CPU kernel without them (every path row by row: the
baseline of the tables, in the same process); ``--cpu-row-chunk`` and ``--cpu-block-kb`` set
the rows a thread takes at a time and the tables of a block of trees
(``skltr.trees._shap.ROW_CHUNK`` / ``BLOCK_BYTES``).

Target (issue #31): CPU at least XGBoost's CPU speed on 16 threads; GPU at least XGBoost's
GPU speed.

Usage: python benchmarks/explain.py [--device cpu|cuda] [--threads 16] [--rows 100000]
       [--trees 1000] [--lgb-trees 1000] [--train-rows 20000] [--gpu-acc global|shared]
       [--cpu-tables on|off] [--cpu-row-chunk N] [--cpu-block-kb N] [--out DIR]
"""

import argparse
import os
import sys
import time

import numpy as np

from _harness import gpu_time, row, time_median, write_result


def rel_diff(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = np.abs(want).reshape(len(want), -1).max(axis=1) + 1.0
    return float((np.abs(got - want).reshape(len(want), -1).max(axis=1) / scale).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--interaction-rows", type=int, default=2_000)
    ap.add_argument("--lgb-rows", type=int, default=None,
                    help="rows for the LightGBM model (default: --rows)")
    ap.add_argument("--train-rows", type=int, default=20_000)
    ap.add_argument("--trees", type=int, default=1000)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--lgb-trees", type=int, default=1000)
    ap.add_argument("--lgb-leaves", type=int, default=255)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gpu-acc", default=None, choices=["global", "shared", "auto"],
                    help="skltr._gpu.treeshap.ACCUMULATE for --device cuda")
    ap.add_argument("--cpu-tables", default="on", choices=["on", "off"],
                    help="off: skltr's CPU kernel computes every path row by row")
    ap.add_argument("--cpu-row-chunk", type=int, default=None,
                    help="skltr.trees._shap.ROW_CHUNK for --device cpu")
    ap.add_argument("--cpu-block-kb", type=int, default=None,
                    help="skltr.trees._shap.BLOCK_BYTES / 1024 for --device cpu")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import lightgbm as lgb
    import xgboost as xgb

    from skltr.convert import to_tree_ensemble
    from skltr.datasets import make_ranking

    n_q = max((args.rows + args.train_rows) // 100, 2)
    X, y, _ = make_ranking(n_queries=n_q, docs_per_query=100, n_features=args.features,
                           random_state=0)
    X = np.ascontiguousarray(X, dtype=np.float32)
    Xtr, ytr = X[:args.train_rows], y[:args.train_rows]
    Xte = X[args.train_rows:args.train_rows + args.rows]
    Xin = Xte[:args.interaction_rows]
    Xlg = Xte[:args.lgb_rows] if args.lgb_rows else Xte
    t = args.threads
    fit_t = os.cpu_count() or t  # the models train on every core (not timed): --threads 1
    # would spend minutes training 1,000 trees (the 1-thread run on the H100 host timed out)
    cuda = args.device == "cuda"
    rows = []
    started = time.perf_counter()

    def stage(what):  # progress on stderr: the TreeSHAP of deep trees can take minutes
        print(f"[{time.perf_counter() - started:7.1f} s] {what}", file=sys.stderr, flush=True)

    booster = xgb.train({"max_depth": args.depth, "eta": 0.05, "tree_method": "hist",
                         "nthread": fit_t, "seed": 0, "device": "cuda" if cuda else "cpu"},
                        xgb.DMatrix(Xtr, ytr, nthread=fit_t), args.trees)
    ens = to_tree_ensemble(booster)
    stage("xgboost model trained")
    lgbm = lgb.LGBMRegressor(n_estimators=args.lgb_trees, num_leaves=args.lgb_leaves,
                             min_child_samples=5, learning_rate=0.05, num_threads=fit_t,
                             verbose=-1, random_state=0).fit(Xtr, ytr)
    lens = to_tree_ensemble(lgbm)
    stage("lightgbm model trained")
    case = f"xgboost {args.trees}x depth {args.depth}, {len(Xte)} rows"
    lcase = (f"lightgbm {args.lgb_trees}x{args.lgb_leaves} leaves (depth "
             f"{lens.max_depth()}), {len(Xlg)} rows")

    if not cuda:
        from skltr.trees import _shap

        if args.cpu_tables == "off":
            _shap.TABLE_BYTES = 0
        if args.cpu_row_chunk:
            _shap.ROW_CHUNK = args.cpu_row_chunk
        if args.cpu_block_kb:
            _shap.BLOCK_BYTES = args.cpu_block_kb * 1024
        dm, dmi = xgb.DMatrix(Xte, nthread=t), xgb.DMatrix(Xin, nthread=t)
        booster.set_param({"nthread": t})
        # compile the kernels on another copy (enough rows to build and use its tables)
        to_tree_ensemble(booster).predict_contribs(Xte[:256], n_jobs=t)
        t0 = time.perf_counter()
        ours = ens.predict_contribs(Xte, n_jobs=t)  # builds the paths and tables
        t1 = time.perf_counter()
        peer = booster.predict(dm, pred_contribs=True)
        rows.append(row(case, "first_call_s", t1 - t0, time.perf_counter() - t1,
                        "xgboost cpu", "s"))
        tables = _shap.shap_tables(ens, _shap.shap_paths(ens))
        mb = tables.table.nbytes / 2**20 if np.any(tables.table_off >= 0) else 0.0
        rows.append(row(case, "tables_mb", mb, 0.0, "xgboost cpu", "MB"))
        rows.append(row(case, "contribs_s",
                        time_median(lambda: ens.predict_contribs(Xte, n_jobs=t),
                                    repeat=args.repeat, warmup=0),
                        time_median(lambda: booster.predict(dm, pred_contribs=True),
                                    repeat=args.repeat, warmup=0), "xgboost cpu", "s"))
        rows.append(row(case, "max_rel_diff", rel_diff(ours, peer), 0.0, "xgboost cpu", "1"))
        stage("xgboost contribs timed")
        ours = ens.predict_interactions(Xin, n_jobs=t)
        peer = booster.predict(dmi, pred_interactions=True)
        rows.append(row(case.replace(f"{len(Xte)} rows", f"{len(Xin)} rows"),
                        "interactions_s",
                        time_median(lambda: ens.predict_interactions(Xin, n_jobs=t),
                                    repeat=args.repeat, warmup=0),
                        time_median(lambda: booster.predict(dmi, pred_interactions=True),
                                    repeat=args.repeat, warmup=0), "xgboost cpu", "s"))
        rows.append(row(case, "inter_max_rel_diff", rel_diff(ours, peer), 0.0, "xgboost cpu",
                        "1"))
        stage("xgboost interactions timed")
        ours = lens.predict_contribs(Xlg, n_jobs=t)
        peer = lgbm.predict(Xlg, pred_contrib=True, num_threads=t)
        rows.append(row(lcase, "contribs_s",
                        time_median(lambda: lens.predict_contribs(Xlg, n_jobs=t),
                                    repeat=args.repeat, warmup=0),
                        time_median(lambda: lgbm.predict(Xlg, pred_contrib=True,
                                                         num_threads=t),
                                    repeat=args.repeat, warmup=0), "lightgbm cpu", "s"))
        rows.append(row(lcase, "max_rel_diff", rel_diff(ours, peer), 0.0, "lightgbm cpu", "1"))
    else:
        import cupy

        from skltr._gpu import treeshap as gpu_treeshap

        if args.gpu_acc:
            gpu_treeshap.ACCUMULATE = args.gpu_acc
        Xd, Xid, Xld = cupy.asarray(Xte), cupy.asarray(Xin), cupy.asarray(Xlg)
        booster.set_param({"device": "cuda"})
        dm, dmi = xgb.DMatrix(Xd), xgb.DMatrix(Xid)
        ours = ens.predict_contribs(Xd, device="cuda")
        peer = booster.predict(dm, pred_contribs=True)
        rows.append(row(case, "contribs_s",
                        gpu_time(lambda: ens.predict_contribs(Xd, device="cuda"),
                                 repeat=args.repeat, warmup=0),
                        gpu_time(lambda: booster.predict(dm, pred_contribs=True),
                                 repeat=args.repeat, warmup=0), "xgboost cuda", "s"))
        rows.append(row(case, "max_rel_diff", rel_diff(cupy.asnumpy(ours), peer), 0.0,
                        "xgboost cuda", "1"))
        stage("xgboost contribs timed")
        ours = ens.predict_interactions(Xid, device="cuda")
        peer = booster.predict(dmi, pred_interactions=True)
        rows.append(row(case.replace(f"{len(Xte)} rows", f"{len(Xin)} rows"),
                        "interactions_s",
                        gpu_time(lambda: ens.predict_interactions(Xid, device="cuda"),
                                 repeat=args.repeat, warmup=0),
                        gpu_time(lambda: booster.predict(dmi, pred_interactions=True),
                                 repeat=args.repeat, warmup=0), "xgboost cuda", "s"))
        rows.append(row(case, "inter_max_rel_diff", rel_diff(cupy.asnumpy(ours), peer), 0.0,
                        "xgboost cuda", "1"))
        stage("xgboost interactions timed")
        ours = lens.predict_contribs(Xld, device="cuda")
        peer = lgbm.predict(Xlg, pred_contrib=True, num_threads=t)
        rows.append(row(lcase, "contribs_s",
                        gpu_time(lambda: lens.predict_contribs(Xld, device="cuda"),
                                 repeat=args.repeat, warmup=0),
                        time_median(lambda: lgbm.predict(Xlg, pred_contrib=True,
                                                         num_threads=t),
                                    repeat=args.repeat, warmup=0), f"lightgbm cpu x{t}", "s"))
        rows.append(row(lcase, "max_rel_diff", rel_diff(cupy.asnumpy(ours), peer), 0.0,
                        "lightgbm cpu", "1"))

    acc = f"-{args.gpu_acc}" if cuda and args.gpu_acc else ""
    write_result(f"explain-{args.device}{acc}", rows, out_dir=args.out,
                 params={**vars(args), "lgb_max_depth": lens.max_depth()},
                 packages=("xgboost", "lightgbm", "cupy-cuda12x"))


if __name__ == "__main__":
    main()
