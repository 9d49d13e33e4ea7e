"""Query-aware model selection: splitters and ranking scorers."""

from ._scorer import RankingScorer, make_ranking_scorer
from ._split import QueryKFold, train_test_split_by_query

__all__ = ["QueryKFold", "train_test_split_by_query", "make_ranking_scorer", "RankingScorer"]
