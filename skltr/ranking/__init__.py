"""scikit-learn front-ends of the skltr rankers.

``RANKERS`` lists the estimators that exist, by name; the ``skltr demo`` command trains each
of them. Estimator issues add themselves here.
"""

from ._base import BaseRanker, RankerMixin

#: name -> ``factory(device)`` returning an unfitted ranker for that device.
RANKERS: dict = {}


def _gbdt_ranker(device="cpu"):
    # Imported on call: keeps ``import skltr.ranking`` free of the GBDT modules.
    from ._gbdt_ranker import GPUHistGBDTRanker  # noqa: PLC0415

    if device == "cpu":
        return GPUHistGBDTRanker(device=device, random_state=0)
    # Depth-wise is the GPU's fast growth policy (leaf-wise runs one split at a time there:
    # docs/gbdt_gpu.rst); "auto" may resolve to a GPU.
    return GPUHistGBDTRanker(device=device, growth="depthwise", max_depth=6, max_leaves=None,
                             random_state=0)


def _rankboost_ranker(device="cpu"):
    from ._rankboost_ranker import RankBoostRanker  # noqa: PLC0415

    return RankBoostRanker(device=device, random_state=0)


def _rule_ranker(device="cpu"):
    from ._rule_ranker import OnDemandRuleRanker  # noqa: PLC0415

    # Rules of two items: the demo's 136 features make C(136, 3) = 410,040 itemsets per
    # document at size 3 (docs/user_guide/rule_ranker.rst measures both).
    return OnDemandRuleRanker(max_rule_size=2, device=device, random_state=0)


RANKERS["GPUHistGBDTRanker"] = _gbdt_ranker
RANKERS["RankBoostRanker"] = _rankboost_ranker
RANKERS["OnDemandRuleRanker"] = _rule_ranker


def __getattr__(name):
    if name == "GPUHistGBDTRanker":
        from ._gbdt_ranker import GPUHistGBDTRanker  # noqa: PLC0415

        return GPUHistGBDTRanker
    if name == "RankBoostRanker":
        from ._rankboost_ranker import RankBoostRanker  # noqa: PLC0415

        return RankBoostRanker
    if name == "OnDemandRuleRanker":
        from ._rule_ranker import OnDemandRuleRanker  # noqa: PLC0415

        return OnDemandRuleRanker
    raise AttributeError(f"module 'skltr.ranking' has no attribute {name!r}")


__all__ = ["BaseRanker", "RankerMixin", "RANKERS", "GPUHistGBDTRanker"]
