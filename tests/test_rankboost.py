"""RankBoost: potentials, integral-histogram stumps and whole fits against the naive
reference that materialises every crucial pair (tests/naive_rankboost.py)."""

import numpy as np
import pytest

import naive_rankboost as naive
from skltr._cpu.histogram import build_histogram_serial
from skltr._cpu.rankboost import PI_SHIFT, best_stump, pair_log_sums, potentials
from skltr._engine.binning import BinMapper
from skltr._engine.histogram import HIST_PAD_BINS
from skltr._rankboost.boosting import (RankBoostParams, _label_order, boost,
                                       initial_log_weights)


def problem(seed, n_queries=12, max_docs=9, n_features=4, nan=True, ties=True):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_docs + 1, n_queries)  # single-document queries included
    group_ptr = np.r_[0, np.cumsum(sizes)]
    n = group_ptr[-1]
    X = rng.normal(size=(n, n_features))
    if ties:
        X[:, 0] = np.round(X[:, 0])  # heavy ties in a feature
    if nan:
        X[rng.random((n, n_features)) < 0.15] = np.nan
    y = rng.integers(0, 4, n).astype(float)
    y[group_ptr[2]:group_ptr[3]] = 1.0  # a query with all-equal labels
    return X, y, group_ptr


def kernel_pi(H, y, group_ptr, log_c):
    n = len(y)
    log_a, log_b, log_p = np.empty(n), np.empty(n), np.empty(len(group_ptr) - 1)
    pair_log_sums(H, y, _label_order(y, group_ptr), group_ptr, log_a, log_b, log_p)
    terms = log_c + log_p
    log_z = np.logaddexp.reduce(terms[np.isfinite(terms)])
    pi = np.empty(n, np.int64)
    potentials(H, log_a, log_b, np.repeat(log_c, np.diff(group_ptr)), log_z, pi)
    return pi  # fixed point: pi(d) * 2**PI_SHIFT, rounded


@pytest.mark.parametrize("weighting", ["query", "pair"])
@pytest.mark.parametrize("weighted", [False, True])
def test_potentials_equal_the_pairwise_sums(weighting, weighted):
    X, y, gp = problem(0)
    rng = np.random.default_rng(1)
    w = np.repeat(rng.uniform(0.5, 2, len(gp) - 1), np.diff(gp)) if weighted else None
    pairs, D1 = naive.initial_weights(y, gp, w, weighting)
    log_c = initial_log_weights(y, gp, w, weighting)
    H = rng.normal(0, 3, len(y))  # a spread of scores, as after some rounds
    D = D1 * np.exp([H[a] - H[b] for a, b, _ in pairs])
    D /= D.sum()
    np.testing.assert_allclose(kernel_pi(H, y, gp, log_c) / 2.0**PI_SHIFT,
                               naive.potentials(len(y), pairs, D), rtol=1e-12, atol=1e-15)


def test_potentials_stay_finite_for_huge_score_spreads():
    X, y, gp = problem(2)
    log_c = initial_log_weights(y, gp, None, "query")
    H = np.random.default_rng(3).normal(0, 2000, len(y))  # exp(H) overflows float64
    q = kernel_pi(H, y, gp, log_c)
    pi = q / 2.0**PI_SHIFT
    assert abs(pi.sum()) < 1e-9 and np.abs(pi).max() <= 1 + 1e-12
    assert np.abs(q).sum() < 2**62  # the fixed-point sums cannot overflow


def test_best_stump_is_the_largest_r():
    X, y, gp = problem(4)
    bm = BinMapper(max_bins=7, random_state=0).fit(X)
    Xb = bm.transform(X)
    qpi = kernel_pi(np.random.default_rng(5).normal(size=len(y)), y, gp,
                    initial_log_weights(y, gp, None, "query"))
    pi = qpi / 2.0**PI_SHIFT
    F = X.shape[1]
    hist = np.zeros((F, bm.missing_bin + 1 + HIST_PAD_BINS, 1), np.int64)
    build_histogram_serial(Xb, qpi, qpi, np.empty(0, np.uint32), 0, len(y), False, hist)
    i64 = np.int64
    f, b, q, r = best_stump(hist, bm.n_bins, np.ones(F, bool), bm.missing_bin,
                            np.empty(F, i64), np.empty(F, i64), np.empty(F, i64),
                            np.empty(F, i64))
    nf, nb, nq, nr = naive.best_stump(Xb, pi, bm.n_bins, bm.missing_bin)
    assert abs(abs(r) - abs(nr)) < 1e-12
    assert (f, b) == (nf, nb) or abs(naive.stump_r(Xb, pi, f, b, q, bm.missing_bin) - r) < 1e-12
    assert abs(naive.stump_r(Xb, pi, f, b, q, bm.missing_bin) - r) < 1e-12


