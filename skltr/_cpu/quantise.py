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
    """Fill ``out`` (int64) with ``rint(g * scale_g) * 2**32 + rint(h * scale_h)``; returns
    the sum of ``out`` (int64, wrapping: the root's packed sums, read in the same pass).

    The scales must keep ``|sum q_g| < 2**31`` and ``0 <= sum q_h < 2**32`` over any set of
    rows, so that sums of ``out`` never carry from the hessian into the gradient field.
    """
    n = grad.shape[0]
    per = (n + n_chunks - 1) // n_chunks
    partial = np.empty(n_chunks, dtype=np.int64)
    for c in prange(n_chunks):
        s = np.int64(0)
        for i in range(c * per, min((c + 1) * per, n)):
            v = (np.int64(np.rint(np.float64(grad[i]) * scale_g)) * np.int64(4294967296)
                 + np.int64(np.rint(np.float64(hess[i]) * scale_h)))
            out[i] = v
            s += v
        partial[c] = s
    total = np.int64(0)
    for c in range(n_chunks):  # integers: the same sum in any order
        total += partial[c]
    return total


#: Accumulators of :func:`gh_accumulators` a channel: one per float32 exponent.
N_FLOAT32_EXPONENTS = 256
#: :func:`gh_accumulators`' entries: the two channels', then the negative hessians' count.
N_ACCUMULATORS = 2 * N_FLOAT32_EXPONENTS + 1


@njit(parallel=True, cache=True)
def gh_accumulators(grad, hess, rows, use_rows, n_chunks, out):
    """Add the exact sums of the float32 ``|g|`` and ``|h|`` (of ``rows`` when ``use_rows``)
    into ``out``, and count the negative hessians, in one pass over the rows.

    ``out`` (int64, :data:`N_ACCUMULATORS` entries, added to, not overwritten):
    ``out[c * 256 + e]`` sums the 24-bit significands of the values of channel ``c`` (0: g,
    1: h) whose biased exponent is ``e`` (subnormals with ``e = 1``, their exponent), so
    that a channel's sum of magnitudes is ``sum(out[e] * 2**(max(e, 1) - 150))`` with no
    rounding, in any order and any split of the rows (:func:`accumulated_value` rounds it
    once); 2**39 values fit an accumulator. ``out[512]`` counts the hessians with the sign
    bit set and a nonzero magnitude (-0.0 is not negative; a negative NaN is), as the GPU's
    ``abs_sum_accumulators``. The accumulators of several shards add up: one integer
    all-reduce carries all of it.
    """
    n = rows.shape[0] if use_rows else grad.shape[0]
    per = (n + n_chunks - 1) // n_chunks
    width = out.shape[0]
    # each chunk zeroes its own row: np.zeros here would be a parfor of its own, compiled
    # (~0.25 s of a first run) for a 4 KB fill
    partial = np.empty((n_chunks, width), dtype=np.int64)
    g_bits = grad.view(np.uint32)
    h_bits = hess.view(np.uint32)
    for c in prange(n_chunks):
        for e in range(width):
            partial[c, e] = 0
        for j in range(c * per, min((c + 1) * per, n)):
            r = rows[j] if use_rows else j
            for ch in range(2):
                b = h_bits[r] if ch else g_bits[r]
                e = (b >> np.uint32(23)) & np.uint32(0xFF)
                m = np.int64(b & np.uint32(0x7FFFFF))
                if ch and (b >> np.uint32(31)) != 0 and (b & np.uint32(0x7FFFFFFF)) != 0:
                    partial[c, 2 * N_FLOAT32_EXPONENTS] += 1
                if e > 0:
                    m += np.int64(0x800000)
                else:
                    e = np.uint32(1)
                partial[c, ch * N_FLOAT32_EXPONENTS + e] += m
    for c in range(n_chunks):
        for e in range(width):
            out[e] += partial[c, e]


def accumulated_value(acc) -> float:
    """The float64 nearest to the exact sum held by one channel of :func:`gh_accumulators`' ``out``.

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
