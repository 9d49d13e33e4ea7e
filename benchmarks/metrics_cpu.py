"""Per-query NDCG@10 on ragged queries: skltr.metrics vs scikit-learn applied per query.

scikit-learn's ``ndcg_score`` takes one query per row of a 2-D array, so users loop over
queries; that loop is the peer. Both compute the tie-averaged NDCG with linear gain and agree
to 1e-12 (checked here before timing).

Usage: python benchmarks/metrics_cpu.py [--rows 1000000] [--docs 120]
"""

import argparse

import numpy as np
from sklearn.metrics import ndcg_score as sk_ndcg

from _harness import row, time_median, write_result
from skltr.datasets import make_ranking
from skltr.metrics import ndcg_score
from skltr.utils import group_by_qid


def sklearn_per_query(y, s, qid, k):
    g = group_by_qid(qid)
    vals = []
    for q in range(g.n_queries):
        idx = g.order[g.group_ptr[q]:g.group_ptr[q + 1]]
        if idx.size < 2:  # scikit-learn refuses one-document queries
            vals.append(1.0 if y[idx].sum() > 0 else 0.0)
            continue
        vals.append(sk_ndcg(y[idx][None], s[idx][None], k=k))
    return float(np.mean(vals))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--docs", type=int, default=120)
    args = parser.parse_args()
    n_queries = args.rows // args.docs
    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=args.docs, n_features=8,
                             n_informative=4, random_state=0)
    score = X[:, 0].astype(np.float64) + np.random.default_rng(0).normal(size=len(y))
    kw = dict(qid=qid, k=10, gain="linear", zero_relevance="zero")
    ours = ndcg_score(y, score, **kw)
    peer_rows = min(len(y), 200_000)  # the per-query loop is slow: time it on a prefix
    mask = qid < qid[peer_rows - 1]
    theirs = sklearn_per_query(y[mask], score[mask], qid[mask], 10)
    ours_prefix = ndcg_score(y[mask], score[mask], **{**kw, "qid": qid[mask]})
    assert abs(ours_prefix - theirs) < 1e-12, (ours_prefix, theirs)
    t_ours = time_median(lambda: ndcg_score(y[mask], score[mask], **{**kw, "qid": qid[mask]}))
    t_peer = time_median(lambda: sklearn_per_query(y[mask], score[mask], qid[mask], 10),
                         repeat=3)
    t_full = time_median(lambda: ndcg_score(y, score, **kw))
    n_pref = int(mask.sum())
    rows = [
        row(f"ndcg@10, {n_pref} rows", "time", t_ours, t_peer, "sklearn ndcg_score per query",
            "s"),
        row(f"ndcg@10, {n_pref} rows", "throughput", n_pref / t_ours / 1e6,
            n_pref / t_peer / 1e6, "sklearn ndcg_score per query", "Mrows/s"),
    ]
    print(f"skltr ndcg@10 on all {len(y)} rows: {t_full:.4f} s (value {ours:.6f})")
    write_result("metrics_cpu", rows, params={"rows": len(y), "docs_per_query": args.docs,
                                              "full_rows_seconds": t_full})


if __name__ == "__main__":
    main()
