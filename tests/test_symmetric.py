"""Symmetric (oblivious) growth, ``growth="symmetric"``, and its split noise
``random_strength`` (CatBoost's trees; issue #30): the engine against a plain-Python
reference (``tests/naive_symmetric.py``), the fitted model's structure, its round trips,
determinism, and the refusals."""

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_symmetric import naive_symmetric_grow, normal, sigma_of
from test_grower import (assert_grower_matches, assert_same_tree, dyadic_problem,
                         force_parallel_kernels, grow)
from skltr import GPUHistGBDTRanker
from skltr._cpu.split_symmetric import noise_key, noise_scale, standard_normal
from skltr._gbdt import fit as recipe
from skltr.datasets import make_ranking
from skltr.trees import TreeEnsemble

SYMMETRIC_CASES = [
    dict(max_depth=3, min_samples_leaf=1),
    dict(max_depth=4, min_samples_leaf=4, reg_lambda=1.0),
    dict(max_depth=3, min_samples_leaf=2, reg_alpha=0.75, min_child_weight=1.0),
    dict(max_depth=5, min_samples_leaf=3, min_split_gain=0.5),
    dict(max_depth=2, min_samples_leaf=1, learning_rate=1.0),
    dict(max_depth=4, min_samples_leaf=3, min_samples_leaf_counts="hessian"),
    dict(max_depth=4, min_samples_leaf=5, min_samples_leaf_counts="hessian", reg_lambda=1.0),
    # the noise: CatBoost's scale of the gradients at round 0 and after it has faded a little
    dict(max_depth=3, min_samples_leaf=1, random_strength=1.0, seed=7, round_=0),
    dict(max_depth=4, min_samples_leaf=2, random_strength=30.0, seed=3, round_=40,
         learning_rate=0.1),
]


@pytest.mark.parametrize("kw", SYMMETRIC_CASES)
@pytest.mark.parametrize("hist_mode", ["float", "quantised"])
def test_symmetric_grower_matches_naive(kw, hist_mode):
    assert_grower_matches(naive_symmetric_grow, kw, hist_mode, seed=11, growth="symmetric")


def test_symmetric_reference_cases_split_and_freeze():
    # the cases above are not vacuous: complete trees, frozen nodes and noise that moves
    # a split all occur
    rng = np.random.default_rng(11)
    X, n_bins, grad, hess = dyadic_problem(rng, 60, 3, 6, nan_frac=0.15)
    ref = naive_symmetric_grow(X, grad, hess, n_bins, 6, max_depth=4, min_samples_leaf=5)
    internal = [i for i, f in enumerate(ref["feature"]) if f >= 0]
    assert len(internal) == 15  # complete: 1 + 2 + 4 + 8 splits
    assert any(ref["gain"][i] == 0.0 for i in internal)  # frozen nodes record no gain
    quiet = naive_symmetric_grow(X, grad, hess, n_bins, 6, max_depth=3, min_samples_leaf=1)
    loud = [naive_symmetric_grow(X, grad, hess, n_bins, 6, max_depth=3, min_samples_leaf=1,
                                 random_strength=50.0, seed=s) for s in range(5)]
    assert any(t["feature"] != quiet["feature"] or t["bin_threshold"] != quiet["bin_threshold"]
               for t in loud)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 50), max_depth=st.integers(1, 4),
       min_samples_leaf=st.integers(1, 6), reg_lambda=st.sampled_from([0.0, 0.5]),
       counts=st.sampled_from(["rows", "hessian"]),
       random_strength=st.sampled_from([0.0, 2.0]),
       hist_mode=st.sampled_from(["float", "quantised"]))
def test_symmetric_grower_random_matches_naive(seed, n, max_depth, min_samples_leaf,
                                               reg_lambda, counts, random_strength,
                                               hist_mode):
    rng = np.random.default_rng(seed)
    X, n_bins, grad, hess = dyadic_problem(rng, n, 3, 4, nan_frac=rng.random() * 0.5)
    kw = dict(max_depth=max_depth, min_samples_leaf=min_samples_leaf, reg_lambda=reg_lambda,
              min_samples_leaf_counts=counts, random_strength=random_strength,
              seed=seed % 1000, round_=seed % 7)
    tree = grow(X, n_bins, grad, hess, 4, hist_mode=hist_mode, growth="symmetric", **kw)
    assert_same_tree(tree, naive_symmetric_grow(X, grad, hess, n_bins, 4, **kw))


