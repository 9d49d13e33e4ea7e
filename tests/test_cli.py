import subprocess
import sys

import pytest

from skltr.cli import main


def test_demo_runs_and_prints_table(capsys):
    assert main(["demo", "--n-queries", "60", "--docs-per-query", "20", "--n-features", "12",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "NDCG@10" in out and "baseline: random scores" in out and "best feature" in out


def test_python_m_skltr_version():
    out = subprocess.run([sys.executable, "-m", "skltr", "--version"], check=True,
                         capture_output=True, text=True).stdout
    assert out.startswith("skltr ")


def test_demo_bad_device(capsys):
    assert main(["demo", "--device", "tpu", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("skltr demo: error: ") and "not understood" in err[0]
    with pytest.raises(ValueError, match="not understood"):
        main(["demo", "--device", "tpu", "--quiet", "--debug"])


@pytest.mark.filterwarnings("ignore:.*Text file input has been deprecated")
def test_convert_and_predict_commands(tmp_path, capsys):
    # An XGBoost model scores a LETOR file as XGBoost's own loader reads it: index k is column
    # k, and an entry the file leaves out (a zero of X, which dump_letor does not write) is
    # missing, not 0.0 -- XGBoost's predictions on the file, not on X.
    import numpy as np
    xgb = pytest.importorskip("xgboost")
    from skltr.datasets import dump_letor, make_ranking

    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=6, n_informative=3,
                             random_state=0)
    X = X.astype(np.float64)
    X[np.random.default_rng(0).random(X.shape) < 0.3] = 0.0
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 3, "nthread": 1},
                        xgb.DMatrix(X, y, qid=qid), num_boost_round=5)
    model = tmp_path / "xgb.json"
    booster.save_model(str(model))
    data = tmp_path / "data.letor"
    dump_letor(data, X, y, qid, zero_based=True)
    out_json = tmp_path / "skltr.json"
    assert main(["convert", str(model), "-o", str(out_json)]) == 0
    scores = tmp_path / "scores.txt"
    assert main(["predict", str(out_json), str(data), "-o", str(scores)]) == 0
    got = np.loadtxt(scores)
    expected = booster.predict(xgb.DMatrix(f"{data}?format=libsvm"), output_margin=True)
    np.testing.assert_array_equal(got.astype(np.float32), expected)
    assert not np.array_equal(expected, booster.predict(xgb.DMatrix(X), output_margin=True))
    assert "NDCG@10" in capsys.readouterr().err


def test_train_command(tmp_path, capsys):
    import numpy as np

    from skltr import GPUHistGBDTRanker
    from skltr.datasets import dump_letor, make_ranking

    X, y, qid = make_ranking(n_queries=40, docs_per_query=12, n_features=5, n_informative=3,
                             random_state=0, dtype=np.float64)
    train, test = tmp_path / "train.letor", tmp_path / "test.letor"
    dump_letor(train, X[qid < 30], y[qid < 30], qid[qid < 30])
    dump_letor(test, X[qid >= 30], y[qid >= 30], qid[qid >= 30])
    model = tmp_path / "model.json"
    assert main(["train", str(train), "-o", str(model), "--test", str(test),
                 "--n-estimators", "5", "--max-leaves", "7", "--min-samples-leaf", "3",
                 "--score-train", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "NDCG@10 train:" in out and "NDCG@10 test:" in out
    ranker = GPUHistGBDTRanker.load_model(model)
    assert ranker.n_estimators_ == 5 and ranker.max_leaves == 7
    # The model file is also what `skltr predict` reads.
    assert main(["predict", str(model), str(test), "-o", str(tmp_path / "s.txt")]) == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "s.txt"), ranker.predict(X[qid >= 30]))


def test_train_rankboost(tmp_path, capsys):
    import numpy as np

    from skltr import RankBoostRanker
    from skltr.datasets import dump_letor, make_ranking

    X, y, qid = make_ranking(n_queries=40, docs_per_query=12, n_features=5, n_informative=3,
                             random_state=1, dtype=np.float64)
    train = tmp_path / "train.letor"
    dump_letor(train, X, y, qid)
    model = tmp_path / "rb.json"
    assert main(["train", str(train), "-o", str(model), "--ranker", "rankboost",
                 "--n-estimators", "12", "--n-thresholds", "16", "--pair-weighting", "pair",
                 "--quiet"]) == 0
    assert "12 stumps" in capsys.readouterr().out
    ranker = RankBoostRanker.load_model(model)
    assert (ranker.n_estimators_, ranker.n_thresholds, ranker.pair_weighting) == (12, 16, "pair")
    direct = RankBoostRanker(n_estimators=12, n_thresholds=16, pair_weighting="pair",
                             random_state=0).fit(X, y, qid=qid)
    np.testing.assert_array_equal(ranker.predict(X), direct.predict(X))
    assert main(["predict", str(model), str(train), "-o", str(tmp_path / "s.txt")]) == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "s.txt"), ranker.predict(X))
    assert main(["train", str(train), "-o", str(model), "--ranker", "rankboost",
                 "--early-stopping", "auto"]) == 2
    assert "--early-stopping auto is for --ranker gbdt" in capsys.readouterr().err


