"""YetiRank's CUDA kernels (``skltr._gpu.yetirank.SOURCE``) on the CPU: the source compiled
with g++ and the grid emulated thread by thread (tests/cuda_emulation.py) gives the numba
kernel's float32 bits, and its float64 sums before their rounding (so a float64 operation
done in another order shows, though it seldom changes a float32) -- on test_yetirank's
``BIT_CASES``, on Hypothesis' query layouts,
with the permutations in one launch or several and blocks of 1 to 256 threads -- and the
host side (``YetiRankGradients`` and the launcher, run on a NumPy stand-in for CuPy whose
kernels are the emulated ones) passes every kernel the argument types its signature names.
Skipped without g++. Runs where there is no GPU; the real launches are tested in
tests/test_yetirank.py.
"""

import ctypes
import importlib
import re
import shutil
import sys
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cuda_emulation as emu
import test_yetirank as body

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def emulated_bits(case, batch=None, threads=256, iteration=None, probe64=False,
                  scratch_out=None):
    """The emulated GPU's float32 ``(grad, hess)`` of a ``BIT_CASES`` input (``probe64``:
    the float64 sums before their rounding; ``scratch_out``: a dict given the scratch)."""
    it = case["iteration"] if iteration is None else iteration
    return emu.yetirank_gradients(case["s"], case["y"], case["gp"], case["w"], case["seed"],
                                  it, case["permutations"], case["decay"],
                                  query_index=case["query_index"], batch=batch,
                                  threads=threads, probe64=probe64,
                                  scratch_out=scratch_out)


def cpu_float64(case, iteration=None):
    """The numba kernel's results unrounded: its float64 specialisation (float64 ``grad``
    / ``hess`` take ``lam * scale`` as it is)."""
    from skltr._cpu.yetirank import yetirank_gradients

    n = case["y"].size
    grad, hess = np.full(n, np.nan), np.full(n, np.nan)
    weights = np.empty(0) if case["w"] is None else np.asarray(case["w"], np.float64)
    query_index = np.arange(case["gp"].size - 1) if case["query_index"] is None else (
        case["query_index"])
    yetirank_gradients(case["s"], case["y"], case["gp"], weights, case["seed"],
                       case["iteration"] if iteration is None else iteration,
                       np.ascontiguousarray(query_index, np.int64), case["permutations"],
                       case["decay"], grad, hess)
    return grad, hess


def assert_same_float64(actual, expected, what):
    np.testing.assert_array_equal(np.asarray(actual).view(np.uint64),
                                  np.asarray(expected).view(np.uint64), err_msg=what)


def assert_emulation_is_cpu(case, launches):
    """float32 bits and, more sensitive to the order of the float64 operations, the float64
    sums before the rounding."""
    g_cpu, h_cpu = body.cpu_bits(case)
    g64, h64 = cpu_float64(case)
    for batch, threads in launches:
        what = f"batch={batch}, threads={threads}"
        g, h = emulated_bits(case, batch, threads)
        body.assert_same_bits(g, g_cpu, "grad, " + what)
        body.assert_same_bits(h, h_cpu, "hess, " + what)
        g, h = emulated_bits(case, batch, threads, probe64=True)
        assert_same_float64(g, g64, "float64 grad, " + what)
        assert_same_float64(h, h64, "float64 hess, " + what)


def test_float64_probe_is_the_float32_results_unrounded():
    # the probe changes only the last rounding: rounded, it gives the kernel's float32
    case = body.BIT_CASES["subnormal_results_signed_zeros"]()
    g64, h64 = emulated_bits(case, probe64=True)
    g, h = emulated_bits(case)
    body.assert_same_bits(g64.astype(np.float32), g, "grad")
    body.assert_same_bits(h64.astype(np.float32), h, "hess")
    assert np.any(g64 != g.astype(np.float64))  # unrounded indeed


def test_source_constants_are_the_cpu_kernels():
    from skltr._cpu import yetirank as cpu

    defines = dict(re.findall(r"#define (\w+) (\S+)", emu.YETIRANK))
    assert float(defines["YETIRANK_PAIR_SCALE"]) == cpu.YETIRANK_PAIR_SCALE
    assert float(defines["YETIRANK_NOISE_GUARD"]) == cpu.YETIRANK_NOISE_GUARD
    assert float(defines["YETI_TINY"]) == cpu._YETI_TINY
    for name in ("_MIX1", "_MIX2", "_MIX3"):  # SplitMix64's constants
        assert f"0x{int(getattr(cpu, name)):X}ull" in emu.YETIRANK


@pytest.mark.parametrize("name", list(body.BIT_CASES))
def test_emulated_kernels_are_the_cpu_bits(name):
    case = body.BIT_CASES[name]()
    # one launch of every permutation; launches of 2 and of 1 (the sums carried over in
    # float64) with blocks that do not divide the rows, queries or (query, permutation)s
    assert_emulation_is_cpu(case, [(None, 256), (2, 7), (1, 32)])


