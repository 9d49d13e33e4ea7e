"""``skltr demo``: every ranker, the peers when installed, the QuickScorer rows, --plot."""

import builtins

import pytest

from skltr.cli import main

SMALL = ["demo", "--n-queries", "60", "--docs-per-query", "20", "--n-features", "12"]


def test_demo_table_peers_and_plot(tmp_path, capsys):
    pytest.importorskip("lightgbm")
    pytest.importorskip("xgboost")
    pytest.importorskip("matplotlib")
    png = tmp_path / "demo.png"
    assert main(SMALL + ["--plot", str(png)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    for label in ("baseline: random scores", "GPUHistGBDTRanker", "RankBoostRanker",
                  "OnDemandRuleRanker", "peer: LightGBM LGBMRanker()",
                  "peer: XGBoost XGBRanker()"):
        assert label in out
    scored = [line for line in out.splitlines() if "scored by QuickScorerPredictor" in line]
    assert len(scored) == 2 and all(line.endswith("max abs diff 0") for line in scored)
    assert "fitting GPUHistGBDTRanker ..." in captured.err  # progress on stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_demo_without_peers_says_so(monkeypatch, capsys):
    real_import = builtins.__import__

    def no_peers(name, *args, **kwargs):
        if name.split(".")[0] in ("lightgbm", "xgboost"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_peers)
    assert main(SMALL + ["--quiet"]) == 0
    captured = capsys.readouterr()
    assert "peer:" not in captured.out and "GPUHistGBDTRanker" in captured.out
    assert "lightgbm is not installed" in captured.out
    assert "xgboost is not installed" in captured.out
    assert captured.err == ""  # --quiet: no progress lines


def test_demo_says_it_compiles_before_anything_compiles(monkeypatch, capsys):
    # the demo's metrics compile first and would silence a ranker's notice (issue #33)
    import skltr._numba_cache as cache
    import skltr.datasets as datasets

    events = []
    monkeypatch.setattr(cache, "announce_first_compile", lambda: events.append("notice"))
    real = datasets.make_ranking
    monkeypatch.setattr(datasets, "make_ranking",
                        lambda **kw: events.append("data") or real(**kw))
    assert main(SMALL + ["--quiet"]) == 0
    assert events[:2] == ["notice", "data"]