# ----------------------------------------------------------------- files read as the library
def _run_cli(*args):
    """``python -m skltr ARGS`` in a subprocess that imports this checkout's skltr."""
    import os
    from pathlib import Path

    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "skltr", *map(str, args)],
                          capture_output=True, text=True, env=env)


def _ndcg_line(stderr):
    import re

    return float(re.search(r"NDCG@10 ([0-9.]+)", stderr).group(1))


def test_lightgbm_file_workflow(letor_dir, tmp_path):
    # LightGBM's own LETOR workflow: Dataset from the file (its .query file read alongside),
    # train, save_model, then `skltr predict model.txt rank.test`: every score equals
    # LightGBM's prediction on the file.
    import numpy as np
    lgb = pytest.importorskip("lightgbm")
    from skltr.datasets import load_letor
    from skltr.metrics import ndcg_score

    train = lgb.Dataset(str(letor_dir / "rank.train"), params={"verbose": -1})
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 31, "verbose": -1,
                         "num_threads": 1}, train, num_boost_round=40)
    assert booster.num_feature() == 301  # index 300 is column 300: column 0 stays empty
    model = tmp_path / "model.txt"
    booster.save_model(str(model))
    scores = tmp_path / "scores.txt"
    run = _run_cli("predict", model, letor_dir / "rank.test", "-o", scores)
    assert run.returncode == 0, run.stderr
    assert "zero-based" in run.stderr and "LightGBM" in run.stderr
    got = np.loadtxt(scores)
    expected = booster.predict(str(letor_dir / "rank.test"))
    assert got.shape == (768,)
    assert np.abs(got - expected).max() == 0.0
    _, y, qid = load_letor(letor_dir / "rank.test")
    ndcg = ndcg_score(y, expected, qid=qid, k=10)
    assert ndcg_score(y, got, qid=qid, k=10) == ndcg
    assert _ndcg_line(run.stderr) == round(ndcg, 4)
    # the one-based reading (what skltr did before) scores other columns: every score moves
    run = _run_cli("predict", model, letor_dir / "rank.test", "-o", scores, "--zero-based",
                   "false")
    assert run.returncode == 0, run.stderr
    assert np.all(np.loadtxt(scores) != expected)


@pytest.mark.filterwarnings("ignore:.*Text file input has been deprecated")
def test_xgboost_file_workflow(letor_dir, tmp_path, capsys):
    # XGBoost trained from the LibSVM file (DMatrix("path?format=libsvm"): index k is column
    # k, an absent entry is missing): skltr predict equals XGBoost's prediction on the file.
    import numpy as np
    xgb = pytest.importorskip("xgboost")
    train = xgb.DMatrix(f"{letor_dir / 'rank.train'}?format=libsvm")
    train.set_group(np.loadtxt(letor_dir / "rank.train.query", dtype=np.int64))
    assert train.num_col() == 301
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 6, "nthread": 1}, train,
                        num_boost_round=30)
    model = tmp_path / "xgb.json"
    booster.save_model(str(model))
    scores = tmp_path / "scores.txt"
    assert main(["predict", str(model), str(letor_dir / "rank.test"), "-o", str(scores)]) == 0
    assert "as XGBoost reads LibSVM files" in capsys.readouterr().err
    expected = booster.predict(xgb.DMatrix(f"{letor_dir / 'rank.test'}?format=libsvm"))
    got = np.loadtxt(scores)
    assert np.abs(got - expected.astype(np.float64)).max() == 0.0
    # reading absent entries as 0.0 (a dense matrix) gives other scores
    from skltr.datasets import load_letor

    X, _, _ = load_letor(letor_dir / "rank.test", zero_based=True, n_features=301)
    assert np.abs(booster.predict(xgb.DMatrix(X)) - expected).max() > 0.1


