"""No stale figure in the README and the docs (issue #33).

* Every result file the README or a docs page cites (``benchmarks/results/*.json``) exists.
* Every figure in :data:`FIGURES` -- the ones the README quotes, and the headline table of
  ``docs/performance.rst`` -- equals, as written, the value its result file holds, and is
  written on a line of the page that cites that file.

To update a figure: run its benchmark, then change the text and the cited file name in the
page(s) and the entry below; this test fails until the three agree.
"""

import json
import re
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.rst"))
RESULT = re.compile(r"benchmarks/results/[A-Za-z0-9_.\-]+\.json")


class Figure(NamedTuple):
    """``text`` as written in ``pages``; its value: ``field`` (``skltr``, ``peer`` or
    ``speedup`` = peer / skltr) of the row of ``result`` whose ``case`` contains ``case``
    (and ``unit``, ``peer_name`` when given), formatted with ``fmt``."""

    text: str
    result: str
    case: str
    field: str
    fmt: str
    pages: tuple = ("README.md", "docs/performance.rst")
    unit: str = None
    peer_name: str = None


COLD = "cold_start-amd-epyc-2026-11-26-c6fd7f5-final.json"
FIGURES = [
    Figure("93.9 s", COLD, "skltr demo, empty caches vs warm", "skltr", "{:.1f} s"),
    Figure("61.8 s", COLD, "numba compilation in the cold demo", "skltr", "{:.1f} s"),
    Figure("22.7 s", COLD, "skltr demo, empty caches vs warm", "peer", "{:.1f} s"),
    Figure("28.9 s", COLD, "first fit+predict in a process, 10k rows, cold cache", "skltr",
           "{:.1f} s", pages=("docs/performance.rst",)),
    Figure("12.6x", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "lightgbm 1000 trees 64 leaves", "speedup", "{:.1f}x", unit="us/doc",
           peer_name="lightgbm native predict"),
    Figure("118x", "metrics_cpu-amd-epyc-2026-11-22.json", "ndcg@10, 199819 rows", "speedup",
           "{:.0f}x", unit="s"),
    Figure("28x", "rankboost_ranklib-intel-r-xeon-r-processor-2026-11-24.json",
           "fit time, 300 rounds, n_thresholds=255", "speedup", "{:.0f}x"),
]


def _value(figure):
    doc = json.loads((ROOT / "benchmarks" / "results" / figure.result).read_text())
    rows = [r for r in doc["rows"] if figure.case in r["case"]
            and figure.unit in (None, r.get("unit"))
            and figure.peer_name in (None, r.get("peer_name"))]
    assert rows, f"{figure.result} has no row for {figure.case!r}"
    row = rows[0]  # the first matching row: the measurement the page quotes
    return row["peer"] / row["skltr"] if figure.field == "speedup" else row[figure.field]


def test_every_cited_result_file_exists():
    missing = [(page.relative_to(ROOT), path) for page in PAGES
               for path in RESULT.findall(page.read_text(encoding="utf-8"))
               if not (ROOT / path).is_file()]
    assert not missing, missing


@pytest.mark.parametrize("figure", FIGURES, ids=[f"{f.text} {f.case}" for f in FIGURES])
def test_figure_equals_its_result_file(figure):
    assert figure.fmt.format(_value(figure)) == figure.text, (
        f"{figure.result} now says {figure.fmt.format(_value(figure))}, the pages "
        f"{figure.text}")
    for page in figure.pages:
        text = (ROOT / page).read_text(encoding="utf-8")
        # the figure and its file on one line or within one paragraph / table row
        blocks = re.split(r"\n\s*\n|\n   \* - ", text)
        assert any(figure.text in b and figure.result in b for b in blocks), (
            f"{page} does not quote {figure.text} next to {figure.result}")