@pytest.mark.parametrize("weighting", ["query", "pair"])
def test_fit_chooses_the_naive_stumps(weighting):
    X, y, gp = problem(6, n_queries=15)
    params = RankBoostParams(n_estimators=8, n_thresholds=6, pair_weighting=weighting, seed=0)
    result = boost(X, y, gp, None, params)
    bm = result.bin_mapper
    ref = naive.fit(bm.transform(X), y, gp, bm.n_bins, bm.missing_bin, 8, weighting)
    ens = result.ensemble
    assert ens.n_trees == 8
    H = np.zeros(len(y))
    for t, (f, b, q_def, alpha, _) in enumerate(ref):
        root = ens.tree_ptr[t]
        assert ens.feature[root] == f
        np.testing.assert_allclose(ens.value[root + 2], alpha, rtol=1e-9)
        H += np.where(np.isnan(X[:, f]), q_def, bm.transform(X)[:, f] > b) * alpha
    np.testing.assert_allclose(ens.predict(X), H, rtol=1e-9, atol=1e-12)


def test_all_equal_labels_learn_nothing():
    X, y, gp = problem(7)
    y[:] = 2.0
    with pytest.warns(UserWarning, match="no crucial pair"):
        result = boost(X, y, gp, None, RankBoostParams(n_estimators=5, n_thresholds=8))
    assert np.all(result.ensemble.predict(X) == 0.0)


# ---------------------------------------------------------------------------- estimator
import warnings  # noqa: E402

import scipy.sparse as sp  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from _rankers import SingleQueryRankBoostRanker  # noqa: E402
from skltr import RankBoostRanker  # noqa: E402
from skltr.datasets import load_letor, make_ranking  # noqa: E402
from skltr.metrics import ndcg_score  # noqa: E402
from skltr.utils.estimator_checks import check_ranker  # noqa: E402


def _data(seed=0):
    return make_ranking(n_queries=40, docs_per_query=15, n_features=6, n_informative=3,
                        random_state=seed)


def test_check_ranker():
    check_ranker(RankBoostRanker(n_estimators=5, random_state=0))


@parametrize_with_checks(
    [SingleQueryRankBoostRanker(n_estimators=3, n_thresholds=8, random_state=0)],
    expected_failed_checks=lambda e: {
        "check_supervised_y_2d": "2-D y is rejected on purpose: rankers have one target.",
        "check_sample_weight_equivalence_on_dense_data":
            "a repeated document forms extra pairs; a weight does not",
        "check_sample_weight_equivalence_on_sparse_data":
            "a repeated document forms extra pairs; a weight does not",
    })
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no crucial pair" on tiny data
        check(estimator)


def test_eval_set_early_stopping_and_attributes():
    X, y, qid = _data()
    Xv, yv, qv = _data(1)
    r = RankBoostRanker(n_estimators=200, early_stopping=True, n_iter_no_change=5,
                        eval_at=[5, 10], random_state=0).fit(X, y, qid=qid,
                                                             eval_set=[(Xv, yv, qv)])
    curve = r.evals_result_["valid_0"]["ndcg@5"]
    assert r.n_iter_ == len(curve) < 200 and r.best_iteration_ == r.n_estimators_
    assert curve[r.best_iteration_ - 1] == max(curve)
    kept = RankBoostRanker(n_estimators=r.n_estimators_, random_state=0).fit(X, y, qid=qid)
    np.testing.assert_array_equal(kept.predict(Xv), r.predict(Xv))  # same stumps
    assert r.feature_importances_.shape == (6,) and abs(r.feature_importances_.sum() - 1) < 1e-12
    assert ndcg_score(yv, r.predict(Xv), qid=qv, k=5) == curve[r.best_iteration_ - 1]


