"""RankBoost on the GPU (``skltr._rankboost.kernels_cuda``, launching ``skltr._gpu.rankboost``)
against the CPU kernels and the naive reference that materialises every pair
(tests/naive_rankboost.py).

Skipped without CuPy and a CUDA GPU (the ``gpu`` marker). The histogram and the stump search
sum integers, so they must equal the CPU's exactly; the potentials go through CUDA's
``exp`` / ``log`` and agree to the last bits.
"""

import pickle

import numpy as np
import pytest

import naive_rankboost as naive
from test_rankboost import kernel_pi, problem

cupy = pytest.importorskip("cupy")

pytestmark = pytest.mark.gpu

from skltr import RankBoostRanker  # noqa: E402
from skltr._cpu.histogram import build_histogram_serial  # noqa: E402
from skltr._cpu.rankboost import PI_SHIFT, best_stump  # noqa: E402
from skltr._engine.histogram import HIST_PAD_BINS  # noqa: E402
from skltr._gpu import rankboost as gpu_rb  # noqa: E402
from skltr._rankboost import kernels_cuda  # noqa: E402
from skltr._rankboost.boosting import (RankBoostParams, _label_order, boost,  # noqa: E402
                                       initial_log_weights)
from skltr._rankboost.kernels_cpu import CPURoundKernels  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402

SCALE = 2.0 ** PI_SHIFT


def _kernels(X, y, gp, n_thresholds=8, weighting="query", w=None, cls=None):
    params = RankBoostParams(n_estimators=1, n_thresholds=n_thresholds, seed=0)
    k = (cls or kernels_cuda.GPURoundKernels)(X, [], params)
    log_c = initial_log_weights(y, gp, w, weighting)
    k.start(y, gp, log_c, _label_order(y, gp))
    return k, log_c


def _cpu_hist(Xb, qpi, missing_bin):
    hist = np.zeros((Xb.shape[1], missing_bin + 1 + HIST_PAD_BINS, 1), np.int64)
    build_histogram_serial(Xb, qpi, qpi, np.empty(0, np.uint32), 0, Xb.shape[0], False, hist)
    return hist


@pytest.mark.parametrize("spread", [3.0, 2000.0])  # 2000: exp(H) overflows float64
@pytest.mark.parametrize("weighting", ["query", "pair"])
def test_potentials_equal_the_cpu_and_the_pairwise_sums(spread, weighting):
    X, y, gp = problem(0, n_queries=40)
    rng = np.random.default_rng(1)
    w = np.repeat(rng.uniform(0.5, 2, len(gp) - 1), np.diff(gp))
    k, log_c = _kernels(X, y, gp, weighting=weighting, w=w)
    H = rng.normal(0, spread, len(y))
    k.H = cupy.asarray(H)
    k.potentials()
    gpu = k.pi.get()
    assert int(k.total.get()[0]) == int(gpu.sum()) % 2**64  # exact, for the skipped bins
    cpu = kernel_pi(H, y, gp, log_c)
    np.testing.assert_allclose(gpu / SCALE, cpu / SCALE, rtol=1e-13, atol=1e-17)
    if spread < 10:  # the pairs' own sums (their exp overflows at the large spread)
        pairs, D1 = naive.initial_weights(y, gp, w, weighting)
        D = D1 * np.exp([H[a] - H[b] for a, b, _ in pairs])
        np.testing.assert_allclose(gpu / SCALE, naive.potentials(len(y), pairs, D / D.sum()),
                                   rtol=1e-12, atol=1e-15)
    assert np.abs(gpu).sum() < 2**62


