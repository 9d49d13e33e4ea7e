"""Scoring ensembles of stumps on the CPU: QuickScorer against traversal (``backend="auto"``'s
choice for them).

Fits ``RankBoostRanker`` (300 rounds: 300 stumps) on 500 generated queries x 40 documents x
136 features, and, when XGBoost is installed, an ``XGBRanker`` of 300 depth-1 trees on the
same data (converted: float32 thresholds and sums); then scores 200, 20,000 and 200,000 rows
of new data with each CPU backend in this one process (median of 7 calls after a first), on
1 thread and on every core, after checking that both backends' raw scores are equal.

Usage: python benchmarks/predict_stumps.py [--threads N] [--out DIR]
"""

import argparse
import os

import numpy as np

from _harness import row, time_median, write_result


def models():
    from skltr import RankBoostRanker
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=500, docs_per_query=40, n_features=136,
                             random_state=0)
    out = {"RankBoostRanker, 300 stumps":
           RankBoostRanker(n_estimators=300).fit(X, y, qid=qid).to_tree_ensemble()}
    try:
        import xgboost as xgb
    except ImportError:
        return out
    from skltr.convert import from_xgboost

    model = xgb.XGBRanker(n_estimators=300, max_depth=1, tree_method="hist", n_jobs=2,
                          random_state=0).fit(X, y, qid=qid)
    out["XGBoost, 300 depth-1 trees"] = from_xgboost(model)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from skltr.trees._backends import choose_backend, get_backend

    X = np.random.default_rng(1).normal(size=(200_000, 136))
    rows, params = [], {"auto": {}, "ms": {}}
    for name, ens in models().items():
        params["auto"][name] = choose_backend(ens)
        for threads in sorted({1, args.threads}):
            for n in (200, 20_000, 200_000):
                Xn, times, scores = X[:n], {}, {}
                for backend in ("traversal", "quickscorer"):
                    b = get_backend(backend, ens)
                    layout = b.layout(ens)
                    scores[backend] = b.predict_raw(ens, layout, Xn, threads)
                    times[backend] = time_median(
                        lambda b=b, layout=layout: b.predict_raw(ens, layout, Xn, threads),
                        repeat=7)
                np.testing.assert_array_equal(scores["quickscorer"], scores["traversal"])
                case = f"{name}, {n:,} rows, {threads} thread{'s' * (threads > 1)}"
                params["ms"][case] = {k: v * 1e3 for k, v in times.items()}
                rows.append(row(case, "s", times["quickscorer"], times["traversal"],
                                "skltr traversal (same scores)", "s"))
                print(f"{case}: QuickScorer {times['quickscorer'] * 1e3:.2f} ms, traversal "
                      f"{times['traversal'] * 1e3:.2f} ms", flush=True)
    write_result("predict_stumps", rows, params=params, packages=("xgboost",),
                 out_dir=args.out)


if __name__ == "__main__":
    main()
