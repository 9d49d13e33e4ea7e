"""Learning to rank from clicks: debiased LambdaMART against the biased one and the peers.

Clicks are simulated from graded data with a known position bias
(:func:`skltr.datasets.simulate_clicks`, position-based model, examination ``1 / (p + 1)``,
click noise 0.1), the way Hu et al. (WWW 2019) evaluate Unbiased LambdaMART:

1. split the queries 80 / 20 into train and test (graded);
2. a *production ranker* (the logging policy) is a lambdarank model trained on the grades of
   ``PRODUCTION_FRACTION`` of the training queries (few rounds: a mediocre ranker, as real
   logs come from one);
3. every training query is shown ``--sessions`` times in the production ranker's order, the
   top ``SHOWN`` documents only (a result page), and clicked under the PBM;
4. every engine trains on the clicks (rows of a session in displayed order, which XGBoost's
   ``lambdarank_unbiased`` needs: it reads positions from the row order) and is scored by
   test NDCG@10 on the **true grades** of the held-out queries.

Engines (each for ``--rounds`` rounds, 31 leaves, pairs/truncation at the page size):

* ``biased``: skltr lambdarank on the clicks, positions ignored;
* ``unbiased``: skltr ``position_bias="unbiased"`` (XGBoost's pair cost);
* ``unbiased_paper``: skltr ``position_bias="unbiased_paper"`` (Hu et al.'s pair cost);
* ``additive``: skltr ``position_bias="additive"`` (LightGBM's form);
* ``xgboost``: XGBoost ``rank:ndcg``, ``lambdarank_unbiased=True``, top-k pairs;
* ``xgboost_biased``: the same without ``lambdarank_unbiased`` (context);
* ``lightgbm``: LightGBM ``lambdarank`` with ``Dataset(position=...)``.

XGBoost's lambdarank hessian is twice LightGBM's and skltr's, so its ``eta`` is twice the
others' ``learning_rate`` (the same leaf values); everything else at each library's
defaults. Reported per data set: mean and standard error over the seeds (each seed redraws
the split, the production ranker's sample, the clicks and the models' seeds) of test
NDCG@10 and of the propensity error: mean absolute difference between the estimated ``t+``
(skltr ``position_bias_``, XGBoost's ``ti+``) and the simulated ratios
``examination(p) / examination(0)`` over the page's positions. Production ranker and
ideal (trained on the grades) NDCG are given for scale.

Data sets: ``synthetic`` (:func:`skltr.datasets.make_ranking`, ``--queries`` queries of 40
documents on average, 30 features: 100k+ rows) and ``letor`` (``letor_small``'s
``rank.train`` + ``rank.test`` queries, read from ``/work/shared/data/letor_small`` when
present, skipped otherwise).

Usage: python benchmarks/clicks.py [--sets synthetic letor] [--seeds 0 1 2 3 4]
       [--rounds 100] [--sessions 16] [--queries 2600] [--eta 1] [--production-fraction 0.05]
       [--skltr-params '{"min_samples_leaf": 1}'] [--no-write] [--suffix NAME]
"""

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from _harness import write_json

LETOR_DIR = Path("/work/shared/data/letor_small")
RESULTS = Path(__file__).resolve().parent / "results"
SHOWN = 10  # the result page
NOISE = 0.1
PRODUCTION_FRACTION = 0.05
ENGINES = ("biased", "unbiased", "unbiased_paper", "additive", "xgboost", "xgboost_biased",
           "lightgbm")


ETA = 1.0  # the severity of the position bias (``--eta``)


def examination(position):
    """Joachims et al.'s power law, ``(1 / (p + 1)) ** eta``."""
    return (1.0 / (np.asarray(position, dtype=np.float64) + 1.0)) ** ETA


