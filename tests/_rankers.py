"""Rankers built only for tests: a minimal pointwise ranker exercising the base-class plumbing.

``LinearTestRanker`` fits ridge regression of the labels (closed form), so tests of routing,
splitting and validation do not depend on any real ranking algorithm.
``SingleQueryLinearTestRanker`` treats a missing qid as one query so scikit-learn's generic
``parametrize_with_checks`` (which calls ``fit(X, y)``) can run over the base class;
``SingleQueryGBDTRanker`` does the same for ``GPUHistGBDTRanker``.
"""

import numpy as np
from sklearn.base import BaseEstimator

from skltr.ranking._base import BaseRanker
from skltr.ranking._gbdt_ranker import GPUHistGBDTRanker
from skltr.ranking._rankboost_ranker import RankBoostRanker


class LinearTestRanker(BaseRanker):
    _allow_nan = False

    def __init__(self, alpha=1.0, eval_at=10):
        self.alpha = alpha
        self.eval_at = eval_at

    def _fit(self, data):
        X = data.X
        w = np.ones(X.shape[0]) if data.sample_weight is None else data.sample_weight
        mean = np.average(X, axis=0, weights=w) if w.sum() > 0 else X.mean(axis=0)
        Xc = (X - mean) * np.sqrt(w)[:, None]
        yc = (data.y - np.average(data.y, weights=w if w.sum() > 0 else None)) * np.sqrt(w)
        A = Xc.T @ Xc + self.alpha * np.eye(X.shape[1])
        self.coef_ = np.linalg.solve(A, Xc.T @ yc)
        self.intercept_ = -float(mean @ self.coef_)
        self.n_queries_ = data.groups.n_queries
        return self

    def _predict(self, X):
        return X @ self.coef_ + self.intercept_


class SingleQueryLinearTestRanker(LinearTestRanker):
    _missing_qid = "single_query"


class SingleQueryGBDTRanker(GPUHistGBDTRanker):
    """GPUHistGBDTRanker reading a missing qid as one query (for parametrize_with_checks)."""

    _missing_qid = "single_query"


assert issubclass(LinearTestRanker, BaseEstimator)


class SingleQueryRankBoostRanker(RankBoostRanker):
    """RankBoostRanker reading a missing qid as one query (for parametrize_with_checks)."""

    _missing_qid = "single_query"


from skltr.ranking._rule_ranker import OnDemandRuleRanker  # noqa: E402


class SingleQueryRuleRanker(OnDemandRuleRanker):
    """OnDemandRuleRanker reading a missing qid as one query (for parametrize_with_checks)."""

    _missing_qid = "single_query"
