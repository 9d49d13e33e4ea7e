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
