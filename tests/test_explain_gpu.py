"""TreeSHAP on the GPU (``skltr._gpu.treeshap``): the bodies of tests/test_explain.py on
``device="cuda"`` (same peers, same tolerances: 1e-5 relative against the float32 peers,
1e-9 of the largest value against brute-force Shapley), the GPU fitted rankers' covers, CuPy
input and output, and the GPU against the CPU kernel (float64 both, atomics reorder sums:
1e-12 relative).

Skipped without CuPy and a CUDA GPU (the ``gpu`` marker).
"""

import numpy as np
import pytest
from hypothesis import given, settings

import test_explain as body

cupy = pytest.importorskip("cupy")

pytestmark = pytest.mark.gpu


@settings(max_examples=60, deadline=None)
@given(body._covered())
def test_gpu_equals_brute_force_shapley(case):
    ens, X = case
    body.run_naive_adversarial(ens, X, "cuda")


def test_gpu_xgboost_pred_contribs_and_interactions():
    body.run_xgboost("cuda")


def test_gpu_xgboost_categorical_frame():
    body.run_xgboost_categorical("cuda")


def test_gpu_lightgbm_pred_contrib():
    body.run_lightgbm("cuda")


def test_gpu_sklearn_models_equal_shap_tree_explainer():
    body.run_sklearn("cuda")


def test_gpu_rankers_equal_brute_force():
    body.run_skltr_rankers("cuda")


def test_gpu_fitted_rankers_record_covers_and_match_cpu():
    from skltr import GPUHistGBDTRanker, RankBoostRanker
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=40, docs_per_query=20, n_features=6, n_informative=4,
                             random_state=0)
    for cls, kw in ((GPUHistGBDTRanker, {"n_estimators": 10, "max_leaves": 15}),
                    (RankBoostRanker, {"n_estimators": 20})):
        gpu = cls(device="cuda", random_state=0, **kw).fit(X, y, qid=qid)
        ens = gpu.to_tree_ensemble()
        assert ens.cover is not None and np.all(ens.cover[ens.tree_ptr[:-1]] > 0)
        got = gpu.predict_contribs(X)  # on the GPU: the ranker was fitted there
        np.testing.assert_allclose(got.sum(axis=1), gpu.predict(X), rtol=0, atol=1e-9)
        np.testing.assert_allclose(got, ens.predict_contribs(X), rtol=1e-12, atol=1e-12)
        cpu = cls(device="cpu", random_state=0, **kw).fit(X, y, qid=qid).to_tree_ensemble()
        if ens.equals(cpu):  # the same trees: the GPU grower records the CPU's hessian sums
            np.testing.assert_allclose(ens.cover, cpu.cover, rtol=1e-6)


def test_gpu_cupy_input_gives_cupy_output_and_many_launches():
    from skltr._gpu import treeshap
    from skltr.convert import to_tree_ensemble

    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 8)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2
    booster = xgb.train({"max_depth": 6, "seed": 0}, xgb.DMatrix(X, y), 30)
    ens = to_tree_ensemble(booster)
    want = ens.predict_contribs(X)
    got = ens.predict_contribs(cupy.asarray(X), device="cuda")
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_allclose(got.get(), want, rtol=1e-12, atol=1e-12)
    # several row launches, each with several tree chunks (atomics) and one without, with
    # either accumulator
    for rows, target, acc in ((700, 2048, "global"), (1000, 1000, "global"),
                              (4096, 1, "global"), (700, 2048, "shared"), (4096, 1, "shared")):
        old = treeshap.ROWS_PER_LAUNCH, treeshap.TARGET_THREADS, \
            treeshap.INTERACTION_ROWS_PER_LAUNCH, treeshap.ACCUMULATE
        treeshap.ROWS_PER_LAUNCH, treeshap.TARGET_THREADS = rows, target
        treeshap.INTERACTION_ROWS_PER_LAUNCH = max(rows // 4, 1)
        treeshap.ACCUMULATE = acc
        try:
            np.testing.assert_allclose(ens.predict_contribs(X, device="cuda"), want,
                                       rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(ens.predict_interactions(X[:300], device="cuda"),
                                       ens.predict_interactions(X[:300]), rtol=1e-12,
                                       atol=1e-12)
        finally:
            (treeshap.ROWS_PER_LAUNCH, treeshap.TARGET_THREADS,
             treeshap.INTERACTION_ROWS_PER_LAUNCH, treeshap.ACCUMULATE) = old


def test_gpu_deep_lightgbm_trees():
    """255-leaf trees: paths longer than UNROLL_MAX_K take the kernels' dynamic loops."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 30))
    y = np.sin(X[:, 0] * 3) + X[:, 1] * X[:, 2] + X[:, 3:].sum(axis=1) * 0.3
    m = lgb.LGBMRegressor(n_estimators=20, num_leaves=255, min_child_samples=2,
                          verbose=-1).fit(X, y)
    from skltr.convert import to_tree_ensemble

    from skltr._gpu.treeshap import UNROLL_MAX_K
    from skltr.trees._shap import shap_paths

    ens = to_tree_ensemble(m)
    assert shap_paths(ens).max_elems > UNROLL_MAX_K  # the dynamic loops
    body._rel_close(ens.predict_contribs(X, device="cuda"), m.predict(X, pred_contrib=True),
                    what="deep lightgbm")
