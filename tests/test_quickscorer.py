"""QuickScorer CPU backend: layout tables and kernel against the naive reference."""

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from naive_trees import naive_predict_raw
from skltr import QuickScorerPredictor
from skltr.trees import NodeFlags, TreeEnsemble
from skltr._cpu._simd import LANES
from skltr.trees._quickscorer import (CHUNKS_PER_THREAD, MAX_CHUNK_GROUPS, chunk_docs,
                                      cpu_tree_block)
from skltr.trees._quickscorer import predict_raw as qs_predict_raw
from skltr.trees._quickscorer_layout import MAX_QS_LEAVES, build_quickscorer_layout
from skltr.utils._cpu_cache import l2_cache_bytes
from strategies_trees import ensemble_and_inputs, ensembles, inputs

M_NAN = NodeFlags.MISSING_NAN << NodeFlags.MISSING_SHIFT


@settings(deadline=None, max_examples=200,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ensemble_and_inputs(), st.integers(1, 4), st.integers(1, 5))
def test_quickscorer_matches_naive_bitwise(case, tree_block, doc_block):
    ens, X = case
    layout = build_quickscorer_layout(ens, tree_block=tree_block)
    got = qs_predict_raw(ens, layout, X, doc_block=doc_block)
    expected = naive_predict_raw(ens, X)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@settings(deadline=None, max_examples=60,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data(), st.sampled_from([1, LANES, LANES + 4, 4 * LANES]), st.integers(1, 3))
def test_quickscorer_groups_and_chunks_match_naive(data, doc_block, tree_block):
    """Several groups of LANES documents per chunk, several chunks, a partial last group, one
    or two threads: every split of the documents gives the reference's bits."""
    ens, thr = data.draw(ensembles())
    X = data.draw(inputs(ens, thr, max_rows=3 * LANES + 5))
    layout = build_quickscorer_layout(ens, tree_block=tree_block)
    expected = naive_predict_raw(ens, X)
    for n_jobs in (1, 2):
        got = qs_predict_raw(ens, layout, X, doc_block=doc_block, n_jobs=n_jobs)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("n_rows", [0, 1, LANES - 1, LANES, LANES + 1, 100])
def test_quickscorer_row_counts_around_the_lane_width(n_rows):
    """0 and 1 rows, and counts that are not a multiple of the vQS group width."""
    rng = np.random.default_rng(n_rows)
    X = rng.normal(size=(max(n_rows, 1) + 200, 3))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1])
    hgb = HistGradientBoostingRegressor(max_iter=20, max_leaf_nodes=80, random_state=0).fit(X, y)
    ens = QuickScorerPredictor.from_model(hgb).ensemble_
    layout = build_quickscorer_layout(ens, tree_block=7)
    for n_jobs in (1, 2):
        got = qs_predict_raw(ens, layout, X[:n_rows], n_jobs=n_jobs)
        assert got.shape == (n_rows,)
        np.testing.assert_array_equal(got, naive_predict_raw(ens, X[:n_rows]))
        if n_rows:  # scikit-learn refuses 0 rows
            np.testing.assert_array_equal(got, hgb.predict(X[:n_rows]))


def test_chunk_docs_is_a_positive_multiple_of_the_lanes():
    l2 = 2 << 20
    assert chunk_docs(0, 2, 136, 8, l2) == LANES
    assert chunk_docs(10**6, 2, 136, 8, l2) == MAX_CHUNK_GROUPS * LANES
    # several chunks per thread before several groups per chunk
    n = LANES * MAX_CHUNK_GROUPS * CHUNKS_PER_THREAD * 16
    assert chunk_docs(n, 16, 136, 8, l2) == MAX_CHUNK_GROUPS * LANES
    assert chunk_docs(n - LANES, 16, 136, 8, l2) < MAX_CHUNK_GROUPS * LANES
    assert chunk_docs(10**6, 2, 10**5, 8, l2) == LANES  # wide rows: one group's transpose
    for n, threads, slots in [(1, 1, 1), (17, 3, 5), (1000, 2, 40), (10**5, 64, 3)]:
        chunk = chunk_docs(n, threads, slots, 4)
        assert chunk >= LANES and chunk % LANES == 0


