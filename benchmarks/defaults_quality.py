"""Quality of the defaults: ``GPUHistGBDTRanker()`` vs ``LGBMRanker()`` vs ``XGBRanker()``.

Every engine is fitted with its library's defaults -- no hyper-parameter is set but the
seed (``random_state=0``; without query subsampling it only picks skltr's binning sample
above 200,000 rows and the hold-out of ``early_stopping="auto"``) and the thread count
(``--threads``, default 1: on a shared machine the libraries' spinning thread pools slowed
fits 10-50x; skltr's models do not depend on it) -- and scored by test
NDCG@10 (:func:`skltr.metrics.ndcg_score`, the same function for all) on held-out queries:

* ``skltr``: ``GPUHistGBDTRanker()``, the current defaults;
* ``skltr-auto``: ``GPUHistGBDTRanker(early_stopping="auto")``, the default before issue #11
  (above 10,000 training rows it held out 10 % of the queries and stopped after 10 rounds
  without NDCG@10 gain on them);
* ``lightgbm``: ``lightgbm.LGBMRanker()`` (lambdarank, 100 trees, 31 leaves, learning rate
  0.1, 20 rows per leaf, 255 bins, truncation 30, ``label_gain`` 2**i - 1);
* ``xgboost``: ``xgboost.XGBRanker()`` (``rank:ndcg``, for context).

Data sets: ``make_ranking`` (136 features) with several data seeds (10 at 5k and 20k rows, 6
at 63k, 3 at 200k; ``--seeds`` overrides), split by query into
the training size named by the set and a test part (as many queries as the training part up
to 63k rows, a fifth of all queries at 200k), and ``letor_small`` (real LETOR features:
``rank.train`` -> ``rank.test``, plus the mean over four random 201/50-query resplits of its
251 queries, since 50 test queries are noisy). Reported per set: the mean test NDCG@10 of
each engine over its seeds (every fit is kept under ``params.raw``), and the paired gap skltr
minus LightGBM: its mean, standard error and the number of seeds skltr is not behind
(``params.gap_skltr_minus_lightgbm``).

Usage: python benchmarks/defaults_quality.py [--sets 5k 20k 63k 200k letor letor-resplit]
       [--seeds 0 1 2] [--engines skltr skltr-auto lightgbm xgboost] [--no-write]
Quick check: python benchmarks/defaults_quality.py --sets 5k letor --seeds 0 --no-write
"""

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from _harness import print_table, row, write_result

LETOR_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "letor_small"
#: make_ranking sets: name -> (training queries, mean documents per query, test fraction,
#: data seeds by default). One seed's skltr - LightGBM gap moves by +-0.005 (near-tied
#: splits), so the small sets take ten.
SYNTHETIC = {
    "5k": (200, 25, 0.5, 10),
    "20k": (400, 50, 0.5, 10),
    "63k": (550, 115, 0.5, 6),
    "200k": (2000, 100, 0.2, 3),
}
ENGINES = ("skltr", "skltr-auto", "lightgbm", "xgboost")


def synthetic(name, seed):
    from skltr.datasets import make_ranking
    from skltr.model_selection import train_test_split_by_query

    n_train_q, docs, test_size, _ = SYNTHETIC[name]
    n_queries = int(round(n_train_q / (1 - test_size)))
    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=docs, random_state=seed)
    return train_test_split_by_query(X, y, qid=qid, test_size=test_size, random_state=seed)


def letor(resplit_seed=None):
    from skltr.datasets import load_letor
    from skltr.model_selection import train_test_split_by_query

    X, y, qid = load_letor(LETOR_DIR / "rank.train")
    Xt, yt, qt = load_letor(LETOR_DIR / "rank.test", n_features=X.shape[1])
    if resplit_seed is None:
        return X, Xt, y, yt, qid, qt
    Xa, ya = np.vstack([X, Xt]), np.concatenate([y, yt])
    qa = np.concatenate([qid, qt + qid.max() + 1])
    return train_test_split_by_query(Xa, ya, qid=qa, test_size=50, random_state=resplit_seed)


def fit_predict(engine, X, y, qid, Xt, threads):
    """Fit ``engine`` with its defaults on (query-sorted) X; return test scores and trees."""
    if engine in ("skltr", "skltr-auto"):
        import warnings

        from skltr import GPUHistGBDTRanker

        kw = {"early_stopping": "auto"} if engine == "skltr-auto" else {}
        model = GPUHistGBDTRanker(random_state=0, n_jobs=threads, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "auto" announces its hold-out
            model.fit(X, y, qid=qid)
        return model.predict(Xt), model.n_estimators_
    if engine == "lightgbm":
        import lightgbm as lgb

        sizes = np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True]))
        model = lgb.LGBMRanker(random_state=0, n_jobs=threads, verbose=-1)
        model.fit(X, y, group=sizes)
        return model.predict(Xt), model.booster_.num_trees()
    import xgboost as xgb

    model = xgb.XGBRanker(random_state=0, n_jobs=threads).fit(X, y, qid=qid)
    return model.predict(Xt), model.get_booster().num_boosted_rounds()


