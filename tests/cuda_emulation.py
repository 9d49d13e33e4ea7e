"""CUDA sources of ``skltr._gpu`` run on the CPU: compiled with g++ (the CUDA qualifiers
defined away, ``atomicAdd`` a plain add, no floating-point contraction, as NVRTC's
``--fmad=false``), the grid emulated thread by thread, and the host steps mirrored. It checks
the kernels' logic where there is no GPU; the real launches run in the GPU tests.

* ``skltr._gpu.treeshap`` (:func:`run`): the host steps of ``predict_contribs`` /
  ``predict_interactions`` (row launches, tree chunks, the transposed accumulator, the
  diagonal); tests/test_explain_cuda_source.py, real launches in tests/test_explain_gpu.py.
* ``skltr._gpu.yetirank`` (:func:`yetirank_gradients`): the launcher's three kernels a round,
  permutation launches included, with guard cells around every array and uninitialised
  scratch filled with garbage; tests/test_yetirank_cuda_source.py, real launches in
  tests/test_yetirank.py.

Only kernels without ``__syncthreads`` can be emulated this way (each thread runs to its end
before the next starts).
"""

import ctypes
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(tempfile.gettempdir()) / "skltr-cuda-emulation"


def _source_between(text, name):
    start = text.index(name + ' = r"""') + len(name) + 7
    return text[start:text.index('"""', start)]


SOURCE = _source_between((ROOT / "skltr" / "_gpu" / "treeshap.py").read_text(), "SOURCE")
ROUTE = _source_between((ROOT / "skltr" / "_gpu" / "tree_walk.py").read_text(), "ROUTE_SOURCE")
_COMPILE = (ROOT / "skltr" / "_gpu" / "_compile.py").read_text()
COMMON = _source_between(_COMPILE, "COMMON")
EXACT = _source_between(_COMPILE, "EXACT_FLOAT32")
LIBM = _source_between((ROOT / "skltr" / "_gpu" / "libm.py").read_text(), "SOURCE")
YETIRANK = _source_between((ROOT / "skltr" / "_gpu" / "yetirank.py").read_text(), "SOURCE")

PRELUDE = r"""
#include <cmath>
#include <cstring>
#include <algorithm>
using std::min; using std::max;
#define __device__
#define __forceinline__ inline
#define __global__
struct dim3_ { unsigned x, y, z; };
static dim3_ blockIdx, threadIdx, blockDim;
static inline double __longlong_as_double(long long v) {
    double d; std::memcpy(&d, &v, 8); return d;
}
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline double atomicAdd(double* a, double v) { double o = *a; *a += v; return o; }
using std::isnan; using std::trunc; using std::fabs; using std::rint; using std::signbit;
"""

# The kernels' parameters (FOREST_PARAMS of the source) plus the emulated grid.
_RUNNERS = r"""
#define EMU_PARAMS const XT* X, i64 n, int nf, FOREST_PARAMS, int n_trees, \
    int trees_per_chunk, double missing, double* acc, int atomic, int gx, int gy, int bx
#define EMU_ARGS X, n, nf, tree_ptr, feature, thr, left, flags, cat_off, cat_nw, bits, \
    tree_path_ptr, path_ptr, path_value, path_output, elem_feature, elem_zero, \
    elem_cond_ptr, cond_node, cond_left, ratios, n_trees, trees_per_chunk, missing, acc, atomic
#define EMU_GRID(kernel) \
    blockDim.x = bx; \
    for (unsigned y = 0; y < (unsigned)gy; ++y) \
        for (unsigned b = 0; b < (unsigned)gx; ++b) \
            for (unsigned t = 0; t < (unsigned)bx; ++t) { \
                blockIdx.x = b; blockIdx.y = y; threadIdx.x = t; kernel(EMU_ARGS); }
extern "C" void run_contribs(EMU_PARAMS) { EMU_GRID(contribs_k) }
extern "C" void run_interactions(EMU_PARAMS) { EMU_GRID(interactions_k) }
"""


def build(defines, xt):
    """The emulated kernels compiled for ``defines`` and input type ``xt`` (a cached .so)."""
    head = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    code = head + PRELUDE + COMMON + f"typedef {xt} XT;\n" + EXACT + ROUTE + SOURCE
    code = code.replace('extern "C" __global__ void contribs(', "static void contribs_k(")
    code = code.replace('extern "C" __global__ void interactions(',
                        "static void interactions_k(")
    code = code.replace("extern __shared__ double sacc[];", "static double sacc[1 << 20];")
    code += _RUNNERS
    return library(code, "k")


