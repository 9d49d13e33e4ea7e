"""OnDemandRuleRanker: quality beside LightGBM and RankBoost, and time per query at PROFL's shape.

1. Quality: NDCG@10 on the test queries of ``../shared/data/letor_small`` and of a
   ``make_ranking`` set (split 80/20 by query), for ``OnDemandRuleRanker`` (its defaults:
   MDL intervals, rules of up to 3 items), ``lightgbm.LGBMRanker`` (lambdarank, defaults)
   and ``RankBoostRanker`` (defaults), all fitted on the same training queries.
2. Speed at the shape of PROFL's WEB10K run (Freitas et al., 2018): 136 features, 7,337
   training documents, queries of 120 documents, rules of size 3 and 4. The data is
   ``make_ranking`` (labels 0-4) and the features are cut into count-balanced quantile bins,
   so that every document has 136 items as in PROFL's runs (MDL keeps only the features it
   finds informative: 10 of make_ranking's 136, which would time a much smaller problem; its
   figures are reported too). Time per query: the median over ``--queries`` test queries of
   ``predict`` on the query's 120 documents (after a warm-up call), its process CPU time,
   and the work counters of the kernel (itemsets, bitmap itemsets, list rows, cache probes
   and hits), with the mean support of the documents' items; on the GPU, size 3 also on the
   ``itemsets`` kernel (``skltr._gpu.rules.TRIPLES`` off: the kernel before the binary
   tensor-core ``triples``), same queries, same run. The same at size 3 on a
   second data set of that shape, :func:`awkward_ranking` (heavy-tailed, sparse and
   low-cardinality columns: issue 28's "other data").
3. The itemset cache: hit rate, probe steps and fingerprint clashes of the splitmix64 key
   and of PROFL's prime-reciprocal fingerprint on letor_small, the cache on the demo's wide
   bitmaps, and how many distinct itemsets share a key when every 3-itemset of the first
   ``--fingerprint-items`` items is keyed.
4. (CPU) the list threshold: nanoseconds a counted itemset on one thread at PROFL's shape,
   size 3, for thresholds of 0-8 times the bitmap's word count.

PROFL's own figures are constants quoted from the paper, not measured here: 0.02 s a query
(size 3) and 1.95 s a query (size 4) on one GTX Titan Black, and 2.6 s a query (size 3) for
its serial CPU baseline. Targets of issue 16: on a 2-core machine faster than the serial
baseline's 2.6 s; on an H100 / H200 ten times faster than PROFL's GPU figures.

Usage: python benchmarks/ondemand_rules.py [--device cpu] [--queries 5] [--queries-size4 2]
       [--threads N] [--skip-quality]
"""

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from _harness import query_sizes, row, write_result

#: Quoted from Freitas et al. (2018), PROFL, WEB10K: seconds a query.
PROFL_GPU_SIZE3 = 0.02
PROFL_GPU_SIZE4 = 1.95
PROFL_SERIAL_SIZE3 = 2.6
TRAIN_DOCS, DOCS_PER_QUERY, FEATURES = 7337, 120, 136


def _dense(X):
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)


