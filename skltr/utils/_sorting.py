"""Sorts for the numba kernels: :func:`sort_inplace`, in place of ``np.sort`` inside them where
its speed does not matter (short arrays, rare branches), :func:`insertion_order`, the
stable descending order of a few keys (a query's scores; YetiRank's noisy keys), and
:func:`insertion_from`, the same order from a nearly sorted start (a query's last order).

numba compiles ``np.sort`` from its generic quicksort (partition, insertion sort, the
recursion's driver...): about 1 s of CPU per key dtype on a first run
(``benchmarks/cold_start.py``: issue #28), against about 0.2 s for this heapsort. The result
is the same (a sorted array is unique; keys order as NumPy orders them, NaN last). The hot
stable argsorts keep ``np.argsort(kind="mergesort")``: a plain bottom-up merge sort measured
1.4-1.7x slower per key on 50-1,000 keys.
"""

import numpy as np
from numba import njit

from .. import _numba_cache  # noqa: F401 - kernel caches outside the package

__all__ = ["insertion_from", "insertion_order", "sort_inplace"]


@njit(cache=True, inline="always")
def _lt(a, b):
    # NumPy's order: NaN after every number (numba's lt_floats)
    return a < b or (np.isnan(b) and not np.isnan(a))


@njit(cache=True, inline="always")
def _sift_down(a, root, end):
    # restore the max-heap below ``root`` in a[:end + 1]
    while True:
        child = 2 * root + 1
        if child > end:
            return
        if child + 1 <= end and _lt(a[child], a[child + 1]):
            child += 1
        if _lt(a[root], a[child]):
            a[root], a[child] = a[child], a[root]
            root = child
        else:
            return


@njit(cache=True)
def sort_inplace(a):
    """Sort the 1-D array ``a`` in place, ascending (NaN last): ``a[:] = np.sort(a)``, by
    heapsort (O(n log n), no workspace)."""
    n = a.shape[0]
    for root in range((n - 2) // 2, -1, -1):
        _sift_down(a, root, n - 1)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift_down(a, 0, end - 1)


@njit(cache=True, inline="always")
def insertion_order(keys, cnt, idx, skey, in_place):
    """Insertion sort by descending ``keys``, stable (equal keys keep index order), into
    ``idx``, the keys moving along in ``skey``: of ``0..cnt-1`` and ``keys``; or
    ``in_place``, of ``idx`` and its keys already in ``skey`` (``keys`` is ``skey``: the
    insertion pass of ``skltr._cpu.yetirank._yetirank_order``'s buckets). Returns ``idx``.
    No allocation (threads would contend for it); for the few keys of a query, where it is
    faster than a merge sort."""
    for i in range(cnt):
        key = keys[i]
        v = idx[i] if in_place else i
        j = i
        while j > 0 and skey[j - 1] < key:  # strictly: ties keep index order
            skey[j] = skey[j - 1]
            idx[j] = idx[j - 1]
            j -= 1
        skey[j] = key
        idx[j] = v
    return idx


@njit(cache=True)
def insertion_from(skey, idx, cnt, budget):
    """Insertion sort of ``idx[:cnt]`` (any permutation of ``0..cnt-1``) with their keys in
    ``skey``, by descending key, ties by increasing index: a total order, so the result is
    :func:`insertion_order`'s stable order whatever the start. From a nearly sorted start (a
    query's order at the last round's scores) it costs about one comparison a key. Returns
    False, the arrays part-sorted, once it has shifted more than ``budget`` entries."""
    for i in range(1, cnt):
        key = skey[i]
        v = idx[i]
        j = i
        while j > 0 and (skey[j - 1] < key or (skey[j - 1] == key and idx[j - 1] > v)):
            skey[j] = skey[j - 1]
            idx[j] = idx[j - 1]
            j -= 1
        skey[j] = key
        idx[j] = v
        budget -= i - j
        if budget < 0:
            return False
    return True
