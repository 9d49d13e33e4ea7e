"""Symmetric (oblivious) trees on the GPU: ``growth="symmetric"`` on the GPU against the same
fit on the host's cores, and against the GPU's depth-wise trees.

Data: :func:`skltr.datasets.make_ranking`, ``--queries`` queries of 100 documents, 50
features (20 informative). Every fit: ``objective="yetirank"`` (CatBoost's, 10 permutations),
``--rounds`` rounds of depth ``--depth`` at learning rate 0.1. Engines:

* ``gpu symmetric``: ``device="cuda", growth="symmetric", random_strength=1,
  min_samples_leaf=1`` -- the settings at which skltr's YetiRank matches CatBoost's
  (``docs/user_guide/gbdt_ranker.rst``). The GPU builds and subtracts the level's
  histograms; the level's split is found on the host by the CPU's search from a copy of
  them (``skltr._gbdt.symmetric``);
* ``cpu symmetric``: the same on the host's cores (``n_jobs=-1``), the peer: the GPU's model
  must be this one (checked: identical predictions);
* ``gpu depthwise``: ``growth="depthwise", max_depth`` as context (the GPU's native trees).

Fit wall times, the fastest of ``--repeat`` fits each after a short warm-up fit (kernels
compiled, caches loaded).

Usage: PYTHONPATH=. python benchmarks/symmetric_gpu.py [--queries 10000] [--rounds 200]
       [--depth 6] [--repeat 2] [--out DIR]
"""

import argparse
import time

import numpy as np

from _harness import row, write_result
from skltr import GPUHistGBDTRanker
from skltr.datasets import make_ranking


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    X, y, qid = make_ranking(n_queries=args.queries, docs_per_query=100, n_features=50,
                             n_informative=20, random_state=0, dtype=np.float32)
    base = dict(objective="yetirank", n_estimators=args.rounds, learning_rate=0.1,
                max_depth=args.depth, max_leaves=None, random_state=0, n_jobs=-1)
    sym = dict(growth="symmetric", random_strength=1.0, min_samples_leaf=1)
    engines = {"gpu symmetric": dict(device="cuda", **sym),
               "cpu symmetric": dict(device="cpu", **sym),
               "gpu depthwise": dict(device="cuda", growth="depthwise")}
    times, models = {}, {}
    for name, p in engines.items():
        GPUHistGBDTRanker(**{**base, **p, "n_estimators": 3}).fit(X, y, qid=qid)
    for rep in range(args.repeat):
        for name, p in engines.items():
            t = time.perf_counter()
            models[name] = GPUHistGBDTRanker(**{**base, **p}).fit(X, y, qid=qid)
            times.setdefault(name, []).append(time.perf_counter() - t)
            print(f"  {name:14s} fit {times[name][-1]:7.2f} s", flush=True)
    same = bool(np.array_equal(models["gpu symmetric"].predict(X),
                               models["cpu symmetric"].predict(X)))
    print(f"  gpu symmetric's model is the cpu's: {same}")
    case = (f"{len(y)} rows x 50 features, yetirank, {args.rounds} rounds, depth "
            f"{args.depth}")
    best = {k: min(v) for k, v in times.items()}
    rows = [row(case, "gpu symmetric fit", best["gpu symmetric"], best["cpu symmetric"],
                "cpu symmetric", "s"),
            row(case, "gpu symmetric fit", best["gpu symmetric"], best["gpu depthwise"],
                "gpu depthwise", "s")]
    write_result("symmetric_gpu", rows, params={**vars(args), "same_model": same,
                                                 "fit_s": times}, out_dir=args.out)


if __name__ == "__main__":
    main()
