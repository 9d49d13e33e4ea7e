"""Ranking data sets: a synthetic generator and a LETOR/SVMlight reader and writer with qid.

- :func:`make_ranking` -- synthetic web-search-like data (mixed feature types, skewed grades).
- :func:`simulate_clicks` -- click logs from graded data with a known position bias
  (position-based and cascade models, a random or given logging policy).
- :func:`load_letor` / :func:`dump_letor` -- ``label qid:Q idx:value ...`` files, or
  qid-less files with a LightGBM-style ``.query`` file of group sizes.
"""

from ._clicks import ClickLog, simulate_clicks
from ._svmlight import dump_letor, load_letor
from ._synthetic import make_ranking

__all__ = ["ClickLog", "dump_letor", "load_letor", "make_ranking", "simulate_clicks"]
