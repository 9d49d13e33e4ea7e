"""Per-stage time of a training loop (off unless asked for): the host-clock timer.

``with profiling() as timer: ...fit...`` then ``timer.summary()`` gives seconds per stage
summed over the fit, ``timer.calls()`` how many times each ran and ``timer.bytes()`` the
bytes each stage reported moving (a stage passes ``nbytes``: its memory traffic estimate, so
that a benchmark can compare a stage's rate with the machine's memory bandwidth). With
profiling off :func:`stage` returns one shared no-op context: the growers call it per node,
and the cost is one global read and a ``with`` on a do-nothing object.

The CUDA timer (:mod:`skltr._gpu._profile`) is the same class with CUDA events for clock
marks; each timer family has its own :class:`Profiler` (a CPU fit never records GPU events).
"""

from __future__ import annotations

import contextlib
import time

__all__ = ["StageTimer", "Profiler", "profiling", "stage"]


class StageTimer:
    """Collects (name, start mark, end mark, bytes) per timed stage; host clock."""

    def __init__(self):
        self._pairs = []

    def _mark(self):
        return time.perf_counter()

    def _seconds(self, start, end) -> float:
        return end - start

    def _wait(self) -> None:
        """Make every recorded mark readable (nothing to wait for on the host)."""

    @contextlib.contextmanager
    def stage(self, name, nbytes=0):
        start = self._mark()
        try:
            yield
        finally:
            self._pairs.append((name, start, self._mark(), nbytes))

    def summary(self) -> dict:
        """Seconds per stage."""
        out = {}
        if self._pairs:
            self._wait()
        for name, s, e, _ in self._pairs:
            out[name] = out.get(name, 0.0) + self._seconds(s, e)
        return out

    def calls(self) -> dict:
        """Times each stage ran."""
        out = {}
        for name, *_ in self._pairs:
            out[name] = out.get(name, 0) + 1
        return out

    def bytes(self) -> dict:
        """Bytes each stage reported moving (``nbytes`` of :meth:`stage`), summed."""
        out = {}
        for name, _, _, nbytes in self._pairs:
            out[name] = out.get(name, 0) + int(nbytes)
        return out


class _Off:
    """The no-op stage of a profiler that is off (one instance, re-entrant)."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_OFF = _Off()


class Profiler:
    """Which timer (if any) the stages of one family record into.

    Parameters
    ----------
    timer_class : type
        :class:`StageTimer` or a subclass.
    """

    def __init__(self, timer_class):
        self.timer_class = timer_class
        self.active = None

    @contextlib.contextmanager
    def profiling(self):
        """Turn stage timing on for the enclosed fits; yields the timer."""
        prev, self.active = self.active, self.timer_class()
        try:
            yield self.active
        finally:
            self.active = prev

    def stage(self, name, nbytes=0):
        """Context manager timing one stage when profiling is on, else nothing."""
        return _OFF if self.active is None else self.active.stage(name, nbytes)


_HOST = Profiler(StageTimer)
#: Host-clock stage timing of the CPU training loop (see the module docstring).
profiling = _HOST.profiling
stage = _HOST.stage
