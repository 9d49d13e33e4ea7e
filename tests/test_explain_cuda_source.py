"""The TreeSHAP CUDA kernels' logic on the CPU: their source compiled with g++ and the grid
emulated (tests/cuda_emulation.py) equals the numba kernels, for both loop forms (unrolled
for short paths, dynamic for long ones), both accumulators and launch splits (row launches,
tree chunks adding into one accumulator). Skipped without g++. Runs where there is no GPU;
the real launches are tested in tests/test_explain_gpu.py."""

import shutil

import numpy as np
import pytest
from hypothesis import given, settings

import test_explain as body

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def _check(ens, X, unroll, launch, shared=False):
    from cuda_emulation import run

    rows, target, threads = launch
    scale = 1.0
    for name, method in (("contribs", ens.predict_contribs),
                         ("interactions", ens.predict_interactions)):
        want = method(X)
        want = want[:, None] if ens.n_outputs == 1 else want
        scale = max(scale, np.abs(want).max() + 1.0)
        got = run(ens, X, name, rows, target, threads, unroll, shared)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale, err_msg=name)


@settings(max_examples=40, deadline=None)
@given(body._covered())
def test_cuda_source_equals_cpu_on_adversarial_ensembles(case):
    ens, X = case
    for unroll, launch, shared in ((12, (3, 7, 4), False), (0, (None, None, 32), False),
                                   (12, (5, 4, 4), True)):
        _check(ens, X, unroll, launch, shared)


def test_cuda_source_equals_cpu_on_library_models():
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    from skltr.convert import to_tree_ensemble

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) ** 2
    models = [
        xgb.train({"max_depth": 6, "seed": 0}, xgb.DMatrix(X, y), 8),
        xgb.train({"max_depth": 3, "objective": "multi:softprob", "num_class": 3, "seed": 0},
                  xgb.DMatrix(X, np.digitize(y, [0, 2])), 4),
        lgb.LGBMRegressor(n_estimators=4, num_leaves=63, min_child_samples=2,
                          verbose=-1).fit(X, y),
    ]
    for model in models:
        ens = to_tree_ensemble(model)
        _check(ens, X[:60], 12, (16, 64, 8))
        _check(ens, X[:60], 0, (None, 1, 32))
        _check(ens, X[:60], 12, (32, 64, 32), shared=True)