def quality(name, X, y, qid, Xt, yt, qt, device, threads):
    """NDCG@10 on the test queries of the rule ranker, LightGBM and RankBoost (fit seconds)."""
    import lightgbm as lgb

    from skltr import OnDemandRuleRanker, RankBoostRanker
    from skltr.metrics import ndcg_score

    out = {}
    head = np.flatnonzero(np.isin(qid, np.unique(qid)[:3]))  # compile outside the timings
    OnDemandRuleRanker(max_rule_size=2, n_jobs=threads).fit(
        X[head], y[head], qid=qid[head]).predict(X[head])
    RankBoostRanker(n_estimators=2, n_jobs=threads).fit(X[head], y[head], qid=qid[head])
    t = time.perf_counter()
    rules = OnDemandRuleRanker(device=device, n_jobs=threads, random_state=0).fit(X, y, qid=qid)
    fit_s = time.perf_counter() - t
    t = time.perf_counter()
    pred = rules.predict(Xt)
    out["rules"] = {"ndcg@10": ndcg_score(yt, pred, qid=qt, k=10), "fit_s": fit_s,
                    "predict_s": time.perf_counter() - t,
                    "used_features": int(rules.used_features_.size),
                    "items": int(rules.n_items_)}
    order = np.argsort(qid, kind="stable")
    t = time.perf_counter()
    gbm = lgb.LGBMRanker(random_state=0, verbose=-1, n_jobs=threads).fit(
        X[order], y[order], group=query_sizes(qid[order]))
    out["lightgbm"] = {"ndcg@10": ndcg_score(yt, gbm.predict(Xt), qid=qt, k=10),
                       "fit_s": time.perf_counter() - t}
    t = time.perf_counter()
    rb = RankBoostRanker(n_jobs=threads, random_state=0).fit(X, y, qid=qid)
    out["rankboost"] = {"ndcg@10": ndcg_score(yt, rb.predict(Xt), qid=qt, k=10),
                        "fit_s": time.perf_counter() - t}
    print(f"{name}: NDCG@10 rules {out['rules']['ndcg@10']:.4f} (fit {fit_s:.2f} s, predict "
          f"{out['rules']['predict_s']:.2f} s, {out['rules']['used_features']} features "
          f"used), LightGBM {out['lightgbm']['ndcg@10']:.4f}, RankBoost "
          f"{out['rankboost']['ndcg@10']:.4f}", flush=True)
    return out


def profl_shape(seed=0):
    """7,337 training documents in queries of 120 (the last one cut), and test queries."""
    from skltr.datasets import make_ranking

    n_train_q = -(-TRAIN_DOCS // DOCS_PER_QUERY)
    X, y, qid = make_ranking(n_queries=n_train_q + 40, docs_per_query=(DOCS_PER_QUERY,) * 2,
                             n_features=FEATURES, dtype=np.float64, random_state=seed)
    train = np.arange(TRAIN_DOCS)
    test = np.arange(n_train_q * DOCS_PER_QUERY, X.shape[0])
    return X[train], y[train], qid[train], X[test], y[test], qid[test]


def awkward_ranking(n_docs, seed=0, shares=(0.45, 0.30, 0.25)):
    """``n_docs`` documents of ``FEATURES`` awkward columns and graded labels 0-4, seeded.

    Each column is, at random (``shares``, the default's percentages below), **sparse**
    (45 %: zero for a share of 85-99 % of the
    documents, as LETOR's term features, else log-normal with sigma 1.5), **heavy-tailed**
    (30 %: Pareto with shape 1.1-2 or log-normal with sigma 1.5-2.5) or **low-cardinality**
    (25 %: 2-5 values with Dirichlet(1) frequencies). Quantile bins cannot balance such
    columns: a sparse column's zero or a frequent value is one item held by most training
    documents. The labels grade (52/26/13/6/3 %, MSLR-like) a random projection of the
    ranks of 12 of the columns plus normal noise, so some columns carry rules.
    """
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=FEATURES, p=list(shares))  # sparse, heavy, few values
    X = np.empty((n_docs, FEATURES))
    for f in range(FEATURES):
        if kind[f] == 0:
            nonzero = rng.random(n_docs) >= rng.uniform(0.85, 0.99)
            X[:, f] = np.where(nonzero, rng.lognormal(0.0, 1.5, n_docs), 0.0)
        elif kind[f] == 1 and f % 2:
            X[:, f] = rng.pareto(rng.uniform(1.1, 2.0), n_docs)
        elif kind[f] == 1:
            X[:, f] = rng.lognormal(0.0, rng.uniform(1.5, 2.5), n_docs)
        else:
            k = int(rng.integers(2, 6))
            X[:, f] = rng.choice(k, size=n_docs, p=rng.dirichlet(np.ones(k)))
    informative = rng.choice(FEATURES, 12, replace=False)
    ranks = np.argsort(np.argsort(X[:, informative], axis=0), axis=0) / n_docs
    signal = ranks @ rng.normal(0.0, 1.0, informative.size) + rng.normal(0.0, 0.5, n_docs)
    cuts = np.quantile(signal, np.cumsum([0.52, 0.26, 0.13, 0.06]))
    return X, np.searchsorted(cuts, signal).astype(np.float64)


