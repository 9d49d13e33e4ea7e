"""The GPU's exact float32 helpers (``skltr._gpu._compile.EXACT_FLOAT32``) on the CPU: their
source compiled with g++ (tests/cuda_emulation.py's prelude) gives numpy's float32 rounding,
subnormals included -- the bits the CUDA kernels must write under CuPy's ``-ftz=true``,
where a plain ``(float)x`` flushes a subnormal result to zero (the real launches:
tests/test_gbdt_gpu.py). Skipped without g++."""

import ctypes
import shutil

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

_RUNNER = r"""
extern "C" void run(const double* x, float* as_float, double* as_double, long n) {
    for (long i = 0; i < n; ++i) { as_float[i] = to_float32(x[i]); as_double[i] = f32_round(x[i]); }
}
"""


def _library():
    from cuda_emulation import COMMON, EXACT, PRELUDE, library

    return library(PRELUDE + COMMON + EXACT + _RUNNER, "f32")


def test_to_float32_and_f32_round_are_numpys_rounding_subnormals_included():
    rng = np.random.default_rng(0)
    tiny = np.float64(2.0) ** -149  # the smallest float32 subnormal
    x = np.concatenate([
        rng.uniform(-1, 1, 2000) * 2.0 ** -126,          # float32's subnormal range
        rng.integers(-2 ** 23, 2 ** 23, 500) * tiny + tiny / 2,   # exact ties: to even
        np.array([0.0, -0.0, tiny / 2, tiny / 2 * 1.0000001, tiny, 2.0 ** -126,
                  2.0 ** -126 - tiny / 2, 2.0 ** -126 - tiny / 4, 1e-300, -1e-300,
                  1.0, -3.5, 1e38, 4e38, np.inf, -np.inf]),
        rng.normal(0, 1, 1000) * 10.0 ** rng.integers(-40, 38, 1000),
    ])
    f = np.empty(x.size, np.float32)
    d = np.empty(x.size, np.float64)
    lib = _library()
    with np.errstate(over="ignore"):
        want = x.astype(np.float32)
    lib.run(x.ctypes.data_as(ctypes.c_void_p), f.ctypes.data_as(ctypes.c_void_p),
            d.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
    np.testing.assert_array_equal(f.view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(d, want.astype(np.float64))
    assert (want[:2000] != 0).sum() > 1900  # the subnormal range was exercised
