"""Time limits for tests of code that could hang (parsers fed corrupt input).

``with time_limit(5): parse(data)`` fails the test with an ``AssertionError`` when the block
runs longer than 5 seconds, instead of blocking the whole test run. It uses ``SIGALRM``
(``signal.setitimer``), so it works in the main thread of a POSIX process and interrupts
Python code (parsing loops, allocation loops in Python); a long call inside compiled code
(a numba kernel, a single NumPy call) is interrupted when it returns to Python.
"""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["time_limit", "TimeLimitExceeded"]


class TimeLimitExceeded(BaseException):
    """Raised inside the limited block when its time is up.

    A ``BaseException``, so that an ``except Exception`` in the code under test cannot
    swallow it; :func:`time_limit` turns it into an ``AssertionError``.
    """


@contextlib.contextmanager
def time_limit(seconds: float, what: str = "the block"):
    """Fail with ``AssertionError`` if the block runs longer than ``seconds``.

    Parameters
    ----------
    seconds : float
        Wall-clock limit.
    what : str
        Named in the failure message (e.g. the input that hung).

    Notes
    -----
    Limits do not nest (one ``ITIMER_REAL`` per process); the previous handler is restored
    on exit. Outside the main thread (or without ``SIGALRM``) the block runs unlimited.
    """
    if not hasattr(signal, "setitimer") or threading.current_thread() is not (
            threading.main_thread()):
        yield
        return

    def on_alarm(signum, frame):
        raise TimeLimitExceeded()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except TimeLimitExceeded:
        raise AssertionError(f"{what} did not finish within {seconds} s (a hang?)") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
