"""Where a small CPU fit's time goes: the grower's numba kernels against the rest, per split.

Issue #29's small-data fit time (450 training queries, 2 cores). This fits
``categorical.py``'s model (100 rounds of 31 leaves, learning rate 0.1, 20 rows a leaf) on
``make_ranking`` data (``--queries`` x 40 documents, 30 numeric features and one categorical
column of ``--levels`` levels, the first 75% of the queries), with the column categorical
and read as numbers, each with the two growers of one process: the growth driver, a Python
call per split (``COMPILED_LEAFWISE = False``), and the compiled leaf-wise grower, a numba
call per tree (``skltr._cpu.grow_leafwise``, the default; the same trees). It times, by
wrapping them:

* the grower's numba kernels (partition, histograms, the split searches, each call; the
  compiled grower as one);
* the gradients (``lambdarank_gradients``, the objective's kernel);
* the rest of ``timings_["boosting_s"]``: the growth driver's and the grower's Python and
  numba's dispatch of each call -- per split for the driver, per tree (root, assembly) for
  the compiled grower.

LightGBM's fit of the same data and parameters runs in the same process (fastest of
``--repeat`` fits each; the wrappers cost about a microsecond a call).

Usage: python benchmarks/split_overhead.py [--queries 600] [--levels 1000] [--threads 2]
       [--repeat 3] [--out DIR]
"""

import argparse
import collections
import time

import numpy as np

from _harness import row, write_result
from categorical import LEAVES, LR, MIN_LEAF, ROUNDS, _lightgbm
from skltr import GPUHistGBDTRanker
from skltr._gbdt import grower_cpu
from skltr.datasets import make_ranking

KERNELS = ("partition_rows", "partition_rows_serial", "build_histogram",
           "build_histogram_serial", "find_child_splits", "build_wide_histogram",
           "build_wide_histogram_serial", "find_best_splits", "find_best_splits_serial",
           "subtract_histograms", "grow_leafwise")


def _timed(owner, names, acc, calls):
    """Wrap ``owner.<name>`` for each name: seconds and calls into ``acc`` / ``calls``."""
    def wrap(name, f):
        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                acc[name] += time.perf_counter() - t
                calls[name] += 1
        return timed

    for name in names:
        if hasattr(owner, name):
            setattr(owner, name, wrap(name, getattr(owner, name)))


def _fit(X, y, qid, threads, categorical):
    model = GPUHistGBDTRanker(n_estimators=ROUNDS, max_leaves=LEAVES, learning_rate=LR,
                              min_samples_leaf=MIN_LEAF, random_state=0, n_jobs=threads,
                              categorical_features=[X.shape[1] - 1] if categorical else None)
    t = time.perf_counter()
    model.fit(X, y, qid=qid)
    return time.perf_counter() - t, model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=600)
    ap.add_argument("--levels", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    X, y, qid = make_ranking(n_queries=args.queries, docs_per_query=40, n_features=30,
                             n_informative=10, random_state=0,
                             categorical_levels=(args.levels,))
    train = qid < int(0.75 * args.queries)
    X, y, qid = X[train], y[train], qid[train]
    acc, calls = collections.Counter(), collections.Counter()
    _timed(grower_cpu, KERNELS, acc, calls)
    from skltr._cpu import objectives
    _timed(objectives, ("lambdarank_gradients",), acc, calls)
    rows, raw = [], {}
    for categorical in (True, False):
        label = "categorical" if categorical else "ordinal"
        lgb = min(_lightgbm(X, y, qid, X[:10], args.threads, categorical)[0]
                  for _ in range(args.repeat))
        for grower in ("driver", "compiled"):
            grower_cpu.COMPILED_LEAFWISE = grower == "compiled"
            _fit(X, y, qid, args.threads, categorical)  # warm-up (compilation)
            best = None
            for _ in range(args.repeat):
                acc.clear()
                calls.clear()
                wall, model = _fit(X, y, qid, args.threads, categorical)
                if best is None or wall < best["fit_s"]:
                    boosting = model.timings_["boosting_s"]
                    kernels = sum(v for k, v in acc.items() if k in KERNELS)
                    gradients = acc["lambdarank_gradients"]
                    splits = int(np.sum(model.ensemble_.left >= 0))
                    rest = boosting - kernels - gradients
                    best = {"fit_s": wall, "boosting_s": boosting, "kernels_s": kernels,
                            "gradients_s": gradients, "rest_s": rest, "splits": splits,
                            "rest_us_a_split": rest / max(splits, 1) * 1e6,
                            "calls": dict(calls), "seconds": {k: v for k, v in acc.items()},
                            "lightgbm_fit_s": lgb}
            raw[f"{label}, {grower}"] = best
            case = f"{args.queries} queries, {args.levels} levels, {label}, {grower}"
            rows.append(row(case, "fit_s", best["fit_s"], lgb, f"lightgbm {label}", "s"))
            rows.append(row(case, "python and dispatch s", best["rest_s"], best["boosting_s"],
                            "skltr boosting", "s"))
            print(f"{label}, {grower}: fit {best['fit_s']:.3f} s (LightGBM {lgb:.3f}), "
                  f"boosting {best['boosting_s']:.3f} = kernels {best['kernels_s']:.3f} + "
                  f"gradients {best['gradients_s']:.3f} + rest {best['rest_s']:.3f} "
                  f"({best['rest_us_a_split']:.1f} us a split)", flush=True)
    write_result("split_overhead", rows, params={**vars(args), "raw": raw},
                 packages=("lightgbm",), out_dir=args.out)


if __name__ == "__main__":
    main()
