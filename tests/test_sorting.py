"""skltr.utils._sorting: the kernels' heapsort gives np.sort's array (NaN last)."""

import numpy as np
import pytest

from skltr.utils._sorting import sort_inplace


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 20, 64, 257, 1000])
@pytest.mark.parametrize("kind", ["float", "ties", "nan", "int"])
def test_sort_inplace_is_np_sort(n, kind):
    rng = np.random.default_rng(n)
    if kind == "int":
        a = rng.integers(-50, 50, n)
    elif kind == "ties":
        a = rng.integers(0, 4, n).astype(np.float64) * -1.0  # -0.0 and equal keys
    else:
        a = rng.normal(size=n)
        if kind == "nan" and n:
            a[rng.random(n) < 0.2] = np.nan
            a[rng.random(n) < 0.1] = np.inf
            a[rng.random(n) < 0.1] = -np.inf
    expected = np.sort(a)
    sort_inplace(a)
    np.testing.assert_array_equal(a, expected)
