"""Scoring speed on the CPU: skltr QuickScorer / traversal vs LightGBM, XGBoost and tl2cgen.

Trains (or loads from --cache) LightGBM models with num_leaves=64 and XGBoost models with
max_depth=6 (``--leaves`` / ``--depth``: larger trees, which skltr scores by traversal), 1,000
and 5,000 trees, on 136-feature synthetic ranking data; then scores
50,000 rows with each engine in this one process, after checking that skltr's raw scores
equal the library's own. Also reports single-query latency (100 documents): QuickScorer's,
and that of the backend ``backend="auto"`` picks for the model.

Usage: python benchmarks/predict_cpu.py [--trees 1000 5000] [--rows 50000] [--threads 2]
       [--train-queries 400] [--leaves 64] [--depth 6] [--no-tl2cgen] [--note TEXT]
"""

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

from _harness import row, time_median, write_result
from skltr import QuickScorerPredictor
from skltr.datasets import make_ranking


def train_models(n_trees, threads, cache, n_queries=400, leaves=64, depth=6):
    import lightgbm as lgb
    import xgboost as xgb

    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=100, n_features=136,
                             random_state=1)
    sizes = np.bincount(qid)
    out = {}
    shape = "" if (leaves, depth) == (64, 6) else f"_l{leaves}_d{depth}"
    lgb_path = cache / f"lgb_{n_trees}_q{n_queries}{shape}.txt"
    if lgb_path.exists():
        out["lightgbm"] = lgb.Booster(model_file=str(lgb_path))
    else:
        ds = lgb.Dataset(X, y, group=sizes[sizes > 0])
        out["lightgbm"] = lgb.train({"objective": "lambdarank", "num_leaves": leaves,
                                     "learning_rate": 0.05, "min_data_in_leaf": 20,
                                     "verbose": -1, "num_threads": threads}, ds,
                                    num_boost_round=n_trees)
        out["lightgbm"].save_model(str(lgb_path))
    xgb_path = cache / f"xgb_{n_trees}_q{n_queries}{shape}.json"
    if xgb_path.exists():
        out["xgboost"] = xgb.Booster(model_file=str(xgb_path))
    else:
        dm = xgb.DMatrix(X, y, qid=qid)
        out["xgboost"] = xgb.train({"objective": "rank:ndcg", "max_depth": depth, "eta": 0.05,
                                    "tree_method": "hist", "nthread": threads}, dm,
                                   num_boost_round=n_trees)
        out["xgboost"].save_model(str(xgb_path))
    return out


