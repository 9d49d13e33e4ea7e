import subprocess
import sys

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


def test_demo_bad_device():
    import pytest

    with pytest.raises(ValueError, match="not understood"):
        main(["demo", "--device", "tpu", "--quiet"])


def test_convert_and_predict_commands(tmp_path, capsys):
    import numpy as np
    import pytest

    xgb = pytest.importorskip("xgboost")
    from skltr.datasets import dump_letor, make_ranking

    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=6, n_informative=3,
                             random_state=0)
    X = X.astype(np.float64)
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 3, "nthread": 1},
                        xgb.DMatrix(X, y, qid=qid), num_boost_round=5)
    model = tmp_path / "xgb.json"
    booster.save_model(str(model))
    data = tmp_path / "data.letor"
    dump_letor(data, X, y, qid)
    out_json = tmp_path / "skltr.json"
    assert main(["convert", str(model), "-o", str(out_json)]) == 0
    scores = tmp_path / "scores.txt"
    assert main(["predict", str(out_json), str(data), "-o", str(scores)]) == 0
    got = np.loadtxt(scores)
    expected = booster.predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_array_equal(got.astype(np.float32), expected)
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
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "NDCG@10 train:" in out and "NDCG@10 test:" in out
    ranker = GPUHistGBDTRanker.load_model(model)
    assert ranker.n_estimators_ == 5 and ranker.max_leaves == 7
    # The model file is also what `skltr predict` reads.
    assert main(["predict", str(model), str(test), "-o", str(tmp_path / "s.txt")]) == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "s.txt"), ranker.predict(X[qid >= 30]))
