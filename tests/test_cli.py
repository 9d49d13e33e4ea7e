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