@pytest.mark.parametrize("hist_mode", ["float", "quantised"])
def test_symmetric_parallel_kernels_match_naive(monkeypatch, hist_mode):
    force_parallel_kernels(monkeypatch)
    rng = np.random.default_rng(4)
    X, n_bins, grad, hess = dyadic_problem(rng, 80, 4, 6, nan_frac=0.1)
    kw = dict(max_depth=4, min_samples_leaf=2, random_strength=1.0, seed=5, round_=2)
    tree = grow(X, n_bins, grad, hess, 6, hist_mode=hist_mode, growth="symmetric",
                n_threads=2, **kw)
    assert_same_tree(tree, naive_symmetric_grow(X, grad, hess, n_bins, 6, **kw))


def test_noise_draws_and_scale_match_their_definitions():
    key = int(noise_key(9, 4, 2))
    for f, b, d in [(0, 0, 0), (3, 17, 1), (49, 254, 0)]:
        assert standard_normal(np.uint64(key), f, b, d) == normal(9, 4, 2, f, b, d)
    draws = np.array([standard_normal(np.uint64(key), f, b, d) for f in range(40)
                      for b in range(50) for d in range(2)])
    assert abs(draws.mean()) < 0.05 and abs(draws.std() - 1.0) < 0.05
    grad = np.array([0.5, -1.25, 2.0, 0.0], np.float32)
    rms = math.sqrt((0.25 + 1.5625 + 4.0) / 4)
    m = 4 * math.exp(-30 * 0.1)
    assert noise_scale(2.0, 5.8125, 4, 30, 0.1) == pytest.approx(2.0 * rms * m / (1 + m),
                                                                 rel=1e-15)
    assert noise_scale(2.0, 5.8125, 4, 30, 0.1) == pytest.approx(sigma_of(2.0, grad, 30, 0.1),
                                                                 rel=1e-15)
    assert noise_scale(0.0, 5.8125, 4, 30, 0.1) == 0.0
    assert noise_scale(1.0, 0.0, 0, 30, 0.1) == 0.0


# ---------------------------------------------------------------------------- the ranker
@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=60, docs_per_query=25, n_features=6, n_informative=4,
                             random_state=0)
    X[::7, 1] = np.nan  # a feature with missing values
    return X, y, qid


def _fit(data, **kw):
    X, y, qid = data
    params = dict(objective="yetirank", n_estimators=8, growth="symmetric", max_depth=3,
                  min_samples_leaf=5, random_state=0, n_jobs=1)
    return GPUHistGBDTRanker(**{**params, **kw}).fit(X, y, qid=qid)


def _depths(ens, t):
    lo, hi = ens.tree_ptr[t], ens.tree_ptr[t + 1]
    depth = np.zeros(hi - lo, int)
    for i in range(hi - lo):
        if ens.left[lo + i] >= 0:
            depth[ens.left[lo + i]] = depth[ens.right[lo + i]] = depth[i] + 1
    return depth


def test_every_level_splits_alike_and_trees_are_complete(data):
    ens = _fit(data, random_strength=1.0).ensemble_
    for t in range(ens.n_trees):
        lo, hi = ens.tree_ptr[t], ens.tree_ptr[t + 1]
        depth = _depths(ens, t)
        internal = ens.left[lo:hi] >= 0
        levels = sorted(set(depth[internal]))
        assert levels == list(range(len(levels)))
        for d in levels:
            at = np.flatnonzero(internal & (depth == d))
            assert at.size == 2 ** d  # complete
            for name in ("feature", "threshold"):
                assert np.unique(getattr(ens, name)[lo + at]).size == 1, (t, d, name)
            assert np.unique(ens.flags[lo + at]).size == 1, (t, d)  # missing direction
        assert not np.any(internal & (depth == len(levels)))
    assert (np.diff(ens.tree_ptr) == 15).all()


def test_default_depth_is_six_and_max_leaves_is_ignored():
    X, y, qid = make_ranking(n_queries=40, docs_per_query=50, n_features=6, n_informative=4,
                             random_state=1)
    kw = dict(n_estimators=2, growth="symmetric", min_samples_leaf=1, random_state=0,
              n_jobs=1)
    ens = GPUHistGBDTRanker(max_depth=None, max_leaves=3, **kw).fit(X, y, qid=qid).ensemble_
    six = GPUHistGBDTRanker(max_depth=6, max_leaves=None, **kw).fit(X, y, qid=qid).ensemble_
    assert np.diff(ens.tree_ptr).tolist() == [127, 127]
    np.testing.assert_array_equal(ens.value, six.value)
    np.testing.assert_array_equal(ens.threshold, six.threshold)


