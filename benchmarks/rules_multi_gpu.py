"""OnDemandRuleRanker on every GPU (``device="cuda:all"``) against one GPU, at PROFL's shape.

Issue 18, item 1: the shape of PROFL's WEB10K run (136 features, 7,337 training documents,
test queries of 120 documents; ``make_ranking`` data cut into count-balanced quantile bins,
136 items a document, as in :mod:`ondemand_rules`), rules of size 3 and 4. Time per query:
the median over ``--queries`` test queries of what ``predict`` runs, on ``cuda:0`` and on
``cuda:all`` (the query's documents split into one contiguous share per GPU, each scored by
its own host thread: PROFL's multi-GPU scheme), in the same process on the same model.
Scaling efficiency is ``t(1 GPU) / (n_gpus * t(n GPUs))``. The scores of both devices are
checked equal.

Usage: python benchmarks/rules_multi_gpu.py [--queries 10] [--queries-size4 4] [--out DIR]
"""

import argparse

import numpy as np

from _harness import row, write_result
from ondemand_rules import profl_shape, time_per_query


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10, help="test queries timed at size 3")
    ap.add_argument("--queries-size4", type=int, default=4, help="test queries at size 4")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import cupy

    from skltr import OnDemandRuleRanker

    n_gpus = cupy.cuda.runtime.getDeviceCount()
    X, y, qid, Xt, yt, qt = profl_shape()
    one = OnDemandRuleRanker(discretization="quantile", device="cuda:0").fit(X, y, qid=qid)
    every = OnDemandRuleRanker(discretization="quantile", device="cuda:all").fit(X, y, qid=qid)
    rows, speed = [], {}
    for size, n_q in ((3, args.queries), (4, args.queries_size4)):
        times = {}
        for name, ranker in (("1 GPU", one), (f"{n_gpus} GPUs", every)):
            ranker.set_params(max_rule_size=size)
            times[name] = time_per_query(ranker, Xt, qt, n_q)[::2]
        q = qt == np.unique(qt)[0]
        same = bool(np.array_equal(one.predict(Xt[q]), every.predict(Xt[q])))
        (t1, all1), (tn, alln) = times.values()
        speed[f"size{size}"] = {"s_per_query_1gpu": t1, "s_per_query_all": tn,
                                "times_1gpu": all1, "times_all": alln, "queries": n_q,
                                "speedup": t1 / tn, "efficiency": t1 / (n_gpus * tn),
                                "scores_equal": same}
        rows.append(row(f"s a query, size {size}, 136 items a document, cuda:all "
                        f"({n_gpus} GPUs)", "s", tn, t1, "cuda:0 (1 GPU)", "s"))
        print(f"size {size}: 1 GPU {t1 * 1e3:.2f} ms, {n_gpus} GPUs {tn * 1e3:.2f} ms a query; "
              f"efficiency {t1 / (n_gpus * tn):.2f}; scores equal {same}", flush=True)
    write_result("rules_multi_gpu", rows, params={"n_gpus": n_gpus, "speed": speed,
                                                  "items": int(one.n_items_)},
                 out_dir=args.out)


if __name__ == "__main__":
    main()
