import numba
import pytest

from skltr.utils._threads import numba_threads, resolve_n_jobs


def test_resolve_n_jobs():
    top = numba.config.NUMBA_NUM_THREADS
    assert resolve_n_jobs(None) == top
    assert resolve_n_jobs(1) == 1
    assert resolve_n_jobs(10_000) == top
    assert 1 <= resolve_n_jobs(-1) <= top
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n_jobs must be"):
            resolve_n_jobs(bad)


def test_numba_threads_restores():
    before = numba.get_num_threads()
    with pytest.raises(RuntimeError):
        with numba_threads(1):
            assert numba.get_num_threads() == 1
            raise RuntimeError
    assert numba.get_num_threads() == before