@pytest.mark.parametrize("n_features,n_thresholds", [(3, 4), (37, 255), (61, 16)])
def test_histogram_equals_the_cpu_exactly(monkeypatch, n_features, n_thresholds):
    rng = np.random.default_rng(n_features)
    n = 3000
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(n) < 0.6, 0] = 0.0  # a heavy value: its bin is the one skipped
    X[:, -1] = 1.0 if n_features < 10 else np.nan  # one bin only / missing only
    y = rng.integers(0, 3, n).astype(float)
    gp = np.r_[0:n:50, n]
    monkeypatch.setattr(gpu_rb, "HIST_ROWS_PER_BLOCK", 128)  # many blocks per feature group
    k, _ = _kernels(X, y, gp, n_thresholds=n_thresholds)
    Xb = np.ascontiguousarray(k.XT.get().T).view(np.uint8)[:, :n_features]
    Xb = np.ascontiguousarray(Xb)
    cpu_counts = _cpu_hist(Xb, np.ones(n, np.int64), k.missing_bin)[:, :k.n_bins_total, 0]
    np.testing.assert_array_equal(k.skip_bin.get(), cpu_counts.argmax(axis=1))
    # large potentials of both signs (sum |q| <= 2**61): the 32-bit low words carry often
    qpi = rng.integers(-2**61 // n, 2**61 // n, n, dtype=np.int64)
    qpi[::7] = 0
    k.pi = cupy.asarray(qpi)
    k.total[...] = int(qpi.sum()) % 2**64  # what potentials() leaves there
    k.histogram()
    cpu = _cpu_hist(Xb, qpi, k.missing_bin)
    np.testing.assert_array_equal(k.hist.get(), cpu[:, :k.n_bins_total, 0])


def test_best_stump_equals_the_cpu_with_ties():
    rng = np.random.default_rng(3)
    n_features, nbt = 70, 17
    missing_bin = nbt - 1
    n_bins = rng.integers(0, missing_bin + 1, n_features).astype(np.int32)
    n_bins[:3] = (missing_bin, 1, 0)
    hist = np.zeros((n_features, nbt + HIST_PAD_BINS, 1), np.int64)
    # small values: many equal |r| across bins, q_def sides and features
    hist[:, :nbt, 0] = rng.integers(-3, 4, (n_features, nbt))
    hist[:, :nbt, 0] *= 2**55
    X = np.zeros((4, n_features))
    k, _ = _kernels(X, np.arange(4.0), np.array([0, 4]), n_thresholds=missing_bin)
    k.n_bins = cupy.asarray(n_bins)
    k.missing_bin, k.n_bins_total = missing_bin, nbt
    for trial in range(20):
        h = hist.copy()
        if trial:
            h[:, :nbt, 0] = np.random.default_rng(trial).permutation(hist[:, :nbt, 0].ravel()
                                                                       ).reshape(n_features, nbt)
        if trial == 19:
            h[:] = 0  # every |r| = 0: feature 0, bin 0, q_def 0
        k.hist = cupy.asarray(np.ascontiguousarray(h[:, :nbt, 0]))
        i64 = np.int64
        cpu = best_stump(h, n_bins, np.ones(n_features, bool), missing_bin,
                         *(np.empty(n_features, i64) for _ in range(4)))
        assert k.best_stump() == tuple(cpu)


def _same_stumps(a, b, rtol=1e-9):
    assert a.n_trees == b.n_trees
    for name in ("tree_ptr", "feature", "threshold", "flags", "left", "right"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_allclose(a.value, b.value, rtol=rtol, atol=0)


@pytest.mark.parametrize("weighting", ["query", "pair"])
def test_fit_chooses_the_naive_stumps_on_the_gpu(weighting):
    X, y, gp = problem(6, n_queries=15)
    params = RankBoostParams(n_estimators=8, n_thresholds=6, pair_weighting=weighting, seed=0)
    result = kernels_cuda.boost(X, y, gp, None, params)
    bm = result.bin_mapper
    ref = naive.fit(bm.transform(X), y, gp, bm.n_bins, bm.missing_bin, 8, weighting)
    ens = result.ensemble
    assert ens.n_trees == 8
    for t, (f, _, _, alpha, _) in enumerate(ref):
        assert ens.feature[ens.tree_ptr[t]] == f
        np.testing.assert_allclose(ens.value[ens.tree_ptr[t] + 2], alpha, rtol=1e-9)
    _same_stumps(ens, boost(X, y, gp, None, params).ensemble)


@pytest.mark.parametrize("case", ["nan", "pair-weighted", "eval-early-stop", "float32",
                                  "csr"])
def test_cpu_and_gpu_fits_give_the_same_stumps(case):
    X, y, qid = make_ranking(n_queries=120, docs_per_query=25, n_features=30,
                             random_state=7)
    w = None
    kw = {}
    if case == "nan":
        X[np.random.default_rng(0).random(X.shape) < 0.2] = np.nan
    if case == "pair-weighted":
        kw["pair_weighting"] = "pair"
        w = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    if case == "float32":
        X = X.astype(np.float32)
        kw["n_thresholds"] = 32
    if case == "csr":
        import scipy.sparse as sp

        X[X < 0.5] = 0.0
        X = sp.csr_matrix(X)
    fit_kw = {"qid": qid, "sample_weight": w}
    if case == "eval-early-stop":
        kw.update(early_stopping=True, n_iter_no_change=5)
    models = [RankBoostRanker(n_estimators=60, random_state=0, device=d, **kw).fit(X, y, **fit_kw)
              for d in ("cpu", "cuda")]
    _same_stumps(models[0].to_tree_ensemble(), models[1].to_tree_ensemble())
    assert models[1].device_ == "cuda:0"
    assert models[0].n_iter_ == models[1].n_iter_
    for key in models[0].evals_result_:
        for metric, values in models[0].evals_result_[key].items():
            np.testing.assert_allclose(models[1].evals_result_[key][metric], values, rtol=1e-9)
    np.testing.assert_allclose(models[1].predict(X), models[0].predict(X), rtol=1e-9,
                               atol=1e-12)


def test_gpu_fit_is_deterministic_and_pickles():
    X, y, qid = make_ranking(n_queries=80, docs_per_query=30, n_features=20, random_state=2)
    a, b = (RankBoostRanker(n_estimators=40, device="cuda", random_state=5).fit(X, y, qid=qid)
            for _ in range(2))
    assert a.to_tree_ensemble().equals(b.to_tree_ensemble())
    back = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(back.predict(X), a.predict(X))
    assert set(a.timings_) >= {"potentials_s", "histogram_s", "best_stump_s", "update_s"}


def test_cpu_kernels_class_is_the_gpu_ones_interface():
    # the loop calls the same methods on both; keep them in step
    public = {m for m in dir(CPURoundKernels) if not m.startswith("_")}
    assert public <= set(dir(kernels_cuda.GPURoundKernels))
