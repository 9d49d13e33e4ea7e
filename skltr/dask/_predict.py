"""``skltr.dask.predict``: score a dask collection with any skltr model, block by block."""

from __future__ import annotations

import numpy as np

__all__ = ["predict", "RoundsOf"]


class RoundsOf:
    """A tree ranker scoring with the trees of ``iteration_range`` (sent to the workers)."""

    def __init__(self, model, iteration_range):
        self.model, self.iteration_range = model, iteration_range

    def predict(self, X):
        return self.model.predict(X, iteration_range=self.iteration_range)


def _predict_block(block, model):
    return np.asarray(model.predict(block), dtype=np.float64)


def _predict_frame(frame, model):
    import pandas as pd  # noqa: PLC0415

    return pd.Series(_predict_block(frame, model), index=frame.index, dtype=np.float64)


def predict(model, X, *, client=None):
    """Lazy scores of the dask Array or DataFrame ``X`` by ``model``, aligned with ``X``.

    Parameters
    ----------
    model : fitted skltr estimator
        Anything with ``predict``: a ranker (``GPUHistGBDTRanker``, ``RankBoostRanker``,
        ``OnDemandRuleRanker``, ...) or a ``QuickScorerPredictor`` of an XGBoost / LightGBM /
        scikit-learn model. It is sent to each worker once (one task in the graph), and
        scores there with its own device setting: a model fitted on a GPU scores on the
        worker's GPU when CuPy sees one.
    X : dask.array.Array (2-D) or dask.dataframe.DataFrame
    client : distributed.Client, optional
        Where to send the model now (``client.scatter(..., broadcast=True)``); without one
        the model travels inside the graph, once.

    Returns
    -------
    dask.array.Array of shape (n_rows,) with ``X``'s row chunks, or dask.dataframe.Series
    with ``X``'s partitions and index. Nothing is computed until you ``compute()`` it.
    """
    import dask  # noqa: PLC0415
    import dask.array as da  # noqa: PLC0415

    if not hasattr(X, "__dask_graph__"):
        raise TypeError(f"skltr.dask.predict takes a dask Array or DataFrame; got "
                        f"{type(X).__name__}. Call model.predict(X) for local data.")
    if not hasattr(model, "predict"):
        raise TypeError(f"model must be a fitted estimator with predict; got "
                        f"{type(model).__name__}.")
    shared = (client.scatter(model, broadcast=True, hash=False) if client is not None
              else dask.delayed(model, pure=True))
    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_rows, n_features); got shape {X.shape}.")
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        return X.map_blocks(_predict_block, shared, drop_axis=1, dtype=np.float64,
                            meta=np.empty(0, np.float64))
    import pandas as pd  # noqa: PLC0415

    return X.map_partitions(_predict_frame, shared, meta=pd.Series(dtype=np.float64))
