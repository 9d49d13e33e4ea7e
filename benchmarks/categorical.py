"""Categorical features: LightGBM's categorical splits against codes read as numbers.

Issue #29's categorical targets: on ``make_ranking`` data with one categorical column of L
levels (Zipf-like frequencies, random effects on relevance, codes not in effect order;
``categorical_levels``) next to the numeric features, test NDCG@10 and fit time of

* LightGBM ``lambdarank`` with ``categorical_feature=[the column]`` (its defaults:
  ``max_cat_to_onehot=4``, ``max_cat_threshold=32``, ``cat_smooth=10``, ``cat_l2=10``);
* LightGBM with the codes as an ordinary numeric feature (ordinal);
* for L > 255, LightGBM with categorical splits on the 255 most frequent categories only
  (the others missing): what a cap of one byte of bins costs (skltr's bins before its wide
  categorical features, ``skltr._engine.wide_categorical``);
* skltr ``GPUHistGBDTRanker`` with ``categorical_features=[the column]`` (its defaults are
  LightGBM's), with the codes as a numeric feature (ordinal) and, for L <= 64, one-hot
  columns.

Fit time: each engine fits each data set ``--repeats`` times, the engines taking turns (one
fit of each, then again), and the median counts: one fit takes ~0.3 s, and on a 16-thread
host the same fit's time varied by 10% from one run to the next, drifting with the machine.

Prediction: each engine's model scores the test rows (the fastest of three calls; skltr's
default, QuickScorer on the CPU).

Same trees for every engine (100 rounds of 31 leaves, learning rate 0.1, 20 rows a leaf,
255 bins), ``--seeds`` data sets per L; each row gives the mean over seeds (peer = LightGBM
with categorical splits) and the per-seed values in ``params``; each NDCG row's note gives
the difference to the peer and its standard error over the seeds (paired: the same data
sets).

``--cuda`` adds skltr on the GPU (categorical and ordinal): the CPU's model, its fit time.

Usage: python benchmarks/categorical.py [--levels 10 1000 10000] [--seeds 5] [--cuda]
       [--queries 600] [--threads 2] [--repeats 3] [--out DIR]
"""

import argparse
import time

import numpy as np

from _harness import row, write_result
from skltr import GPUHistGBDTRanker
from skltr.datasets import make_ranking
from skltr.metrics import ndcg_score

ROUNDS, LEAVES, LR, MIN_LEAF = 100, 31, 0.1, 20


def _top_categories(X_tr, X_te, keep):
    """The categorical column with every category outside the ``keep`` most frequent of the
    training rows made missing: LightGBM given skltr's cap on categories (uint8 bins)."""
    col = X_tr[:, -1]
    codes, counts = np.unique(col[~np.isnan(col)], return_counts=True)
    top = codes[np.argsort(-counts, kind="stable")[:keep]]
    out = []
    for X in (X_tr, X_te):
        X = X.copy()
        X[~np.isin(X[:, -1], top), -1] = np.nan
        out.append(X)
    return out


def _lightgbm(X, y, qid, X_te, threads, categorical):
    import lightgbm as lgb

    params = {"objective": "lambdarank", "num_leaves": LEAVES, "learning_rate": LR,
              "min_data_in_leaf": MIN_LEAF, "max_bin": 255, "verbose": -1,
              "num_threads": threads}
    ds = lgb.Dataset(X, y, group=np.bincount(qid),
                     categorical_feature=[X.shape[1] - 1] if categorical else "auto")
    t = time.perf_counter()
    booster = lgb.train(params, ds, num_boost_round=ROUNDS)
    fit_s = time.perf_counter() - t
    return (fit_s, *_timed_predict(lambda: booster.predict(X_te, num_threads=threads)))