def tl2cgen_predictor(booster, library, threads, workdir):
    try:
        import tl2cgen
        import treelite
    except ImportError:
        return None
    if library == "lightgbm":
        model = treelite.frontend.from_lightgbm(booster)
    else:
        model = treelite.frontend.from_xgboost(booster)
    lib = os.path.join(workdir, f"{library}.so")
    tl2cgen.export_lib(model, toolchain="gcc", libpath=lib, params={"parallel_comp": 8},
                       nthread=threads)
    predictor = tl2cgen.Predictor(lib, nthread=threads)
    # tl2cgen 1.0 calls np.array(copy=False), which numpy 2 refuses when a conversion is
    # needed: hand it the model's threshold dtype already (converted inside the timed call).
    dtype = "float32" if library == "xgboost" else "float64"
    return lambda X: predictor.predict(
        tl2cgen.DMatrix(np.ascontiguousarray(X, dtype=dtype), dtype=dtype))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trees", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "skltr-bench"))
    parser.add_argument("--no-tl2cgen", action="store_true")
    parser.add_argument("--train-queries", type=int, default=400,
                        help="queries of 100 documents the models are trained on (fewer makes "
                             "5,000-tree models quick to train on 2 cores; scoring speed "
                             "depends on the trees' shape, which the table reports)")
    parser.add_argument("--leaves", type=int, default=64, help="LightGBM's num_leaves")
    parser.add_argument("--depth", type=int, default=6, help="XGBoost's max_depth")
    parser.add_argument("--note", default="", help="stored with the results")
    args = parser.parse_args()

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    X, _, _ = make_ranking(n_queries=args.rows // 100, docs_per_query=100, n_features=136,
                           random_state=2)
    X = np.ascontiguousarray(X, dtype=np.float64)[: args.rows]
    Xq = X[:100]
    n = X.shape[0]
    rows = []
    for n_trees in args.trees:
        models = train_models(n_trees, args.threads, cache, args.train_queries, args.leaves,
                              args.depth)
        for library, booster in models.items():
            if library == "lightgbm":
                native = lambda A, b=booster: b.predict(A, raw_score=True,  # noqa: E731
                                                       num_threads=args.threads)
                shape = f"{args.leaves} leaves"
            else:
                booster.set_param({"nthread": args.threads})
                native = lambda A, b=booster: b.inplace_predict(A,  # noqa: E731
                                                               predict_type="margin")
                shape = f"depth {args.depth}"
            qs = QuickScorerPredictor.from_model(booster, backend="quickscorer",
                                                 n_jobs=args.threads)
            tr = QuickScorerPredictor.from_model(booster, backend="traversal",
                                                 n_jobs=args.threads)
            expected = native(X)
            np.testing.assert_array_equal(qs.predict_raw(X), expected)
            np.testing.assert_array_equal(tr.predict_raw(X), expected)
            leaves = qs.ensemble_.n_leaves().mean()
            case = (f"{library} {n_trees} trees {shape} ({leaves:.1f} leaves/tree, "
                    f"{args.train_queries} training queries)")
            t_native = time_median(lambda: native(X), repeat=7)
            t_qs = time_median(lambda: qs.predict_raw(X), repeat=7)
            t_tr = time_median(lambda: tr.predict_raw(X), repeat=3)
            us = 1e6 / n
            peer = f"{library} native predict"
            rows.append(row(case, "quickscorer", t_qs * us, t_native * us, peer, "us/doc"))
            rows.append(row(case, "traversal", t_tr * us, t_native * us, peer, "us/doc"))
            lat_native = time_median(lambda: native(Xq), repeat=20, warmup=3)
            lat_qs = time_median(lambda: qs.predict_raw(Xq), repeat=20, warmup=3)
            rows.append(row(case, "latency 100 docs", lat_qs * 1e3, lat_native * 1e3, peer,
                            "ms/query"))
            auto = QuickScorerPredictor.from_model(booster, n_jobs=args.threads)
            lat_auto = time_median(lambda: auto.predict_raw(Xq), repeat=20, warmup=3)
            rows.append(row(case, f"latency 100 docs, backend auto ({auto.backend_})",
                            lat_auto * 1e3, lat_native * 1e3, peer, "ms/query"))
            if not args.no_tl2cgen:
                with tempfile.TemporaryDirectory() as work:
                    compiled = tl2cgen_predictor(booster, library, args.threads, work)
                    if compiled is not None:
                        got = np.asarray(compiled(X)).reshape(-1)
                        t_c = time_median(lambda: compiled(X), repeat=3)
                        rows.append(row(case, "quickscorer", t_qs * us, t_c * us,
                                        "tl2cgen compiled (gcc)", "us/doc"))
                        print(f"{case}: tl2cgen max |diff| vs native "
                              f"{np.max(np.abs(got - expected)):.3g}")
            print(f"{case}: layout {qs.layout_nbytes_ / 1e6:.1f} MB; qs {t_qs * us:.2f} "
                  f"us/doc, traversal {t_tr * us:.2f}, native {t_native * us:.2f}")
    write_result("predict_cpu", rows, params={"rows": n, "threads": args.threads,
                                              "trees": args.trees,
                                              "train_queries": args.train_queries,
                                              "leaves": args.leaves, "depth": args.depth,
                                              "note": args.note},
                 packages=("xgboost", "lightgbm", "treelite", "tl2cgen"))


if __name__ == "__main__":
    main()
