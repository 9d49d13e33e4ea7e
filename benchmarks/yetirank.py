"""YetiRank: skltr's ``objective="yetirank"`` against CatBoost's ``YetiRank``, on the CPU.

Engines (the same rounds, depth, learning rate and threads for all; issue #30):

* ``catboost``: ``CatBoostRanker(loss_function="YetiRank")`` with its defaults (symmetric
  trees, ``l2_leaf_reg=3``, 254 borders, YetiRank ``permutations=10``, ``decay=0.85``)
  except ``iterations``, ``depth`` and ``learning_rate``, which are set: CatBoost picks a
  learning rate of its own from the data size and rounds unless one is given, so every
  engine gets the same explicit ``--lr``;
* ``skltr yetirank``: ``GPUHistGBDTRanker(objective="yetirank")``, depth-wise trees of the
  same depth (``growth="depthwise"``, ``max_depth``, ``max_leaves=None``), other parameters
  at skltr's defaults (``min_samples_leaf=20``, ``reg_lambda=0``, 255 bins);
* ``skltr lambdarank``: the same trees with ``objective="lambdarank"`` (the fit-time
  yardstick: the issue asks YetiRank's fit within 2x of it);
* ``lightgbm lambdarank``: LightGBM's ``lambdarank``, ``max_depth`` and ``2**depth``
  leaves (a reference);
* ``catboost lambdamart``: ``CatBoostRanker(loss_function="LambdaMart")``, otherwise as
  ``catboost`` (context: CatBoost's trees with another objective, which separates what the
  objective brings from what CatBoost's symmetric trees bring);
* ``--extra`` adds skltr YetiRank variants given as JSON parameter sets (for
  investigations: e.g. ``'{"reg_lambda": 3}'``); a set overrides the defaults above, the
  growth included (``'{"growth": "symmetric"}'``: CatBoost's oblivious trees of the same
  depth);
* ``--catboost-extra`` adds CatBoost YetiRank variants, given as JSON parameter sets of
  ``CatBoostRanker`` (e.g. ``'{"score_function": "L2"}'``: one CatBoost default changed at
  a time, to see what each brings).

Data sets, one draw per seed (the models' seeds are the seed too):

* ``synthetic``: :func:`skltr.datasets.make_ranking` of ``--queries`` queries of 100
  documents, 50 features (20 informative), split by query 80 / 20 (~100k training rows);
* ``letor``: ``letor_small``'s ``rank.train`` + ``rank.test`` queries (read from
  ``/work/shared/data/letor_small``), redrawn per seed into 50 test queries and the rest.

Reported: test NDCG@10 (``skltr.metrics.ndcg_score``, gain ``2**label - 1``) mean over the
seeds, its paired difference to CatBoost and that difference's standard error, and fit wall
times (mean over the seeds; skltr's numba kernels are compiled before the clock starts).

Usage: python benchmarks/yetirank.py [--sets synthetic letor] [--seeds 0 1 2 3 4]
       [--rounds 200] [--depth 6] [--lr 0.1] [--threads 2] [--queries 1250]
       [--extra '{"reg_lambda": 3}'] [--catboost-extra '{"score_function": "L2"}']
       [--no-lightgbm] [--no-lambdamart] [--out DIR] [--suffix NAME]
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from _harness import git_commit, row, write_result

LETOR_DIR = Path("/work/shared/data/letor_small")
REFERENCE = "catboost"


def synthetic(seed, n_queries):
    from skltr.datasets import make_ranking
    from skltr.model_selection import train_test_split_by_query

    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=100, n_features=50,
                             n_informative=20, random_state=seed)
    return train_test_split_by_query(X, y, qid=qid, test_size=0.2, random_state=seed)


def letor(seed):
    from skltr.datasets import load_letor
    from skltr.model_selection import train_test_split_by_query

    X, y, qid = load_letor(LETOR_DIR / "rank.train")
    Xt, yt, qt = load_letor(LETOR_DIR / "rank.test", n_features=X.shape[1])
    Xa, ya = np.vstack([X, Xt]), np.concatenate([y, yt])
    qa = np.concatenate([qid, qt + qid.max() + 1])
    return train_test_split_by_query(Xa, ya, qid=qa, test_size=50, random_state=seed)


def by_query(X, y, qid):
    """Rows sorted by query (stable): CatBoost and LightGBM need each query contiguous."""
    order = np.argsort(qid, kind="stable")
    return X[order], y[order], qid[order]


def fit_catboost(X, y, qid, Xt, args, seed, loss="YetiRank", **extra):
    from catboost import CatBoostRanker

    X, y, qid = by_query(X, y, qid)
    model = CatBoostRanker(**{**dict(
        loss_function=loss, iterations=args.rounds, depth=args.depth, learning_rate=args.lr,
        random_seed=seed, thread_count=args.threads, verbose=False,
        allow_writing_files=False), **extra})
    t = time.perf_counter()
    model.fit(X, y, group_id=qid)
    return time.perf_counter() - t, model.predict(Xt)


def fit_skltr(X, y, qid, Xt, args, seed, objective, **extra):
    from skltr import GPUHistGBDTRanker

    model = GPUHistGBDTRanker(**{**dict(
        objective=objective, n_estimators=args.rounds, learning_rate=args.lr,
        growth="depthwise", max_depth=args.depth, max_leaves=None, random_state=seed,
        n_jobs=args.threads), **extra})
    t = time.perf_counter()
    model.fit(X, y, qid=qid)
    return time.perf_counter() - t, model.predict(Xt)


def fit_lightgbm(X, y, qid, Xt, args, seed):
    import lightgbm as lgb

    X, y, qid = by_query(X, y, qid)
    params = {"objective": "lambdarank", "learning_rate": args.lr, "max_depth": args.depth,
              "num_leaves": 2 ** args.depth, "seed": seed, "num_threads": args.threads,
              "verbose": -1}
    t = time.perf_counter()
    booster = lgb.train(params, lgb.Dataset(X, y, group=np.unique(qid, return_counts=True)[1]),
                        num_boost_round=args.rounds)
    return time.perf_counter() - t, booster.predict(Xt, num_threads=args.threads)


def engines(args):
    out = {"catboost": fit_catboost,
           "skltr yetirank": lambda *a: fit_skltr(*a, objective="yetirank"),
           "skltr lambdarank": lambda *a: fit_skltr(*a, objective="lambdarank")}
    for text in args.extra:
        params = json.loads(text)
        out[f"skltr yetirank {text}"] = (
            lambda *a, params=params: fit_skltr(*a, objective="yetirank", **params))
    for text in args.catboost_extra:
        params = json.loads(text)
        out[f"catboost {text}"] = (
            lambda *a, params=params: fit_catboost(*a, loss="YetiRank", **params))
    if not args.no_lightgbm:
        out["lightgbm lambdarank"] = fit_lightgbm
    if not args.no_lambdamart:
        out["catboost lambdamart"] = lambda *a: fit_catboost(*a, loss="LambdaMart")
    return out


def warm_up(args):
    """Compile (or load) skltr's kernels outside the clock, on data of the run's shape."""
    X, Xt, y, _, qid, _ = synthetic(99, 100)
    short = argparse.Namespace(**{**vars(args), "rounds": 3})
    for objective in ("yetirank", "lambdarank"):
        fit_skltr(X, y, qid, Xt, short, 0, objective)
    for text in args.extra:
        fit_skltr(X, y, qid, Xt, short, 0, "yetirank", **json.loads(text))


def run_set(name, args, fits):
    """{engine: [(ndcg, fit_s) per seed]} on data set ``name``."""
    from skltr.metrics import ndcg_score

    res = {}
    for seed in args.seeds:
        X, Xt, y, yt, qid, qt = synthetic(seed, args.queries) if name == "synthetic" else (
            letor(seed))
        for engine, fit in fits.items():
            fit_s, scores = fit(X, y, qid, Xt, args, seed)
            ndcg = float(ndcg_score(yt, scores, qid=qt, k=10))
            res.setdefault(engine, []).append((ndcg, fit_s))
            print(f"{name} seed {seed} {engine:28s} NDCG@10 {ndcg:.4f} fit {fit_s:.2f} s",
                  flush=True)
    return res, X.shape


def rows_of(case, res):
    """NDCG and fit-time rows of every engine against CatBoost, and YetiRank's fit time
    against skltr's lambdarank."""
    rows = []
    ref = np.array([v[0] for v in res[REFERENCE]])
    ref_s = float(np.mean([v[1] for v in res[REFERENCE]]))
    for engine, values in res.items():
        if engine == REFERENCE:
            continue
        ndcg = np.array([v[0] for v in values])
        diff = ndcg - ref
        se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else 0.0
        rows.append({**row(case, f"{engine} NDCG@10", float(ndcg.mean()), float(ref.mean()),
                           REFERENCE, "ndcg"),
                     "note": f"paired difference {diff.mean():+.4f}, standard error {se:.4f}, "
                             f"{diff.size} seeds"})
        rows.append(row(case, f"{engine} fit", float(np.mean([v[1] for v in values])), ref_s,
                        REFERENCE, "s"))
    lambdarank_s = float(np.mean([v[1] for v in res["skltr lambdarank"]]))
    for engine in [e for e in res if e.startswith("skltr yetirank")]:
        rows.append(row(case, f"{engine} fit", float(np.mean([v[1] for v in res[engine]])),
                        lambdarank_s, "skltr lambdarank", "s"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=["synthetic", "letor"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--queries", type=int, default=1250,
                    help="synthetic queries of 100 documents (80%% train)")
    ap.add_argument("--extra", nargs="*", default=[],
                    help="JSON parameter sets of extra skltr yetirank engines")
    ap.add_argument("--catboost-extra", nargs="*", default=[],
                    help="JSON parameter sets of extra CatBoost YetiRank engines")
    ap.add_argument("--no-lightgbm", action="store_true")
    ap.add_argument("--no-lambdamart", action="store_true")
    ap.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    ap.add_argument("--suffix", default=None,
                    help="rename the result file to <benchmark>-<machine>-<date>-<commit>-"
                         "<suffix>.json")
    args = ap.parse_args()

    warm_up(args)
    fits = engines(args)
    rows, raw, shapes = [], {}, {}
    for name in args.sets:
        res, shape = run_set(name, args, fits)
        raw[name], shapes[name] = res, list(shape)
        case = (f"{name}: {shape[0]} training rows x {shape[1]} features, {args.rounds} "
                f"rounds, depth {args.depth}, learning rate {args.lr}, {args.threads} threads")
        rows += rows_of(case, res)
    path = write_result(
        "yetirank", rows, packages=("catboost", "lightgbm", "numba"), out_dir=args.out,
        params={**{k: v for k, v in vars(args).items() if k not in ("out", "suffix")},
                "training_shapes": shapes, "raw (ndcg, fit_s) per seed": raw})
    if args.suffix:
        path.rename(path.with_name(f"{path.stem}-{git_commit()[:7]}-{args.suffix}.json"))
        print(f"renamed: {path.with_name(f'{path.stem}-{git_commit()[:7]}-{args.suffix}.json')}")


if __name__ == "__main__":
    main()
