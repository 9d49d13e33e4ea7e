"""Monotone and interaction constraints of the GBDT ranker (issue #29).

References: the predictions themselves on random probes (monotone along each constrained
feature, every other feature held), the trees' structure (every leaf right of a split on an
increasing feature is at least every leaf left of it; every branch's features share one
interaction set), and LightGBM with the same constraints (test NDCG within its own).
"""

import numpy as np
import pytest

from skltr import GPUHistGBDTRanker
from skltr.datasets import make_ranking
from skltr.metrics import ndcg_score

MONO = [1, -1, 0, 1, 0, 0, 0, 0]
SETS = [[0, 1], [2, 3, 4]]  # 5, 6, 7 in no set: each used alone


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=120, docs_per_query=20, n_features=8, n_informative=6,
                             random_state=2)
    X[::9, 3] = np.nan
    return X, y, qid


def _probes_are_monotone(model, X, directions, n_rows=40, n_grid=50):
    rng = np.random.default_rng(0)
    rows = X[rng.integers(0, X.shape[0], n_rows)]
    for f, d in enumerate(directions):
        if d == 0:
            continue
        lo, hi = np.nanmin(X[:, f]), np.nanmax(X[:, f])
        grid = np.concatenate([np.linspace(lo - 1, hi + 1, n_grid),
                               np.unique(X[:, f][~np.isnan(X[:, f])])])
        grid.sort()
        for row in rows:
            R = np.repeat(row[None], grid.size, 0)
            R[:, f] = grid
            steps = np.diff(model.predict(R)) * d
            assert np.all(steps >= 0), (f, steps.min())


def _leaves_below(e, lo, node):
    g = lo + node
    if e.left[g] < 0:
        return [e.value[g]]
    return _leaves_below(e, lo, e.left[g]) + _leaves_below(e, lo, e.right[g])


def _splits_are_ordered(ensemble, directions):
    # structure: each split on a constrained feature has every leaf on the rising side at
    # least every leaf on the other
    e = ensemble
    for t in range(e.n_trees):
        lo, hi = e.tree_ptr[t], e.tree_ptr[t + 1]
        for g in range(lo, hi):
            if e.left[g] < 0 or directions[e.feature[g]] == 0:
                continue
            left = _leaves_below(e, lo, e.left[g])
            right = _leaves_below(e, lo, e.right[g])
            if directions[e.feature[g]] > 0:
                assert max(left) <= min(right)
            else:
                assert min(left) >= max(right)


@pytest.mark.parametrize("settings", [
    {}, {"growth": "depthwise", "max_depth": 4}, {"reg_alpha": 0.5, "reg_lambda": 1.0},
    {"hist_mode": "float"}, {"objective": "rank_xendcg"}])
def test_monotone_constraints_make_a_monotone_model(data, settings):
    X, y, qid = data
    model = GPUHistGBDTRanker(n_estimators=25, random_state=0, monotone_constraints=MONO,
                              **settings).fit(X, y, qid=qid)
    _probes_are_monotone(model, X, MONO)
    _splits_are_ordered(model.ensemble_, MONO)
    assert np.any(np.isin(model.ensemble_.feature, [0, 1, 3]))  # the features are used
    free = GPUHistGBDTRanker(n_estimators=25, random_state=0, **settings).fit(X, y, qid=qid)
    with pytest.raises(AssertionError):  # the check bites on the unconstrained model
        _splits_are_ordered(free.ensemble_, MONO)


@pytest.mark.parametrize("settings", [{}, {"reg_alpha": 0.5, "max_leaves": 63,
                                          "min_samples_leaf": 5}])
def test_intermediate_method_makes_a_monotone_model(data, settings):
    # LightGBM's intermediate method: the bordering leaves' bounds follow the new outputs;
    # less constraining than basic (the structure check of basic need not hold), monotone
    X, y, qid = data
    model = GPUHistGBDTRanker(n_estimators=25, random_state=0, monotone_constraints=MONO,
                              monotone_constraints_method="intermediate", **settings).fit(
        X, y, qid=qid)
    _probes_are_monotone(model, X, MONO)
    basic = GPUHistGBDTRanker(n_estimators=25, random_state=0, monotone_constraints=MONO,
                              **settings).fit(X, y, qid=qid)
    assert not model.ensemble_.equals(basic.ensemble_)


def test_directions_by_name_and_all_zero(data):
    pd = pytest.importorskip("pandas")
    X, y, qid = data
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(8)])
    by_name = GPUHistGBDTRanker(n_estimators=10, random_state=0,
                                monotone_constraints={"f0": 1, "f1": -1, "f3": 1}).fit(
        df, y, qid=qid)
    by_list = GPUHistGBDTRanker(n_estimators=10, random_state=0,
                                monotone_constraints=np.array(MONO)).fit(X, y, qid=qid)
    for name in ("tree_ptr", "feature", "threshold", "value"):  # the same trees
        np.testing.assert_array_equal(getattr(by_name.ensemble_, name),
                                      getattr(by_list.ensemble_, name))
    zero = GPUHistGBDTRanker(n_estimators=10, random_state=0,
                             monotone_constraints=[0] * 8).fit(X, y, qid=qid)
    plain = GPUHistGBDTRanker(n_estimators=10, random_state=0).fit(X, y, qid=qid)
    assert zero.ensemble_.equals(plain.ensemble_)


def _path_features(ensemble):
    e = ensemble
    paths = []

    def walk(lo, node, used):
        g = lo + node
        if e.left[g] < 0:
            paths.append(set(used))
            return
        walk(lo, e.left[g], used + [int(e.feature[g])])
        walk(lo, e.right[g], used + [int(e.feature[g])])

    for t in range(e.n_trees):
        walk(e.tree_ptr[t], 0, [])
    return paths


