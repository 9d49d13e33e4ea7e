"""Map scikit-learn's ``n_jobs`` onto numba's thread count, restoring it afterwards."""

from __future__ import annotations

from contextlib import contextmanager

import numba
from joblib import effective_n_jobs


def resolve_n_jobs(n_jobs) -> int:
    """Threads for ``n_jobs``: None -> all numba threads; -1 -> all cores; capped at numba's."""
    available = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None:
        return available
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero integer or None; got {n_jobs!r}.")
    wanted = n_jobs if n_jobs > 0 else effective_n_jobs(n_jobs)
    return max(1, min(wanted, available))


@contextmanager
def numba_threads(n_jobs):
    """Run the block with ``numba.set_num_threads(resolve_n_jobs(n_jobs))``."""
    previous = numba.get_num_threads()
    numba.set_num_threads(resolve_n_jobs(n_jobs))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