def test_cpu_tree_block_fits_the_l2():
    ens = _docstring_tree()
    assert l2_cache_bytes() > 0
    small, large = cpu_tree_block(ens, 256 << 10), cpu_tree_block(ens, 4 << 20)
    assert small % 64 == 0 and large % 64 == 0 and 64 <= small < large
    assert cpu_tree_block(ens, 1) == 64
    assert QuickScorerPredictor.from_model(ens).layout_.tree_block == cpu_tree_block(ens)


def _balanced(depth, rng, n_features):
    """Columns of a full binary tree of ``depth`` with random features and thresholds
    (2**depth leaves): its root clears half the leaves, runs over several bytes."""
    n_int, n_leaves = 2**depth - 1, 2**depth
    return dict(feature=rng.integers(0, n_features, n_int).tolist() + [-1] * n_leaves,
                threshold=rng.normal(size=n_int).round(1).tolist() + [0.0] * n_leaves,
                left=[2 * i + 1 for i in range(n_int)] + [-1] * n_leaves,
                right=[2 * i + 2 for i in range(n_int)] + [-1] * n_leaves,
                value=[0.0] * n_int + rng.normal(size=n_leaves).tolist())


@pytest.mark.parametrize("flags", [0, M_NAN, NodeFlags.MISSING_ZERO << NodeFlags.MISSING_SHIFT])
def test_deep_trees_threads_and_chunks_match_naive(flags):
    """64-leaf trees (nodes whose cleared leaves span many bytes of the byte-sliced state,
    in every byte position), right chains (a run in the last byte alone), NaN and zero
    lanes, more threads than chunks, chunks not filling their groups."""
    rng = np.random.default_rng(flags)
    trees = [_balanced(6, rng, 4) for _ in range(5)] + [_chain(64, 2), _balanced(3, rng, 4)]
    cols = {k: sum((t[k] for t in trees), []) for k in trees[0]}
    sizes = np.cumsum([0] + [len(t["left"]) for t in trees])
    flag = [flags if f >= 0 else 0 for f in cols["feature"]]
    ens = TreeEnsemble(tree_ptr=sizes, n_features=4, flags=flag, **cols)
    X = rng.normal(size=(3 * LANES + 7, 4)).round(1)
    X[:, 2] = rng.integers(-2, 66, size=len(X))  # the chain's thresholds 0..62
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(X.shape) < 0.05] = 0.0
    expected = naive_predict_raw(ens, X)
    for tree_block in (1, 3, 64):
        layout = build_quickscorer_layout(ens, tree_block=tree_block)
        for rows in (1, LANES - 1, len(X)):
            for doc_block in (None, LANES, 2 * LANES):
                for n_jobs in (1, 2):
                    got = qs_predict_raw(ens, layout, X[:rows], n_jobs=n_jobs,
                                         doc_block=doc_block)
                    np.testing.assert_array_equal(got, expected[:rows])