@pytest.mark.parametrize("growth", ["leafwise", "depthwise"])
def test_interaction_constraints_keep_each_branch_in_one_set(data, growth):
    X, y, qid = data
    model = GPUHistGBDTRanker(n_estimators=25, random_state=0, growth=growth, max_depth=5,
                              interaction_constraints=SETS).fit(X, y, qid=qid)
    paths = _path_features(model.ensemble_)
    for used in paths:
        assert any(used <= set(s) for s in SETS) or (len(used) == 1 and used <= {5, 6, 7}), used
    assert max(len(u) for u in paths) >= 2  # features do interact within a set
    free = GPUHistGBDTRanker(n_estimators=25, random_state=0, growth=growth, max_depth=5).fit(
        X, y, qid=qid)
    assert any(not any(u <= set(s) for s in SETS) for u in _path_features(free.ensemble_))


def test_both_constraints_and_a_pickled_and_saved_model(data, tmp_path):
    import pickle

    X, y, qid = data
    model = GPUHistGBDTRanker(n_estimators=15, random_state=0, monotone_constraints=MONO,
                              interaction_constraints=SETS).fit(X, y, qid=qid)
    _probes_are_monotone(model, X, MONO)
    model.save_model(tmp_path / "m.json")
    back = GPUHistGBDTRanker.load_model(tmp_path / "m.json")
    assert back.get_params()["interaction_constraints"] == SETS
    # NumPy directions and a dict by column name are stored as JSON and refit the same
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(8)])
    for directions, inp in ((np.array(MONO, np.int64), X), ({"f0": 1, "f1": -1, "f3": 1}, df)):
        model = GPUHistGBDTRanker(n_estimators=5, random_state=0,
                                  monotone_constraints=directions).fit(inp, y, qid=qid)
        model.save_model(tmp_path / "d.json")
        back = GPUHistGBDTRanker.load_model(tmp_path / "d.json")
        assert back.fit(inp, y, qid=qid).ensemble_.equals(model.ensemble_)
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict(X),
                                  model.predict(X))


def test_test_ndcg_within_lightgbm_with_the_same_constraints():
    lgb = pytest.importorskip("lightgbm")
    mono = [1, 1, -1, 0, 0, 1] + [0] * 14
    sets = [[0, 1, 2, 3], [4, 5, 6, 7, 8, 9], list(range(10, 20))]
    cases = {"mono": {"monotone_constraints": mono},
             "mono-intermediate": {"monotone_constraints": mono,
                                   "monotone_constraints_method": "intermediate"},
             "sets": {"interaction_constraints": sets}}
    ours, theirs = ({name: [] for name in cases} for _ in range(2))
    for seed in range(3):
        X, y, qid = make_ranking(n_queries=400, docs_per_query=30, n_features=20,
                                 n_informative=8, random_state=seed)
        tr, te = qid < 300, qid >= 300
        for name, kw in cases.items():
            model = GPUHistGBDTRanker(n_estimators=60, random_state=0, **kw).fit(
                X[tr], y[tr], qid=qid[tr])
            ours[name].append(ndcg_score(y[te], model.predict(X[te]), qid=qid[te], k=10))
            booster = lgb.train({"objective": "lambdarank", "verbose": -1, "num_leaves": 31,
                                 "learning_rate": 0.1, "min_data_in_leaf": 20, **kw},
                                lgb.Dataset(X[tr], y[tr], group=np.bincount(qid[tr])), 60)
            theirs[name].append(ndcg_score(y[te], booster.predict(X[te]), qid=qid[te], k=10))
    for name in ours:
        assert np.mean(ours[name]) >= np.mean(theirs[name]) - 0.01, (name, ours, theirs)


@pytest.mark.parametrize("kw,match", [
    ({"monotone_constraints": [1, 0]}, "has 2 entries, but X has 8 features"),
    ({"monotone_constraints": [2] + [0] * 7}, "-1 .decreasing., 0 .free. or 1"),
    ({"monotone_constraints": {"f0": 1}}, "X has no column names"),
    ({"monotone_constraints": {0: 1}}, "maps column names to directions"),
    ({"interaction_constraints": [[0, 9]]}, "feature index 9, but X has 8 features"),
    ({"monotone_constraints": MONO, "monotone_constraints_method": "advanced"},
     "'advanced' is not implemented"),
    ({"monotone_constraints": MONO, "monotone_constraints_method": "intermediate",
      "growth": "depthwise"}, "needs growth='leafwise'"),
    ({"interaction_constraints": [[0, 1], []]}, "empty feature list"),
    ({"interaction_constraints": []}, "allows no feature"),
    ({"interaction_constraints": [0, 1]}, "list of feature lists"),
    ({"interaction_constraints": [[0, 1.5]]}, "index .int. or a column name"),
])
def test_bad_constraints_are_refused_and_change_nothing(data, kw, match):
    X, y, qid = data
    model = GPUHistGBDTRanker(n_estimators=3, random_state=0).fit(X, y, qid=qid)
    before = model.predict(X)
    model.set_params(**kw)
    with pytest.raises(ValueError, match=match):
        model.fit(X, y, qid=qid)
    np.testing.assert_array_equal(model.predict(X), before)


def test_dask_fit_with_constraints_is_the_local_model(data):
    distributed = pytest.importorskip("distributed")
    from skltr.dask import DaskGPUHistGBDTRanker

    X, y, qid = data
    kw = dict(n_estimators=12, random_state=0, n_jobs=1, monotone_constraints=MONO,
              interaction_constraints=SETS)
    local = GPUHistGBDTRanker(**kw).fit(X, y, qid=qid)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dist = DaskGPUHistGBDTRanker(client=client, **kw).fit(X, y, qid=qid)
    assert dist.ensemble_.equals(local.ensemble_)
