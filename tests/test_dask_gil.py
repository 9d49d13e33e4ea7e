"""skltr.dask._gil: the switch interval while training tasks run, put back after the last."""

import sys
import threading

from skltr.dask._gil import TRAINING_SWITCH_INTERVAL, long_gil_slices

# CPython keeps the interval in microseconds: 0.05 reads back as 0.049999...
RAISED = TRAINING_SWITCH_INTERVAL * 0.999


def test_interval_is_raised_while_tasks_run_and_restored_after_the_last():
    before = sys.getswitchinterval()
    assert before < TRAINING_SWITCH_INTERVAL  # CPython's default is 5 ms
    entered, release = threading.Barrier(3), threading.Event()
    seen = []

    def task():
        with long_gil_slices():
            entered.wait()
            seen.append(sys.getswitchinterval())
            release.wait()

    threads = [threading.Thread(target=task, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        entered.wait(timeout=30)  # both tasks inside
        during = sys.getswitchinterval()
    finally:
        release.set()
        for t in threads:
            t.join(timeout=30)
    assert during >= RAISED
    assert len(seen) == 2 and all(v >= RAISED for v in seen)
    assert sys.getswitchinterval() == before


def test_interval_is_restored_when_the_task_fails():
    before = sys.getswitchinterval()
    try:
        with long_gil_slices():
            raise KeyError("boom")
    except KeyError:
        pass
    assert sys.getswitchinterval() == before


def test_a_longer_interval_is_kept():
    before = sys.getswitchinterval()
    sys.setswitchinterval(2 * TRAINING_SWITCH_INTERVAL)
    try:
        with long_gil_slices():
            assert sys.getswitchinterval() >= 2 * RAISED
    finally:
        sys.setswitchinterval(before)
