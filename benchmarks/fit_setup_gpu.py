"""Where the non-round time of a GPU fit goes: validation, binning, set-up, assembly.

Same data and parameters as ``train_gpu.py`` (make_ranking float32, ~1M training rows x 136,
depth 8). After a small warm-up fit: whole fits first (``fit`` wall time vs ``timings_``; the
first is the process's first full-size fit, whose GPU memory is new to the process), then
each step of a fit's set-up on its own, timed with a device synchronisation before every
clock read (median of ``--repeat`` and the first call): input validation (with and without
the host search for +-inf), the cut sample (host rule: gather, transpose, np.sort, find_cuts;
GPU: host gather + upload + sort, or device gather), the cut rule (sorted sample copied back
to the host's find_cuts vs column_cuts on the GPU), the binning launches (host chunks of two
sizes vs X already on the GPU), the objective and grower set-up, and the assembly of the
final TreeEnsemble; with ``--cprofile``, a cProfile of one fit at the end.

Usage: python benchmarks/fit_setup_gpu.py [--rows 1000000] [--bins 255] [--out DIR]
"""

import argparse
import cProfile
import io
import os
import pstats
import statistics
import time

import numpy as np

from _harness import ranking_data, write_json
from train_gpu import DOCS, _skltr


def _timed(fn, sync, repeat):
    """(last result, median seconds, first call's seconds)."""
    out, times = None, []
    for _ in range(repeat):
        sync()
        t = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times), times[0]


