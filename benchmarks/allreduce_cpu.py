"""One CPU all-reduce of a Dask fit's training ranks: shared memory vs the TCP star.

``world`` processes on this host (spawned, one per rank, as a ``LocalCluster``'s workers
are) all-reduce a node histogram of 136 features x 256 bins x 2 int64 words (557 kB, the
histogram of ``benchmarks/train_dask.py``) ``--calls`` times after ``--warmup`` untimed
calls, through :func:`skltr.dask._collective_shm.connect` with and without shared memory.
The figure is rank 0's mean wall time per all-reduce (every rank arrives together: no load
imbalance in it). Each rank checks its results against the sum it expects.

Usage: python benchmarks/allreduce_cpu.py [--worlds 2 4] [--calls 2000] [--features 136]
       [--no-write] [--out DIR]
"""

import argparse
import multiprocessing as mp
import time

import numpy as np

from _harness import row, write_result


def _rank(rank, world, port, shared_memory, shape, calls, warmup, queue):
    from skltr.dask._collective_shm import connect

    rng = np.random.default_rng(rank)
    hist = rng.integers(-(1 << 40), 1 << 40, shape, dtype=np.int64)
    expect = sum(np.random.default_rng(r).integers(-(1 << 40), 1 << 40, shape, dtype=np.int64)
                 for r in range(world))
    with connect(rank, world, "127.0.0.1", port, 60.0, shared_memory=shared_memory) as comm:
        for _ in range(warmup):
            out = comm.allreduce_sum(hist)
        assert np.array_equal(out, expect)
        comm.allreduce_sum(np.zeros(1, np.int64))  # start together
        t0 = time.perf_counter()
        for _ in range(calls):
            comm.allreduce_sum(hist)
        seconds = time.perf_counter() - t0
        queue.put((rank, comm.kind, seconds / calls))


def per_call(world, shared_memory, shape, calls, warmup):
    """``(kind, seconds per all-reduce at rank 0)`` for ``world`` spawned ranks."""
    from skltr.dask._collective import free_port

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_rank, args=(r, world, port, shared_memory, shape, calls,
                                             warmup, queue)) for r in range(world)]
    for p in procs:
        p.start()
    got = dict((r, (k, s)) for r, k, s in (queue.get(timeout=600) for _ in procs))
    for p in procs:
        p.join()
        if p.exitcode:
            raise RuntimeError(f"a rank failed (exit code {p.exitcode})")
    return got[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    args = ap.parse_args(argv)
    shape = (args.features, 256, 2)
    kb = np.prod(shape) * 8 / 1000
    rows, kinds = [], {}
    for world in args.worlds:
        shm_kind, shm = per_call(world, True, shape, args.calls, args.warmup)
        star_kind, star = per_call(world, False, shape, args.calls, args.warmup)
        kinds[world] = [shm_kind, star_kind]
        print(f"world {world}: {shm_kind} {shm * 1e3:.3f} ms, {star_kind} {star * 1e3:.3f} ms "
              f"per all-reduce of {kb:.0f} kB", flush=True)
        rows.append(row(f"{kb:.0f} kB int64 all-reduce, {world} processes", "allreduce_ms",
                        shm * 1e3, star * 1e3, "TCP star", "ms"))
    params = {"shape": list(shape), "calls": args.calls, "warmup": args.warmup,
              "worlds": args.worlds, "communicators": kinds}
    if not args.no_write:
        write_result("allreduce_cpu", rows, params=params, out_dir=args.out)


if __name__ == "__main__":
    main()
