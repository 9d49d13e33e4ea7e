"""The README's Python snippet runs as written (so the README cannot rot)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_snippet_runs(capsys):
    pytest.importorskip("lightgbm")
    section = README.read_text(encoding="utf-8").split("## Using it", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    import sklearn

    try:
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    finally:
        sklearn.set_config(enable_metadata_routing=False)
    out = capsys.readouterr().out
    assert "held-out NDCG@10:" in out
    assert float(out.split("held-out NDCG@10:")[1].split()[0]) > 0.5