def load_set(name, seed, n_queries):
    if name == "synthetic":
        from skltr.datasets import make_ranking

        return make_ranking(n_queries=n_queries, docs_per_query=40, n_features=30,
                            n_informative=12, random_state=seed, dtype=np.float32)
    from skltr.datasets import load_letor

    parts = [load_letor(LETOR_DIR / f) for f in ("rank.train", "rank.test")]
    X = np.vstack([p[0].toarray() if hasattr(p[0], "toarray") else p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    qid = np.concatenate([p[2].astype(np.int64) + 10**6 * i for i, p in enumerate(parts)])
    return X, y, qid


def click_log(X, y, qid, seed, sessions, rounds):
    """Train/test split, the production ranker, and the clicks of the training queries."""
    from skltr import GPUHistGBDTRanker
    from skltr.datasets import simulate_clicks

    rng = np.random.default_rng(seed)
    queries = np.unique(qid)
    test_q = rng.choice(queries, size=len(queries) // 5, replace=False)
    test = np.isin(qid, test_q)
    tr = np.flatnonzero(~test)
    train_q = np.setdiff1d(queries, test_q)
    prod_q = rng.choice(train_q, size=max(5, int(len(train_q) * PRODUCTION_FRACTION)),
                        replace=False)
    prod = tr[np.isin(qid[tr], prod_q)]
    production = GPUHistGBDTRanker(n_estimators=20, random_state=seed).fit(
        X[prod], y[prod], qid=qid[prod])
    log = simulate_clicks(y[tr], qid[tr], propensities=examination,
                          logging_scores=production.predict(X[tr]), noise=NOISE,
                          n_sessions=sessions, n_shown=SHOWN, random_state=seed)
    return dict(Xc=X[tr][log.rows], log=log, test=test, production=production)


def fit_engine(engine, Xc, log, seed, rounds, lr, extra=None):
    """(predict function, estimated t+ or None)."""
    if engine in ("biased", "unbiased", "unbiased_paper", "additive"):
        from skltr import GPUHistGBDTRanker

        mode = None if engine == "biased" else engine
        model = GPUHistGBDTRanker(n_estimators=rounds, learning_rate=lr,
                                  lambdarank_truncation_level=SHOWN, position_bias=mode,
                                  random_state=seed, **(extra or {}))
        kw = {} if mode is None else {"position": log.position}
        model.fit(Xc, log.clicks, qid=log.session, **kw)
        t = model.position_bias_ if engine.startswith("unbiased") else None
        return model.predict, t
    if engine.startswith("xgboost"):
        import xgboost as xgb

        params = dict(objective="rank:ndcg", lambdarank_unbiased=engine == "xgboost",
                      lambdarank_pair_method="topk", lambdarank_num_pair_per_sample=SHOWN,
                      eta=2 * lr, max_leaves=31, grow_policy="lossguide", max_depth=0,
                      tree_method="hist", seed=seed, nthread=2)
        booster = xgb.train(params, xgb.DMatrix(Xc, label=log.clicks, qid=log.session),
                            rounds)
        t = None
        if engine == "xgboost":
            cfg = json.loads(booster.save_config())["learner"]["objective"]
            t = np.array(cfg["ti+"], dtype=np.float64)
        return (lambda X: booster.predict(xgb.DMatrix(X))), t
    import lightgbm as lgb

    data = lgb.Dataset(Xc, label=log.clicks, group=np.bincount(log.session)[
        np.unique(log.session)], position=log.position)
    params = dict(objective="lambdarank", learning_rate=lr, num_leaves=31,
                  lambdarank_truncation_level=SHOWN, seed=seed, verbose=-1, num_threads=2)
    booster = lgb.train(params, data, rounds)
    return booster.predict, None


def run_seed(name, seed, args):
    from skltr import GPUHistGBDTRanker
    from skltr.metrics import ndcg_score

    X, y, qid = load_set(name, seed, args.queries)
    d = click_log(X, y, qid, seed, args.sessions, args.rounds)
    test = d["test"]

    def ndcg(pred):
        return float(ndcg_score(y[test], pred(X[test]), qid=qid[test], k=10))

    true_ratio = examination(np.arange(SHOWN)) / examination(0)
    out = {"rows": int(y.size), "click_rows": int(d["log"].clicks.size),
           "click_rate": float(d["log"].clicks.mean()),
           "production_ndcg10": ndcg(d["production"].predict)}
    tr = ~test
    ideal = GPUHistGBDTRanker(n_estimators=args.rounds, learning_rate=args.lr,
                              random_state=seed).fit(X[tr], y[tr], qid=qid[tr])
    out["graded_ndcg10"] = ndcg(ideal.predict)
    for engine in args.engines:
        t0 = time.perf_counter()
        pred, t = fit_engine(engine, d["Xc"], d["log"], seed, args.rounds, args.lr,
                             json.loads(args.skltr_params))
        out[engine] = {"ndcg10": ndcg(pred), "fit_s": time.perf_counter() - t0}
        if t is not None:
            k = min(SHOWN, t.size)
            out[engine]["t_plus"] = [float(v) for v in t[:SHOWN]]
            out[engine]["propensity_mae"] = float(np.abs(t[:k] - true_ratio[:k]).mean())
        print(f"  {name} seed {seed} {engine:18s} ndcg@10 {out[engine]['ndcg10']:.4f}"
              + (f"  t+ MAE {out[engine]['propensity_mae']:.3f}" if t is not None else "")
              + f"  ({out[engine]['fit_s']:.1f} s)", flush=True)
    return out


def summary(runs, key, sub=None):
    vals = [r[key] if sub is None else r[key][sub] for r in runs
            if (sub is None or sub in r[key])]
    if not vals:
        return None
    se = statistics.stdev(vals) / len(vals) ** 0.5 if len(vals) > 1 else float("nan")
    return {"mean": statistics.fmean(vals), "se": se, "n": len(vals)}


def paired_gap(runs, engine, reference):
    """Mean and standard error over seeds of ``engine``'s NDCG@10 minus ``reference``'s on
    the same seed (same data, split and clicks): far tighter than the unpaired errors, which
    carry the seed-to-seed spread of the data sets themselves."""
    gaps = [r[engine]["ndcg10"] - r[reference]["ndcg10"] for r in runs
            if engine in r and reference in r]
    if len(gaps) < 2:
        return None
    return {"mean": statistics.fmean(gaps), "se": statistics.stdev(gaps) / len(gaps) ** 0.5,
            "n": len(gaps), "wins": sum(g > 0 for g in gaps)}


def main():
    global ETA, PRODUCTION_FRACTION
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="+", default=["synthetic", "letor"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--engines", nargs="+", default=list(ENGINES))
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--queries", type=int, default=2600)
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument("--skltr-params", default="{}",
                    help="JSON of further GPUHistGBDTRanker parameters (skltr engines)")
    ap.add_argument("--production-fraction", type=float, default=0.05)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--suffix", default=None,
                    help="appended to the result file's name (runs of other settings)")
    args = ap.parse_args()
    ETA, PRODUCTION_FRACTION = args.eta, args.production_fraction
    import platform

    from _harness import cpu_model, versions

    doc = {"benchmark": "clicks", "machine": cpu_model(), "cores": __import__("os").cpu_count(),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "python": platform.python_version(),
           "versions": versions("numpy", "numba", "xgboost", "lightgbm"),
           "params": {k: v for k, v in vars(args).items() if k != "no_write"} | {
               "shown": SHOWN, "noise": NOISE, "examination": "(1 / (position + 1)) ** eta"},
           "sets": {}}
    for name in args.sets:
        if name == "letor" and not (LETOR_DIR / "rank.train").exists():
            print(f"letor skipped: {LETOR_DIR} absent")
            continue
        runs = [run_seed(name, seed, args) for seed in args.seeds]
        doc["sets"][name] = {
            "summary": {
                "production_ndcg10": summary(runs, "production_ndcg10"),
                "graded_ndcg10": summary(runs, "graded_ndcg10"),
                **{e: {"ndcg10": summary(runs, e, "ndcg10"),
                       "propensity_mae": summary(runs, e, "propensity_mae"),
                       "fit_s": summary(runs, e, "fit_s")} for e in args.engines}},
            "gap_vs_biased": {e: paired_gap(runs, e, "biased") for e in args.engines
                              if e != "biased"},
            "gap_vs_xgboost": {e: paired_gap(runs, e, "xgboost") for e in args.engines
                               if e != "xgboost"},
            "raw": runs}
        print(f"\n{name}: test NDCG@10 on the true grades, mean +- s.e. over "
              f"{len(runs)} seeds")
        for e in args.engines:
            s = doc["sets"][name]["summary"][e]
            mae = s["propensity_mae"]
            gb = doc["sets"][name]["gap_vs_biased"].get(e)
            gx = doc["sets"][name]["gap_vs_xgboost"].get(e)
            print(f"  {e:18s} {s['ndcg10']['mean']:.4f} +- {s['ndcg10']['se']:.4f}"
                  + (f"  vs biased {gb['mean']:+.4f} +- {gb['se']:.4f}" if gb else "")
                  + (f"  vs xgboost {gx['mean']:+.4f} +- {gx['se']:.4f}" if gx else "")
                  + (f"   t+ MAE {mae['mean']:.3f} +- {mae['se']:.3f}" if mae else ""))
    if not args.no_write:
        slug = "".join(c if c.isalnum() else "-" for c in doc["machine"].lower())[:30]
        write_json(f"clicks-{slug.strip('-')}-{time.strftime('%Y-%m-%d')}-eta{args.eta:g}-"
                   f"prod{args.production_fraction:g}{'-' + args.suffix if args.suffix else ''}",
                   doc, RESULTS)


if __name__ == "__main__":
    main()
