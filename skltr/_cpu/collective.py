"""The compiled distributed grower's way out to its fit's communicator.

:func:`skltr._cpu.grow_distributed.grow_leafwise_distributed` is one numba call a tree; its
sums over the workers are Python calls (``numba.objmode`` blocks, about 2 us each) to the
functions here, which reach the communicator that :func:`using` set for this thread. A
thread, not the module: the tests run several ranks as threads of one process. These
functions live apart from the kernel's module so that numba can cache the kernel: a cached
``objmode`` block refers to them by module and name.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["using", "reduce_rows", "reduce_rows_into", "allreduce_sum_into"]

_active = threading.local()


@contextlib.contextmanager
def using(communicator):
    """The communicator of this thread's compiled distributed tree."""
    before = getattr(_active, "communicator", None)
    _active.communicator = communicator
    try:
        yield
    finally:
        _active.communicator = before


def reduce_rows(communicator, arr, lo, hi):
    """``arr[lo:hi]`` (rows of the first axis) summed over the workers, each worker passing
    its own rows: the communicator's ``reduce_rows_sum`` where it has one (shared memory:
    each worker sums only its rows), else the rows of the whole all-reduce."""
    own = getattr(communicator, "reduce_rows_sum", None)
    if own is not None:
        return own(arr, lo, hi)
    return communicator.allreduce_sum(arr)[lo:hi]


def reduce_rows_into(local, out, lo, hi):
    """``out[lo:hi]`` = ``local[lo:hi]`` summed over the workers (``local`` kept)."""
    out[lo:hi] = reduce_rows(_active.communicator, local, lo, hi)


def allreduce_sum_into(arr):
    """``arr`` summed over the workers, in place."""
    arr[...] = _active.communicator.allreduce_sum(arr)
