"""Run every script in examples/ as a user would: a fresh interpreter, exit code 0.

Plot examples need matplotlib (the ``bench`` extra) and are skipped without it; they run with
the Agg backend and write their figures to a temporary folder given by
``SKLTR_EXAMPLES_OUTPUT_DIR``. The LETOR examples read the shared sample when it is there and
write a synthetic one otherwise.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
TIMEOUT_S = 300  # each example takes seconds (minutes on a loaded 2-core machine); a hang guard


def test_examples_found():
    names = {p.name for p in EXAMPLES}
    assert {"plot_ranking_metrics.py", "plot_query_cross_validation.py",
            "load_letor_sample.py", "plot_convert_and_score.py",
            # one per ranker, per device, for Dask and for tuning (issue #33)
            "plot_gbdt_letor.py", "plot_rankboost.py", "plot_rule_ranker.py",
            "plot_gpu_rankers.py", "plot_dask_localcluster.py", "plot_tuning.py"} <= names


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    if script.name.startswith("plot_"):
        pytest.importorskip("matplotlib")
    if script.name == "plot_explain_ranker.py":
        pytest.importorskip("shap")
    if script.name == "plot_dask_localcluster.py":
        pytest.importorskip("distributed")
    if script.name == "plot_convert_and_score.py":
        pytest.importorskip("lightgbm")
        pytest.importorskip("xgboost")
    env = dict(os.environ, MPLBACKEND="Agg", SKLTR_EXAMPLES_OUTPUT_DIR=str(tmp_path))
    # The checkout first on the path, so the examples import this skltr.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, (
        f"{script.name} exited with {proc.returncode}\n--- stdout ---\n{proc.stdout}"
        f"\n--- stderr ---\n{proc.stderr}")
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    if script.name in ("plot_gbdt_letor.py", "load_letor_sample.py", "plot_rankboost.py"):
        # a LETOR example says which data it read, first (issue #33)
        assert first.startswith(("data: the LETOR sample", "SYNTHETIC DATA:")), first
    if script.name.startswith("plot_"):
        figures = list(tmp_path.glob("*.png"))
        assert figures and all(f.stat().st_size > 0 for f in figures), (
            f"{script.name} wrote no figure to SKLTR_EXAMPLES_OUTPUT_DIR")
