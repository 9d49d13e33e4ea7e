"""Training and scoring on a Dask cluster (from a clone of skltr:
``pip install ".[dask]"``).

* :class:`DaskGPUHistGBDTRanker`: the GBDT ranker trained on the workers; the model equals
  the one-process ``GPUHistGBDTRanker``'s on the same rows, bit for bit, for any number of
  workers and any partitioning.
* :func:`predict`: score a dask Array / DataFrame with any skltr model or
  ``QuickScorerPredictor``, block by block, the model sent once.

Hyper-parameter search over the local rankers runs on a cluster through joblib's Dask
backend (``with joblib.parallel_backend("dask"): GridSearchCV(...).fit(...)``); see
:ref:`dask_training`.
"""

from ._predict import predict
from ._ranker import DaskGPUHistGBDTRanker

__all__ = ["DaskGPUHistGBDTRanker", "predict"]
