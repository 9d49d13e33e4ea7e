"""Sparse input: fitting and scoring CSR matrices, against the dense path and the peers.

One process, one data set: ``make_ranking`` (136 features) with every value below the
feature's ``--zero-quantile`` quantile set to 0, kept as a dense array and as CSR. Cases:

* ``fit``: ``GPUHistGBDTRanker`` (``--device``) on the CSR matrix vs on the dense array (the
  models are asserted equal, bit for bit, first); on the CPU also LightGBM ``lambdarank``
  on the same CSR (same rounds and leaves);
* ``predict``: ``QuickScorerPredictor`` on the CSR test rows vs the source library's own
  ``predict(csr)`` for a LightGBM and an XGBoost ranker (scores asserted equal first), and
  skltr CSR vs skltr on the dense array of the same meaning (absent entries 0.0 for
  LightGBM, NaN for XGBoost): the cost of densifying blocks of rows.

Peak memory of the CSR fit is reported beside the dense fit's (CPU only): binning a CSR reads
it without a dense copy.

Usage: python benchmarks/sparse_input.py [--rows 200000] [--trees 100] [--device cpu]
       [--zero-quantile 0.7] [--out DIR]
"""

import argparse

import numpy as np
import scipy.sparse as sp

from _harness import peak_rss_during, query_sizes, ranking_data, row, time_median, write_result
from skltr import GPUHistGBDTRanker, QuickScorerPredictor
from skltr.trees._sparse_input import densify_rows


def sparsify(X, Xt, q):
    cut = np.nanquantile(X, q, axis=0)
    X = np.where(X < cut, 0.0, X)
    Xt = np.where(Xt < cut, 0.0, Xt)
    return X, Xt


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--zero-quantile", type=float, default=0.7)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    X, Xt, y, yt, qid, qt = ranking_data(args.rows, 120)
    X, Xt = sparsify(X, Xt, args.zero_quantile)
    Xs, Xts = sp.csr_matrix(X), sp.csr_matrix(Xt)
    density = Xs.nnz / np.prod(X.shape)
    gpu = args.device != "cpu"
    params = dict(n_estimators=args.trees, random_state=0, device=args.device)
    if gpu:
        params.update(growth="depthwise", max_depth=8)
    rows = []

    # ---- fit: CSR vs dense (equal models first)
    # warm-up on the full data (the binning sample's path depends on the row count), so no
    # timed fit compiles a kernel
    warm = GPUHistGBDTRanker(**{**params, "n_estimators": 2})
    warm.fit(Xs, y, qid=qid)
    warm.fit(X, y, qid=qid)
    m_sparse, mem_sparse = peak_rss_during(lambda: GPUHistGBDTRanker(**params).fit(Xs, y, qid=qid))
    m_dense, mem_dense = peak_rss_during(lambda: GPUHistGBDTRanker(**params).fit(X, y, qid=qid))
    assert m_sparse.to_tree_ensemble().equals(m_dense.to_tree_ensemble()), "CSR model differs"
    t_sparse = time_median(lambda: GPUHistGBDTRanker(**params).fit(Xs, y, qid=qid),
                           repeat=3, warmup=0)
    t_dense = time_median(lambda: GPUHistGBDTRanker(**params).fit(X, y, qid=qid),
                          repeat=3, warmup=0)
    rows.append(row(f"fit {args.device} CSR vs dense", "fit_s", t_sparse, t_dense,
                    "skltr dense", "s"))
    if not gpu:
        rows.append(row("fit cpu CSR vs dense", "peak_rss_MB", mem_sparse / 1e6,
                        mem_dense / 1e6, "skltr dense", "MB"))
        import lightgbm as lgb

        lgb_params = {"objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1,
                      "min_data_in_leaf": 20, "verbose": -1, "seed": 0}

        def lgb_fit():
            return lgb.train(lgb_params, lgb.Dataset(Xs, y, group=query_sizes(qid)),
                             num_boost_round=args.trees)

        rows.append(row("fit cpu CSR", "fit_s", t_sparse, time_median(lgb_fit, repeat=3,
                                                                      warmup=1),
                        "lightgbm csr", "s"))

    # ---- predict (CPU scoring; GPU scoring is another benchmark's): QuickScorer on CSR vs
    # each library's predict(csr), and vs dense
    if gpu:
        return _write(rows, args, X, Xt, density, gpu)
    import lightgbm as lgb
    import xgboost as xgb

    n_fit = min(len(y), 100_000)
    lgb_model = lgb.LGBMRanker(n_estimators=500, num_leaves=63, verbose=-1).fit(
        Xs[:n_fit], y[:n_fit], group=query_sizes(qid[:n_fit]))
    xgb_model = xgb.XGBRanker(n_estimators=500, max_depth=6, tree_method="hist").fit(
        Xs[:n_fit], y[:n_fit], qid=qid[:n_fit])
    for name, model in (("lightgbm", lgb_model), ("xgboost", xgb_model)):
        qs = QuickScorerPredictor.from_model(model)
        assert np.array_equal(qs.predict(Xts), model.predict(Xts)), f"{name} scores differ"
        t_qs = time_median(lambda: qs.predict(Xts), repeat=3)
        t_peer = time_median(lambda: model.predict(Xts), repeat=3)
        # the dense array that means the same: absent entries as the model reads them (NaN,
        # i.e. missing, for XGBoost: slower to route than 0.0 in any layout)
        same = densify_rows(Xts, 0, Xts.shape[0], fill=qs.ensemble_.absent_value)
        t_qs_dense = time_median(lambda: qs.predict(same), repeat=3)
        per_doc = 1e6 / Xts.shape[0]
        rows.append(row(f"predict {name} model, CSR", "us_per_doc", t_qs * per_doc,
                        t_peer * per_doc, f"{name} predict(csr)", "us"))
        rows.append(row(f"predict {name} model, CSR vs dense", "us_per_doc", t_qs * per_doc,
                        t_qs_dense * per_doc, "skltr dense", "us"))
    _write(rows, args, X, Xt, density, gpu)


def _write(rows, args, X, Xt, density, gpu):
    write_result(f"sparse_input_{'gpu' if gpu else 'cpu'}", rows,
                 params={"rows": int(X.shape[0]), "test_rows": int(Xt.shape[0]),
                         "features": int(X.shape[1]), "density": float(density),
                         "trees": args.trees, "device": args.device,
                         "predict_models": "500 trees; lightgbm 63 leaves, xgboost depth 6"},
                 packages=("numpy", "scipy", "lightgbm", "xgboost", "numba"),
                 out_dir=args.out)


if __name__ == "__main__":
    main()
