"""Longer GIL slices during a training task on a Dask worker (``sys.setswitchinterval``).

A Dask worker runs other Python threads beside a task: the event loop and, unless
``distributed.worker.profile.enabled`` is off, a sampling profiler that takes the GIL every
10 ms to read the stacks of the task threads. The boosting loop holds the GIL in its numba
kernels and runs Python between them (the growth driver, a few dozen calls a node); at each
return to Python a thread that asked for the GIL meanwhile gets it first, and with
CPython's default switch interval of 5 ms the loop is interrupted again and again. Every
such pause on one worker is waited for by all the others at the next all-reduce.

Measured on the GPU machine's 16-core host (1M x 136, 100 trees of 31 leaves, 4 workers x
4 threads, one run: ``benchmarks/results/dask_worker_settings-h100-host-4x4-4b559ca-*``): the fit
took 25.3 s; 17.6 s with a 50 ms switch interval, 17.4 s with the profiler off, 16.2 s with
both. Each rank's boosting time fell from 24.0 to 16.4 s and its time at the barriers from
4.4-4.9 to 1.9-2.5 s.

:func:`long_gil_slices` sets a 50 ms interval while training tasks run in this process (it
is process-wide) and puts back the previous value when the last one ends. Other threads
still run whenever the loop waits (the all-reduce's sockets release the GIL) and at least
every 50 ms, which is far inside Dask's heartbeat and timeout periods.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

__all__ = ["long_gil_slices"]

#: seconds a thread may hold the GIL before another that asks for it gets it
TRAINING_SWITCH_INTERVAL = 0.05

_lock = threading.Lock()
_active = 0  # training tasks of this process inside long_gil_slices
_saved = None  # the interval before the first of them


@contextmanager
def long_gil_slices():
    """Run the body with a switch interval of at least ``TRAINING_SWITCH_INTERVAL``."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = sys.getswitchinterval()
            sys.setswitchinterval(max(_saved, TRAINING_SWITCH_INTERVAL))
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                sys.setswitchinterval(_saved)