def test_skltr_train_records_how_it_read_the_file(letor_dir, tmp_path, capsys):
    import json

    import numpy as np

    from skltr import GPUHistGBDTRanker
    from skltr.datasets import load_letor

    common = ["--n-estimators", "5", "--max-leaves", "7", "--early-stopping", "off", "--quiet"]
    for flag, zero_based, width in [("auto", False, 300), ("true", True, 301)]:
        model = tmp_path / f"model_{flag}.json"
        assert main(["train", str(letor_dir / "rank.train"), "-o", str(model),
                     "--zero-based", flag, "--test", str(letor_dir / "rank.test"),
                     *common]) == 0
        ranker = GPUHistGBDTRanker.load_model(model)
        assert ranker.n_features_in_ == width
        assert json.loads(model.read_text())["meta"]["source"]["file_zero_based"] is zero_based
        scores = tmp_path / "s.txt"
        assert main(["predict", str(model), str(letor_dir / "rank.test"), "-o",
                     str(scores)]) == 0
        assert "as skltr train read the model's training file" in capsys.readouterr().err
        X, _, _ = load_letor(letor_dir / "rank.test", zero_based=zero_based, n_features=width)
        np.testing.assert_array_equal(np.loadtxt(scores), ranker.predict(X))


def test_train_reads_the_test_file_as_it_read_the_training_file(tmp_path, capsys):
    # The training file has an index 0 (so "auto" reads it zero-based); the test file has
    # none, and alone "auto" would read it one-based and shift every column.
    import numpy as np

    from skltr import GPUHistGBDTRanker
    from skltr.datasets import dump_letor, load_letor, make_ranking
    from skltr.metrics import ndcg_score

    X, y, qid = make_ranking(n_queries=40, docs_per_query=12, n_features=5, n_informative=3,
                             random_state=0, dtype=np.float64)
    X[:, 0] = np.where(qid < 30, X[:, 0], 0.0)  # the test rows never use index 0
    train, test = tmp_path / "train.letor", tmp_path / "test.letor"
    dump_letor(train, X[qid < 30], y[qid < 30], qid[qid < 30], zero_based=True)
    dump_letor(test, X[qid >= 30], y[qid >= 30], qid[qid >= 30], zero_based=True)
    model = tmp_path / "model.json"
    capsys.readouterr()
    assert main(["train", str(train), "-o", str(model), "--test", str(test),
                 "--n-estimators", "5", "--max-leaves", "7", "--min-samples-leaf", "3",
                 "--score-train", "--quiet"]) == 0
    printed = float(capsys.readouterr().out.split("NDCG@10 test:")[1].split()[0])
    ranker = GPUHistGBDTRanker.load_model(model)
    Xt, yt, qt = load_letor(test, zero_based=True, n_features=5)
    assert printed == round(ndcg_score(yt, ranker.predict(Xt), qid=qt, k=10), 4)
    np.testing.assert_array_equal(Xt, X[qid >= 30])
    assert main(["predict", str(model), str(test), "-o", str(tmp_path / "s.txt")]) == 0
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "s.txt"), ranker.predict(Xt))


def test_query_file_options(letor_dir, tmp_path, capsys):
    import shutil

    import numpy as np

    data = tmp_path / "rank.test.noquery"
    shutil.copy(letor_dir / "rank.test", data)
    model = tmp_path / "model.json"
    assert main(["train", str(data), "-o", str(model), "--query-file",
                 str(letor_dir / "rank.test.query"), "--n-estimators", "3",
                 "--early-stopping", "off", "--quiet"]) == 0
    capsys.readouterr()
    args = ["predict", str(model), str(data), "-o", str(tmp_path / "a.txt")]
    assert main(args + ["--query-file", str(letor_dir / "rank.test.query")]) == 0
    with_file = _ndcg_line(capsys.readouterr().err)
    assert main(["predict", str(model), str(letor_dir / "rank.test"), "-o",
                 str(tmp_path / "b.txt")]) == 0
    assert _ndcg_line(capsys.readouterr().err) == with_file
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "a.txt"), np.loadtxt(tmp_path / "b.txt"))
    assert main(args) == 2  # a CLI user is told about --query-file, not query_file=
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no qid: tokens" in err[0] and "pass --query-file" in err[0]
    assert "query_file=" not in err[0]


