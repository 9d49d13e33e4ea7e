"""scikit-learn front-ends of the skltr rankers.

``RANKERS`` lists the estimators that exist, by name; the ``skltr demo`` command trains each
of them. Estimator issues add themselves here.
"""

from ._base import BaseRanker, RankerMixin

#: name -> ``factory(device)`` returning an unfitted ranker for that device.
RANKERS: dict = {}

__all__ = ["BaseRanker", "RankerMixin", "RANKERS"]