def run_set(name, seeds, engines, threads):
    from skltr.metrics import ndcg_score
    from skltr.utils import group_by_qid

    out = {e: [] for e in engines}
    for seed in seeds:
        if name == "letor":
            parts = letor()
        elif name == "letor-resplit":
            parts = letor(resplit_seed=seed)
        else:
            parts = synthetic(name, seed)
        X, Xt, y, yt, qid, qt = parts
        order = group_by_qid(qid).order  # contiguous queries: what LightGBM's group= needs
        X, y, qid = X[order], y[order], qid[order]
        for engine in engines:
            t = time.perf_counter()
            pred, trees = fit_predict(engine, X, y, qid, Xt, threads)
            fit_s = time.perf_counter() - t
            ndcg = float(ndcg_score(yt, pred, qid=qt, k=10))
            out[engine].append({"seed": seed, "ndcg@10": ndcg, "trees": int(trees),
                                "fit_s": round(fit_s, 2)})
            print(f"  {name:<14} seed {seed}  {engine:<10} NDCG@10 {ndcg:.4f}  trees "
                  f"{trees:4d}  {fit_s:6.1f} s  ({X.shape[0]} train rows, "
                  f"{len(np.unique(qid))} queries; {len(np.unique(qt))} test queries)",
                  flush=True)
    return out, X.shape[0], len(np.unique(qid))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+",
                        default=[*SYNTHETIC, "letor", "letor-resplit"],
                        choices=[*SYNTHETIC, "letor", "letor-resplit"])
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help="data seeds of the make_ranking sets (default: 0, 1, ... as "
                             "many as SYNTHETIC names)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--no-write", action="store_true", help="print only, no result file")
    args = parser.parse_args()

    rows, raw, summary, gaps = [], {}, [], {}
    for name in args.sets:
        if name == "letor":
            seeds = [0]
        elif name == "letor-resplit":
            seeds = [1, 2, 3, 4]
        else:
            seeds = args.seeds if args.seeds else list(range(SYNTHETIC[name][3]))
        res, n_rows, n_q = run_set(name, seeds, args.engines, args.threads)
        raw[name] = res
        mean = {e: statistics.fmean(r["ndcg@10"] for r in v) for e, v in res.items()}
        case = f"{name}: ~{n_rows} rows, {n_q} q, {len(seeds)} seed(s)"
        gap = None
        if {"skltr", "lightgbm"} <= set(res):
            d = [a["ndcg@10"] - b["ndcg@10"] for a, b in zip(res["skltr"], res["lightgbm"])]
            se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else None  # JSON: null
            gap = {"mean": statistics.fmean(d), "se": se,
                   "wins": sum(x >= 0 for x in d), "n": len(d)}
            gaps[name] = gap
        summary.append((case, mean, gap))
        if "skltr" in mean:
            for peer in ("lightgbm", "xgboost", "skltr-auto"):
                if peer in mean:
                    rows.append(row(case, "test NDCG@10", mean["skltr"], mean[peer], peer,
                                    "ndcg"))
    print(f"\n{'set (mean test NDCG@10)':<44}" + "".join(f"{e:>12}" for e in args.engines)
          + "  skltr - lightgbm: mean +- se (skltr >= lightgbm)")
    for case, mean, gap in summary:
        se = "" if gap is None or gap["se"] is None else f" +- {gap['se']:.4f}"
        text = "" if gap is None else f"  {gap['mean']:+.4f}{se} ({gap['wins']}/{gap['n']})"
        print(f"{case:<44}" + "".join(f"{mean[e]:12.4f}" for e in args.engines) + text)
    params = {"engines": {"skltr": "GPUHistGBDTRanker(random_state=0, n_jobs=threads)",
                          "skltr-auto": "GPUHistGBDTRanker(early_stopping='auto', "
                                        "random_state=0, n_jobs=threads)",
                          "lightgbm": "LGBMRanker(random_state=0, n_jobs=threads, "
                                      "verbose=-1)",
                          "xgboost": "XGBRanker(random_state=0, n_jobs=threads)"},
              "synthetic": {k: {"train_queries": v[0], "docs_per_query": v[1],
                                "test_fraction": v[2]} for k, v in SYNTHETIC.items()},
              "seeds": {name: [r["seed"] for r in next(iter(res.values()))]
                        for name, res in raw.items()},
              "threads": args.threads, "gap_skltr_minus_lightgbm": gaps, "raw": raw}
    if args.no_write:
        print_table({"benchmark": "defaults_quality", "machine": "(not written)",
                     "cores": os.cpu_count(), "commit": "-", "rows": rows})
    else:
        write_result("defaults_quality", rows, params=params,
                     packages=("lightgbm", "xgboost"))


if __name__ == "__main__":
    main()
