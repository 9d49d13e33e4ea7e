"""The CUDA source of ``skltr._gpu.treeshap`` run on the CPU: compiled with g++ (the CUDA
qualifiers defined away, ``atomicAdd`` a plain add), the grid emulated thread by thread, and
the host steps of ``predict_contribs`` / ``predict_interactions`` mirrored (row launches, tree
chunks, the transposed accumulator, the diagonal). It checks the kernels' logic where there
is no GPU (tests/test_explain_cuda_source.py); the real launches run in
tests/test_explain_gpu.py.
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
        subprocess.check_call(["g++", "-O1", "-shared", "-fPIC", "-std=c++17", "-w", "-o",
                               str(tmp), str(cpp)])
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
