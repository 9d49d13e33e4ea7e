"""Scoring backends: the one table of how a ``TreeEnsemble`` is laid out and scored.

Every estimator that scores an ensemble (``QuickScorerPredictor``, the rankers' ``predict``)
goes through :func:`get_backend`; adding a backend is one entry in :data:`BACKENDS`. A backend
names its device, builds its tables once per ensemble (or has none) and scores raw margins
equal, bit for bit, to ``TreeEnsemble.predict_raw``.

The GPU backends live in ``skltr._gpu`` (a layer above this one, which imports CuPy) and
:func:`register` themselves when imported; the front-ends import them when a GPU device is
asked for (``skltr.ranking._ensemble_ranker.load_gpu_backends``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Backend", "BACKENDS", "choose_backend", "get_backend", "register"]


@dataclass(frozen=True)
class Backend:
    """One scoring backend.

    Attributes
    ----------
    name : str
    device : {"cpu", "cuda"}
    build_layout : callable or None
        ``build_layout(ensemble, **options)`` -> the backend's tables, built once; None when
        the backend scores the ensemble's own arrays.
    predict_raw : callable
        ``predict_raw(ensemble, layout, X, n_jobs)`` -> raw scores, as
        ``TreeEnsemble.predict_raw``.
    """

    name: str
    device: str
    build_layout: Callable | None
    predict_raw: Callable

    def layout(self, ensemble, **options):
        """The backend's tables for ``ensemble`` (None without tables)."""
        return None if self.build_layout is None else self.build_layout(ensemble, **options)

    @staticmethod
    def table_bytes(layout) -> int:
        """Bytes of the tables (0 without tables)."""
        return 0 if layout is None else int(layout.nbytes)


def _quickscorer_layout(ensemble, tree_block=None):
    from ._quickscorer import cpu_tree_block  # noqa: PLC0415 - numba on use
    from ._quickscorer_layout import build_quickscorer_layout  # noqa: PLC0415

    if tree_block is None:  # sized from this machine's L2
        tree_block = cpu_tree_block(ensemble)
    return build_quickscorer_layout(ensemble, tree_block=tree_block)


def _quickscorer_predict(ensemble, layout, X, n_jobs):
    from ._quickscorer import predict_raw  # noqa: PLC0415 - numba on use

    return predict_raw(ensemble, layout, X, n_jobs=n_jobs)


def _traversal_layout(ensemble, tree_block=None):  # tree_block: QuickScorer's option
    from ._traversal import traversal_layout  # noqa: PLC0415 - numba on use

    return traversal_layout(ensemble)


def _traversal_predict(ensemble, layout, X, n_jobs):
    from ._traversal import predict_raw  # noqa: PLC0415

    return predict_raw(ensemble, X, n_jobs=n_jobs, top=layout)


#: name -> Backend. ``"auto"`` is not a backend: :func:`choose_backend` resolves it.
BACKENDS = {
    "quickscorer": Backend("quickscorer", "cpu", _quickscorer_layout, _quickscorer_predict),
    "traversal": Backend("traversal", "cpu", _traversal_layout, _traversal_predict),
}


#: The backend each ``backend=`` name means on a GPU (``gpu_auto`` measures the traversal
#: placements and GPU-QuickScorer per batch size and keeps the fastest).
GPU_NAMES = {"auto": "gpu_auto", "traversal": "gpu_traversal",
             "quickscorer": "gpu_quickscorer"}


def register(backend: Backend) -> None:
    """Add ``backend`` to :data:`BACKENDS` (the GPU backends call it on import)."""
    BACKENDS[backend.name] = backend


def choose_backend(ensemble) -> str:
    """The backend ``backend="auto"`` picks: QuickScorer unless most trees are too large for
    64-bit leaf vectors (they would fall back to traversal one by one).

    Stumps included: QuickScorer scored RankBoost's 300 stumps and 300 depth-1 XGBoost trees
    2.3-5.1x faster than traversal at 200 to 200,000 rows on 1 and 2 threads
    (``benchmarks/predict_stumps.py``). On a GPU, ``gpu_auto`` measures GPU-QuickScorer beside
    the traversal placements where this picks QuickScorer.
    """
    leaves = ensemble.n_leaves()
    if leaves.size == 0:
        return "traversal"
    return "quickscorer" if np.mean(leaves <= 64) >= 0.5 else "traversal"


def get_backend(name, ensemble, device="cpu") -> Backend:
    """The :class:`Backend` called ``name`` on ``device`` (``"cpu"`` or ``"cuda"``;
    ``"auto"``: :func:`choose_backend` on the CPU, ``gpu_auto`` on a GPU). The GPU backends
    must have been registered (importing ``skltr._gpu.traversal`` does it)."""
    if device == "cuda":
        return BACKENDS[GPU_NAMES[name]]
    return BACKENDS[choose_backend(ensemble) if name == "auto" else name]