def _timed_predict(predict, repeat=3):
    """(scores, the fastest of ``repeat`` calls' seconds): the first call builds what a
    model builds once (skltr's QuickScorer tables)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        scores = predict()
        times.append(time.perf_counter() - t)
    return scores, min(times)


def _skltr(X, y, qid, X_te, threads, categorical=False, device="cpu"):
    model = GPUHistGBDTRanker(n_estimators=ROUNDS, max_leaves=LEAVES, learning_rate=LR,
                              min_samples_leaf=MIN_LEAF, random_state=0, n_jobs=threads,
                              categorical_features=[X.shape[1] - 1] if categorical else None,
                              device=device)
    t = time.perf_counter()
    model.fit(X, y, qid=qid)
    fit_s = time.perf_counter() - t
    return (fit_s, *_timed_predict(lambda: model.predict(X_te)))


def _one_hot(X, n_levels):
    codes = X[:, -1].astype(np.int64)
    hot = np.zeros((X.shape[0], n_levels), X.dtype)
    hot[np.arange(X.shape[0]), codes] = 1
    return np.hstack([X[:, :-1], hot])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[10, 1000, 10000])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--queries", type=int, default=600)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3,
                    help="fits of each engine a data set, in turns (the median counts)")
    ap.add_argument("--cuda", action="store_true",
                    help="also skltr on the GPU (categorical and ordinal; the CPU's model)")
    ap.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = ap.parse_args()

    # warm-up: numba loads or compiles skltr's kernels outside the clock, on data of the
    # run's size (the parallel kernels of large nodes, the categorical partition among them)
    # -- byte categorical features (10 levels) and wide ones (1,000) compile apart
    for levels in (10, 1000):
        Xw, yw, qw = make_ranking(n_queries=args.queries, docs_per_query=40, n_features=30,
                                  n_informative=10, categorical_levels=(levels,),
                                  random_state=99)
        _skltr(Xw, yw, qw, Xw, args.threads)
        _skltr(Xw, yw, qw, Xw, args.threads, categorical=True)
        if args.cuda:
            _skltr(Xw, yw, qw, Xw, args.threads, device="cuda")
            _skltr(Xw, yw, qw, Xw, args.threads, categorical=True, device="cuda")
    rows, raw, fit_runs = [], {}, {}
    for n_levels in args.levels:
        res = {}
        for seed in range(args.seeds):
            X, y, qid = make_ranking(n_queries=args.queries, docs_per_query=40, n_features=30,
                                     n_informative=10, categorical_levels=(n_levels,),
                                     random_state=seed)
            tr, te = qid < int(args.queries * 0.75), qid >= int(args.queries * 0.75)
            engines = {
                "lightgbm categorical": lambda: _lightgbm(X[tr], y[tr], qid[tr], X[te],
                                                          args.threads, True),
                "lightgbm ordinal": lambda: _lightgbm(X[tr], y[tr], qid[tr], X[te],
                                                      args.threads, False),
                "skltr categorical": lambda: _skltr(X[tr], y[tr], qid[tr], X[te],
                                                    args.threads, True),
                "skltr ordinal": lambda: _skltr(X[tr], y[tr], qid[tr], X[te], args.threads),
                **({"skltr categorical (cuda)": lambda: _skltr(
                    X[tr], y[tr], qid[tr], X[te], args.threads, True, "cuda"),
                    "skltr ordinal (cuda)": lambda: _skltr(
                    X[tr], y[tr], qid[tr], X[te], args.threads, False, "cuda")}
                   if args.cuda else {}),
            }
            if n_levels > 255:  # the cost of keeping the 255 most frequent categories only
                Xc_tr, Xc_te = _top_categories(X[tr], X[te], 255)
                engines["lightgbm categorical, top 255"] = lambda: _lightgbm(
                    Xc_tr, y[tr], qid[tr], Xc_te, args.threads, True)
            if n_levels <= 64:
                Xh = _one_hot(X, n_levels)
                engines["skltr one-hot"] = lambda: _skltr(Xh[tr], y[tr], qid[tr], Xh[te],
                                                          args.threads)
            runs = {name: [] for name in engines}
            for _ in range(args.repeats):  # the engines in turns: drift reaches each alike
                for name, run in engines.items():
                    runs[name].append(run())
            for name, fits in runs.items():
                fit_s = float(np.median([f[0] for f in fits]))
                _, scores, predict_s = fits[0]
                ndcg = ndcg_score(y[te], scores, qid=qid[te], k=10)
                res.setdefault(name, []).append((ndcg, fit_s, predict_s))
                fit_runs.setdefault(n_levels, {}).setdefault(name, []).append(
                    [f[0] for f in fits])
                print(f"L={n_levels} seed {seed} {name:22s} NDCG@10 {ndcg:.4f} "
                      f"fit {fit_s:.2f} s predict {predict_s * 1e3:.1f} ms", flush=True)
        raw[n_levels] = res
        peer = np.mean([v[0] for v in res["lightgbm categorical"]])
        peer_s = np.mean([v[1] for v in res["lightgbm categorical"]])
        peer_predict = np.mean([v[2] for v in res["lightgbm categorical"]])
        case = f"{n_levels} categories, {args.queries} queries x 40 docs, 30 numeric features"
        for name, values in res.items():
            if name == "lightgbm categorical":
                continue
            diff = (np.array([v[0] for v in values])
                    - np.array([v[0] for v in res["lightgbm categorical"]]))
            se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else 0.0
            rows.append({**row(case, f"{name} NDCG@10", float(np.mean([v[0] for v in values])),
                               float(peer), "lightgbm categorical", "ndcg"),
                         "note": f"difference {diff.mean():+.4f}, standard error {se:.4f}"})
            rows.append(row(case, f"{name} fit", float(np.mean([v[1] for v in values])),
                            float(peer_s), "lightgbm categorical", "s"))
            rows.append(row(case, f"{name} predict", float(np.mean([v[2] for v in values])),
                            float(peer_predict), "lightgbm categorical", "s"))
    write_result("categorical", rows, packages=("lightgbm",), out_dir=args.out,
                 params={"levels": args.levels, "seeds": args.seeds, "queries": args.queries,
                         "threads": args.threads, "rounds": ROUNDS, "leaves": LEAVES,
                         "cuda": args.cuda, "repeats": args.repeats,
                         "raw": {str(k): v for k, v in raw.items()},
                         "fit_runs": {str(k): v for k, v in fit_runs.items()}})


if __name__ == "__main__":
    main()
