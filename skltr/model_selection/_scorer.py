"""Ranking scorers for ``GridSearchCV`` / ``cross_validate`` that request ``qid``."""

from __future__ import annotations

import re

import numpy as np
from sklearn.utils.metadata_routing import MetadataRequest

__all__ = ["make_ranking_scorer", "RankingScorer"]

_SPEC = re.compile(r"^(ndcg|dcg|map|mrr|err|precision)(?:@(\d+))?$")


def _metric_function(name):
    from .. import metrics  # noqa: PLC0415 - compile numba kernels lazily

    return {
        "ndcg": metrics.ndcg_score, "dcg": metrics.dcg_score, "map": metrics.map_score,
        "mrr": metrics.mrr_score, "err": metrics.err_score, "precision": metrics.precision_at_k,
    }[name]


class RankingScorer:
    """Scorer ``scorer(estimator, X, y, qid=..., sample_weight=None) -> float``.

    Built by :func:`make_ranking_scorer`. It requests ``qid`` (and accepts ``sample_weight``)
    through scikit-learn's metadata routing, so search and cross-validation tools pass each
    fold's query ids to it.
    """

    def __init__(self, metric: str, k: int | None, metric_kwargs: dict):
        self.metric, self.k, self.metric_kwargs = metric, k, dict(metric_kwargs)

    def __call__(self, estimator, X, y_true, qid=None, sample_weight=None):
        from ..ranking._base import _ROUTING_HINT  # noqa: PLC0415

        if qid is None:
            raise ValueError(_ROUTING_HINT.replace("score()", f"The {self!r} scorer"))
        y_pred = estimator.predict(X)
        return float(_metric_function(self.metric)(
            np.asarray(y_true), np.asarray(y_pred), qid=qid, k=self.k,
            sample_weight=sample_weight, **self.metric_kwargs))

    def get_metadata_routing(self):
        request = MetadataRequest(owner=type(self).__name__)
        request.score.add_request(param="qid", alias=True)
        request.score.add_request(param="sample_weight", alias=True)
        return request

    def __repr__(self):
        spec = self.metric if self.k is None else f"{self.metric}@{self.k}"
        extra = "".join(f", {k}={v!r}" for k, v in self.metric_kwargs.items())
        return f"make_ranking_scorer({spec!r}{extra})"


def make_ranking_scorer(spec: str = "ndcg@10", **metric_kwargs) -> RankingScorer:
    """A scorer for model selection from a metric name such as ``"ndcg@10"``.

    Parameters
    ----------
    spec : str, default="ndcg@10"
        ``"<metric>@<k>"`` or ``"<metric>"`` (all documents), metric one of ``ndcg``, ``dcg``,
        ``map``, ``mrr``, ``err``, ``precision``.
    **metric_kwargs
        Passed to the metric function of :mod:`skltr.metrics` (e.g. ``gain="linear"``).

    Returns
    -------
    RankingScorer
        Greater is better for every metric here.

    Examples
    --------
    >>> make_ranking_scorer("map@5")
    make_ranking_scorer('map@5')
    """
    match = _SPEC.match(str(spec).strip().lower())
    if match is None:
        raise ValueError(
            f"unknown ranking metric {spec!r}; use e.g. 'ndcg@10', 'map@10', 'mrr@10', "
            f"'err@10', 'precision@10', 'dcg@10' or a name without @k for all documents."
        )
    k = int(match.group(2)) if match.group(2) else None
    if k == 0:
        raise ValueError(f"the cut-off in {spec!r} must be a positive integer.")
    return RankingScorer(match.group(1), k, metric_kwargs)
