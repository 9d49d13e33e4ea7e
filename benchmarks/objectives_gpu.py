"""Gradient computation on the GPU: every ranking objective, GPU kernel vs skltr's CPU kernel.

Same data for both: ``--rows`` rows in queries of ``--docs`` documents (labels 0-4 uniform,
scores N(0, 1)). GPU: median wall time of the device objective's ``gradients`` (synchronised,
after a
warm-up call that compiles the kernels); CPU: median wall time of the host
``Objective.gradients`` on all the machine's cores (numba, after compilation). One row per
objective, the CPU kernel as the peer. The gradients of both are compared (max relative
difference of the float32 outputs) so that a fast wrong kernel cannot pass unnoticed.

Usage: PYTHONPATH=. python benchmarks/objectives_gpu.py [--rows 1000000] [--docs 120]
       [--out DIR]

Measured on an H100 with 16 cores at ad7274f (``objectives_gpu-h100-2026-11-22.json``),
999,960 rows, ms per call, GPU vs CPU: lambdarank 0.38 vs 26.3 (69x), rank_pairwise 0.38 vs
22.5 (60x), rank_xendcg 0.51 vs 2.67 (5.2x: one thread per query), regression 0.02 vs 0.18;
float32 outputs bit-equal to the CPU's on this data. At 996b1fa
(``objectives_gpu-h100-2026-11-27-996b1fa-position-bias.json``): lambdarank 0.54 ms, and
learning from clicks -- ``lambdarank unbiased`` 6.1 ms, ``lambdarank additive`` 2.8 ms, most
of it the host's estimate update from a copy of the row costs or gradients -- against 38 and
43 ms on the CPU, the same bits. ``yetirank`` (10 permutations, the default; CUDA kernels in
skltr/_gpu/yetirank.py) on an H200 at 4363460
(``objectives_gpu-h200-2026-11-27-4363460-yetirank.json``): 4.7 ms against 60.8 ms on the
host's 16 cores, the same bits (lambdarank there: 0.54 against 17.6 ms).
"""

import argparse
import os

import numba
import numpy as np

from _harness import row, time_median, write_result
from skltr._gbdt.objectives import make_objective
from skltr._gbdt.position_bias import PositionBias


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = parser.parse_args()

    import cupy

    from skltr._gbdt.objectives_cuda import make_cuda_gradients

    rng = np.random.default_rng(0)
    n_queries = max(args.rows // args.docs, 1)
    group_ptr = np.arange(n_queries + 1, dtype=np.int64) * args.docs
    n = int(group_ptr[-1])
    y = rng.integers(0, 5, size=n).astype(np.float64)
    scores = rng.normal(size=n)
    numba.set_num_threads(os.cpu_count())
    rows, raw = [], {}
    # displayed positions for learning from clicks: each query's rows in a random order
    position = np.concatenate([rng.permutation(args.docs) for _ in range(n_queries)])
    for name in ("lambdarank", "rank_pairwise", "rank_xendcg", "yetirank", "regression",
                 "lambdarank unbiased", "lambdarank additive"):
        base, _, mode = name.partition(" ")
        kw = {"truncation_level": 30} if base in ("lambdarank", "rank_pairwise") else {}
        if name in ("rank_xendcg", "yetirank"):
            kw["random_state"] = 0

        def fresh():  # position-bias objectives update their estimate at every call
            obj = make_objective(base, **kw)
            if mode:
                obj = obj.with_position_bias(PositionBias(mode)).at_positions(position)
            return obj

        obj = fresh()
        g_cpu = np.empty(n, np.float32)
        h_cpu = np.empty(n, np.float32)
        cpu_s = time_median(lambda: obj.gradients(scores, y, group_ptr, None, g_cpu, h_cpu, 3))
        gobj = make_cuda_gradients(fresh(), y, group_ptr)
        s_dev = cupy.asarray(scores)
        g = cupy.empty(n, cupy.float32)
        h = cupy.empty(n, cupy.float32)
        sync = cupy.cuda.Device().synchronize
        gpu_s = time_median(lambda: gobj.gradients(s_dev, g, h, 3), repeat=11, sync=sync)
        # compared on one first call of fresh objectives (same starting estimate)
        fresh().gradients(scores, y, group_ptr, None, g_cpu, h_cpu, 3)
        make_cuda_gradients(fresh(), y, group_ptr).gradients(s_dev, g, h, 3)
        scale = max(float(np.abs(g_cpu).max()), 1e-30)
        diff = float(np.abs(g.get() - g_cpu).max()) / scale
        same = bool(np.array_equal(g.get().view(np.uint32), g_cpu.view(np.uint32))
                    and np.array_equal(h.get().view(np.uint32), h_cpu.view(np.uint32)))
        raw[name] = {"gpu_ms": gpu_s * 1e3, "cpu_ms": cpu_s * 1e3, "max_rel_diff": diff,
                     "same_bits": same}
        print(f"{name:<14} GPU {gpu_s * 1e3:8.3f} ms   CPU ({os.cpu_count()} cores) "
              f"{cpu_s * 1e3:8.2f} ms   max |g_gpu - g_cpu| / max|g| {diff:.1e}   "
              f"same bits: {same}")
        rows.append(row(f"{n} rows, {args.docs} docs/query", name, gpu_s, cpu_s,
                        f"skltr CPU, {os.cpu_count()} cores", "s"))
    write_result("objectives_gpu", rows, out_dir=args.out,
                 params={"rows": n, "docs_per_query": args.docs, "truncation_level": 30,
                         "raw": raw})


if __name__ == "__main__":
    main()
