"""RankBoost against RankLib's (the Java implementation) on letor_small: quality and fit time.

RankLib (https://sourceforge.net/p/lemur/wiki/RankLib/; built from the codelibs/ranklib
sources with ``javac``, commons-math3 on the classpath) trains RankBoost (``-ranker 2``) with
``-round R -tc 10``; its scores on the test file (``-rank``) are evaluated with
:func:`skltr.metrics.ndcg_score`, as skltr's are. Fit time of RankLib: the wall time of the
training command minus that of the same command with one round (JVM start, reading the files,
one round), over ``R - 1``, times ``R``; skltr: the ``fit`` call after a warm-up fit.

Usage: RANKLIB_CP=/path/classes:/usr/share/java/commons-math3.jar \\
       python benchmarks/rankboost_ranklib.py [--rounds 300] [--data ../shared/data/letor_small]
"""

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from _harness import row, write_result


def _java(cp, *args):
    t = time.perf_counter()
    subprocess.run(["java", "-cp", cp, "ciir.umass.edu.eval.Evaluator", *args], check=True,
                   capture_output=True, text=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" /
                                          "data" / "letor_small"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cp = os.environ.get("RANKLIB_CP")
    if not cp:
        raise SystemExit("set RANKLIB_CP to RankLib's classpath (see the docstring)")

    from skltr import RankBoostRanker
    from skltr.datasets import load_letor
    from skltr.metrics import ndcg_score

    d = Path(args.data)
    X, y, qid = load_letor(d / "train.letor")
    Xt, yt, qt = load_letor(d / "test.letor", n_features=X.shape[1])
    rows, raw = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        model, scores = Path(tmp) / "rb.model", Path(tmp) / "scores.txt"
        common = ["-train", str(d / "train.letor"), "-ranker", "2", "-tc", "10",
                  "-missingZero", "-metric2t", "NDCG@10"]
        one = min(_java(cp, *common, "-round", "1") for _ in range(2))
        full = min(_java(cp, *common, "-round", str(args.rounds), "-save", str(model))
                   for _ in range(2))
        ranklib_fit = (full - one) / (args.rounds - 1) * args.rounds
        _java(cp, "-load", str(model), "-rank", str(d / "test.letor"), "-missingZero",
              "-score", str(scores))
        s = np.loadtxt(scores, usecols=2)  # "qid index score" lines, in file order
        ranklib_ndcg = ndcg_score(yt, s, qid=qt, k=10)
    raw["ranklib"] = {"one_round_command_s": one, "full_command_s": full,
                      "fit_s": ranklib_fit, "test_ndcg@10": ranklib_ndcg}
    print(f"RankLib RankBoost, {args.rounds} rounds, tc 10: fit ~{ranklib_fit:.2f} s "
          f"(command {full:.2f} s, one-round command {one:.2f} s), test NDCG@10 "
          f"{ranklib_ndcg:.4f}")
    for bins in (11, 255):
        RankBoostRanker(n_estimators=5, n_thresholds=bins, random_state=0).fit(X, y, qid=qid)
        times = []
        for _ in range(3):
            t = time.perf_counter()
            m = RankBoostRanker(n_estimators=args.rounds, n_thresholds=bins,
                                random_state=0).fit(X, y, qid=qid)
            times.append(time.perf_counter() - t)
        ndcg = ndcg_score(yt, m.predict(Xt), qid=qt, k=10)
        raw[f"skltr_{bins}"] = {"fit_s": min(times), "test_ndcg@10": ndcg}
        print(f"skltr RankBoostRanker(n_thresholds={bins}): fit {min(times):.3f} s, "
              f"test NDCG@10 {ndcg:.4f}")
        rows.append(row(f"fit time, {args.rounds} rounds, n_thresholds={bins} vs RankLib tc=10",
                        "s", min(times), ranklib_fit, "RankLib RankBoost (Java)", "s"))
        rows.append(row(f"test NDCG@10, n_thresholds={bins} vs RankLib tc=10", "ndcg@10",
                        ndcg, ranklib_ndcg, "RankLib RankBoost (Java)", "ndcg@10"))
    write_result("rankboost_ranklib", rows, params={"rounds": args.rounds, "raw": raw},
                 out_dir=args.out)


if __name__ == "__main__":
    main()
