"""skltr: GPU-accelerated, scikit-learn compatible learning-to-rank.

Importing skltr is cheap: it imports no CuPy and compiles no numba kernel. Public estimators
are loaded on first access; kernels compile on first use; the GPU path is imported only when
an estimator is given ``device="cuda"``.
"""

from importlib import import_module

from ._version import __version__

#: public name -> module that defines it (imported on first access).
_LAZY = {
    "GPUHistGBDTRanker": "skltr.ranking._gbdt_ranker",
    "OnDemandRuleRanker": "skltr.ranking._rule_ranker",
    "QuickScorerPredictor": "skltr.ranking._quickscorer_predictor",
    "RankBoostRanker": "skltr.ranking._rankboost_ranker",
    "TreeEnsemble": "skltr.trees",
    "explain": "skltr.ranking._explain",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'skltr' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
