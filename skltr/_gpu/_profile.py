"""Per-stage GPU time of the training loop, from CUDA events (off unless asked for).

``with profiling() as timer: ...fit...`` then ``timer.summary()`` gives seconds of GPU time
per stage (``gradients``, ``quantise``, ``histogram``, ``subtract``, ``split``, ``plan``,
``partition``, ``scores``, ``eval``), summed over the rounds. Events are recorded around each
stage's launches and read once at the end, so timing adds no synchronisation to the loop.
The bookkeeping is the host timer's (:mod:`skltr.utils._profile`); only the clock differs.
"""

from __future__ import annotations

import cupy

from ..utils import _profile

__all__ = ["StageTimer", "profiling", "stage"]


class StageTimer(_profile.StageTimer):
    """Collects (start, end) CUDA event pairs per stage name."""

    def _mark(self):
        event = cupy.cuda.Event()
        event.record()
        return event

    def _seconds(self, start, end) -> float:
        return cupy.cuda.get_elapsed_time(start, end) / 1000.0

    def _wait(self) -> None:
        self._pairs[-1][2].synchronize()


_CUDA = _profile.Profiler(StageTimer)
profiling = _CUDA.profiling
stage = _CUDA.stage