def _cpu_order(case, q, m, iteration):
    """The numba kernel's pieces for permutation ``m`` of query ``q``: ``exp(s - max s)``,
    the noisy keys and their order (its own functions, called one by one)."""
    from skltr._cpu import yetirank as cpu
    from skltr._cpu.libm import exp

    lo, hi = case["gp"][q], case["gp"][q + 1]
    s = case["s"][lo:hi]
    top = s[0]
    for v in s[1:]:
        top = v if v > top else top  # numba's max
    ex = np.array([exp(v - top) for v in s])
    qi = q if case["query_index"] is None else int(case["query_index"][q])
    stream = cpu.yetirank_stream(case["seed"], iteration, qi, m)
    cnt = hi - lo
    keys = np.empty(cnt)
    cpu._yetirank_noisy(ex, cnt, np.uint64(stream), keys)
    idx, tmp = np.empty(cnt, np.int64), np.empty(cnt, np.int64)
    order = cpu._yetirank_order(keys, cnt, idx, tmp, np.empty(cnt), np.empty(cnt),
                                np.empty(cnt + 2, np.int64))
    return ex, keys, order.copy()


@pytest.mark.parametrize("name", ["mixed", "ties_equal_labels", "large_spans", "long_query"])
def test_emulated_noisy_keys_and_orders_are_the_cpus(name):
    """The first two kernels' intermediate results, compared where they are kept: the
    exponentials, each permutation's order and positions, and its sorted keys (in the
    sort's first key buffer after an even number of merge passes, else its second) -- a
    key rounded otherwise would seldom change an order, but shows here."""
    case = body.BIT_CASES[name]()
    kept = {}
    emulated_bits(case, scratch_out=kept)
    n, gp = case["y"].size, case["gp"]
    checked = 0
    for q in range(gp.size - 1):
        lo, hi = gp[q], gp[q + 1]
        if not kept["active"][q]:
            continue
        for m in range(case["permutations"]):
            ex, keys, order = _cpu_order(case, q, m, case["iteration"])
            assert_same_float64(kept["ex"][lo:hi], ex, f"ex, query {q}")
            rows = slice(m * n + lo, m * n + hi)
            np.testing.assert_array_equal(kept["order"][rows], order, f"query {q}, perm {m}")
            np.testing.assert_array_equal(kept["rank"][rows][order], np.arange(hi - lo))
            passes, width = 0, 32
            while width < hi - lo:
                passes, width = passes + 1, width * 2
            sorted_keys = kept["stmp" if passes % 2 else "skey"][rows]
            assert_same_float64(sorted_keys, keys[order], f"keys, query {q}, perm {m}")
            checked += 1
    assert checked >= 3


def test_emulated_kernels_follow_the_rounds():
    case = body.BIT_CASES["ties_equal_labels"]()
    for it in (0, 1, 2, 1000):
        g_cpu, h_cpu = body.cpu_bits(case, iteration=it)
        g, h = emulated_bits(case, iteration=it, batch=2, threads=5)
        body.assert_same_bits(g, g_cpu, f"round {it}")
        body.assert_same_bits(h, h_cpu, f"round {it}")


@st.composite
def layouts(draw):
    """Random queries: sizes 1..80, scores tied or spread up to +-1000, integer or real
    labels (equal-label queries included), weights (some tiny), seeds, rounds, permutations,
    decays, launch splits and block sizes."""
    sizes = draw(st.lists(st.integers(1, 80), min_size=1, max_size=8))
    rseed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(rseed)
    n = int(np.sum(sizes))
    n_labels = draw(st.sampled_from([1, 2, 5]))
    y = rng.integers(0, n_labels, n).astype(float)
    if draw(st.booleans()):
        y = y + rng.uniform(-0.3, 0.3, n) * (rng.random(n) < 0.5)
    span = draw(st.sampled_from([0.0, 1.0, 3.0, 40.0, 1000.0]))
    s = np.round(rng.normal(size=n) * span, draw(st.sampled_from([0, 3, 17])))
    s[rng.random(n) < 0.1] = -0.0
    w = None
    if draw(st.booleans()):
        w = rng.uniform(0.1, 3.0, n) * draw(st.sampled_from([1.0, 1e-40, 1e3]))
    permutations = draw(st.integers(1, 5))
    case = dict(y=y, s=s, gp=body.grouped(sizes), w=w,
                seed=draw(st.sampled_from([0, 1, 2**32 - 1, 987654321])),
                iteration=draw(st.integers(0, 300)), permutations=permutations,
                decay=draw(st.sampled_from([0.0, 0.3, 0.85, 1.0])),
                query_index=(None if draw(st.booleans())
                             else draw(st.integers(0, 2**40)) + np.arange(len(sizes))))
    launch = (draw(st.sampled_from([None, 1, 2, 3])), draw(st.sampled_from([1, 3, 32, 256])))
    return case, launch


@settings(max_examples=80, deadline=None)
@given(layouts())
def test_emulated_kernels_are_the_cpu_bits_on_random_layouts(drawn):
    case, launch = drawn
    assert_emulation_is_cpu(case, [launch])


def test_guards_see_a_write_out_of_bounds():
    # the emulation's bounds check can fail
    arr = emu.Guarded(5, np.float64, np.nan, np.arange(5.0))
    arr.check("intact")
    arr.full[emu.GUARD + 5] = 1.0  # one past the end
    with pytest.raises(AssertionError, match="outside"):
        arr.check("overrun")


