"""Per-stage GPU time of the training loop, from CUDA events (off unless asked for).

``with profiling() as timer: ...fit...`` then ``timer.summary()`` gives seconds of GPU time
per stage (``gradients``, ``quantise``, ``histogram``, ``subtract``, ``split``,
``partition``, ``scores``, ``eval``), summed over the rounds. Events are recorded around each
stage's launches and read once at the end, so timing adds no synchronisation to the loop.
"""

from __future__ import annotations

import contextlib

import cupy

_ACTIVE = None


class StageTimer:
    """Collects (start, end) event pairs per stage name."""

    def __init__(self):
        self._pairs = []

    @contextlib.contextmanager
    def stage(self, name):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        try:
            yield
        finally:
            end.record()
            self._pairs.append((name, start, end))

    def summary(self) -> dict:
        """Seconds of GPU time per stage (synchronises once)."""
        out = {}
        if self._pairs:
            self._pairs[-1][2].synchronize()
        for name, s, e in self._pairs:
            out[name] = out.get(name, 0.0) + cupy.cuda.get_elapsed_time(s, e) / 1000.0
        return out


@contextlib.contextmanager
def profiling():
    """Turn stage timing on for the enclosed fits; yields the :class:`StageTimer`."""
    global _ACTIVE
    prev, _ACTIVE = _ACTIVE, StageTimer()
    try:
        yield _ACTIVE
    finally:
        _ACTIVE = prev


def stage(name):
    """Context manager timing one stage when profiling is on, else nothing."""
    return _ACTIVE.stage(name) if _ACTIVE is not None else contextlib.nullcontext()
