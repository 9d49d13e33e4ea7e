"""Tests of ``objective="yetirank"`` (skltr._cpu.yetirank.yetirank_gradients and its CUDA
twin, skltr._gpu.yetirank).

The kernel against the plain-Python reference ``naive_objectives.yetirank`` (same hash, its
own sort, pair weights summed per pair before the derivatives, as CatBoost orders its work)
on queries of 1 to 300 documents with label ties and all-equal labels; the random stream
(query layout, rounds, seeds; the thread count: tests/test_objectives.py); fits
(determinism, NDCG gain, lambdarank as the yardstick, CatBoost when installed); and the
estimator's parameter checks.

On a GPU (the ``gpu`` marker; skipped without CuPy and a device): the CUDA kernels'
gradients are the CPU's float32 bits on :data:`BIT_CASES` (also run through the CUDA source
on the CPU by tests/test_yetirank_cuda_source.py), and a ``device="cuda"`` fit is the CPU's
model.
"""

import json
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


def _key_families(rng, cnt):
    """Keys as the kernel draws them (``exp(s) * u / (1.000001 - u)``), with zeros
    (underflowed exponentials) and repeats; bunched within one bucket of the sort (its
    comparison fallback); and all equal."""
    u = rng.random(cnt)
    noisy = np.exp(rng.normal(size=cnt) * 3.0) * (u / (1.000001 - u))
    holes = noisy.copy()
    holes[rng.random(cnt) < 0.3] = 0.0
    holes[rng.random(cnt) < 0.2] = holes[0]
    bunched = 1.0 + rng.integers(0, 5, cnt) * 2.0**-40
    bunched[:cnt // 2] = noisy[:cnt // 2]
    return {"noisy": noisy, "holes": holes, "bunched": bunched, "equal": np.full(cnt, 0.5),
            "zeros": np.zeros(cnt)}


@pytest.mark.parametrize("cnt", [1, 2, 3, 4, 5, 7, 8, 9, 23, 24, 31, 64, 100, 257, 1000])
def test_noisy_order_is_a_stable_descending_sort(cnt):
    """The kernel's sorts (buckets; network runs and branch-free merges) against numpy's
    stable argsort."""
    from skltr._cpu.yetirank import _merge_order, _yetirank_order

    rng = np.random.default_rng(cnt)
    for trial in range(10):
        for family, keys in _key_families(rng, cnt).items():
            expected = np.argsort(-keys, kind="stable")
            idx, tmp = np.empty(cnt, np.int64), np.empty(cnt, np.int64)
            order = _yetirank_order(keys, cnt, idx, tmp, np.empty(cnt), np.empty(cnt),
                                    np.empty(cnt + 2, np.int64))
            np.testing.assert_array_equal(order, expected, family)
            order = _merge_order(keys, cnt, idx, tmp, np.empty(cnt), np.empty(cnt))
            np.testing.assert_array_equal(order, expected, family)


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


def test_cuda_is_accepted():
    # the CUDA twin exists (skltr._gpu.yetirank): nothing refuses the objective on the GPU
    hp = dict(objective="yetirank", device="cuda", hist_mode="quantised")
    check_device(hp, True)
    with pytest.raises(NotImplementedError, match="hist_mode"):  # what the GPU refuses
        check_device(dict(hp, hist_mode="float"), True)


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


# ------------------------------------------------------------------------------------------
# the CUDA twin: the CPU's bits
# ------------------------------------------------------------------------------------------

def _case(sizes, seed=0, *, rseed=0, iteration=0, permutations=10, decay=0.85,
          weighted=False, tie_scores=False, real_labels=False, equal_labels=(), span=None,
          tiny_weights=False, signed_zeros=False, query_offset=None):
    """One input of the bit-for-bit comparisons: ``dict(y, s, gp, w, seed, iteration,
    permutations, decay, query_index)``. ``span``: scores spread over +-span within each
    query (exponentials that underflow: the exact branch and ties at 0); ``tiny_weights``:
    weights near 1e-41, so the float32 results are subnormal; ``signed_zeros``: scores of
    -0.0 and 0.0; ``query_offset``: the queries are a shard, drawn by global indices."""
    rng = np.random.default_rng(rseed)
    y, s, w = random_queries(sizes, rseed, real_labels=real_labels, tie_scores=tie_scores)
    gp = grouped(sizes)
    for q in equal_labels:
        y[gp[q]:gp[q + 1]] = 3.0
    if span is not None:
        s = rng.uniform(-span, span, s.size)
    if signed_zeros:
        s[rng.random(s.size) < 0.3] = 0.0
        s[rng.random(s.size) < 0.3] = -0.0
    if tiny_weights:
        w = w * 1e-41
    query_index = None if query_offset is None else query_offset + np.arange(len(sizes))
    return dict(y=y, s=s, gp=gp, w=w if weighted or tiny_weights else None, seed=seed,
                iteration=iteration, permutations=permutations, decay=decay,
                query_index=query_index)


#: Inputs on which the CUDA kernels must give the CPU's bits: one-document and equal-label
#: queries, queries around the sort's runs of 32, longer than 64 and than a block (256
#: threads), of several merge passes; tied scores; weights; real labels; score spans whose
#: exponentials underflow; subnormal results; -0.0; shards; the decay's extremes.
BIT_CASES = {
    "mixed": lambda: _case([1, 2, 7, 40, 64, 65, 300, 1000], 0, rseed=1, weighted=True,
                           tie_scores=True),
    "ties_equal_labels": lambda: _case([1, 3, 5, 1, 12, 31, 32, 33, 2], 2**32 - 1, rseed=2,
                                       iteration=7, permutations=3, decay=0.5,
                                       tie_scores=True, equal_labels=(1, 4)),
    "large_spans": lambda: _case([2, 9, 70, 257], 11, rseed=3, iteration=1, permutations=4,
                                 decay=1.0, span=900.0, weighted=True),
    "real_labels_one_permutation": lambda: _case([5, 40, 129], 5, rseed=4, iteration=3,
                                                 permutations=1, decay=0.0,
                                                 real_labels=True),
    "subnormal_results_signed_zeros": lambda: _case([3, 17, 90], 9, rseed=5, iteration=2,
                                                    permutations=2, tiny_weights=True,
                                                    signed_zeros=True),
    "shard": lambda: _case([4, 50, 8, 33], 12345, rseed=6, iteration=4, permutations=6,
                           weighted=True, query_offset=10**9),
    "long_query": lambda: _case([3000, 1, 100], 7, rseed=7, permutations=5, decay=0.9),
}


def cpu_bits(case, iteration=None):
    """The CPU kernel's float32 ``(grad, hess)`` of a :data:`BIT_CASES` input."""
    obj = make_objective("yetirank", random_state=case["seed"],
                         permutations=case["permutations"], decay=case["decay"])
    it = case["iteration"] if iteration is None else iteration
    return run(obj, case["y"], case["s"], case["gp"], case["w"], it, case["query_index"])


def assert_same_bits(actual, expected, what=""):
    """float32 arrays with the same bits (-0.0 is not 0.0; subnormals count)."""
    np.testing.assert_array_equal(np.asarray(actual).view(np.uint32),
                                  np.asarray(expected, np.float32).view(np.uint32),
                                  err_msg=what)


def cuda_bits(case, iteration=None, scratch_bytes=None):
    """The CUDA kernels' float32 ``(grad, hess)`` (``scratch_bytes``: a smaller sort
    scratch, so that a round's permutations take several launches)."""
    import cupy

    from skltr._gbdt.objectives_cuda import make_cuda_gradients
    from skltr._gpu import _config

    obj = make_objective("yetirank", random_state=case["seed"],
                         permutations=case["permutations"], decay=case["decay"])
    budget = _config.YETIRANK_SCRATCH_BYTES if scratch_bytes is None else scratch_bytes
    with _config.override(YETIRANK_SCRATCH_BYTES=budget):
        dev = make_cuda_gradients(obj, case["y"], case["gp"], case["w"],
                                  case["query_index"])
    n = case["y"].size
    grad = cupy.full(n, cupy.nan, cupy.float32)  # NaN: a row left unwritten shows
    hess = cupy.full(n, cupy.nan, cupy.float32)
    it = case["iteration"] if iteration is None else iteration
    dev.gradients(cupy.asarray(case["s"]), grad, hess, it)
    return grad.get(), hess.get()


def test_bit_cases_exercise_what_they_name():
    # the cases reach the branches they are for (on the CPU kernel)
    big = BIT_CASES["large_spans"]()
    gp = big["gp"]
    q = slice(gp[3], gp[4])
    assert np.ptp(big["s"][q]) > 1500  # exp(s - max s) underflows for some documents
    tiny = BIT_CASES["subnormal_results_signed_zeros"]()
    g, h = cpu_bits(tiny)
    sub = (g != 0) & (np.abs(g) < np.finfo(np.float32).tiny)
    assert sub.sum() > 10 and np.any(np.signbit(tiny["s"]) & (tiny["s"] == 0))
    g, h = cpu_bits(BIT_CASES["ties_equal_labels"]())
    gp = BIT_CASES["ties_equal_labels"]()["gp"]
    assert not g[gp[1]:gp[2]].any() and not h[gp[4]:gp[5]].any()  # equal labels: zeros


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(BIT_CASES))
def test_cuda_gradients_are_the_cpu_bits(name):
    pytest.importorskip("cupy")
    case = BIT_CASES[name]()
    g_cpu, h_cpu = cpu_bits(case)
    g, h = cuda_bits(case)
    assert_same_bits(g, g_cpu, "grad")
    assert_same_bits(h, h_cpu, "hess")
    # the permutations in launches of 2 (the sums carried over between launches)
    n = case["y"].size
    g, h = cuda_bits(case, scratch_bytes=24 * n * 2)
    assert_same_bits(g, g_cpu, "grad, launches of 2 permutations")
    assert_same_bits(h, h_cpu, "hess, launches of 2 permutations")