# --------------------------------------------------------------- the host side on the CPU
_C_TYPES = {"double": np.float64, "float": np.float32, "int": np.int32, "i64": np.int64,
            "u64": np.uint64, "unsigned char": np.uint8}


def _signatures(code):
    """``{kernel: [(numpy dtype, is_pointer), ...]}`` of the ``extern "C" __global__``
    kernels of ``code``."""
    out = {}
    for name, params in re.findall(r'extern "C" __global__ void (\w+)\((.*?)\)\s*\{', code,
                                   re.S):
        sig = []
        for p in params.split(","):
            p = re.sub(r"\b(const|__restrict__)\b", " ", p)
            pointer = "*" in p
            words = p.replace("*", " ").split()[:-1]  # the type without the name
            sig.append((np.dtype(_C_TYPES[" ".join(words)]), pointer))
        out[name] = sig
    return out


class _Kernel:
    """A kernel of the stand-in ``RawModule``: checks the arguments against the kernel's
    signature (CuPy passes a NumPy scalar by its own width) and runs the emulated grid."""

    def __init__(self, lib, name, signature):
        self.run = getattr(lib, "run_" + name)
        self.name, self.signature = name, signature

    def __call__(self, grid, block, args, shared_mem=0):
        assert len(args) == len(self.signature), (self.name, len(args))
        values = []
        for i, (arg, (dtype, pointer)) in enumerate(zip(args, self.signature)):
            where = f"{self.name} argument {i}"
            if pointer:
                assert isinstance(arg, np.ndarray) and arg.dtype == dtype, where
                assert arg.flags.c_contiguous, where
                values.append(arg.ctypes.data_as(ctypes.c_void_p))
            else:
                assert isinstance(arg, np.generic) and arg.dtype == dtype, (where, arg)
                values.append(arg.item())
        self.run(int(grid[0]), int(block[0]), *values)


def _fake_cupy(lib):
    """CuPy as far as the YetiRank host side uses it: NumPy arrays (``empty`` filled with
    garbage, as device memory is) and modules whose kernels are the emulated ones."""
    fake = types.ModuleType("cupy")
    for name in ("float32", "float64", "int32", "int64", "uint8", "nan", "ndarray"):
        setattr(fake, name, getattr(np, name))
    garbage = {"f": np.nan, "i": -7, "u": 0xA5}

    def empty(shape, dtype=np.float64):
        return np.full(shape, garbage[np.dtype(dtype).kind], dtype=dtype)

    class RawModule:
        def __init__(self, code, options=()):
            assert "--fmad=false" in options
            self.signatures = _signatures(code)

        def get_function(self, name):
            return _Kernel(lib, name, self.signatures[name])

    fake.empty, fake.RawModule = empty, RawModule
    fake.full = np.full
    fake.asarray = lambda a, dtype=None: np.ascontiguousarray(a, dtype=dtype)
    fake.memoize = lambda for_each_device=False: (lambda f: f)
    return fake


@pytest.fixture
def host_side(monkeypatch):
    """``skltr._gbdt.objectives_cuda`` imported against the stand-in CuPy (and forgotten
    afterwards, with every module imported under it). Skipped where CuPy is installed:
    modules already imported against it cannot be swapped."""
    try:
        importlib.import_module("cupy")
        pytest.skip("CuPy is installed: the real launches run in tests/test_yetirank.py")
    except ImportError:
        pass
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(emu.yetirank_library()))
    before = set(sys.modules)
    try:
        yield importlib.import_module("skltr._gbdt.objectives_cuda")
    finally:
        for name in set(sys.modules) - before:
            module = sys.modules.pop(name)
            parent, _, child = name.rpartition(".")
            if getattr(sys.modules.get(parent), child, None) is module:
                delattr(sys.modules[parent], child)  # `from skltr._gpu import x` forgets too


@pytest.mark.parametrize("name", ["mixed", "shard", "subnormal_results_signed_zeros"])
def test_host_side_on_emulated_kernels_is_the_cpu(host_side, name):
    from skltr._gpu import _config

    case = body.BIT_CASES[name]()
    g_cpu, h_cpu = body.cpu_bits(case)
    obj = body.make_objective("yetirank", random_state=case["seed"],
                              permutations=case["permutations"], decay=case["decay"])
    n = case["y"].size
    for budget in (None, 24 * n * 2, 1):  # one launch, launches of 2, of 1
        with _config.override(YETIRANK_SCRATCH_BYTES=budget or _config.YETIRANK_SCRATCH_BYTES):
            dev = host_side.make_cuda_gradients(obj, case["y"], case["gp"], case["w"],
                                                case["query_index"])
        grad = np.full(n, np.nan, np.float32)
        hess = np.full(n, np.nan, np.float32)
        dev.gradients(case["s"], grad, hess, case["iteration"])
        body.assert_same_bits(grad, g_cpu, f"grad, budget {budget}")
        body.assert_same_bits(hess, h_cpu, f"hess, budget {budget}")
    assert dev.scratch.batch == 1
