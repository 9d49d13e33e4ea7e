"""The same model on CPU and GPU: how far a CPU fit and a GPU fit of the same parameters agree.

Issue #27's target: for the same parameters (the defaults included, leaf-wise and depth-wise)
a CPU fit and a GPU fit give the same trees -- the same split features and thresholds, and
leaf values equal to 1e-9 relative -- for 100 rounds. This script fits ``GPUHistGBDTRanker``
on both devices (``make_ranking``: ``--rows`` rows, ``--features`` features, 2% NaN) for
each case below and reports, per case:

* ``first_different_tree``: the first tree whose structure (features, thresholds, children)
  differs, or null when all trees have the same structure;
* ``max_rel_leaf_diff``: the largest relative difference of a leaf value over the trees
  before it (``|gpu - cpu| / |cpu|``, leaves with ``cpu != 0``);
* ``max_rel_score_diff``: the largest relative difference of the two models' predictions on
  the training rows;
* both fit times (not a speed benchmark: ``train_gpu.py`` / ``train_cpu.py`` are).

Cases: the defaults (leaf-wise, lambdarank, hessian counts); ``rank_xendcg``; depth-wise
depth 6; 63 leaves with 63 bins, ``subsample=0.8`` and ``colsample_bytree=0.8``;
``rank_pairwise`` with row counts.

Usage: python benchmarks/same_model.py [--rows 48000] [--features 60] [--trees 100]
       [--out DIR]   (needs CuPy and a GPU)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _harness import write_result

from skltr import GPUHistGBDTRanker
from skltr.datasets import make_ranking

CASES = {
    "defaults": {},
    "rank_xendcg": dict(objective="rank_xendcg"),
    "depthwise_depth6": dict(growth="depthwise", max_depth=6, max_leaves=None),
    "63_leaves_63_bins_subsample_colsample": dict(max_leaves=63, max_bins=63, subsample=0.8,
                                                  colsample_bytree=0.8),
    "rank_pairwise_row_counts": dict(objective="rank_pairwise",
                                     min_samples_leaf_counts="rows"),
}
STRUCTURE = ("feature", "threshold", "left", "right", "flags")


def compare(a, b) -> dict:
    """Where two TreeEnsembles part, and how far their leaf values are apart before that."""
    n = min(a.n_trees, b.n_trees)
    first = None if a.n_trees == b.n_trees else n
    for t in range(n):
        sa = slice(a.tree_ptr[t], a.tree_ptr[t + 1])
        sb = slice(b.tree_ptr[t], b.tree_ptr[t + 1])
        if sa.stop - sa.start != sb.stop - sb.start or any(
                not np.array_equal(getattr(a, f)[sa], getattr(b, f)[sb]) for f in STRUCTURE):
            first = t
            break
    same = n if first is None else first
    va, vb = a.value[:a.tree_ptr[same]], b.value[:b.tree_ptr[same]]
    nz = va != 0
    rel = float(np.max(np.abs(vb[nz] - va[nz]) / np.abs(va[nz]), initial=0.0))
    return {"first_different_tree": first, "trees_compared": same,
            "max_rel_leaf_diff": rel}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=48_000)
    ap.add_argument("--features", type=int, default=60)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    X, y, qid = make_ranking(n_queries=args.rows // 40, docs_per_query=40,
                             n_features=args.features, n_informative=args.features // 3,
                             random_state=0, nan_fraction=0.02)
    rows = []
    for case in args.cases:
        params = dict(n_estimators=args.trees, random_state=0, early_stopping=False,
                      **CASES[case])
        fits = {}
        for device in ("cpu", "cuda"):
            t0 = time.perf_counter()
            fits[device] = GPUHistGBDTRanker(**params, device=device).fit(X, y, qid=qid)
            fits[device + "_s"] = time.perf_counter() - t0
        a, b = (fits[d].to_tree_ensemble() for d in ("cpu", "cuda"))
        sa, sb = fits["cpu"].predict(X), fits["cuda"].predict(X)
        res = compare(a, b)
        res["max_rel_score_diff"] = float(np.max(np.abs(sb - sa)) / np.max(np.abs(sa)))
        print(case, res, flush=True)
        for metric, value in res.items():
            rows.append({"case": case, "metric": metric, "skltr": value, "peer": None,
                         "peer_name": "skltr-cpu", "unit": "", "ratio": None})
        rows.append({"case": case, "metric": "fit_s", "skltr": fits["cuda_s"],
                     "peer": fits["cpu_s"], "peer_name": "skltr-cpu", "unit": "s",
                     "ratio": fits["cuda_s"] / fits["cpu_s"]})
    write_result("same_model", rows, params={**vars(args), "data": "make_ranking, 2% NaN"},
                 out_dir=args.out)


if __name__ == "__main__":
    main()
