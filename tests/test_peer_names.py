"""LightGBM / XGBoost names answered with skltr's (issue #33): one table
(``skltr.ranking._peer_names.PEER_NAMES``) read by the errors and the "Coming from" page,
the ``fit(group=...)`` hint, and the ``zero_based`` hint of a feature count off by one."""

import inspect

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from skltr import GPUHistGBDTRanker, OnDemandRuleRanker, QuickScorerPredictor, RankBoostRanker
from skltr.datasets import load_letor, make_ranking
from skltr.model_selection import QueryKFold
from skltr.ranking._peer_names import PEER_NAMES, _parse, invalid_value_hint


def _data():
    return make_ranking(n_queries=8, docs_per_query=10, n_features=4, n_informative=4,
                        random_state=0)


def test_table_names_skltr_parameters_and_fit_arguments():
    params = GPUHistGBDTRanker().get_params()
    fit_args = set(inspect.signature(GPUHistGBDTRanker.fit).parameters)
    for row in PEER_NAMES:
        kind, name, value = _parse(row.skltr)
        assert name in (fit_args if kind == "fit" else params), row
        if kind == "param" and value is not None and name not in ("device",):
            assert params[name] == value or name in ("objective", "growth", "position_bias"), row
        for entry in row.lightgbm + row.xgboost:
            _parse(entry)  # every entry is name, name=value or fit(name=...)


def test_lightgbm_names_of_the_table_are_lightgbms():
    lgb = pytest.importorskip("lightgbm")
    from lightgbm.basic import _ConfigAliases

    known = set(lgb.LGBMRanker().get_params())
    for names in _ConfigAliases._get_all_param_aliases().values():
        known.update(names)
    for row in PEER_NAMES:
        for entry in row.lightgbm:
            kind, name, _ = _parse(entry)
            if kind == "param":
                assert name in known, (name, row)


@pytest.mark.parametrize("name, use", [
    ("num_leaves", "use max_leaves"), ("eta", "use learning_rate"),
    ("label_gain", 'use gain="exp2"'), ("min_child_samples", "use min_samples_leaf"),
    ("lambda", "use reg_lambda"), ("max_bin", "use max_bins"),
    ("early_stopping_rounds", "use n_iter_no_change"),
    ("grow_policy", 'grow_policy="lossguide" is growth="leafwise"'),
])
def test_constructor_answers_a_peer_name(name, use):
    with pytest.raises(TypeError, match="unexpected keyword argument") as info:
        GPUHistGBDTRanker(**{name: 1})
    assert use in str(info.value)


def test_unknown_name_gets_close_matches_or_the_list():
    with pytest.raises(TypeError, match="did you mean max_leaves"):
        GPUHistGBDTRanker(max_leaf=3)
    # RankBoost has no leaves: no "use max_leaves", its parameters instead
    with pytest.raises(TypeError, match="its parameters are device, ") as info:
        RankBoostRanker(num_leaves=3)
    assert "max_leaves" not in str(info.value)
    with pytest.raises(TypeError, match="use n_estimators"):
        RankBoostRanker(num_iterations=3)
    with pytest.raises(TypeError, match="use min_support|parameters are"):
        OnDemandRuleRanker(num_leaves=3)


def test_fit_group_points_to_group_sizes_to_qid():
    X, y, qid = _data()
    sizes = np.unique(qid, return_counts=True)[1]
    with pytest.raises(TypeError, match=r"use fit\(qid=\.\.\.\).*group_sizes_to_qid"):
        GPUHistGBDTRanker(n_estimators=2).fit(X, y, group=sizes)
    with pytest.raises(TypeError, match="group_sizes_to_qid"):
        RankBoostRanker(n_estimators=2).fit(X, y, group=sizes)
    with pytest.raises(TypeError, match=r"GPUHistGBDTRanker\(eval_at=\.\.\.\)"):
        GPUHistGBDTRanker(n_estimators=2).fit(X, y, qid=qid, eval_at=[5])


def test_peer_values_and_set_params():
    X, y, qid = _data()
    with pytest.raises(ValueError, match='skltr\'s is objective="lambdarank"'):
        GPUHistGBDTRanker(objective="rank:ndcg").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="skltr's is max_depth=None"):
        GPUHistGBDTRanker(max_depth=-1).fit(X, y, qid=qid)
    assert invalid_value_hint("objective", "lambdarank").startswith('objective="lambdarank"')
    assert invalid_value_hint("max_depth", 3) == ""
    with pytest.raises(ValueError, match="use max_leaves"):
        GPUHistGBDTRanker().set_params(num_leaves=7)
    sklearn.set_config(enable_metadata_routing=True)
    try:
        search = GridSearchCV(GPUHistGBDTRanker(n_estimators=2), {"num_leaves": [7]},
                              cv=QueryKFold(2))
        with pytest.raises(ValueError, match="use max_leaves"):
            search.fit(X, y, qid=qid)
    finally:
        sklearn.set_config(enable_metadata_routing=False)


def test_the_wrapped_methods_keep_their_signatures():
    names = list(inspect.signature(GPUHistGBDTRanker.__init__).parameters)
    assert names[:3] == ["self", "objective", "n_estimators"]
    assert "qid" in inspect.signature(GPUHistGBDTRanker.fit).parameters
    assert clone(GPUHistGBDTRanker(max_leaves=7)).max_leaves == 7
    assert set(GPUHistGBDTRanker().get_params()) >= {"max_leaves", "learning_rate"}


def test_one_column_off_suggests_zero_based(letor_dir, tmp_path):
    lgb = pytest.importorskip("lightgbm")
    booster = lgb.train({"objective": "lambdarank", "verbose": -1, "num_iterations": 3},
                        lgb.Dataset(str(letor_dir / "rank.train")))
    predictor = QuickScorerPredictor.from_model(booster)
    X, _, _ = load_letor(letor_dir / "rank.test", n_features=predictor.n_features_in_ - 1)
    with pytest.raises(ValueError, match=r"load_letor\(path, zero_based=True, n_features="
                                         + str(predictor.n_features_in_)):
        predictor.predict(X)
    X, _, _ = load_letor(letor_dir / "rank.test", zero_based=True,
                         n_features=predictor.n_features_in_)
    assert np.array_equal(predictor.predict(X), booster.predict(X))
    # the TreeEnsemble's own check says the same
    with pytest.raises(ValueError, match="zero_based=True"):
        predictor.ensemble_.predict(X[:, 1:])
    # a fitted ranker too, and one column more suggests zero_based=False
    Xr, yr, qr = _data()
    ranker = RankBoostRanker(n_estimators=2).fit(Xr, yr, qid=qr)
    with pytest.raises(ValueError, match="zero_based=False"):
        ranker.predict(np.hstack([np.zeros((len(Xr), 1)), Xr]))
    with pytest.raises(ValueError) as info:
        ranker.predict(Xr[:, :1])
    assert "zero_based" not in str(info.value)


def test_fit_warnings_still_point_at_the_callers_line():
    # the argument check is one frame between the user and fit: the warnings count it
    X, _, qid = _data()
    with pytest.warns(UserWarning, match="no crucial pair") as record:
        RankBoostRanker(n_estimators=2).fit(X, np.ones(len(qid)), qid=qid)
    assert {w.filename for w in record} == {__file__}
    with pytest.warns(UserWarning, match="no tree found a split") as record:
        GPUHistGBDTRanker(n_estimators=2).fit(X, np.ones(len(qid)), qid=qid)
    assert {w.filename for w in record} == {__file__}