def _host_cuts(mapper, X):
    """The host's whole cut search (``BinMapper.fit`` without ``has_missing``)."""
    rows = mapper.sample_rows(X.shape[0])
    return mapper.fit_sample(X if rows is None else X[rows])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--bins", type=int, default=255)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import cupy

    from skltr._engine.binning import BinMapper, sorted_sample_cuts
    from skltr._engine.rounds import binning_seed
    from skltr._gbdt.objectives import make_objective
    from skltr._gpu import _config
    from skltr._gpu import binning as gb
    from skltr._gbdt.grower_cuda import GPUTreeGrower
    from skltr._gpu.binned import DeviceBinned
    from skltr._gbdt.objectives_cuda import make_cuda_gradients
    from skltr.utils.validation import check_ranking_fit_data

    X, _, y, _, qid, _ = ranking_data(args.rows, DOCS)
    print(f"train {X.shape} {X.dtype}, NaN {int(np.isnan(X).sum())}", flush=True)
    sync = cupy.cuda.Device().synchronize
    threads = os.cpu_count()
    bins = args.bins
    n_warm = int(np.searchsorted(qid, qid[min(2000 * DOCS, len(qid) - 1)]))
    _skltr("cuda", 2, bins, threads).fit(X[:n_warm], y[:n_warm], qid=qid[:n_warm])

    # whole fits first: fit 1 is the process's first full-size fit (its GPU memory is new)
    fits = []
    for _ in range(args.repeat):
        m = _skltr("cuda", args.trees, bins, threads)
        sync()
        t = time.perf_counter()
        m.fit(X, y, qid=qid)
        fit_s = time.perf_counter() - t
        fits.append({"fit_s": fit_s, **m.timings_,
                     "other_s": fit_s - sum(m.timings_.values())})
        fits[-1]["pool_mb"] = cupy.get_default_memory_pool().total_bytes() / 2**20
        print(f"  fit {len(fits)} {fits[-1]}", flush=True)
    steps, firsts = {}, {}

    def step(name, fn):
        out, s, first = _timed(fn, sync, args.repeat)
        steps[name] = s
        firsts[name] = first
        print(f"  {name:<52} {s * 1e3:9.1f} ms  (first call {first * 1e3:7.1f} ms)", flush=True)
        return out

    model = _skltr("cuda", args.trees, bins, threads)
    step("validation, host search for +-inf (CPU fit)", lambda: check_ranking_fit_data(
        model, X, y, qid, dtype=[np.float64, np.float32]))
    data = step("validation, +-inf left to the GPU (GPU fit)", lambda: check_ranking_fit_data(
        model, X, y, qid, dtype=[np.float64, np.float32], allow_inf=True))
    seed = binning_seed(0)
    mapper = BinMapper(max_bins=bins, random_state=seed, n_threads=threads)
    rows = step("sample rows (host rng)", lambda: mapper.sample_rows(X.shape[0]))
    # the host cut search, step by step (what the GPU fit did before)
    sample = step("host: gather sample rows", lambda: X[rows])
    cols = step("host: transpose sample", lambda: np.ascontiguousarray(sample.T))
    srt = step("host: np.sort per feature", lambda: np.sort(cols, axis=1))
    step("host: find_cuts", lambda: mapper.set_cuts(*sorted_sample_cuts(srt, bins, threads)))
    step("host: whole cut search (sample_rows, gather, fit_sample)",
         lambda: _host_cuts(BinMapper(max_bins=bins, random_state=seed, n_threads=threads), X))
    for chunk in (65536, 262144):
        with _config.override(BIN_CHUNK_ROWS=chunk):
            step(f"host chunks of {chunk} rows: map_to_bins", lambda: gb.map_to_bins(
                X, mapper.cut_ptr, mapper.cut_values, mapper.missing_bin))
    # the device path
    X_dev = step("device: upload X whole (not done by a fit)", lambda: cupy.asarray(X))
    srt_dev = step("device: sample gather (host) + upload + sort",
                   lambda: gb.sorted_sample_columns(X, rows, threads))
    step("device: sample gather + sort, X already on the GPU",
         lambda: gb.sorted_sample_columns(X_dev, rows))
    srt_host = step("device: sorted sample to host (old route)", lambda: srt_dev.get())
    assert np.array_equal(srt_host, srt, equal_nan=True)
    step("device: find_cuts on the host (old route)",
         lambda: mapper.set_cuts(*sorted_sample_cuts(srt_host, bins, threads)))
    ref = (mapper.cut_ptr.copy(), mapper.cut_values.copy())
    cuts = step("device: column_cuts (GPU cut rule, cuts to host)",
                lambda: gb.column_cuts(srt_dev, bins))
    mapper.set_cuts(*cuts)
    assert np.array_equal(mapper.cut_ptr, ref[0]) and np.array_equal(mapper.cut_values, ref[1])
    step("device: map_to_bins (X already on the GPU)", lambda: gb.map_to_bins(
        X_dev, mapper.cut_ptr, mapper.cut_values, mapper.missing_bin))
    step("device: whole fit_bin_mapper (X on the GPU)",
         lambda: gb.fit_bin_mapper(X_dev, bins, seed, threads))
    step("device: whole fit_bin_mapper (host X: what a fit does)",
         lambda: gb.fit_bin_mapper(X, bins, seed, threads))
    X_dev = srt_dev = None  # free the device copies before the fits below
    binned = step("device: DeviceBinned.from_mapper(host X)",
                  lambda: DeviceBinned.from_mapper(X, mapper))
    obj = make_objective("lambdarank", truncation_level=30)
    gp = data.group_ptr
    step("objective init_score", lambda: obj.init_score(data.y, gp, None))
    step("make_cuda_gradients", lambda: make_cuda_gradients(obj, data.y, gp, None))
    step("GPUTreeGrower()", lambda: GPUTreeGrower(binned, max_depth=8, max_leaves=2**31 - 1,
                                                  min_samples_leaf=20))

    # assembly of the final model: the fitted trees again through the ensemble builder
    from skltr._engine import rounds as hb

    kept = []
    orig = hb.binned_trees_to_ensemble

    def keep(*a, **k):
        kept.append((a, k))
        return orig(*a, **k)

    hb.binned_trees_to_ensemble = keep
    try:
        _skltr("cuda", args.trees, bins, threads).fit(X, y, qid=qid)
    finally:
        hb.binned_trees_to_ensemble = orig
    a, k = kept[-1]
    step(f"binned_trees_to_ensemble ({len(a[0])} trees)", lambda: orig(*a, **k))

    profile = None
    if args.cprofile:
        pr = cProfile.Profile()
        m = _skltr("cuda", args.trees, bins, threads)
        pr.enable()
        m.fit(X, y, qid=qid)
        pr.disable()
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("cumtime").print_stats(45)
        profile = buf.getvalue()
        print(profile)

    if args.out:
        write_json(f"fit_setup_gpu-{bins}bins",
                   {"rows": int(X.shape[0]), "bins": bins, "trees": args.trees,
                    "dtype": str(X.dtype), "steps_s": steps, "first_call_s": firsts,
                    "fits": fits, "cprofile": profile}, args.out)


if __name__ == "__main__":
    main()