def test_predictions_survive_round_trips(data, tmp_path):
    X, y, qid = data
    ranker = _fit(data, random_strength=1.0)
    pred = ranker.predict(X)
    ens = ranker.ensemble_
    np.testing.assert_allclose(ens.predict_raw(X), pred, rtol=0, atol=1e-12)
    path = tmp_path / "m.json"
    ranker.save_model(path)
    np.testing.assert_array_equal(GPUHistGBDTRanker.load_model(path).predict(X), pred)
    ens.save(tmp_path / "e.json")
    np.testing.assert_array_equal(TreeEnsemble.load(tmp_path / "e.json").predict_raw(X),
                                  ens.predict_raw(X))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ranker)).predict(X), pred)


def test_noise_is_deterministic_thread_free_and_changes_the_model(data):
    a = _fit(data, random_strength=1.0).ensemble_
    b = _fit(data, random_strength=1.0).ensemble_
    c = _fit(data, random_strength=1.0, n_jobs=2).ensemble_
    quiet = _fit(data).ensemble_
    other = _fit(data, random_strength=1.0, random_state=1).ensemble_
    for e in (b, c):
        for name in ("feature", "threshold", "flags", "value", "left", "right"):
            np.testing.assert_array_equal(getattr(e, name), getattr(a, name), err_msg=name)
    assert not np.array_equal(a.threshold, quiet.threshold)
    assert not np.array_equal(a.threshold, other.threshold)


def test_warm_start_continues_the_noise_by_round(data):
    X, y, qid = data
    whole = _fit(data, random_strength=1.0, n_estimators=6)
    half = _fit(data, random_strength=1.0, n_estimators=3, warm_start=True)
    half.set_params(n_estimators=6).fit(X, y, qid=qid)
    np.testing.assert_array_equal(half.predict(X), whole.predict(X))


# ---------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("kw, match", [
    (dict(random_strength=1.0, growth="depthwise"), "random_strength=1.0 is only"),
    (dict(random_strength=1.0), "random_strength=1.0 is only"),  # leafwise default
    (dict(growth="symmetric", monotone_constraints=[1, 0, 0, 0, 0, 0]),
     "does not support monotone_constraints"),
    (dict(growth="symmetric", interaction_constraints=[[0, 1], [2, 3]]),
     "does not support interaction_constraints"),
    (dict(growth="symmetric", categorical_features=[3]),
     "does not support categorical_features"),
])
def test_unsupported_settings_are_refused(data, kw, match):
    X, y, qid = data
    Xc = X.copy()
    Xc[:, 3] = np.abs(np.round(np.nan_to_num(Xc[:, 3])))
    with pytest.raises(ValueError, match=match):
        GPUHistGBDTRanker(n_estimators=2, **kw).fit(Xc, y, qid=qid)


def test_dask_gpu_workers_and_bad_values_are_refused(data):
    hp = GPUHistGBDTRanker(growth="symmetric", device="cuda").get_params()
    with pytest.raises(ValueError, match="growth='symmetric' is not implemented on the GPU "
                                         "workers of DaskGPUHistGBDTRanker"):
        recipe.check_growth(hp, is_gpu=True, distributed=True)
    recipe.check_growth(hp, is_gpu=True)  # one GPU: grown (test_cuda_fit_is_the_cpu_fit)
    recipe.check_growth(hp, is_gpu=False, distributed=True)  # CPU workers: test_dask
    X, y, qid = data
    with pytest.raises(ValueError, match="random_strength"):
        GPUHistGBDTRanker(growth="symmetric", random_strength=-1.0).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="growth"):
        GPUHistGBDTRanker(growth="oblivious").fit(X, y, qid=qid)


# ---------------------------------------------------------------------------- the GPU
@pytest.fixture(scope="module")
def larger_data():
    X, y, qid = make_ranking(n_queries=300, docs_per_query=60, n_features=12,
                             n_informative=6, random_state=1)
    X[::5, 2] = np.nan
    return X, y, qid


@pytest.mark.gpu
@pytest.mark.parametrize("params", [
    dict(random_strength=1.0, min_samples_leaf=1, max_depth=4),  # one-word bins, noise
    dict(objective="lambdarank", min_samples_leaf=20, max_depth=4),  # frozen nodes
    dict(min_samples_leaf_counts="rows", random_strength=2.0, subsample=0.7,
         colsample_bytree=0.8),  # two-word bins, a query and a feature sample
], ids=["one-word-noise", "frozen", "two-word-samples"])
@pytest.mark.parametrize("which", ["data", "larger_data"])
def test_cuda_fit_is_the_cpu_fit(request, which, params):
    """The GPU grower's symmetric trees (its histograms, the CPU's level search on a host
    copy of them) are the CPU's, bit for bit."""
    pytest.importorskip("cupy")
    data = request.getfixturevalue(which)
    cpu = _fit(data, n_estimators=10, **params)
    gpu = _fit(data, n_estimators=10, device="cuda", **params)
    X = data[0]
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))
    assert gpu.ensemble_.equals(cpu.ensemble_)
