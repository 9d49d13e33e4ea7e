"""Leaf-wise speculation on the GPU: batches and expansions per tree over the rounds.

``GPUTreeGrower`` expands up to ``leafwise_batch`` (16) nodes a batch ahead of their turn
(:mod:`skltr._gbdt.growth`); the nodes it picks change only the work, never the tree. This
fits ``train_gpu.py``'s ``skltr-gpu-lossguide`` engine (255 leaves, no depth limit, 200 rounds
on its 1M x 136 data) twice in one process, with the speculation ordered by

* ``own``: each node's own split gain (the rule before 9a2dc7b), and
* ``reach``: the lower of its gain and its untaken ancestors' (``GrowthDriver._reach``, the
  rule now),

and reports per window of rounds the milliseconds a tree, batches (``expand`` calls) and nodes
expanded, the boosting time, and a digest of the test scores (equal: the same model).

Measured on an H100 at 9a2dc7b (``leafwise_speculation-h100-9a2dc7b-2026-11-28.json``): the
late rounds' uneven trees took 85 batches and 1,296 expansions for 254 splits (101 ms a tree)
by the own gain, 28 and 393 (27 ms) by reach; boosting 7.31 -> 5.03 s.

Usage: python benchmarks/leafwise_speculation.py [--rows 1000000] [--trees 200] [--out DIR]
"""

import argparse
import collections
import hashlib
import time

import numpy as np

from _harness import ranking_data, row, write_result
from train_gpu import SKLTR_ENGINES, _skltr


def _fit(policy, X, y, qid, Xt, trees):
    import cupy

    from skltr._gbdt import growth, grower_cuda

    stats, cur = [], collections.Counter()
    expand, grow, reach = (growth.GrowthDriver.expand, grower_cuda.GPUTreeGrower.grow,
                           growth.GrowthDriver._reach)

    def counted_expand(self, backend, ids, may_split):
        cur["batches"] += 1
        cur["expanded"] += len(ids)
        return expand(self, backend, ids, may_split)

    def timed_grow(self, *a, **k):
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        tree = grow(self, *a, **k)
        cupy.cuda.Device().synchronize()
        cur["ms"] = (time.perf_counter() - t) * 1e3
        stats.append(dict(cur))
        cur.clear()
        return tree

    growth.GrowthDriver.expand = counted_expand
    grower_cuda.GPUTreeGrower.grow = timed_grow
    if policy == "own":
        growth.GrowthDriver._reach = lambda self, ids, position: [
            (-self.nodes[i].split.gain, i) for i in ids]
    try:
        _, min_leaf, extra = SKLTR_ENGINES["skltr-gpu-lossguide"]
        model = _skltr("cuda", trees, 255, 16, min_leaf, **extra).fit(X, y, qid=qid)
    finally:
        growth.GrowthDriver.expand, grower_cuda.GPUTreeGrower.grow = expand, grow
        growth.GrowthDriver._reach = reach
    step = max(1, trees // 8)
    windows = [{"rounds": f"{w}-{min(w + step, trees) - 1}",
                **{k: float(np.mean([s[k] for s in stats[w:w + step]]))
                   for k in ("ms", "batches", "expanded")}} for w in range(0, trees, step)]
    digest = hashlib.sha1(np.ascontiguousarray(model.predict(Xt)).tobytes()).hexdigest()[:12]
    return {"boosting_s": model.timings_["boosting_s"], "test_score_digest": digest,
            "windows": windows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    X, Xt, y, yt, qid, qt = ranking_data(args.rows, 120)
    small = qid < np.unique(qid)[min(2000, np.unique(qid).size - 1)]
    _skltr("cuda", 2, 255, 16, 20, growth="leafwise", max_leaves=255,
           max_depth=None).fit(X[small], y[small], qid=qid[small])  # warm-up
    res = {policy: _fit(policy, X, y, qid, Xt, args.trees) for policy in ("own", "reach")}
    for policy, r in res.items():
        print(policy, f"boosting {r['boosting_s']:.2f} s", r["test_score_digest"])
        for w in r["windows"]:
            print(f"  rounds {w['rounds']:>8}: {w['ms']:6.1f} ms/tree {w['batches']:6.1f} "
                  f"batches {w['expanded']:7.1f} expanded")
    assert res["own"]["test_score_digest"] == res["reach"]["test_score_digest"], "models differ"
    case = f"{X.shape[0]} x {X.shape[1]}, {args.trees} rounds x 255 leaves"
    write_result("leafwise_speculation",
                 [row(case, "boosting_s", res["reach"]["boosting_s"], res["own"]["boosting_s"],
                      "skltr, speculation by own gain", "s")],
                 params={"rows": int(X.shape[0]), "trees": args.trees, **res},
                 packages=("cupy",), out_dir=args.out)


if __name__ == "__main__":
    main()
