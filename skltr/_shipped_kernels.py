"""Build the compiled kernels a wheel ships (issue #28's first run; ``skltr._numba_cache``).

Usage::

    python -m skltr._shipped_kernels [--into FOLDER]

A child process compiles, for the portable CPU level ``skltr._numba_cache.SHIPPED_CPU``
(``NUMBA_CPU_NAME`` set to it, ``NUMBA_CPU_FEATURES`` empty) and into an empty private cache,
the kernels of what a newcomer runs first: ``skltr demo`` (every ranker on the demo's data)
and a first fit + predict of ``GPUHistGBDTRanker`` on float64 and float32 rows. The cache's
folder for this skltr / Python / numba is then copied to ``skltr/_kernels/<tag>`` (or
``FOLDER/<tag>``), which the package data of a wheel built afterwards carries (``pyproject.toml``),
and where a process that finds a kernel missing from its per-user cache looks it up. The
folder is build output: it is not in the repository (``.gitignore``).

The kernels are for the CPU level, not the build machine: they run on every x86-64 host with
its features and give the same scores as kernels compiled for the host (numba compiles without
fast-math, so LLVM does not reorder floating-point arithmetic for either).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from . import _numba_cache

#: What the child runs: the demo (quiet, with or without the peers installed), then first fits
#: of the GBDT ranker as a script would make them (float64 and float32 rows, all defaults).
_WORKLOAD = r"""
import argparse
import numpy as np
from skltr.cli import run_demo
from skltr import GPUHistGBDTRanker
from skltr.datasets import make_ranking

run_demo(argparse.Namespace(device="cpu", n_queries=2000, docs_per_query=50, n_features=136,
                            seed=0, quiet=True, plot=None))
X, y, qid = make_ranking(n_queries=200, docs_per_query=50, n_features=136, n_informative=20,
                         random_state=0)
for dtype in (np.float64, np.float32):
    GPUHistGBDTRanker(random_state=0).fit(X.astype(dtype), y, qid=qid).predict(X.astype(dtype))
"""


def build(into: str | None = None) -> str:
    """Compile the shipped kernels and copy them to ``into`` (default
    ``skltr/_kernels``)/``<tag>``; returns that folder."""
    into = os.path.abspath(into or _numba_cache.SHIPPED_DIR)
    tag = os.path.basename(_numba_cache.cache_root())
    with tempfile.TemporaryDirectory(prefix="skltr-shipped-") as tmp:
        os.chmod(tmp, 0o700)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("NUMBA_", "SKLTR_"))}
        env.update(NUMBA_CPU_NAME=_numba_cache.SHIPPED_CPU, NUMBA_CPU_FEATURES="",
                   SKLTR_CACHE_DIR=tmp, SKLTR_PRECOMPILE="0", SKLTR_SHIPPED_KERNELS="0",
                   SKLTR_QUIET="1")
        subprocess.run([sys.executable, "-c", _WORKLOAD], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        built = os.path.join(tmp, tag)
        if not os.path.isdir(built):
            raise RuntimeError(f"the workload cached no kernels in {built}")
        target = os.path.join(into, tag)
        partial = target + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(built, partial)
        with open(os.path.join(partial, _numba_cache.SOURCES_FILE), "w", encoding="ascii") as f:
            f.write(_numba_cache.sources_digest() + "\n")
        for dirpath, _dirs, files in os.walk(partial):  # read-only for everyone else
            os.chmod(dirpath, 0o755)
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o644)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
    return target


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m skltr._shipped_kernels",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--into", default=None,
                        help=f"folder to copy the kernels to (default {_numba_cache.SHIPPED_DIR})")
    target = build(parser.parse_args(argv).into)
    n = sum(len(files) for _d, _s, files in os.walk(target))
    print(f"shipped kernels: {n} files in {target}")


if __name__ == "__main__":
    main()
