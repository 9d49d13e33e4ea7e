"""
========================================
The rankers on a GPU (device="cuda")
========================================

Every skltr ranker takes ``device="cuda"`` (``"cuda:N"``, ``"auto"``): the same estimator and
the same model, trained and scored by CuPy CUDA kernels. This example fits
:class:`skltr.GPUHistGBDTRanker`, :class:`skltr.RankBoostRanker` and
:class:`skltr.OnDemandRuleRanker` on the CPU and on the GPU, and compares the two devices'
models (the same trees; the same scores, or how far apart when RankBoost's stump weights,
computed from CUDA's ``exp``/``log``, differ in the last bits), then scores CuPy arrays with
:class:`skltr.QuickScorerPredictor` on the GPU.

It needs CuPy and a CUDA GPU (``pip install ".[gpu]"`` from a clone of skltr) and matplotlib.
**Where there is no GPU** (as on the machine that builds these docs), the script runs nothing
on a GPU: it prints the output of the run recorded in ``examples/plot_gpu_rankers.txt`` (made
with ``SKLTR_RECORD_GPU_RUN=1 python examples/plot_gpu_rankers.py`` on a GPU machine) and
says so on its first line. Data: synthetic (``make_ranking``). The figure is written to
``$SKLTR_EXAMPLES_OUTPUT_DIR`` (a temporary folder when unset).
"""

import datetime
import os
import sys
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import skltr  # noqa: E402
from skltr import (GPUHistGBDTRanker, OnDemandRuleRanker, QuickScorerPredictor,  # noqa: E402
                   RankBoostRanker)
from skltr.datasets import make_ranking  # noqa: E402

HERE = Path(globals().get("__file__", Path.cwd() / "example.py")).resolve().parent
RECORD = HERE / "plot_gpu_rankers.txt"
out_dir = Path(os.environ.get("SKLTR_EXAMPLES_OUTPUT_DIR") or tempfile.mkdtemp(prefix="skltr-"))


def gpu_name():
    """The first GPU's name, or None without CuPy or a GPU."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() == 0:
            return None
        return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception:  # no CuPy, no driver, no GPU
        return None


def compare(fitted, X):
    """How the CPU and GPU models agree: the same trees (features, thresholds, shapes), and
    equal scores or the largest score difference. RankBoost's GPU potentials come from CUDA's
    ``exp``/``log``, so its stump weights may differ from the CPU's in the last bits."""
    cpu, gpu = fitted["cpu"].predict(X), fitted["cuda"].predict(X)
    words = []
    if hasattr(fitted["cpu"], "to_tree_ensemble"):
        a, b = (fitted[d].to_tree_ensemble() for d in ("cpu", "cuda"))
        same_trees = a.n_trees == b.n_trees and all(
            np.array_equal(getattr(a, f), getattr(b, f), equal_nan=f == "threshold")
            for f in ("tree_ptr", "feature", "threshold", "left", "right"))
        words.append(f"same trees: {same_trees}")
    if np.array_equal(cpu, gpu):
        words.append("same scores: True")
    else:
        words.append(f"largest score difference {np.max(np.abs(cpu - gpu)):.1e} "
                     f"(scores up to {np.max(np.abs(cpu)):.1f})")
    return "; ".join(words)


def run_on_gpu(say):
    """The example proper: fit each ranker on both devices; returns fit seconds."""
    import cupy

    X, y, qid = make_ranking(n_queries=2000, docs_per_query=50, n_features=136,
                             random_state=0)
    say(f"data: synthetic (make_ranking: {X.shape[0]:,} rows x {X.shape[1]} features)")
    rankers = {
        "GPUHistGBDTRanker": lambda d: GPUHistGBDTRanker(device=d, random_state=0),
        "RankBoostRanker": lambda d: RankBoostRanker(device=d, random_state=0),
        "OnDemandRuleRanker": lambda d: OnDemandRuleRanker(max_rule_size=2, device=d),
    }
    seconds = {}
    rows = slice(0, 2000)  # the rule ranker works at predict time: score 2,000 rows
    for name, make in rankers.items():
        fitted = {}
        for device in ("cpu", "cuda"):
            make(device).fit(X[:5000], y[:5000], qid=qid[:5000])  # load / compile kernels
            t = time.perf_counter()
            fitted[device] = make(device).fit(X, y, qid=qid)
            seconds[(name, device)] = time.perf_counter() - t
        say(f"{name}: fit {seconds[(name, 'cpu')]:.2f} s on the CPU, "
            f"{seconds[(name, 'cuda')]:.2f} s on the GPU; {compare(fitted, X[rows])}")
    ranker = GPUHistGBDTRanker(random_state=0).fit(X, y, qid=qid)
    on_gpu = QuickScorerPredictor.from_model(ranker, device="cuda")
    scores = on_gpu.predict(cupy.asarray(X))  # CuPy in, CuPy out
    say(f"QuickScorerPredictor on the GPU: {type(scores).__module__}.ndarray of "
        f"{scores.shape[0]:,} scores, equal to the CPU's: "
        f"{np.array_equal(cupy.asnumpy(scores), ranker.predict(X))}")
    return seconds


name = gpu_name()
if name is not None:
    lines = []

    def say(text):
        print(text)
        lines.append(text)

    say(f"device: {name}")
    seconds = run_on_gpu(say)
    if os.environ.get("SKLTR_RECORD_GPU_RUN") == "1":
        header = (f"# recorded by SKLTR_RECORD_GPU_RUN=1 python examples/plot_gpu_rankers.py; "
                  f"skltr {skltr.__version__}, {datetime.date.today()}")
        RECORD.write_text("\n".join([header] + lines) + "\n", encoding="utf-8")
        print(f"recorded in {RECORD}")
else:
    seconds = {}
    if RECORD.is_file():
        print(f"NO GPU HERE: nothing below ran now; this is the run recorded in {RECORD.name}:")
        for line in RECORD.read_text(encoding="utf-8").splitlines():
            print(line)
            if ": fit " in line:
                ranker = line.split(":")[0]
                cpu_s, gpu_s = (float(part.split(" s ")[0].split()[-1])
                                for part in line.split(": fit ")[1].split(", ")[:2])
                seconds[(ranker, "cpu")], seconds[(ranker, "cuda")] = cpu_s, gpu_s
    else:
        print("NO GPU HERE, and no recorded GPU run in examples/plot_gpu_rankers.txt yet: "
              "record one with SKLTR_RECORD_GPU_RUN=1 python examples/plot_gpu_rankers.py "
              "on a machine with CuPy and a GPU.", file=sys.stdout)

# %%
# Fit seconds per ranker and device (of this run, or of the recorded one).
fig, ax = plt.subplots(figsize=(7, 3.5))
names = sorted({ranker for ranker, _ in seconds})
for k, device in enumerate(("cpu", "cuda")):
    ax.barh(np.arange(len(names)) + 0.4 * k, [seconds[(n, device)] for n in names], 0.4,
            label=device)
ax.set_yticks(np.arange(len(names)) + 0.2, names)
ax.set_xlabel("fit seconds")
if not names:
    ax.text(0.5, 0.5, "no GPU run to show", ha="center", va="center", transform=ax.transAxes)
ax.legend()
fig.tight_layout()
fig.savefig(out_dir / "gpu_rankers_fit_seconds.png", dpi=100)
print(f"figure written to {out_dir / 'gpu_rankers_fit_seconds.png'}")
