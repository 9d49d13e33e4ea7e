"""
==============================================
Training on a Dask cluster (a LocalCluster)
==============================================

:class:`skltr.dask.DaskGPUHistGBDTRanker` trains :class:`skltr.GPUHistGBDTRanker`'s model on
the workers of a Dask cluster -- each worker builds histograms of its own rows, and the
workers all-reduce them exactly -- so the model equals the one-process fit's, bit for bit,
whatever the number of workers and the partitioning. :func:`skltr.dask.predict` scores a
dask collection block by block.

Here the cluster is a ``distributed.LocalCluster`` of two worker processes on this machine;
on a real cluster, pass its ``Client`` instead. Needs the ``dask`` extra (``pip install
".[dask]"`` from a clone of skltr) and matplotlib. Data: synthetic (``make_ranking``). The
figure is written to ``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a temporary folder when unset).
"""

import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import dask.array as da  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from skltr import GPUHistGBDTRanker  # noqa: E402
from skltr.dask import DaskGPUHistGBDTRanker, predict  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402
from skltr.metrics import ndcg_score  # noqa: E402

# The guard keeps worker processes, started with "spawn", from running the script again.
if __name__ == "__main__":
    print("data: synthetic (make_ranking: 200 queries x 20 documents x 20 features)")
    X, y, qid = make_ranking(n_queries=200, docs_per_query=20, n_features=20,
                             random_state=0)
    train, test = qid < 160, qid >= 160

    # Two worker processes, one thread each; the rows travel as dask arrays in 4 blocks
    # (queries may straddle blocks: rows are grouped by qid on the workers).
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        X_d = da.from_array(X[train], chunks=(len(X[train]) // 4, -1))
        y_d = da.from_array(y[train], chunks=X_d.chunks[0])
        q_d = da.from_array(qid[train], chunks=X_d.chunks[0])
        dist = DaskGPUHistGBDTRanker(n_estimators=40, random_state=0, client=client)
        dist.fit(X_d, y_d, qid=q_d)
        scores = predict(dist, da.from_array(X[test], chunks=(500, -1))).compute()

    local = GPUHistGBDTRanker(n_estimators=40, random_state=0).fit(X[train], y[train],
                                                                   qid=qid[train])
    same = np.array_equal(scores, local.predict(X[test]))
    print(f"test NDCG@10 {ndcg_score(y[test], scores, qid=qid[test], k=10):.4f}; "
          f"the same scores as the one-process fit, bit for bit: {same}")

    # The two models' test scores against each other: every point on the diagonal.
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(local.predict(X[test]), scores, s=4)
    ax.set_xlabel("GPUHistGBDTRanker (one process)")
    ax.set_ylabel("DaskGPUHistGBDTRanker (2 workers)")
    fig.tight_layout()
    out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR")
                   or tempfile.mkdtemp(prefix="skltr-"))
    fig.savefig(out_dir / "dask_same_model.png", dpi=100)
    print(f"figure written to {out_dir / 'dask_same_model.png'}")
