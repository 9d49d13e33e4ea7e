"""numba kernels of gradient quantisation (``hist_mode="quantised"``), one pass over the rows.

``q_g = rint(g * scale_g)`` and ``q_h = rint(h * scale_h)``, stored either as ``q_g`` (int32)
and ``p = (1 << count_shift) + q_h`` (int64: hessian in the low bits, one row count above),
or as one int64 ``q_g * 2**32 + q_h`` (gradient in the high 32 bits, hessian in the low 32;
see ``skltr._cpu.histogram``). Scales are powers of two chosen by the grower so that no sum
overflows its field; ``rint`` rounds half to even, like ``numpy.rint``.
"""

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def quantise_gradients(grad, hess, scale_g, scale_h, count_shift, qg, qh, n_chunks):
    """Fill ``qg`` (int32) and ``qh`` (int64, packed with a count of 1) from float32 grad/hess.

    Parameters
    ----------
    grad, hess : ndarray of float32, shape (n,)
    scale_g, scale_h : float
        Powers of two.
    count_shift : int
        Bit of the row count in ``qh``.
    qg : ndarray of int32, shape (n,)
    qh : ndarray of int64, shape (n,)
    n_chunks : int
    """
    n = grad.shape[0]
    one = np.int64(1) << count_shift
    per = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        for i in range(c * per, min((c + 1) * per, n)):
            qg[i] = np.int32(np.rint(np.float64(grad[i]) * scale_g))
            qh[i] = one + np.int64(np.rint(np.float64(hess[i]) * scale_h))


@njit(parallel=True, cache=True)
def quantise_gradients_gh64(grad, hess, scale_g, scale_h, out, n_chunks):
    """Fill ``out`` (int64) with ``rint(g * scale_g) * 2**32 + rint(h * scale_h)``.

    The scales must keep ``|sum q_g| < 2**31`` and ``0 <= sum q_h < 2**32`` over any set of
    rows, so that sums of ``out`` never carry from the hessian into the gradient field.
    """
    n = grad.shape[0]
    per = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        for i in range(c * per, min((c + 1) * per, n)):
            out[i] = (np.int64(np.rint(np.float64(grad[i]) * scale_g)) * np.int64(4294967296)
                      + np.int64(np.rint(np.float64(hess[i]) * scale_h)))


#: Accumulators of :func:`abs_sum_accumulators`: one per float32 exponent.
N_FLOAT32_EXPONENTS = 256


@njit(parallel=True, cache=True)
def abs_sum_accumulators(values, rows, use_rows, n_chunks, out):
    """Add the float32 ``|values|`` (of ``rows`` when ``use_rows``) into ``out``, exactly.

    ``out[e]`` (int64) sums the 24-bit significands of the values whose biased exponent is
    ``e`` (subnormals with ``e = 1``, their exponent), so that the sum of the magnitudes is
    ``sum(out[e] * 2**(max(e, 1) - 150))`` with no rounding, in any order and any split of the
    rows. 2**39 values fit an accumulator. The accumulators of several shards add up (an
    integer all-reduce); :func:`accumulated_value` rounds their total once. ``out`` has
    :data:`N_FLOAT32_EXPONENTS` entries and is added to, not overwritten.
    """
    n = rows.shape[0] if use_rows else values.shape[0]
    per = (n + n_chunks - 1) // n_chunks
    # each chunk zeroes its own row: np.zeros here would be a parfor of its own, compiled
    # (~0.25 s of a first run) for a 2 KB fill
    partial = np.empty((n_chunks, out.shape[0]), dtype=np.int64)
    bits = values.view(np.uint32)
    for c in prange(n_chunks):
        for e in range(out.shape[0]):
            partial[c, e] = 0
        for j in range(c * per, min((c + 1) * per, n)):
            b = bits[rows[j]] if use_rows else bits[j]
            e = (b >> np.uint32(23)) & np.uint32(0xFF)
            m = np.int64(b & np.uint32(0x7FFFFF))
            if e > 0:
                m += np.int64(0x800000)
            else:
                e = np.uint32(1)
            partial[c, e] += m
    for c in range(n_chunks):
        for e in range(out.shape[0]):
            out[e] += partial[c, e]


def accumulated_value(acc) -> float:
    """The float64 nearest to the exact sum held by :func:`abs_sum_accumulators`' ``acc``.

    ``inf`` and NaN values (exponent 255) give ``inf``.
    """
    acc = np.asarray(acc)
    if acc[255]:
        return float("inf")
    exponents = np.flatnonzero(acc)
    total = 0  # plain Python ints: exact, and cheaper than numpy scalars (two calls a tree)
    for e, v in zip(exponents.tolist(), acc[exponents].tolist()):
        total += v << (e - 1 if e > 1 else 0)
    return float(np.ldexp(float(total), -149))
