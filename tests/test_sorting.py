"""skltr.utils._sorting: the kernels' heapsort gives np.sort's array (NaN last); the
insertion from a start gives the stable descending order whatever the start."""

import numpy as np
import pytest

from skltr.utils._sorting import insertion_from, sort_inplace


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


@pytest.mark.parametrize("n", [0, 1, 2, 5, 40, 150])
@pytest.mark.parametrize("start", ["identity", "sorted", "reversed", "random"])
def test_insertion_from_any_start_is_the_stable_order(n, start):
    rng = np.random.default_rng(n)
    keys = rng.integers(-3, 4, n) * 0.5
    keys[rng.random(n) < 0.2] = -0.0  # signed zeros tie with 0.0
    stable = np.argsort(-keys, kind="stable")
    idx = {"identity": np.arange(n), "sorted": stable.copy(), "reversed": stable[::-1].copy(),
           "random": rng.permutation(n)}[start]
    skey = keys[idx]
    assert insertion_from(skey, idx, n, n * n)
    np.testing.assert_array_equal(idx, stable)
    np.testing.assert_array_equal(skey, keys[stable])


def test_insertion_from_stops_past_its_budget():
    keys = np.arange(50.0)  # ascending: every key shifts to the front
    idx = np.arange(50)
    assert not insertion_from(keys.copy(), idx, 50, 100)
    idx = np.arange(50)
    assert insertion_from(keys.copy(), idx, 50, 50 * 49 // 2)
    np.testing.assert_array_equal(idx, np.arange(50)[::-1])
