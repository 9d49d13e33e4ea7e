"""Where the compiled grower builds a small node's wide categorical rows: A/B in one process.

``skltr._gbdt.grower_cpu.WIDE_TASKS`` decides it: ``"fit"`` (the default) builds them as a
task of the node's split search region when the region's tasks fit the threads, a wide
feature's task after a feature block's where the blocks take every thread; ``"apart"``
builds them before the region; ``"own"`` makes each wide feature a task of its own in the
region (``skltr._cpu.grow_leafwise._wide_tasks``). The three grow the same trees (checked
here, and by ``tests/test_grower.py``), so only their time differs.

On ``benchmarks/categorical.py``'s data (600 training queries of 40 documents, 30 numeric
features and one categorical column of L levels; 100 rounds of 31 leaves), at each thread
count the variants, the same fit with the codes as a number (ordinal) and LightGBM with the
categorical column are fitted in turn, ``--repeats`` rounds after one of warm-up; each row
gives a variant's median fit time against LightGBM's median in the same run (ratio < 1:
faster than LightGBM), and the ``params`` hold every fit's time.

Usage: python benchmarks/wide_tasks.py [--levels 1000 10000] [--threads 16 8 4 2]
       [--repeats 5] [--out DIR]
"""

import argparse

import numpy as np

from _harness import row, write_result
from categorical import _lightgbm
from skltr._gbdt import grower_cpu
from skltr.datasets import make_ranking
from split_overhead import _fit

VARIANTS = ("fit", "apart", "own")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--threads", type=int, nargs="+", default=[16, 8, 4, 2])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows, times = [], {}
    default = grower_cpu.WIDE_TASKS
    try:
        for levels in args.levels:
            X, y, qid = make_ranking(n_queries=600, docs_per_query=40, n_features=30,
                                     n_informative=10, categorical_levels=(levels,),
                                     random_state=3)
            for threads in args.threads:
                res = {name: [] for name in (*VARIANTS, "ordinal", "lightgbm")}
                for r in range(args.repeats + 1):
                    ref = None
                    for name in res:
                        if name == "lightgbm":
                            s = _lightgbm(X, y, qid, X[:100], threads, True)[0]
                        elif name == "ordinal":
                            s = _fit(X, y, qid, threads, False)[0]
                        else:
                            grower_cpu.WIDE_TASKS = name
                            s, model = _fit(X, y, qid, threads, True)
                            if ref is None:
                                ref = model.ensemble_
                            elif not np.array_equal(model.ensemble_.value, ref.value):
                                raise AssertionError(f"{name} grew other trees")
                        if r:  # round 0 warms up
                            res[name].append(s)
                case = f"{levels} levels, {threads} threads"
                peer = float(np.median(res["lightgbm"]))
                for name in (*VARIANTS, "ordinal"):
                    metric = f"skltr {name} fit" if name != "ordinal" else "skltr ordinal fit"
                    rows.append(row(case, metric, float(np.median(res[name])), peer,
                                    "lightgbm categorical", "s"))
                times[case] = res
    finally:
        grower_cpu.WIDE_TASKS = default
    write_result("wide_tasks", rows, packages=("lightgbm",), out_dir=args.out,
                 params={"levels": args.levels, "threads": args.threads,
                         "repeats": args.repeats, "times": times})


if __name__ == "__main__":
    main()