def awkward_profl_shape(seed=0, **kwargs):
    """:func:`profl_shape`'s split of :func:`awkward_ranking` data (queries of 120)."""
    n_train_q = -(-TRAIN_DOCS // DOCS_PER_QUERY)
    X, y = awkward_ranking((n_train_q + 40) * DOCS_PER_QUERY, seed, **kwargs)
    qid = np.arange(X.shape[0]) // DOCS_PER_QUERY
    train = np.arange(TRAIN_DOCS)
    test = np.arange(n_train_q * DOCS_PER_QUERY, X.shape[0])
    return X[train], y[train], qid[train], X[test], y[test], qid[test]


def mean_item_support(ranker, Xt):
    """Mean share of the training documents holding an item of a test document (the share
    of a node's bitmap that is set, roughly: why an itemset costs what it does)."""
    from skltr._cpu.rules import NO_ITEM
    from skltr._rules.intervals import transform
    from skltr._rules.ranking import n_items_per_doc

    model, codes = ranker._model, transform(Xt, ranker._intervals())
    present = codes != NO_ITEM
    item = codes.astype(np.int64) + model.col_item_ptr[:-1]
    support = model.item_support[np.where(present, item, 0)][present]
    return {"mean": float(support.mean() / model.n_train),
            "above_half": float((support > model.n_train / 2).mean()),
            "items_per_doc": float(n_items_per_doc(model, codes, ranker.min_support).mean())}


def time_per_query(ranker, Xt, qt, n_queries, cache_size=None, key="splitmix"):
    """Median seconds a query over the first ``n_queries`` test queries of what ``predict``
    runs (item codes, rule counts, scores: the engine's calls, which also return the work
    counters), the counters summed over the queries, every time, and every process CPU
    time (this machine is shared: the CPU time shows the work when the wall time does
    not)."""
    from skltr._rules.intervals import transform
    from skltr._rules.ranking import make_params, predict_scores

    model, intervals = ranker._model, ranker._intervals()
    cls = ranker._kernels_class()
    size = cls.default_cache_size(model) if cache_size is None else cache_size
    params = make_params(model, max_rule_size=ranker.max_rule_size,
                         min_support=ranker.min_support,
                         min_confidence=ranker.min_confidence, cache_size=size, hash=key)
    kernels = cls(model, params, n_jobs=ranker.n_jobs, device=ranker._device())
    queries = np.unique(qt)[:n_queries]
    predict_scores(model, transform(Xt[qt == queries[0]][:4], intervals), params, kernels)
    times, cpu, work = [], [], 0
    for q in queries:
        t, c = time.perf_counter(), time.process_time()
        scores, stats = predict_scores(model, transform(Xt[qt == q], intervals), params,
                                       kernels)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        work = work + stats.work.sum(axis=0)
    np.testing.assert_array_equal(scores, ranker.predict(Xt[qt == queries[-1]]))
    return statistics.median(times), work, times, cpu


def work_dict(work, n_queries):
    from skltr._cpu import rules as k

    names = {"itemsets": k.W_ITEMSETS, "bitmap_itemsets": k.W_BITMAP,
             "list_rows": k.W_LIST_ROWS, "cache_probes": k.W_PROBES, "cache_hits": k.W_HITS,
             "probe_steps": k.W_PROBE_STEPS, "key_clashes": k.W_KEY_CLASHES}
    return {name: float(work[i]) / n_queries for name, i in names.items()}


def fingerprint_clashes(n_items):
    """Distinct 3-itemsets of items 0..n_items-1 that share a cache key, per key kind."""
    from skltr._rules.model import item_keys, prime_reciprocals

    recip, keys = prime_reciprocals(n_items), item_keys(n_items)
    i, j, k = _triples(n_items)
    prime = ((recip[i] + recip[j]) + recip[k]) * 2.0 ** 62  # summed in ascending order
    prime_keys = prime.astype(np.int64)
    split = keys[i] + keys[j] + keys[k]
    out = {}
    for name, key in (("prime", prime_keys), ("splitmix", split)):
        _, counts = np.unique(key, return_counts=True)
        out[name] = {"itemsets": int(key.size), "sharing_a_key": int(counts[counts > 1].sum())}
    return out


def _triples(n):
    """Every ``a < b < c`` below ``n`` as three arrays."""
    parts = []
    for a in range(n - 2):
        b, c = np.triu_indices(n - a - 1, 1)
        parts.append((np.full(b.size, a), b + a + 1, c + a + 1))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def cache_study(X, y, qid, Xt, qt, threads):
    """The cache on letor_small at size 3: off, 65,536 entries, and 4M with either key."""
    from skltr import OnDemandRuleRanker

    out = {}
    ranker = OnDemandRuleRanker(n_jobs=threads).fit(X, y, qid=qid)
    for label, size, key in (("off", 0, "splitmix"), ("65536", 1 << 16, "splitmix"),
                             ("4M splitmix", 1 << 22, "splitmix"),
                             ("4M prime", 1 << 22, "prime")):
        med, work, _, _ = time_per_query(ranker, Xt, qt, 10, cache_size=size, key=key)
        out[label] = {"s_per_query": med, **work_dict(work, 10)}
        w = out[label]
        print(f"letor_small size 3, cache {label}: {med:.3f} s a query; hits "
              f"{w['cache_hits'] / max(w['cache_probes'], 1):.1%}, probe steps "
              f"{w['probe_steps'] / max(w['cache_probes'], 1):.2f}, key clashes "
              f"{w['key_clashes']:.0f}", flush=True)
    return out


def threshold_study(ranker, Xt, qt, n_docs=20):
    """Nanoseconds a counted itemset on one thread, by the support below which a node keeps
    a document list (multiples of the bitmap's word count; 0: bitmaps only)."""
    from skltr._rules.intervals import transform
    from skltr._rules.kernels_cpu import CPURuleKernels
    from skltr._rules.ranking import make_params

    model, codes = ranker._model, transform(Xt[:n_docs], ranker._intervals())
    out = {}
    for times_words in (0, 1, 2, 4, 8):
        params = make_params(model, max_rule_size=ranker.max_rule_size, min_support=1,
                             min_confidence=0.001, cache_size=0,
                             list_threshold=times_words * model.n_words)
        kernels = CPURuleKernels(model, params, n_jobs=1)
        kernels.rule_stats(codes[:2])
        t = time.perf_counter()
        stats = kernels.rule_stats(codes)
        seconds = time.perf_counter() - t
        out[f"{times_words}x_words"] = seconds / stats.work[:, 0].sum() * 1e9
    print("ns an itemset on one thread, by list threshold: "
          + ", ".join(f"{k} {v:.1f}" for k, v in out.items()), flush=True)
    return out


def wide_cache_study(threads):
    """The cache on wide bitmaps: the demo's data (about 79,000 training documents), size 3."""
    from skltr import OnDemandRuleRanker
    from skltr.datasets import make_ranking
    from skltr.model_selection import train_test_split_by_query

    X, y, qid = make_ranking(n_queries=2000, docs_per_query=50, n_features=FEATURES,
                             n_informative=20, random_state=0)
    X, Xt, y, yt, qid, qt = train_test_split_by_query(X, y, qid=qid, test_size=0.2,
                                                      random_state=0)
    ranker = OnDemandRuleRanker(n_jobs=threads).fit(X, y, qid=qid)
    out = {"words": ranker._model.n_words, "test_docs": int(Xt.shape[0])}
    for size in (0, 1 << 16):
        ranker.set_params(cache_size=size)
        ranker.predict(Xt[:8])
        t = time.perf_counter()
        ranker.predict(Xt)
        out[f"cache_{size}_s"] = time.perf_counter() - t
    print(f"demo data ({out['words']} words), size 3, {out['test_docs']} documents: "
          f"{out['cache_0_s']:.2f} s without the cache, {out['cache_65536_s']:.2f} s with "
          f"65,536 entries", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--queries", type=int, default=5, help="test queries timed at size 3")
    ap.add_argument("--queries-size4", type=int, default=2, help="test queries at size 4")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--fingerprint-items", type=int, default=400)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" /
                                          "data" / "letor_small"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from skltr import OnDemandRuleRanker
    from skltr.datasets import load_letor, make_ranking
    from skltr.model_selection import train_test_split_by_query

    rows, params = [], {"device": args.device, "threads": args.threads,
                        "profl_quoted": {"gpu_size3_s": PROFL_GPU_SIZE3,
                                         "gpu_size4_s": PROFL_GPU_SIZE4,
                                         "serial_size3_s": PROFL_SERIAL_SIZE3,
                                         "source": "Freitas et al. 2018 (PROFL), WEB10K, "
                                                   "GTX Titan Black; quoted, not measured"}}
    if not args.skip_quality:
        d = Path(args.data)
        X, y, qid = load_letor(d / "train.letor")[:3]
        Xt, yt, qt = load_letor(d / "test.letor", n_features=X.shape[1])[:3]
        X, Xt = _dense(X), _dense(Xt)
        letor = quality("letor_small", X, y, qid, Xt, yt, qt, args.device, args.threads)
        Xs, ys, qs = make_ranking(n_queries=500, docs_per_query=20, n_features=FEATURES,
                                  dtype=np.float64, random_state=1)
        Xs, Xst, ys, yst, qs, qst = train_test_split_by_query(Xs, ys, qid=qs, test_size=0.2,
                                                              random_state=0)
        synth = quality("make_ranking (500 queries x 20, 136 features)", Xs, ys, qs, Xst,
                        yst, qst, args.device, args.threads)
        for case, res in (("letor_small", letor), ("make_ranking", synth)):
            for peer, peer_name in (("lightgbm", "LightGBM LGBMRanker (lambdarank)"),
                                    ("rankboost", "skltr RankBoostRanker")):
                rows.append(row(f"test NDCG@10, {case}", "ndcg@10", res["rules"]["ndcg@10"],
                                res[peer]["ndcg@10"], peer_name, "ndcg"))
        params["quality"] = {"letor_small": letor, "make_ranking": synth}
        if args.device == "cpu":
            params["cache_study"] = cache_study(X, y, qid, Xt, qt, args.threads)

    speed = {}
    for data, disc, sizes in (("make_ranking", "quantile", (3, 4)), ("make_ranking", "mdl", (3, 4)),
                              ("awkward", "quantile", (3,)), ("awkward", "mdl", (3,))):
        X, y, qid, Xt, yt, qt = (profl_shape() if data == "make_ranking" else
                                 awkward_profl_shape())
        ranker = OnDemandRuleRanker(discretization=disc, device=args.device,
                                    n_jobs=args.threads).fit(X, y, qid=qid)
        for size in sizes:
            n_q = args.queries if size == 3 else args.queries_size4
            ranker.set_params(max_rule_size=size)
            med, work, times, cpu = time_per_query(ranker, Xt, qt, n_q)
            key = f"{disc}_size{size}" if data == "make_ranking" else f"{data}_{disc}_size{size}"
            speed[key] = {"s_per_query": med, "times": times, "cpu_s": cpu, "queries": n_q,
                          "cpu_s_per_query": statistics.median(cpu),
                          "used_features": int(ranker.used_features_.size),
                          "items": int(ranker.n_items_),
                          "item_support": mean_item_support(ranker, Xt[qt == qt[0]])}
            if args.device == "cpu":  # the GPU kernels keep no work counters
                speed[key]["work"] = work_dict(work, n_q)
            elif size == 3:  # the same queries with size 3 on the older itemsets kernel
                from skltr._gpu import rules as gpu_rules

                gpu_rules.TRIPLES = False
                try:
                    speed[key]["itemsets_kernel_s_per_query"] = time_per_query(
                        ranker, Xt, qt, n_q)[0]
                finally:
                    gpu_rules.TRIPLES = True
            print(f"PROFL shape, {data}, {disc}, size {size}: {med:.3f} s a query (median of "
                  f"{n_q}, CPU {statistics.median(cpu):.2f} s; "
                  f"{ranker.used_features_.size} features used; work a query "
                  f"{speed[key].get('work')}; item support {speed[key]['item_support']})",
                  flush=True)
    params["speed"] = speed
    X, y, qid, Xt, yt, qt = profl_shape()
    if args.device == "cpu":
        ranker = OnDemandRuleRanker(discretization="quantile", max_rule_size=3).fit(
            X, y, qid=qid)
        params["list_threshold_ns_per_itemset"] = threshold_study(ranker, Xt, qt)
        params["wide_cache_study"] = wide_cache_study(args.threads)
    params["shape"] = {"train_docs": TRAIN_DOCS, "docs_per_query": DOCS_PER_QUERY,
                       "features": FEATURES}
    gpu = args.device != "cpu"
    s3, s4 = speed["quantile_size3"]["s_per_query"], speed["quantile_size4"]["s_per_query"]
    s3_awkward = speed["awkward_quantile_size3"]["s_per_query"]
    rows += [
        row("s a query, size 3, 136 items a document", "s", s3, PROFL_SERIAL_SIZE3,
            "PROFL serial CPU baseline (quoted)", "s"),
        row("s a query, size 3, 136 items a document", "s", s3, PROFL_GPU_SIZE3,
            "PROFL, GTX Titan Black (quoted)", "s"),
        row("s a query, size 3, 136 items a document, awkward data", "s", s3_awkward,
            PROFL_SERIAL_SIZE3, "PROFL serial CPU baseline (quoted)", "s"),
        row("s a query, size 4, 136 items a document", "s", s4, PROFL_GPU_SIZE4,
            "PROFL, GTX Titan Black (quoted)", "s"),
        row("s a query, size 3, vs issue 16's target", "s", s3,
            PROFL_GPU_SIZE3 / 10 if gpu else PROFL_SERIAL_SIZE3, "target", "s"),
        row("s a query, size 4, vs issue 16's target", "s", s4,
            PROFL_GPU_SIZE4 / 10 if gpu else PROFL_GPU_SIZE4, "target (CPU: PROFL's GPU)",
            "s"),
    ]
    if gpu:
        for key, case in (("quantile_size3", "s a query, size 3, 136 items a document"),
                          ("awkward_quantile_size3",
                           "s a query, size 3, 136 items a document, awkward data")):
            rows.append(row(case, "s", speed[key]["s_per_query"],
                            speed[key]["itemsets_kernel_s_per_query"],
                            "skltr, size 3 on the itemsets kernel (same run)", "s"))
    params["fingerprints"] = fingerprint_clashes(args.fingerprint_items)
    print(f"fingerprints of every 3-itemset of {args.fingerprint_items} items: "
          f"{params['fingerprints']}")
    write_result(f"ondemand_rules_{args.device}", rows, params=params,
                 packages=("lightgbm",), out_dir=args.out)


if __name__ == "__main__":
    main()
