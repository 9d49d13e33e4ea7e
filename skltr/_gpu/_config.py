"""Launch sizes of the GPU kernels, in one place so that tests can shrink them.

Each value says why it is what it is; change them with :func:`override` in tests (e.g. a
tiny ``HIST_ROWS_PER_BLOCK`` to exercise many row chunks of one node on small data).
"""

from __future__ import annotations

import contextlib

#: Threads of a histogram block. 256: enough warps to hide the latency of the row gathers,
#: and a 48 KiB shared histogram still leaves room for 4 blocks per SM on Hopper.
HIST_THREADS = 256
#: Rows one histogram block reads before flushing its shared histogram to global memory
#: (at most 65,536: the 32-bit limb sums of ``skltr._gpu.histogram`` stay exact).
#: Larger chunks mean fewer global atomics (each block adds its whole shared histogram once);
#: smaller ones more blocks for small nodes. The grower lowers it for levels with few rows
#: so that the GPU still gets about HIST_TARGET_BLOCKS blocks.
HIST_ROWS_PER_BLOCK = 16384
#: Smallest row chunk of a histogram block.
HIST_MIN_ROWS_PER_BLOCK = 1024
#: Blocks a histogram launch aims for (about 4 waves of 4 blocks on 132 SMs).
HIST_TARGET_BLOCKS = 2048
#: Shared memory of one histogram block: features per block = this / (bins * 20 bytes),
#: rounded down to a multiple of 4 (one 32-bit word of packed bins). 48 KiB needs no opt-in.
HIST_SHARED_BYTES = 48 * 1024
#: Most features per histogram block (bounds the per-row loop when bins are few).
HIST_MAX_FEATURES_PER_BLOCK = 32

#: Threads of the split block (one block per node and feature group; warp w of group g scans
#: features g * 8 + w, then every G * 8 after it: ``skltr._gpu.split``).
#: (1024 does not launch: the kernel needs too many registers for that block size.)
SPLIT_THREADS = 256
#: Blocks a split launch aims for: a level's nodes times their feature groups
#: (``skltr._gpu.split.feature_groups``; about 4 blocks per SM of the H100's 132).
SPLIT_TARGET_BLOCKS = 512

#: Threads of element-wise kernels (binning, partition, predict, quantisation).
ELEMENTWISE_THREADS = 256
#: Rows of X per host-to-device chunk of the binning (one staging buffer of this many rows:
#: 65536 x 136 float32 = 36 MB). Small on purpose: a process's first use of GPU memory costs
#: ~1 ms/MB, and a large staging buffer bought no speed (the copies are bound by the host).
BIN_CHUNK_ROWS = 65536

#: Blocks of the gradient-statistics reduction before quantisation (4 per SM of the H100's
#: 132; the maxima it finds do not depend on it).
STATS_BLOCKS = 4 * 132

#: Threads of a per-query lambda block.
QUERY_THREADS = 128
#: Largest query computed from shared memory (52 bytes a document, ``BYTES_PER_DOC`` of
#: ``skltr._gpu.objectives``: 1024 -> 52 KiB, above the 48 KiB default: the launch opts in);
#: longer queries take the global-memory variant, ordered by a global segmented sort.
QUERY_SHARED_MAX_DOCS = 1024
#: Most bytes of YetiRank's sort scratch (24 a row and permutation, ``skltr._gpu.yetirank``):
#: the permutations of a round are sorted in launches of as many as fit (10 permutations of
#: a million rows in one). The sums carry over between launches, so it changes no bit.
YETIRANK_SCRATCH_BYTES = 256 * 1024 * 1024


@contextlib.contextmanager
def override(**values):
    """Temporarily set launch sizes (tests): ``with override(HIST_ROWS_PER_BLOCK=64): ...``."""
    g = globals()
    old = {}
    for k, v in values.items():
        if k not in g or k.startswith("_"):
            raise KeyError(f"unknown launch size {k!r}")
        old[k] = g[k]
        g[k] = v
    try:
        yield
    finally:
        g.update(old)