def test_sparse_input_gives_the_dense_model():
    X, y, qid = _data(2)
    X[np.abs(X) < 0.7] = 0.0
    dense = RankBoostRanker(n_estimators=20, random_state=0).fit(X, y, qid=qid)
    for fmt in (sp.csr_matrix, sp.csc_matrix):
        m = RankBoostRanker(n_estimators=20, random_state=0).fit(fmt(X), y, qid=qid)
        assert m.to_tree_ensemble().equals(dense.to_tree_ensemble())
        np.testing.assert_array_equal(m.predict(fmt(X)), dense.predict(X))


def test_save_load_and_device_errors(tmp_path):
    X, y, qid = _data(3)
    r = RankBoostRanker(n_estimators=10, random_state=0).fit(X, y, qid=qid)
    r.save_model(tmp_path / "rb.json")
    back = RankBoostRanker.load_model(tmp_path / "rb.json")
    np.testing.assert_array_equal(back.predict(X), r.predict(X))
    assert back.get_params() == r.get_params()
    from skltr._device import is_cupy_available

    with pytest.raises(ValueError, match="device='tpu' is not understood"):
        RankBoostRanker(device="tpu").fit(X, y, qid=qid)
    # every visible GPU is OnDemandRuleRanker's alone: refused by name, before CuPy is looked for
    with pytest.raises(ValueError, match="RankBoostRanker does not support device='cuda:all'"):
        RankBoostRanker(device="cuda:all").fit(X, y, qid=qid)
    if not is_cupy_available():  # with CuPy: tests/test_rankboost_gpu.py
        gpu = RankBoostRanker(device="cuda")
        with pytest.raises(ImportError, match=r"\"\.\[gpu\]\""):
            gpu.fit(X, y, qid=qid)
        assert not hasattr(gpu, "ensemble_")


def test_quality_letor_small(letor_dir):
    # The bar: 0.768, what a widely used Java RankBoost reached on this sample with
    # 300 rounds; LightGBM's LGBMRanker() defaults reach 0.736 on the same split.
    X, y, qid = load_letor(letor_dir / "train.letor")
    Xt, yt, qt = load_letor(letor_dir / "test.letor", n_features=X.shape[1])
    r = RankBoostRanker(n_estimators=300, random_state=0).fit(X, y, qid=qid)
    assert ndcg_score(yt, r.predict(Xt), qid=qt, k=10) >= 0.768


def test_fit_does_not_depend_on_the_thread_count():
    # fixed-point histograms: row chunks on more threads than feature blocks sum exactly
    X, y, qid = make_ranking(n_queries=60, docs_per_query=20, n_features=3, n_informative=2,
                             random_state=4)
    models = [RankBoostRanker(n_estimators=30, n_jobs=j, random_state=0).fit(
        X, y, qid=qid).to_tree_ensemble() for j in (1, 2)]
    assert models[0].equals(models[1])


@pytest.mark.parametrize("early", [False, True])
def test_cover_counted_on_the_bins_equals_the_node_visits(early):
    # the CPU loop counts each stump's training rows on the binned matrix; a traversal of
    # the raw rows (node_visits, the GPU loop's way) gives the same cover: NaN rows, a
    # constant feature, "missing versus the rest" stumps, and early stopping's cut
    from skltr.trees._traversal import node_visits

    X, y, qid = _data(3)
    rng = np.random.default_rng(3)
    X[rng.random(X.shape) < 0.15] = np.nan
    X[:, 1] = 2.5
    X[: X.shape[0] // 2, 2] = np.nan
    kwargs = ({"early_stopping": True, "n_iter_no_change": 3} if early else {})
    r = RankBoostRanker(n_estimators=60, n_thresholds=7, random_state=0, **kwargs).fit(
        X, y, qid=qid, **({"eval_set": [_data(4)]} if early else {}))
    ens = r.to_tree_ensemble()
    order = np.argsort(qid, kind="stable")
    np.testing.assert_array_equal(ens.cover, node_visits(ens, X[order]).astype(np.float64))
    assert ens.cover.dtype == np.float64 and ens.cover.size == 3 * ens.n_trees
