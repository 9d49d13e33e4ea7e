"""Tests of ``objective="yetirank"`` (skltr._cpu.yetirank.yetirank_gradients).

The kernel against the plain-Python reference ``naive_objectives.yetirank`` (same hash, its
own sort, pair weights summed per pair before the derivatives, as CatBoost orders its work)
on queries of 1 to 300 documents with label ties and all-equal labels; the random stream
(query layout, rounds, seeds; the thread count: tests/test_objectives.py); fits
(determinism, NDCG gain, lambdarank as the yardstick, CatBoost when installed); and the
estimator's parameter checks.
"""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

import naive_objectives as naive
from skltr import GPUHistGBDTRanker
from skltr._dtypes import G_H_DTYPE
from skltr._gbdt.fit import check_device
from skltr._gbdt.objectives import make_objective
from skltr.datasets import make_ranking
from skltr.metrics import ndcg_score
from skltr.model_selection import train_test_split_by_query


def grouped(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def run(obj, y, scores, group_ptr, weights=None, iteration=0, query_index=None):
    n = len(y)
    grad = np.full(n, np.nan, dtype=G_H_DTYPE)  # NaN: any row left unwritten shows up
    hess = np.full(n, np.nan, dtype=G_H_DTYPE)
    obj.gradients(np.asarray(scores, float), np.asarray(y, float), group_ptr,
                  None if weights is None else np.asarray(weights, float), grad, hess,
                  iteration, query_index=query_index)
    return grad, hess


def reference(y, scores, group_ptr, weights=None, iteration=0, **params):
    return naive.per_query(naive.yetirank, y, scores, group_ptr, weights, with_query=True,
                           iteration=iteration, **params)


def assert_close(actual, expected):
    # float64 in both, summed in another order (per pair occurrence vs per pair), rounded
    # once to float32 by the kernel: a few float32 ulps
    expected = np.asarray(expected, dtype=np.float64)
    scale = np.abs(expected).max() if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=1e-9 * scale + 1e-30)


def random_queries(sizes, seed, n_labels=5, real_labels=False, tie_scores=False):
    rng = np.random.default_rng(seed)
    n = int(np.sum(sizes))
    y = rng.integers(0, n_labels, n).astype(float)
    if real_labels:
        y = y + rng.uniform(-0.3, 0.3, n)
    s = rng.normal(scale=2.0, size=n)
    if tie_scores:
        s = np.round(s)  # many equal scores: only the noise orders them
    return y, s, rng.uniform(0.5, 2.0, n)


SIZES = [1, 2, 7, 40, 300]


@pytest.mark.parametrize("seed,iteration,permutations,decay", [
    (0, 0, 10, 0.85), (5, 3, 1, 0.85), (2**32 - 1, 7, 4, 0.5), (11, 1, 3, 1.0),
    (3, 2, 2, 0.0)])
@pytest.mark.parametrize("weighted", [False, True])
def test_kernel_matches_reference(seed, iteration, permutations, decay, weighted):
    y, s, w = random_queries(SIZES, seed % 97, tie_scores=seed % 2 == 0)
    gp = grouped(SIZES)
    w = w if weighted else None
    obj = make_objective("yetirank", random_state=seed, permutations=permutations,
                         decay=decay)
    obj.init_score(y, gp, w)
    grad, hess = run(obj, y, s, gp, w, iteration)
    g_ref, h_ref = reference(y, s, gp, w, iteration, seed=seed, permutations=permutations,
                             decay=decay)
    assert_close(grad, g_ref)
    assert_close(hess, h_ref)
    assert np.any(grad != 0)
    # every query's gradients sum to 0 (each pair pushes its two documents apart)
    for q in range(len(SIZES)):
        assert abs(float(np.sum(grad[gp[q]:gp[q + 1]], dtype=np.float64))) < 1e-5


