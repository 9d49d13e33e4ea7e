"""``skltr train`` as the Python API (issue #33): the estimators' defaults, ``--valid``,
options grouped by ranker and refused for another ranker, no training-set scoring unless
asked, progress and true times for the rule ranker's predict-time work."""

import numpy as np
import pytest

from skltr import GPUHistGBDTRanker, OnDemandRuleRanker, RankBoostRanker
from skltr.cli import _TRAIN_OPTIONS, build_parser, main
from skltr.datasets import dump_letor, make_ranking
from skltr.metrics import ndcg_score

CLASSES = {"gbdt": GPUHistGBDTRanker, "rankboost": RankBoostRanker,
           "rules": OnDemandRuleRanker}
#: set by skltr train from its own options, not ranker options
COMMON = {"device", "n_jobs", "random_state", "verbose"}


@pytest.fixture
def files(tmp_path):
    X, y, qid = make_ranking(n_queries=24, docs_per_query=10, n_features=4, n_informative=4,
                             random_state=0, dtype=np.float64)
    out = {}
    for name, rows in (("train", qid < 16), ("valid", (qid >= 16) & (qid < 20)),
                       ("test", qid >= 20)):
        path = tmp_path / f"{name}.letor"
        dump_letor(path, X[rows], y[rows], qid[rows])
        out[name] = (path, X[rows], y[rows], qid[rows])
    return out


@pytest.mark.parametrize("ranker", ["gbdt", "rankboost", "rules"])
def test_defaults_are_the_estimators(ranker, files, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["train", str(files["train"][0]), "-o", str(model), "--ranker", ranker,
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "NDCG@10" not in out  # nothing scored that was not asked for
    assert "fitted in" in out and out.rstrip().splitlines()[-1].startswith("total ")
    loaded = CLASSES[ranker].load_model(model).get_params()
    default = CLASSES[ranker]().get_params()
    assert {k: v for k, v in loaded.items() if k not in COMMON} == {
        k: v for k, v in default.items() if k not in COMMON}


def test_help_groups_options_by_ranker_and_reads_the_defaults():
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices["train"]
    text = " ".join(sub.format_help().split())
    for title in _TRAIN_OPTIONS:
        assert f"{title}:" in text
    n = GPUHistGBDTRanker().n_estimators, RankBoostRanker().n_estimators
    assert f"(default: {n[0]} for gbdt, {n[1]} for rankboost)" in text
    assert f"(default: {OnDemandRuleRanker().max_rule_size})" in text
    assert "--validation-fraction" in text and "--valid FILE" in text


def test_an_option_of_another_ranker_is_refused(files, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["train", str(files["train"][0]), "-o", str(model), "--ranker", "rankboost",
                 "--max-leaves", "7", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--max-leaves is an option of --ranker gbdt, not of --ranker rankboost" in err
    assert not model.exists()
    assert main(["train", str(files["train"][0]), "-o", str(model), "--ranker", "rules",
                 "--n-estimators", "7", "--quiet"]) == 2
    assert "--ranker gbdt or --ranker rankboost" in capsys.readouterr().err


@pytest.mark.parametrize("ranker", ["gbdt", "rankboost"])
def test_valid_file_is_the_eval_set(ranker, files, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["train", str(files["train"][0]), "-o", str(model), "--ranker", ranker,
                 "--valid", str(files["valid"][0]), "--test", str(files["test"][0]),
                 "--n-estimators", "40", "--early-stopping", "on", "--n-iter-no-change", "3",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    _, Xt, yt, qt = files["train"]
    _, Xv, yv, qv = files["valid"]
    direct = CLASSES[ranker](n_estimators=40, early_stopping=True, n_iter_no_change=3,
                             random_state=0).fit(Xt, yt, qid=qt, eval_set=[(Xv, yv, qv)])
    loaded = CLASSES[ranker].load_model(model)
    assert loaded.n_estimators_ == direct.n_estimators_
    np.testing.assert_array_equal(loaded.predict(Xv), direct.predict(Xv))
    printed = float(out.split("NDCG@10 valid:")[1].split()[0])
    assert printed == round(ndcg_score(yv, direct.predict(Xv), qid=qv, k=10), 4)
    assert "NDCG@10 test:" in out and "NDCG@10 train" not in out


def test_rules_score_in_blocks_with_the_true_times(files, tmp_path, capsys):
    model = tmp_path / "rules.json"
    assert main(["train", str(files["train"][0]), "-o", str(model), "--ranker", "rules",
                 "--max-rule-size", "2", "--test", str(files["test"][0]),
                 "--score-train"]) == 0
    captured = capsys.readouterr()
    _, Xt, yt, qt = files["train"]
    _, Xs, ys, qs = files["test"]
    ranker = OnDemandRuleRanker(max_rule_size=2, random_state=0).fit(Xt, yt, qid=qt)
    for name, (X, y, q) in (("train", (Xt, yt, qt)), ("test", (Xs, ys, qs))):
        line = captured.out.split(f"NDCG@10 {name}:")[1].splitlines()[0]
        assert float(line.split()[0]) == round(ndcg_score(y, ranker.predict(X), qid=q, k=10), 4)
        assert f"({len(y):,} documents scored in " in line
    assert f"scoring the {len(ys):,} documents of {files['test'][0]}" in captured.err


def test_categorical_features_from_the_command_line(tmp_path, capsys):
    X, y, qid = make_ranking(n_queries=40, docs_per_query=12, n_features=4, n_informative=4,
                             categorical_levels=(15,), random_state=1, dtype=np.float64)
    path = tmp_path / "train.letor"
    dump_letor(path, X, y, qid)
    model = tmp_path / "m.json"
    assert main(["train", str(path), "-o", str(model), "--categorical-features", "4",
                 "--cat-smooth", "2", "--min-data-per-group", "10", "--n-estimators", "5",
                 "--quiet"]) == 0
    loaded = GPUHistGBDTRanker.load_model(model)
    assert loaded.categorical_features == [4] and loaded.cat_smooth == 2.0
    assert loaded.is_categorical_.tolist() == [False] * 4 + [True]
    same = GPUHistGBDTRanker(categorical_features=[4], cat_smooth=2.0, min_data_per_group=10,
                             n_estimators=5, random_state=0).fit(X, y, qid=qid)
    np.testing.assert_array_equal(loaded.predict(X), same.predict(X))
    with pytest.raises(SystemExit) as exc:
        main(["train", str(path), "-o", str(model), "--categorical-features", "4,x"])
    assert exc.value.code == 2
    assert "comma-separated column indices" in capsys.readouterr().err
