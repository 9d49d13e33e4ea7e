"""How much of the test NDCG@10 gap to XGBoost (255 bins) is the binning sample or the seed?

Same data and parameters as ``train_gpu.py`` (skltr GPU, depth 8, 200 rounds, 255 bins). Fits
skltr with ``random_state`` 0..3 (without subsampling, the seed only picks the 200,000-row
sample the cuts come from), with the cuts found on every training row instead of the sample
(``BinMapper.subsample = None``, set on the class for the experiment), and with
``min_samples_leaf`` 1 and 20; prints test NDCG@10 of each. XGBoost's own figure comes from
``train_gpu.py`` (its GPU fit is deterministic here: no row or column sampling).

Usage: python benchmarks/ndcg_gap_gpu.py [--rows 1000000] [--out DIR]
"""

import argparse
import os
import time

from _harness import ranking_data, write_json
from train_gpu import DOCS, _skltr


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--bins", type=int, default=255)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from skltr._engine.binning import BinMapper
    from skltr.metrics import ndcg_score

    X, Xt, y, yt, qid, qt = ranking_data(args.rows, DOCS)
    threads = os.cpu_count()
    results = []

    def fit(label, random_state=0, min_leaf=20):
        m = _skltr("cuda", args.trees, args.bins, threads, min_leaf).set_params(
            random_state=random_state)
        t = time.perf_counter()
        m.fit(X, y, qid=qid)
        s = time.perf_counter() - t
        score = float(ndcg_score(yt, m.predict(Xt), qid=qt, k=10))
        results.append({"case": label, "random_state": random_state,
                        "min_samples_leaf": min_leaf, "ndcg@10": score, "fit_s": s})
        print(f"  {label:<44} NDCG@10 {score:.4f}  ({s:.2f} s)", flush=True)

    for rs in range(4):
        fit(f"sample cuts, random_state={rs}", rs)
    fit("sample cuts, min_samples_leaf=1", 0, 1)
    saved = BinMapper.__init__.__defaults__
    BinMapper.__init__.__defaults__ = (255, None, None, None)  # subsample=None: every row
    try:
        fit("cuts from every row, random_state=0", 0)
        fit("cuts from every row, min_samples_leaf=1", 0, 1)
    finally:
        BinMapper.__init__.__defaults__ = saved
    if args.out:
        write_json(f"ndcg_gap_gpu-{args.bins}bins",
                   {"rows": int(len(y)), "bins": args.bins, "trees": args.trees,
                    "results": results}, args.out)


if __name__ == "__main__":
    main()