def test_special_queries():
    """Single documents, all-equal labels, two-level ties, real labels, extreme scores."""
    queries = [([3.0], [0.4]), ([2.0, 2.0, 2.0], [0.1, 0.5, -0.3]),
               ([1.0, 1.0, 0.0, 0.0, 1.0, 0.0], [0.0] * 6),
               ([0.25, 1.5, -0.75, 0.0], [1.0, 2.0, 3.0, 4.0]),
               ([1.0, 0.0, 2.0, 0.0], [0.0, -800.0, 900.0, 0.5])]
    y = np.concatenate([q[0] for q in queries])
    s = np.concatenate([q[1] for q in queries])
    gp = grouped([len(q[0]) for q in queries])
    obj = make_objective("yetirank", random_state=1)
    obj.init_score(y, gp, None)
    grad, hess = run(obj, y, s, gp, iteration=2)
    g_ref, h_ref = reference(y, s, gp, iteration=2, seed=1)
    assert_close(grad, g_ref)
    assert_close(hess, h_ref)
    assert np.all(np.isfinite(grad)) and np.all(hess >= 0)
    np.testing.assert_array_equal(grad[:4], 0.0)  # one document; equal labels
    np.testing.assert_array_equal(hess[:4], 0.0)
    assert grad[4:10].min() < 0 < grad[4:10].max()  # tied scores: the noise orders them


def test_real_labels_weigh_by_difference():
    y, s, _ = random_queries([40, 300], 4, real_labels=True)
    gp = grouped([40, 300])
    obj = make_objective("yetirank", random_state=9)
    grad, hess = run(obj, y, s, gp, iteration=1)
    g_ref, h_ref = reference(y, s, gp, iteration=1, seed=9)
    assert_close(grad, g_ref)
    assert_close(hess, h_ref)


def test_hash_matches_reference():
    from skltr._cpu.yetirank import yetirank_stream, yetirank_uniform

    for seed, it, q, m in [(0, 0, 0, 0), (2**32 - 1, 999, 123456, 9), (7, 3, 2, 1)]:
        stream = np.uint64(yetirank_stream(seed, it, q, m))
        ours = [yetirank_uniform(stream, i) for i in range(50)]
        assert ours == naive.yetirank_uniforms(seed, it, q, m, 50)
        assert all(0.0 < u < 1.0 for u in ours)
    # draws look uniform: mean 1/2, variance 1/12 on 20,000 of them
    stream = np.uint64(yetirank_stream(3, 1, 4, 0))
    u = np.array([yetirank_uniform(stream, i) for i in range(20_000)])
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005


def random_layout(n_queries=120, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 90, n_queries)
    y, s, w = random_queries(sizes, seed)
    return y, s, sizes, w


def test_stream_depends_on_round_seed_and_query_index():
    y, s, sizes, w = random_layout()
    gp = grouped(sizes)
    obj = make_objective("yetirank", random_state=3)
    a = run(obj, y, s, gp, w, iteration=0)[0]
    np.testing.assert_array_equal(a, run(obj, y, s, gp, w, iteration=0)[0])
    assert not np.array_equal(a, run(obj, y, s, gp, w, iteration=1)[0])
    assert not np.array_equal(a, run(make_objective("yetirank", random_state=4), y, s, gp, w,
                                     iteration=0)[0])
    # a shard of the queries draws by their global indices: the same gradients
    first, rest = slice(0, gp[60]), slice(gp[60], None)
    shard = run(obj, y[rest], s[rest], gp[60:] - gp[60], w[rest], iteration=0,
                query_index=np.arange(60, len(sizes)))[0]
    np.testing.assert_array_equal(shard, a[rest])
    assert not np.array_equal(run(obj, y[rest], s[rest], gp[60:] - gp[60], w[rest])[0],
                              a[rest])
    assert first.stop > 0


def test_more_permutations_smooth_the_gradients():
    """The average over permutations converges: 40 permutations are closer to 400 than
    one permutation is (the estimate's noise falls as 1/sqrt(permutations))."""
    y, s, _ = random_queries([40] * 20, 6)
    gp = grouped([40] * 20)

    def grad(m, seed):
        return run(make_objective("yetirank", random_state=seed, permutations=m), y, s, gp)[0]

    target = grad(400, 0)
    assert np.linalg.norm(grad(40, 1) - target) < 0.5 * np.linalg.norm(grad(1, 1) - target)


def test_gradient_range_check():
    y = np.array([0.0, 1e37, 0.0, 1.0])
    with pytest.raises(ValueError, match="yetirank labels span"):
        make_objective("yetirank").init_score(y, np.array([0, 2, 4]), None)


# ------------------------------------------------------------------------------------------
# fits
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ranking_data():
    X, y, qid = make_ranking(n_queries=160, docs_per_query=30, n_features=10,
                             n_informative=5, random_state=0)
    return train_test_split_by_query(X, y, qid=qid, test_size=0.25, random_state=0)