def library(code, prefix):
    """``code`` compiled with g++ into a shared library (cached by its hash under
    :data:`BUILD`, written atomically) and loaded."""
    key = hashlib.md5(code.encode()).hexdigest()[:12]
    BUILD.mkdir(exist_ok=True)
    so = BUILD / f"{prefix}_{key}.so"
    if not so.exists():
        cpp = BUILD / f"{prefix}_{key}.cpp"
        cpp.write_text(code)
        tmp = BUILD / f"{prefix}_{key}.{os.getpid()}.so"
        # -ffp-contract=off: no fused multiply-adds, as the kernels' --fmad=false
        subprocess.check_call(["g++", "-O1", "-ffp-contract=off", "-shared", "-fPIC",
                               "-std=c++17", "-w", "-o", str(tmp), str(cpp)])
        os.replace(tmp, so)
    return ctypes.CDLL(str(so))


UNROLL = 12  # skltr._gpu.treeshap.UNROLL_MAX_K (that module imports CuPy)


def ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def run(ens, X, name, rows_per_launch=None, target_threads=None, threads=128, unroll=UNROLL,
        shared=False):
    """``name`` ("contribs" or "interactions") of ``ens`` on ``X`` as the GPU would compute
    them with these launch sizes; ``unroll``: the module's ``UNROLL_MAX_K``; ``shared``: the
    shared-memory accumulator of ``contribs`` (``ACCUMULATE="shared"``)."""
    from skltr._cpu.treeshap import unwind_ratios
    from skltr._records import routing
    from skltr.trees._input import model_input
    from skltr.trees._shap import shap_paths

    p, r = shap_paths(ens), routing(ens)
    Xh = model_input(ens, X)
    xt = "double"
    if ens.input_rule == "float32":  # device_input sends float32 under this rule
        Xh, xt = Xh.astype(np.float32), "float"
    defines = {"STRICT": int(r.strict), "F32_INPUTS": int(r.f32_inputs),
               "INPUT_F32": int(ens.input_rule == "float32"),
               "HAS_SENTINEL": int(r.has_sentinel), "HAS_CAT": 1, "HAS_MISSING_NONE": 1,
               "HAS_MISSING_ZERO": 1, "MAX_K": max(int(p.max_elems), 1),
               "HOT_WORDS": max(-(-int(p.max_nodes) // 32), 1), "UNROLL_MAX_K": unroll,
               "SHARED_ACC": int(shared and name == "contribs"), "NOUT": ens.n_outputs}
    lib = build(defines, xt)
    i32, i64 = np.int32, np.int64
    host = [(ens.tree_ptr, i64), (ens.feature, i32), (ens.threshold, np.float64), (ens.left, i32),
            (ens.flags, np.uint8), (ens.cat_offset, i64), (ens.cat_nwords, i32),
            (ens.cat_bitsets, np.uint32), (p.tree_path_ptr, i64), (p.path_ptr, i64),
            (p.path_value, np.float64), (p.path_output, i32), (p.elem_feature, i32),
            (p.elem_zero, np.float64), (p.elem_cond_ptr, i64), (p.cond_node, i32),
            (p.cond_left, np.uint8)]
    arrs = [np.ascontiguousarray(a, dtype=dt) if np.size(a) else np.zeros(1, dt)
            for a, dt in host]
    arrs.append(np.ascontiguousarray(unwind_ratios(max(int(p.max_elems), 1))))
    n, nf = Xh.shape
    nf1, nout = nf + 1, ens.n_outputs
    n_trees = max(ens.n_trees, 1)
    size = nout * nf1 if name == "contribs" else nout * nf1 * nf1
    out = np.zeros((n, size))
    rpl = rows_per_launch or n or 1
    for r0 in range(0, max(n, 1), rpl):
        rows = np.ascontiguousarray(Xh[r0:r0 + rpl])
        m = rows.shape[0]
        if m == 0:
            break
        chunks = int(min(n_trees, max(1, (target_threads or 132 * 2048) // max(m, 1))))
        per = -(-n_trees // chunks)
        chunks = -(-n_trees // per)
        acc = np.zeros((size, m))
        fn = getattr(lib, "run_" + name)
        fn(ptr(rows), ctypes.c_longlong(m), ctypes.c_int(nf), *[ptr(a) for a in arrs],
           ctypes.c_int(ens.n_trees), ctypes.c_int(per), ctypes.c_double(r.missing_value),
           ptr(acc), ctypes.c_int(int(chunks > 1)), ctypes.c_int(-(-m // threads)),
           ctypes.c_int(chunks), ctypes.c_int(threads))
        out[r0:r0 + m] = acc.T
    if name == "contribs":
        out = out.reshape(n, nout, nf1)
        out[:, :, -1] += p.bias
        return out
    out = out.reshape(n, nout, nf1, nf1)
    phi = run(ens, X, "contribs", rows_per_launch, target_threads, threads, unroll, shared)
    idx = np.arange(nf)
    off = out[:, :, :nf, :nf].sum(axis=3)
    out[:, :, idx, idx] = phi[:, :, :nf] - off
    out[:, :, nf, nf] = phi[:, :, nf]
    return out


# ------------------------------------------------------------------------------ YetiRank
#: ``emulate(kernel, gx, bx, args...)``: every thread of a 1-D grid, one after the other.
_GRID = r"""
template <class K, class... A> static void emulate(K kernel, long gx, long bx, A... args) {
    blockDim.x = (unsigned)bx;
    for (long b = 0; b < gx; ++b)
        for (long t = 0; t < bx; ++t) {
            blockIdx.x = (unsigned)b; threadIdx.x = (unsigned)t; kernel(args...);
        }
}
"""

_YETIRANK_RUNNERS = r"""
extern "C" void run_yetirank_query(long gx, long bx, const double* scores, const double* y,
        const double* weights, int weighted, const i64* group_ptr, i64 n_queries,
        double permutations, unsigned char* active, double* scale, double* ex) {
    emulate(yetirank_query, gx, bx, scores, y, weights, weighted, group_ptr, n_queries,
            permutations, active, scale, ex);
}
extern "C" void run_yetirank_orders(long gx, long bx, const double* ex, const i64* group_ptr,
        i64 n_queries, const unsigned char* active, const i64* query_index, u64 seed,
        u64 iteration, i64 perm0, i64 n_perm, i64 n_rows, int* order, int* rank,
        double* skey, double* stmp) {
    emulate(yetirank_orders, gx, bx, ex, group_ptr, n_queries, active, query_index, seed,
            iteration, perm0, n_perm, n_rows, order, rank, skey, stmp);
}
extern "C" void run_yetirank_permutation(long gx, long bx, const double* scores,
        const double* y, const i64* group_ptr, const int* row_query,
        const unsigned char* active, const double* scale, const double* ex,
        const double* decay_powers, const int* order, const int* rank, i64 n_perm,
        i64 n_rows, int first, int last, double* lam, double* hes, float* grad, float* hess) {
    emulate(yetirank_permutation, gx, bx, scores, y, group_ptr, row_query, active, scale, ex,
            decay_powers, order, rank, n_perm, n_rows, first, last, lam, hes, grad, hess);
}
"""

_P = ctypes.c_void_p
_YETIRANK_ARGTYPES = {
    "run_yetirank_query": [ctypes.c_long, ctypes.c_long, _P, _P, _P, ctypes.c_int, _P,
                           ctypes.c_longlong, ctypes.c_double, _P, _P, _P],
    "run_yetirank_orders": [ctypes.c_long, ctypes.c_long, _P, _P, ctypes.c_longlong, _P, _P,
                            ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_longlong,
                            ctypes.c_longlong, ctypes.c_longlong, _P, _P, _P, _P],
    "run_yetirank_permutation": [ctypes.c_long, ctypes.c_long] + [_P] * 10
    + [ctypes.c_longlong, ctypes.c_longlong, ctypes.c_int, ctypes.c_int] + [_P] * 4,
}


def _probe64(code):
    """``code`` writing ``grad`` / ``hess`` as float64, unrounded: the sums the kernels
    round to float32 (a float64 operation done in another order seldom changes a float32
    result, but shows here)."""
    for old, new in (("float* grad, float* hess", "double* grad, double* hess"),
                     ("to_float32(", "probe64(")):
        assert old in code, old
        code = code.replace(old, new)
    return "static inline double probe64(double x) { return x; }\n" + code


def yetirank_library(probe64=False):
    """``skltr._gpu.yetirank.SOURCE`` with its prelude (libm, exact float32) and one runner
    per kernel (``run_<kernel>(gx, bx, <the kernel's arguments>)``), compiled and typed;
    ``probe64``: the results as float64 sums, not rounded (:func:`_probe64`)."""
    code = YETIRANK + _GRID + _YETIRANK_RUNNERS
    code = PRELUDE + COMMON + EXACT + LIBM + (_probe64(code) if probe64 else code)
    lib = library(code, "yeti64" if probe64 else "yeti")
    for name, argtypes in _YETIRANK_ARGTYPES.items():
        getattr(lib, name).argtypes = argtypes
        getattr(lib, name).restype = None
    return lib


#: Guard cells on both sides of every array the emulated kernels get.
GUARD = 16


class Guarded:
    """A host array with :data:`GUARD` cells of ``fill`` on each side; ``inner`` is what the
    kernel gets, ``check()`` asserts that the guards are untouched (no write out of
    bounds). ``fill``: garbage for scratch, so that a read before a write shows."""

    def __init__(self, n, dtype, fill, values=None):
        self.full = np.full(int(n) + 2 * GUARD, fill, dtype=dtype)
        self.fill = np.full(1, fill, dtype=dtype).view(np.uint8)  # bytes: NaN == NaN
        self.inner = self.full[GUARD:GUARD + int(n)]
        if values is not None:
            self.inner[:] = values

    @property
    def ptr(self):
        return self.inner.ctypes.data_as(ctypes.c_void_p)

    def check(self, name):
        for side in (self.full[:GUARD], self.full[GUARD + self.inner.size:]):
            same = np.array_equal(side.view(np.uint8), np.tile(self.fill, side.size))
            assert same, f"{name}: a kernel wrote outside the array"


def _blocks(n, threads):
    return max(1, -(-int(n) // int(threads)))


def yetirank_gradients(scores, y, group_ptr, weights, seed, iteration, permutations, decay,
                       query_index=None, batch=None, threads=256, probe64=False,
                       scratch_out=None):
    """YetiRank's float32 ``(grad, hess)`` as the GPU computes them: the CUDA source run
    thread by thread, the host steps of ``skltr._gbdt.objectives_cuda.YetiRankGradients``
    and ``skltr._gpu.yetirank.yetirank_gradients`` mirrored -- ``row_query``, the decay
    table, ``perms_per_launch`` permutations a launch (``batch``; None: all in one),
    ``threads`` a block. ``probe64``: float64 results, the sums before their rounding.
    ``scratch_out``: a dict, given the device scratch as the last launch left it.
    """
    from skltr._cpu.yetirank import yetirank_decay_powers

    lib = yetirank_library(probe64)
    out = np.float64 if probe64 else np.float32
    group_ptr = np.ascontiguousarray(group_ptr, np.int64)
    sizes = np.diff(group_ptr)
    n, nq = int(group_ptr[-1]), int(sizes.size)
    permutations = int(permutations)
    batch = permutations if batch is None else int(batch)
    f64, i32, i64 = np.float64, np.int32, np.int64
    nan = np.nan
    inputs = {
        "scores": Guarded(n, f64, nan, scores), "y": Guarded(n, f64, nan, y),
        "weights": Guarded(n, f64, nan, weights if weights is not None else y),
        "group_ptr": Guarded(nq + 1, i64, -9, group_ptr),
        "row_query": Guarded(n, i32, -9, np.repeat(np.arange(nq, dtype=i32), sizes)),
        "query_index": Guarded(nq, i64, -9, np.arange(nq) if query_index is None
                               else query_index),
        "decay_powers": Guarded(max(int(sizes.max(initial=1)), 1), f64, nan,
                                yetirank_decay_powers(decay, int(sizes.max(initial=1)))),
    }
    scratch = {  # cupy.empty: garbage until written
        "active": Guarded(nq, np.uint8, 0xA5), "scale": Guarded(nq, f64, nan),
        "ex": Guarded(n, f64, nan), "order": Guarded(batch * n, i32, -7),
        "rank": Guarded(batch * n, i32, -7), "skey": Guarded(batch * n, f64, nan),
        "stmp": Guarded(batch * n, f64, nan), "lam": Guarded(n, f64, nan),
        "hes": Guarded(n, f64, nan), "grad": Guarded(n, out, nan),
        "hess": Guarded(n, out, nan)}
    a = {k: v.ptr for k, v in {**inputs, **scratch}.items()}
    lib.run_yetirank_query(_blocks(nq, threads), threads, a["scores"], a["y"], a["weights"],
                           int(weights is not None), a["group_ptr"], nq, float(permutations),
                           a["active"], a["scale"], a["ex"])
    for perm0 in range(0, permutations, batch):
        n_perm = min(batch, permutations - perm0)
        lib.run_yetirank_orders(_blocks(nq * n_perm, threads), threads, a["ex"],
                                a["group_ptr"], nq, a["active"], a["query_index"],
                                int(seed) & 0xFFFFFFFFFFFFFFFF, int(iteration), perm0, n_perm,
                                n, a["order"], a["rank"], a["skey"], a["stmp"])
        lib.run_yetirank_permutation(_blocks(n, threads), threads, a["scores"], a["y"],
                                     a["group_ptr"], a["row_query"], a["active"], a["scale"],
                                     a["ex"], a["decay_powers"], a["order"], a["rank"], n_perm,
                                     n, int(perm0 == 0), int(perm0 + n_perm >= permutations),
                                     a["lam"], a["hes"], a["grad"], a["hess"])
    for name, arr in {**inputs, **scratch}.items():  # (inputs: const in the kernels)
        arr.check(name)
    if scratch_out is not None:
        scratch_out.update({name: arr.inner.copy() for name, arr in scratch.items()})
    return scratch["grad"].inner.copy(), scratch["hess"].inner.copy()
