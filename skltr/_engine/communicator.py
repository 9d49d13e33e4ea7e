"""The grower's seam for distributed training: every global sum goes through a communicator.

A tree grower on one machine sees all rows; a distributed one sees a shard. The grower reaches
the sums that must be global -- node histograms, the root's gradient sums and row count, the
largest gradient of a round (the quantisation scale) -- only through these methods, so a
distributed engine supplies an allreduce (Dask, NCCL, MPI) without touching the grower. With
``hist_mode="quantised"`` the histograms are int64 and a sum-allreduce is exact, so a
distributed tree equals the local one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LocalCommunicator"]


class LocalCommunicator:
    """One process holds every row: reductions return their argument unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from skltr._engine.communicator import LocalCommunicator
    >>> a = np.array([1.0, 2.0])
    >>> LocalCommunicator().allreduce_sum(a) is a
    True
    """

    #: Workers in all: more than one tells the grower that counts must be all-reduced.
    world = 1

    def allreduce_sum(self, arr: np.ndarray) -> np.ndarray:
        """Element-wise sum over all workers (returned array may be ``arr`` itself)."""
        return arr

    def allreduce_max(self, arr: np.ndarray) -> np.ndarray:
        """Element-wise maximum over all workers (the quantisation scale needs the global max)."""
        return arr

