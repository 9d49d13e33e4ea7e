"""The developer guide's examples run as written (the ranker walk-throughs, on the shared
engine layer included): a change of the engine API that breaks them fails here. So do the
side-by-side snippets of "Coming from XGBoost or LightGBM" (they need both libraries)."""

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("page", ["devguide.rst", "user_guide/coming_from.rst"])
def test_doc_page_examples(page):
    if page.endswith("coming_from.rst"):
        pytest.importorskip("lightgbm", minversion="4.7")  # eval_X / eval_y
        pytest.importorskip("xgboost")
    result = doctest.testfile(str(DOCS / page), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, result