def _categorical_ensemble(n_categories, rng, n_trees=6):
    """Depth-4 trees on feature 0 (numeric) and feature 1 (categorical: each node sends a
    random set of ``n_categories`` codes left)."""
    cols = {k: [] for k in ("feature", "threshold", "left", "right", "value", "flags",
                            "cat_offset", "cat_nwords")}
    words, ptr = [], [0]
    for _ in range(n_trees):
        n_int, n_leaves = 15, 16
        for i in range(n_int + n_leaves):
            internal = i < n_int
            cat = internal and rng.random() < 0.7
            cols["feature"].append((1 if cat else 0) if internal else -1)
            cols["threshold"].append(float(rng.normal()) if internal and not cat else 0.0)
            cols["left"].append(2 * i + 1 if internal else -1)
            cols["right"].append(2 * i + 2 if internal else -1)
            cols["value"].append(0.0 if internal else float(rng.normal()))
            cols["flags"].append(int(NodeFlags.CATEGORICAL) if cat else (M_NAN if internal
                                                                          else 0))
            nwords = int(rng.integers(1, -(-n_categories // 32) + 1)) if cat else 0
            bits = np.zeros(nwords, np.uint32)
            for code in rng.choice(32 * nwords, size=min(32 * nwords, 5), replace=False):
                bits[code >> 5] |= np.uint32(1) << np.uint32(code & 31)
            cols["cat_offset"].append(len(words))
            cols["cat_nwords"].append(nwords)
            words.extend(bits.tolist())
        ptr.append(ptr[-1] + n_int + n_leaves)
    return cols, np.array(words, np.uint32), ptr


@pytest.mark.parametrize("extra_flags", [0, NodeFlags.CAT_SET_RIGHT, NodeFlags.DEFAULT_LEFT,
                                         NodeFlags.CAT_INVALID_DEFAULT | NodeFlags.CAT_TRUNC_FIRST,
                                         NodeFlags.CAT_TRUNC_FIRST | NodeFlags.CAT_SET_RIGHT])
@pytest.mark.parametrize("n_categories", [10, 300])
def test_categorical_nodes_match_naive_in_plain_and_special_groups(n_categories, extra_flags):
    """Categorical nodes are routed a group of LANES documents at a time: a group whose codes
    are all plain (0 <= x < 2**31: the same code under any node's flags) looks them up
    without branches, other groups take the full rule lane by lane. Both give the
    reference's bits, for every flag of the categorical rule: codes beyond a node's words and
    never seen, 2**31 - 1, 2**31, NaN, -0.0, -0.5, -1 and infinities, in float64 and float32
    inputs."""
    rng = np.random.default_rng(n_categories + extra_flags)
    cols, words, ptr = _categorical_ensemble(n_categories, rng)
    cols["flags"] = [f | extra_flags if f & NodeFlags.CATEGORICAL else f
                     for f in cols["flags"]]
    ens = TreeEnsemble(tree_ptr=ptr, n_features=2, cat_bitsets=words, **cols)
    n = 5 * LANES + 9
    X = np.column_stack([rng.normal(size=n),
                         rng.integers(0, n_categories + 40, size=n).astype(np.float64)])
    X[:LANES, 1] = rng.choice([2.0**31 - 1, 1e9, 0.0, 31.0, 32.0, 2.5], size=LANES)
    special = [np.nan, -0.0, -0.5, -1.0, 2.0**31, np.inf, -np.inf, 1e300]
    hit = rng.choice(np.arange(2 * LANES, n), size=24, replace=False)  # groups 2.. mixed
    X[hit, 1] = rng.choice(special, size=hit.size)
    for Xin in (X, X.astype(np.float32)):
        expected = naive_predict_raw(ens, Xin)
        for tree_block in (1, 64):
            layout = build_quickscorer_layout(ens, tree_block=tree_block)
            for n_jobs in (1, 2):
                got = qs_predict_raw(ens, layout, Xin, n_jobs=n_jobs, doc_block=LANES)
                np.testing.assert_array_equal(got, expected)


def test_work_counter_hands_out_each_chunk_once():
    from numba import njit, prange

    from skltr._cpu._intrinsics import fetch_add

    @njit(parallel=True)
    def take_all(counter, taken, n_workers):
        for _ in prange(n_workers):
            while True:
                c = fetch_add(counter, 0, 1)
                if c >= taken.shape[0]:
                    break
                taken[c] += 1

    taken = np.zeros(10_000, np.int64)
    take_all(np.zeros(1, np.int64), taken, 4)
    assert (taken == 1).all()


def _docstring_tree():
    # n0 (x2 <= 0.5) -> left n1 (x0 <= 3) [leaves l0, l1], right l2; the module docstring's
    # picture. Local order: 0=n0, 1=n1, 2=l2, 3=l0, 4=l1.
    return TreeEnsemble(tree_ptr=[0, 5], feature=[2, 0, -1, -1, -1],
                        threshold=[0.5, 3.0, 0, 0, 0], left=[1, 3, -1, -1, -1],
                        right=[2, 4, -1, -1, -1], value=[0, 0, 30.0, 10.0, 20.0],
                        flags=[M_NAN, M_NAN, 0, 0, 0], n_features=3)


def test_layout_masks_and_leaf_order_match_the_docstring_picture():
    layout = build_quickscorer_layout(_docstring_tree())
    assert layout.leaf_value.tolist() == [10.0, 20.0, 30.0]  # leaves left to right
    masks = {int(f): int(m) & 0b111 for f, m in zip(layout.list_feature, layout.node_mask)}
    assert masks == {2: 0b100, 0: 0b110}
    X = np.array([[4.0, 0, 0.1], [1.0, 0, 0.1], [0, 0, 0.9]])
    assert qs_predict_raw(_docstring_tree(), layout, X).tolist() == [20.0, 10.0, 30.0]


def _chain(n_leaves, feature=0):
    """A right-leaning chain: node i tests x <= i and its left child is a leaf."""
    n_int = n_leaves - 1
    feature_a = [feature] * n_int + [-1] * n_leaves
    left = [n_int + i for i in range(n_int)] + [-1] * n_leaves
    right = [i + 1 for i in range(n_int - 1)] + [n_int + n_int] + [-1] * n_leaves
    return dict(feature=feature_a, threshold=list(range(n_int)) + [0.0] * n_leaves, left=left,
                right=right, value=[0.0] * n_int + [float(v) for v in range(n_leaves)])


def test_trees_over_64_leaves_fall_back_to_traversal_in_order():
    small, big = _chain(64), _chain(MAX_QS_LEAVES + 7)
    cols = {k: small[k] + big[k] for k in small}
    ens = TreeEnsemble(tree_ptr=[0, 127, 127 + 2 * 71 - 1], n_features=1, sum_dtype="float32",
                       precision="float32", **cols)
    layout = build_quickscorer_layout(ens)
    assert layout.tree_is_qs.tolist() == [True, False]
    X = np.arange(-1.0, 75.0, 0.5)[:, None]
    np.testing.assert_array_equal(qs_predict_raw(ens, layout, X), naive_predict_raw(ens, X))


def test_predictor_wraps_ensembles_and_reports_table_size():
    ens = _docstring_tree()
    X = np.array([[4.0, 0, 0.1], [np.nan, 0, np.nan]])
    for backend in ("quickscorer", "traversal"):
        qs = QuickScorerPredictor.from_model(ens, backend=backend)
        np.testing.assert_array_equal(qs.predict(X), naive_predict_raw(ens, X))
        # QuickScorer's tables; the traversal's heap-ordered top levels (a lean model)
        assert qs.layout_nbytes_ == qs.layout_.nbytes > 0
        again = pickle.loads(pickle.dumps(qs))
        np.testing.assert_array_equal(again.predict(X), qs.predict(X))
    assert QuickScorerPredictor.from_model(ens).backend_ == "quickscorer"
    assert qs.predict(np.zeros((0, 3))).shape == (0,)
    # missing type ZERO needs the full rule: the traversal keeps no tables for it
    zero = NodeFlags.MISSING_ZERO << NodeFlags.MISSING_SHIFT
    ens_zero = TreeEnsemble(tree_ptr=[0, 5], feature=[2, 0, -1, -1, -1],
                            threshold=[0.5, 3.0, 0, 0, 0], left=[1, 3, -1, -1, -1],
                            right=[2, 4, -1, -1, -1], value=[0, 0, 30.0, 10.0, 20.0],
                            flags=[zero, zero, 0, 0, 0], n_features=3)
    tr = QuickScorerPredictor.from_model(ens_zero, backend="traversal")
    assert tr.layout_ is None and tr.layout_nbytes_ == 0
    np.testing.assert_array_equal(tr.predict(X), naive_predict_raw(ens_zero, X))


def test_predictor_errors():
    with pytest.raises(ValueError, match="from_model"):
        QuickScorerPredictor().fit(np.zeros((2, 3)), [0, 1])
    with pytest.raises(ValueError, match="backend"):
        QuickScorerPredictor.from_model(_docstring_tree(), backend="fast")
    qs = QuickScorerPredictor.from_model(_docstring_tree())
    with pytest.raises(ValueError, match="X has 2 features"):
        qs.predict(np.zeros((1, 2)))
    with pytest.raises(TypeError, match="cannot convert"):
        QuickScorerPredictor.from_model(object())


@parametrize_with_checks([QuickScorerPredictor(HistGradientBoostingRegressor(max_iter=5))])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_meta_estimator_fits_rankers_with_qid_and_matches_them():
    import sklearn
    from sklearn.model_selection import GridSearchCV

    lgb = pytest.importorskip("lightgbm")
    from skltr.datasets import make_ranking
    from skltr.model_selection import QueryKFold, make_ranking_scorer

    X, y, qid = make_ranking(n_queries=40, docs_per_query=15, n_features=8, n_informative=4,
                             random_state=0)
    X = X.astype(np.float64)
    perm = np.random.default_rng(0).permutation(len(y))  # unsorted qid on purpose
    X, y, qid = X[perm], y[perm], qid[perm]
    ranker = lgb.LGBMRanker(n_estimators=10, num_leaves=7, min_child_samples=5, verbose=-1,
                            n_jobs=1)
    qs = QuickScorerPredictor(ranker).fit(X, y, qid=qid)
    order = np.argsort(qid, kind="stable")
    reference = lgb.LGBMRanker(**ranker.get_params()).fit(
        X[order], y[order], group=np.unique(qid, return_counts=True)[1])
    np.testing.assert_array_equal(qs.predict(X), reference.predict(X))
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(QuickScorerPredictor(ranker), {"backend": ["quickscorer",
                                                                        "traversal"]},
                              cv=QueryKFold(3), scoring=make_ranking_scorer("ndcg@5"))
        search.fit(X, y, qid=qid)
    scores = search.cv_results_["mean_test_score"]
    assert scores[0] == scores[1]  # both backends give identical predictions


def test_backend_registry_scores_like_the_ensemble():
    # every registered CPU backend, through the one dispatch, equals TreeEnsemble.predict_raw
    from skltr import GPUHistGBDTRanker, QuickScorerPredictor
    from skltr.datasets import make_ranking
    from skltr.trees._backends import BACKENDS, choose_backend, get_backend

    X, y, qid = make_ranking(n_queries=30, docs_per_query=15, n_features=6, n_informative=3,
                             random_state=3)
    ens = GPUHistGBDTRanker(n_estimators=5, max_leaves=8, random_state=0).fit(
        X, y, qid=qid).to_tree_ensemble()
    ref = ens.predict_raw(X)
    for name, backend in BACKENDS.items():
        if backend.device != "cpu":
            continue
        layout = backend.layout(ens)
        np.testing.assert_array_equal(backend.predict_raw(ens, layout, X, 1), ref)
        assert (backend.table_bytes(layout) > 0) == (backend.build_layout is not None)
        assert QuickScorerPredictor.from_model(ens, backend=name).backend_ == name
    assert get_backend("auto", ens).name == choose_backend(ens) == "quickscorer"
    assert set(QuickScorerPredictor._parameter_constraints["backend"][0].options) == \
        {"auto", *BACKENDS}


def test_auto_scores_stumps_and_single_leaves_with_quickscorer():
    # RankBoost's stumps (and trees that are a single leaf) take QuickScorer under "auto",
    # measured faster than traversal on them (benchmarks/predict_stumps.py); the ranker's
    # predict, the predictor and the ensemble agree bit for bit; no trees: traversal
    from skltr import QuickScorerPredictor, RankBoostRanker
    from skltr.datasets import make_ranking
    from skltr.trees import TreeEnsemble
    from skltr.trees._backends import choose_backend

    X, y, qid = make_ranking(n_queries=30, docs_per_query=15, n_features=6, n_informative=3,
                             random_state=4)
    X[::7, 2] = np.nan
    ranker = RankBoostRanker(n_estimators=40).fit(X, y, qid=qid)
    ens = ranker.to_tree_ensemble()
    assert set(ens.n_leaves().tolist()) <= {1, 2} and choose_backend(ens) == "quickscorer"
    predictor = QuickScorerPredictor.from_model(ens)
    assert predictor.backend_ == "quickscorer"
    np.testing.assert_array_equal(predictor.predict(X), ens.predict_raw(X))
    np.testing.assert_array_equal(ranker.predict(X), ens.predict_raw(X))
    leaves = TreeEnsemble(tree_ptr=[0, 1, 2], feature=[-1, -1], threshold=[0.0, 0.0],
                          left=[-1, -1], right=[-1, -1], value=[0.25, 0.5], n_features=6,
                          source={"library": "skltr"})
    assert choose_backend(leaves) == "quickscorer"
    np.testing.assert_array_equal(QuickScorerPredictor.from_model(leaves).predict(X),
                                  leaves.predict_raw(X))
    empty = TreeEnsemble(tree_ptr=[0], feature=[], threshold=[], left=[], right=[], value=[],
                         n_features=6, source={"library": "skltr"})
    assert choose_backend(empty) == "traversal"
