"""Ranking data sets: a synthetic generator and a LETOR/SVMlight reader and writer with qid.

- :func:`make_ranking` -- synthetic web-search-like data (mixed feature types, skewed grades).
- :func:`load_letor` / :func:`dump_letor` -- ``label qid:Q idx:value ...`` files, or
  qid-less files with a LightGBM-style ``.query`` file of group sizes.
"""

from ._svmlight import dump_letor, load_letor
from ._synthetic import make_ranking

__all__ = ["dump_letor", "load_letor", "make_ranking"]