def fit(data, **params):
    X, _, y, _, q, _ = data
    base = dict(objective="yetirank", n_estimators=30, growth="depthwise", max_depth=4,
                max_leaves=None, min_samples_leaf=5, random_state=0)
    return GPUHistGBDTRanker(**{**base, **params}).fit(X, y, qid=q)


def test_fit_is_deterministic_per_random_state(ranking_data):
    X = ranking_data[0]
    a = fit(ranking_data).predict(X)
    np.testing.assert_array_equal(a, fit(ranking_data).predict(X))
    np.testing.assert_array_equal(a, fit(ranking_data, n_jobs=1).predict(X))
    assert not np.array_equal(a, fit(ranking_data, random_state=1).predict(X))
    assert not np.array_equal(a, fit(ranking_data, yetirank_decay=0.5).predict(X))


def test_fit_improves_ndcg_and_competes_with_lambdarank(ranking_data):
    _, Xt, _, yt, _, qt = ranking_data
    start = ndcg_score(yt, np.zeros(len(yt)), qid=qt, k=10)
    yeti = fit(ranking_data).score(Xt, yt, qid=qt)
    lambdarank = fit(ranking_data, objective="lambdarank").score(Xt, yt, qid=qt)
    assert yeti > start + 0.1
    assert yeti > lambdarank - 0.03, (yeti, lambdarank)


def test_params_round_trip(ranking_data, tmp_path):
    X = ranking_data[0]
    model = fit(ranking_data, yetirank_permutations=3, yetirank_decay=0.6)
    assert clone(model).get_params()["yetirank_permutations"] == 3
    assert model.set_params(yetirank_decay=0.7).yetirank_decay == 0.7
    model.set_params(yetirank_decay=0.6)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    path = tmp_path / "yeti.json"
    model.save_model(path)
    loaded = GPUHistGBDTRanker.load_model(path)
    assert loaded.get_params()["yetirank_permutations"] == 3
    assert loaded.get_params()["yetirank_decay"] == 0.6
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # refitting the loaded estimator trains the same model
    refit = clone(loaded).fit(X, ranking_data[2], qid=ranking_data[4])
    np.testing.assert_array_equal(refit.predict(X), model.predict(X))


@pytest.mark.parametrize("params,match", [
    (dict(yetirank_permutations=0), "yetirank_permutations"),
    (dict(yetirank_permutations=2.5), "yetirank_permutations"),
    (dict(yetirank_decay=-0.1), "yetirank_decay"),
    (dict(yetirank_decay=1.5), "yetirank_decay"),
    (dict(yetirank_decay="high"), "yetirank_decay"),
    (dict(objective="yeti"), "objective"),
])
def test_bad_parameters_name_themselves(params, match):
    X = np.random.default_rng(0).normal(size=(8, 2))
    model = GPUHistGBDTRanker(objective="yetirank", n_estimators=2)
    model.set_params(**params)
    with pytest.raises(ValueError, match=match):
        model.fit(X, [0, 1, 2, 0, 1, 0, 1, 1], qid=[0, 0, 0, 0, 1, 1, 1, 1])
    assert not hasattr(model, "ensemble_")


def test_cuda_is_refused_before_any_work():
    hp = dict(objective="yetirank", device="cuda", hist_mode="quantised")
    with pytest.raises(NotImplementedError, match="objective='yetirank'.*device='cuda'"):
        check_device(hp, True)
    check_device(hp, False)  # the CPU runs it
    check_device(dict(hp, objective="lambdarank"), True)


def test_catboost_yetirank_peer(ranking_data):
    """Not clearly worse than CatBoost's YetiRank with the same rounds, depth and rate."""
    catboost = pytest.importorskip("catboost")
    X, Xt, y, yt, q, qt = ranking_data
    order = np.argsort(q, kind="stable")
    cb = catboost.CatBoostRanker(loss_function="YetiRank", iterations=60, depth=4,
                                 learning_rate=0.1, random_seed=0, verbose=False,
                                 thread_count=2, allow_writing_files=False)
    cb.fit(X[order], y[order], group_id=q[order])
    theirs = ndcg_score(yt, cb.predict(Xt), qid=qt, k=10)
    ours = fit(ranking_data, n_estimators=60, learning_rate=0.1).score(Xt, yt, qid=qt)
    assert ours > theirs - 0.03, (ours, theirs)
