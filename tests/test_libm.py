"""skltr._cpu.libm: fdlibm's exp and log2 (the same bits on both devices) are accurate."""

import numpy as np
from numba import njit

from skltr._cpu import libm


@njit
def _run(x, e, lg):
    for i in range(x.size):
        e[i] = libm.exp(x[i])
        lg[i] = libm.log2(x[i] + 746.0)


def test_exp_and_log2_are_within_an_ulp_or_two():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-745, 709, 300_000), rng.uniform(-1, 1, 100_000),
                        rng.normal(scale=1e-9, size=1000), [0.0, -0.0, 1e-300, 709.7, -745.0]])
    e, lg = np.empty_like(x), np.empty_like(x)
    _run(x, e, lg)
    ref = np.exp(x)
    normal = ref > np.finfo(np.float64).tiny
    assert np.all(np.abs(e - ref)[normal] <= np.spacing(ref[normal]))
    assert np.all(np.abs(e - ref)[~normal] <= np.spacing(0.0))  # subnormal results
    ref2 = np.log2(x + 746.0)
    assert np.all(np.abs(lg - ref2) <= 2 * np.spacing(np.abs(ref2)) + 1e-300)
    assert _exp(np.array([710.0, -746.0, np.inf, -np.inf])).tolist() == [np.inf, 0.0, np.inf, 0.0]
    assert np.isnan(_exp(np.array([np.nan]))[0])


def _exp(x):
    e, lg = np.empty_like(x), np.empty_like(x)
    _run(x, e, lg)
    return e