def test_indexing_that_cannot_fit_the_model_is_refused_in_one_line(letor_dir, tmp_path):
    lgb = pytest.importorskip("lightgbm")
    booster = lgb.train({"objective": "lambdarank", "verbose": -1, "num_threads": 1},
                        lgb.Dataset(str(letor_dir / "rank.train"), params={"verbose": -1}),
                        num_boost_round=3)
    model = tmp_path / "model.txt"
    booster.save_model(str(model))
    wide = tmp_path / "wide.letor"
    wide.write_text("1 qid:1 1:0.5 301:2\n0 qid:1 2:1\n")  # a one-based file of 301 columns
    run = _run_cli("predict", model, wide)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skltr predict: error: ")
    assert "line 1: feature index 301 does not fit the model's 301 features" in lines[0]
    assert "pass --zero-based false" in lines[0] and "Traceback" not in run.stderr
    run = _run_cli("predict", model, wide, "--zero-based", "false")
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.split()) == 2
    # index 0 read one-based: say how to read it zero-based
    zero = tmp_path / "zero.letor"
    zero.write_text("1 qid:1 0:0.5 3:2\n")
    assert main(["predict", str(model), str(zero), "--zero-based", "false"]) == 2
    run = _run_cli("predict", model, zero, "--zero-based", "false")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "feature index 0, but the file is read one-based" in run.stderr
    assert "--zero-based true" in run.stderr
    # a test file wider than the training file's reading
    train = tmp_path / "train.letor"
    train.write_text("1 qid:1 1:0.5 2:1\n0 qid:1 1:0.25\n2 qid:2 2:3\n0 qid:2 1:1\n")
    run = _run_cli("train", train, "-o", tmp_path / "m.json", "--test", wide, "--quiet")
    assert run.returncode == 2 and "does not fit the training file's 2 features" in run.stderr


def _all_parsers():
    import argparse

    from skltr.cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, subs.choices


def test_every_option_has_help_and_shows_its_default():
    import argparse

    parser, commands = _all_parsers()
    for name, sub in commands.items():
        text = sub.format_help()
        for action in sub._actions:
            if not action.option_strings or action.dest == "help":
                continue
            assert action.help, f"skltr {name} {action.option_strings[0]} has no help"
            if action.default not in (None, False, argparse.SUPPRESS) and isinstance(
                    action.default, (int, float, str)):
                assert f"(default: {action.default})" in " ".join(text.split()), (
                    name, action.option_strings)


def test_help_is_plain_text():
    parser, commands = _all_parsers()
    for text in [parser.format_help()] + [p.format_help() for p in commands.values()]:
        assert "``" not in text and ":class:" not in text and ":func:" not in text


def test_errors_are_one_line_with_status_2_and_debug_shows_the_traceback(tmp_path):
    run = _run_cli("predict", tmp_path / "missing.json", tmp_path / "data.letor")
    assert run.returncode == 2
    assert run.stderr.strip() == (f"skltr predict: error: {tmp_path / 'missing.json'}: "
                                  f"No such file or directory")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "skltr-model", "schema')
    run = _run_cli("convert", bad, "-o", tmp_path / "out.json")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert str(bad) in run.stderr and "Traceback" not in run.stderr
    run = _run_cli("convert", bad, "-o", tmp_path / "out.json", "--debug")
    assert run.returncode == 1 and "Traceback" in run.stderr


def test_a_closed_pipe_ends_quietly(tmp_path):
    import os
    from pathlib import Path

    import numpy as np

    from skltr import GPUHistGBDTRanker
    from skltr.datasets import dump_letor, make_ranking

    X, y, qid = make_ranking(n_queries=400, docs_per_query=30, n_features=5, n_informative=3,
                             random_state=0)
    data = tmp_path / "data.letor"
    dump_letor(data, X, y, qid)
    model = tmp_path / "model.json"
    GPUHistGBDTRanker(n_estimators=2).fit(X, y, qid=qid).save_model(model)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get(
        "PYTHONPATH", "")
    run = subprocess.run(f"{sys.executable} -m skltr predict {model} {data} | head -1",
                         shell=True, capture_output=True, text=True, env=env)
    assert len(run.stdout.splitlines()) == 1
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr
    assert "error" not in run.stderr
    assert np.isfinite(float(run.stdout))


def test_warnings_are_one_line(tmp_path):
    from skltr.datasets import dump_letor, make_ranking

    X, y, qid = make_ranking(n_queries=210, docs_per_query=50, n_features=4, n_informative=2,
                             random_state=0)  # 10,500 rows: early_stopping="auto" holds out
    data = tmp_path / "train.letor"
    dump_letor(data, X, y, qid)
    run = _run_cli("train", data, "-o", tmp_path / "m.json", "--early-stopping", "auto",
                   "--n-estimators", "2", "--quiet")
    assert run.returncode == 0, run.stderr
    warning = [line for line in run.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and warning[0].startswith("skltr train: warning: ")
    assert "validation_fraction" in warning[0]