@pytest.mark.gpu
def test_cuda_gradients_follow_the_rounds_and_repeat():
    pytest.importorskip("cupy")
    case = BIT_CASES["mixed"]()
    previous = None
    for it in (0, 1, 5, 99):
        g_cpu, h_cpu = cpu_bits(case, iteration=it)
        g, h = cuda_bits(case, iteration=it)
        assert_same_bits(g, g_cpu, f"round {it}")
        assert_same_bits(h, h_cpu, f"round {it}")
        again = cuda_bits(case, iteration=it)  # no atomics: identical runs
        assert_same_bits(again[0], g)
        assert_same_bits(again[1], h)
        assert previous is None or not np.array_equal(previous, g)  # a new draw each round
        previous = g


def _same_model(cpu, gpu, X):
    """Identical predictions, trees and tree JSON (``cover``, TreeSHAP's hessian sums, is
    only equal to 1e-6 across devices: tests/test_explain_gpu.py)."""
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))
    assert gpu.ensemble_.equals(cpu.ensemble_)
    docs = []
    for model in (cpu, gpu):
        doc = model.ensemble_.to_document()
        doc["arrays"].pop("cover", None)
        docs.append(json.dumps(doc, sort_keys=True))
    assert docs[0] == docs[1]


@pytest.mark.gpu
@pytest.mark.parametrize("params", [
    {}, dict(yetirank_permutations=3, yetirank_decay=0.6, subsample=0.8,
             colsample_bytree=0.8, growth="leafwise", max_leaves=15, max_depth=None)])
def test_cuda_fit_is_the_cpu_fit(ranking_data, params):
    pytest.importorskip("cupy")
    X, Xt = ranking_data[0], ranking_data[1]
    cpu = fit(ranking_data, **params)
    gpu = fit(ranking_data, device="cuda", **params)
    assert gpu.device_.startswith("cuda")
    _same_model(cpu, gpu, np.concatenate([X, Xt]))
    again = fit(ranking_data, device="cuda", **params)  # deterministic
    _same_model(gpu, again, Xt)


@pytest.mark.gpu
def test_weighted_cuda_fit_is_the_cpu_fit(ranking_data):
    pytest.importorskip("cupy")
    X, _, y, _, q, _ = ranking_data
    w = np.random.default_rng(0).uniform(0.5, 2.0, y.size)
    base = dict(objective="yetirank", n_estimators=20, max_depth=4, growth="depthwise",
                max_leaves=None, random_state=2)
    cpu = GPUHistGBDTRanker(**base).fit(X, y, qid=q, sample_weight=w)
    gpu = GPUHistGBDTRanker(**base, device="cuda").fit(X, y, qid=q, sample_weight=w)
    _same_model(cpu, gpu, X)
