"""No stale figure in the README and the docs (issue #33).

* Every result file the README or a docs page cites (``benchmarks/results/*.json``) exists.
* Every figure in :data:`FIGURES` equals, as written, the value its result file holds, and is
  written in a paragraph / table row of its page(s) that cites that file.
* The rule: every number with a unit (``s``, ``ms``, ``us``, ``us/doc``, ``ns``, ``min``,
  ``x``, ``%``, ``MB``, ``GB``, ``GB/s``, ``KB``, ``KiB``, ``MiB``; see
  :data:`FIGURE_WITH_UNIT`) in any paragraph, table row or list item of any page -- README.md
  and every ``docs/**/*.rst`` but ``docs/auto_examples`` and ``docs/_build``, whether or not
  the paragraph cites a result file -- is one of :data:`FIGURES` for that page, read from a
  file cited in the same paragraph / row, or is listed in :data:`NOT_MEASURED` with the
  reason it is no measurement (a target, a data set's shape or size, a memory budget, a
  design constant, a hardware fact such as an L2 size, a size computed from a layout, an
  estimate said to be one). A measurement that no committed result file records is not
  allow-listed: it is removed from the page (say what is known without the figure).
  A table, or a bulleted list after a paragraph ending with a colon, cites the files of the
  paragraph that introduces it as well as its own.
  Numbers without a unit ("16 threads", "1,000 trees", "255 leaves", "136 features", row
  counts, versions) are not scanned; lists share their last number's unit ("2.5 / 1.8x",
  "28-39x", "1.27 vs 1.93 s" are two figures each).

To update a figure: run its benchmark, then change the text and the cited file name in the
page(s) and the entry below; this test fails until the three agree. To add one: write it next
to its result file and add its entry; the scan fails until you do.
"""

import json
import re
import statistics
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
# every page: README.md and the docs' sources, not the generated gallery nor the built site
PAGES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.rst")
    if not {"auto_examples", "_build"} & set(p.relative_to(ROOT / "docs").parts))
RESULT = re.compile(r"benchmarks/results/[A-Za-z0-9_.\-]+\.json")
# a table's first line: a simple / grid table's border, a list-table directive or row
TABLE = re.compile(r"(?:=+(?: +=+)+|\+[-=+]+\+|\.\. list-table::|   \* - )[^\n]*(?:\n|$)")
_NUM = r"\d[\d,]*(?:\.\d+)?"
_UNIT = r"(?:x|%)(?!\w)|\s?(?:us/doc|ms|us|ns|s|min|GB/s|GB|MB|KB|KiB|MiB)(?![\w/])"
FIGURE_WITH_UNIT = re.compile(
    rf"(?<![\w./])({_NUM}(?:(?:\s*/\s*|\s+vs\s+|-){_NUM})*)({_UNIT})")

# (page, figure as scanned): why it is no measurement
NOT_MEASURED = {
    ("docs/performance.rst", "3x"): "issue #28's target for the XGBoost model",
    ("docs/performance.rst", "10x"): "targets: issue #28's (LightGBM model), #16's (rules)",
    ("docs/performance.rst", "1.25x"): "the target of the Dask CPU fit",
    ("docs/performance.rst", "1.2x"): "the target of the Dask GPU fit",
    ("docs/performance.rst", "0.7x"): "issue #28's target for the GPU depth-wise fit",
    ("docs/performance.rst", "5s"): "issue #28's target for the cold 10k fit + predict",
    ("docs/performance.rst", "15s"): "issue #28's target for the cold demo",
    ("docs/performance.rst", "5%"): "the NaN share of a test data set",
    ("docs/user_guide/rule_ranker.rst", "10x"): "issue #16's target",
    ("docs/gbdt_gpu.rst", "2%"): "the NaN share of a test data set",
    ("docs/gbdt_gpu.rst", "10x"): "the target of the GPU fit against the CPU's",
    ("docs/gbdt_gpu.rst", "109MB"): "the size of the binning sample, 200,000 x 136 float32",
    ("docs/gbdt_gpu.rst", "544MB"): "the size of X, 1M x 136 float32",
    ("docs/gbdt_gpu.rst", "78%"): "a data column's share of zeros",
    ("docs/gbdt_gpu.rst", "98%"): "a data column's share of zeros",
    ("docs/scoring_internals.rst", "48KB"): "the host's L1d size",
    ("docs/scoring_internals.rst", "2MB"): "an L2 size a core (the 2-core Xeon's, the host's)",
    ("docs/scoring_internals.rst", "1MB"): "the 2-core EPYC's L2 size a core",
    ("docs/scoring_internals.rst", "2KB"): "a chunk's 256 float64 scores, computed",
    ("docs/scoring_internals.rst", "128KB"): "a 1,024-tree block's 16-lane bitvectors, computed",
    ("docs/scoring_internals.rst", "512KB"): "a 1,024-tree block's 255-leaf state, computed",
    ("docs/scoring_internals.rst", "218MB"): "the size of 200,000 x 136 float64, computed",
    ("docs/scoring_internals.rst", "1.1MB"): "a block's node entries (LightGBM model), computed",
    ("docs/scoring_internals.rst", "0.5MB"): "the same block's leaf values, computed",
    ("docs/gbdt_internals.rst", "4KiB"): "the L1 cache's set-aliasing period (hardware)",
    ("docs/user_guide/explanations.rst", "256MB"): "TABLE_BYTES, the tables' budget a model",
    ("docs/user_guide/explanations.rst", "1MB"): "BLOCK_BYTES, a block of trees' tables",
    ("docs/user_guide/gbdt_ranker.rst", "5%"): "the NaN share of a test data set",
    ("docs/user_guide/gbdt_ranker.rst", "2x"): "issue #30's bound on YetiRank's fit time",
    ("docs/user_guide/gbdt_ranker.rst", "99%"): "LightGBM's rule for the categories it keeps",
    ("docs/gbdt_internals.rst", "99%"): "LightGBM's rule for the categories it keeps",
    ("docs/user_guide/rule_ranker.rst", "0.2s"): (
        "BATCH_SECONDS (a constant); a GPU round of BATCH_ITEMSETS at the recorded size-4 rate"),
    ("docs/user_guide/rule_ranker.rst", "10ms"): "TASK_SECONDS, a constant",
    ("docs/user_guide/rule_ranker.rst", "1s"): "the bound the Ctrl-C test asserts",
    ("docs/user_guide/rule_ranker.rst", "40%"): "the kernel's switch, nnz * 5 >= words * 2",
    ("docs/user_guide/rule_ranker.rst", "3.4MB"): "a 65,536-entry cache's size, computed",
    ("docs/scoring_internals.rst", "1.6MB"): "the size of a block's tables, computed",
    ("docs/scoring_internals.rst", "3x"): "issue #28's target for the XGBoost model",
    ("docs/scoring_internals.rst", "10x"): "issue #28's target for the LightGBM model",
    ("docs/user_guide/dask.rst", "1.25x"): "the target of the Dask CPU fit",
    ("docs/user_guide/dask.rst", "1.2x"): "the target of the Dask GPU fit",
    ("docs/user_guide/dask.rst", "50ms"): "a setting measured (the GIL switch interval)",
    ("docs/user_guide/dask.rst", "200us"): "SPIN_S, the barriers' polling (a setting)",
}


class Figure(NamedTuple):
    """``text`` as written in ``pages``; its value: ``field`` (``skltr``, ``peer``, ``ratio``
    or ``speedup`` = peer / skltr) of the first row of ``result`` whose ``case`` contains
    ``case`` (and whose ``unit``, ``peer_name``, ``metric`` equal those given), times
    ``scale``, formatted with ``fmt``. A figure outside the rows: ``path``, the keys /
    indices from the file's top to the number (with ``peer_path``: the number there over
    the one at ``path``, a speed-up; with ``minus_path``: the number at ``path`` minus the one
    there, a time spent outside a stage; with ``peer_result``, ``peer_path`` is read from that
    file, cited next to the figure too; with ``reduce``, the figure is that function of the
    value at ``path``, e.g. the standard error of paired differences over ``params.raw``'s
    runs). A figure a file records only in a note's text (a string at ``path``) is checked as
    written there."""

    text: str
    result: str
    case: str = None
    field: str = "skltr"
    fmt: str = "{:.1f} s"
    pages: tuple = ("README.md", "docs/performance.rst")
    unit: str = None
    peer_name: str = None
    metric: str = None
    path: tuple = None
    peer_path: tuple = None
    scale: float = 1
    minus_path: tuple = None
    peer_result: str = None
    reduce: object = None


PERF = ("docs/performance.rst",)
RANKBOOST = ("docs/user_guide/rankboost.rst",)
GPU_PREDICT = "predict_gpu-h100-1f0c39c-2026-11-24.json"
_XGB_GPU = ("params", "models")
GBDT_GPU = ("docs/gbdt_gpu.rst",)
COUNTBINS = "train_gpu-h100-countbins-e6ee752-2026-11-22.json"
SETUP = "train_gpu-h100-setup-2026-11-22.json"
SETUP_XGB_FIRST = "train_gpu-h100-setup-xgbfirst-2026-11-22.json"
GBDT_RANKER = ("docs/user_guide/gbdt_ranker.rst",)
DEFAULTS = "defaults_quality-intel-r-xeon-r-processor-2026-11-23.json"
RULE_RANKER = ("docs/user_guide/rule_ranker.rst",)
RULES_CPU = "ondemand_rules_cpu-intel-r-xeon-r-processor-2026-11-24.json"
RULES_FREE = "ondemand_rules_cpu-amd-epyc-2026-11-26-speed-free.json"
RULES_GPU = "ondemand_rules_cuda-h100-2026-11-28-1064339-triples.json"
RULES_GPU_2 = "ondemand_rules_cuda-h100-2026-11-28-f3e447d-triples.json"
RULES_ITEMSETS = "skltr, size 3 on the itemsets kernel (same run)"
#: the triples kernel reworked (ldmatrix, branchless rules; sizes 1-2 in its first chunks)
DASK_GPU_4M = "train_dask_gpu-h200-x1-4m-7ba109c-2026-11-28.json"
RULES_GPU_H200 = "ondemand_rules_cuda-h200-2026-11-28-7ba109c-q20.json"
STUMPS = "predict_stumps-amd-epyc-2026-11-28-a313585.json"
DEMO_9794 = "cold_start-amd-epyc-2026-11-28-9794b22-demo-profile.json"
DASK = ("docs/user_guide/dask.rst",)
DASK_CPU = "train_dask-nvidia-h100-80gb-hbm3-2026-11-25.json"
DASK_CPU_2 = "train_dask-h100-host-4x4-4d46c8c-2026-11-26.json"
#: the compiled distributed grower (issue #28, 2026-11-28): before it, its runs, the variants
DASK_CPU_F5A = "train_dask-h200-host-4x4-f5abb34-2026-11-28.json"
DASK_CPU_8E1 = "train_dask-h200-host-4x4-8e171b2-2026-11-28.json"
DASK_CPU_8C6 = "train_dask-h200-host-4x4-8c68a10-2026-11-28.json"
DASK_CPU_4 = "train_dask-h200-host-4x4-variants-d246141-2026-11-28.json"
DASK_CPU_3 = "train_dask-h100-host-4x4-4b559ca-2026-11-26.json"
DASK_GPU = "train_dask_gpu-nvidia-h100-x2-{}-2026-11-25.json"
ALLREDUCE = "allreduce_cpu-h100-host-16core-4d46c8c-2026-11-26.json"
_DT = ("params", "skltr_dask_timings")
EXPLANATIONS = ("docs/user_guide/explanations.rst",)
SCORING_INTERNALS = ("docs/scoring_internals.rst",)
SCALING_16 = "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json"
EXPLAIN_16 = "explain-cpu-h100-host-16threads-{}2026-11-26.json"
FAST_SCORING = ("docs/user_guide/fast_scoring.rst",)
PREDICT_CPU = "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22"
BOUNDED = "quality_gpu-h100-bounded-4849c88{}-2026-11-22.json"


def _paired_se(bins, engine, peer):
    """The standard error of ``engine`` minus ``peer`` test NDCG@10 over the seeds of a
    ``params.raw`` list of runs (``seed``, ``bins``, ``engine``, ``ndcg@10``) at ``bins``."""
    def se(raw):
        by = {(r["seed"], r["engine"]): r["ndcg@10"] for r in raw if r["bins"] == bins}
        diffs = [by[s, engine] - by[s, peer] for s, e in by if e == engine]
        return statistics.stdev(diffs) / len(diffs) ** 0.5
    return se


CATEGORICAL = "categorical-h100-2026-11-27-1e8874a-q6000-t16-cuda.json"
CATEGORICAL_NOW = "categorical-h200-2026-11-27-abd5724-q6000-t16.json"
CATEGORICAL_PREDICT = "categorical-h100-2026-11-27-0ee25ee-q6000-t16-cuda-predict.json"
CATEGORICAL_SCAN = "categorical-h100-2026-11-27-f6d8298-q6000-t16-cuda.json"
CATEGORICAL_TASKS = "categorical-h100-2026-11-27-5c24a27-q6000-t16.json"
CATEGORICAL_DEVICE = "categorical-h100-2026-11-27-e78f2f8-q6000-t16-cuda-device-search.json"
CATEGORICAL_2CORES_NOW = "categorical-amd-epyc-2026-11-27-80f9082-q600-t2.json"
CATEGORICAL_2CORES = "categorical-amd-epyc-2026-11-27-6c4e65d-q600-t2.json"
CATEGORICAL_2CORES_LARGE = "categorical-amd-epyc-2026-11-27-c00df01-q6000-t2.json"
#: the README's CPU fit times: 600 queries, the H200 host's 16 threads and 2 Intel cores
CATEGORICAL_16_NOW = "categorical-h200-host-2026-11-29-de52ac0-q600-t16.json"
CATEGORICAL_16_LATER = "categorical-h200-host-2026-11-29-8c3406d-q600-t16-r5.json"
CATEGORICAL_2_NOW = "categorical-intel-xeon-2026-11-29-de52ac0-q600-t2.json"
CATEGORICAL_16_LARGE = "categorical-h200-host-2026-11-29-c5b4692-q6000-t16.json"


def _categorical_time(text, levels, engine, result=CATEGORICAL):
    # the CPU range of the newest categorical fit is also in the README
    readme = ("README.md",) if (result, levels, engine) in {
        (CATEGORICAL_16_NOW, 10, "categorical"), (CATEGORICAL_16_NOW, 10000, "categorical"),
        (CATEGORICAL_16_LATER, 10, "categorical"),
        (CATEGORICAL_16_LATER, 1000, "categorical"),
        (CATEGORICAL_2_NOW, 10, "categorical"), (CATEGORICAL_2_NOW, 1000, "categorical"),
        (CATEGORICAL_16_LARGE, 10, "categorical"), (CATEGORICAL_16_LARGE, 1000, "categorical"),
        (CATEGORICAL_SCAN, 10, "categorical (cuda)"),
        (CATEGORICAL_SCAN, 10000, "categorical (cuda)")} else ()
    return Figure(text, result, f"{levels} categories", metric=f"skltr {engine} fit",
                  field="ratio", fmt="{:.2f}x", pages=GBDT_RANKER + readme)


#: the categorical benchmark's later runs: skltr / LightGBM fit time, categorical then
#: ordinal at 10 / 1,000 / 10,000 levels (None: a level the run left out)
_CATEGORICAL_CELLS = [(levels, engine) for engine in ("categorical", "ordinal")
                      for levels in (10, 1000, 10000)]
CATEGORICAL_RUNS = {
    "categorical-amd-epyc-2026-11-27-bd4e2aa-q600-t2.json":
        ("1.15x", "1.18x", "1.15x", "1.08x", "1.00x", "0.94x"),
    "categorical-amd-epyc-2026-11-28-9ce91a6-q600-t2.json":
        ("1.15x", "1.21x", "1.16x", "1.06x", "1.01x", "0.95x"),
    "categorical-amd-epyc-2026-11-28-abf26f3-q600-t2.json":
        ("0.85x", "1.02x", "1.01x", "0.79x", "0.74x", "0.83x"),
    "categorical-amd-epyc-2026-11-28-9d385a3-q600-t2.json":
        ("0.95x", "0.98x", "0.99x", "0.88x", "0.87x", "0.85x"),
    "categorical-h200-host-2026-11-28-bf70b9d-q600-t2.json":
        (None, "1.01x", "0.99x", None, "0.90x", "0.91x"),
    "categorical-h200-host-2026-11-28-43b4010-q600-t16.json":
        ("1.00x", "1.25x", "1.18x", "1.02x", "0.93x", "0.90x"),
    "categorical-h200-host-2026-11-28-174cac0-q600-t16.json":
        ("1.02x", "1.19x", "1.10x", "0.89x", "0.93x", "0.82x"),
    "categorical-h200-host-2026-11-28-5b94820-q600-t16.json":
        ("0.98x", "1.04x", "1.03x", "0.88x", "0.96x", "0.80x"),
    "categorical-h200-host-2026-11-28-7be7ee3-q600-t16.json":
        ("1.01x", "1.17x", "1.13x", "0.91x", "0.88x", "1.01x"),
    "categorical-h200-host-2026-11-28-85e2fba-q600-t16.json":
        ("0.95x", "1.05x", "1.08x", "0.88x", "0.87x", "0.92x"),
    "categorical-h200-host-2026-11-28-18e8f1d-q600-t16.json":
        ("1.04x", "1.03x", "1.07x", "1.05x", "0.89x", "0.90x"),
    "categorical-h200-host-2026-11-28-18e8f1d-q600-t2.json":
        ("1.01x", "1.03x", "1.05x", "1.05x", "0.90x", "1.00x"),
    "categorical-intel-xeon-2026-11-28-18e8f1d-q600-t2.json":
        ("1.02x", "1.04x", "1.00x", "0.92x", "0.89x", "0.86x"),
    "categorical-h200-host-2026-11-28-1f71616-q600-t16.json":
        ("1.09x", "1.00x", "1.06x", "0.96x", "0.83x", "0.88x"),
    "categorical-h200-host-2026-11-28-2f40a05-q600-t16.json":
        ("0.97x", "1.00x", "1.00x", "0.91x", "0.84x", "0.86x"),
    "categorical-h200-host-2026-11-29-2f40a05-q600-t16-levels-1000-10000.json":
        (None, "1.01x", "1.07x", None, "0.83x", "0.85x"),
    "categorical-intel-xeon-2026-11-28-2f40a05-q600-t2.json":
        ("0.99x", "1.03x", "1.00x", "0.94x", "0.88x", "0.86x"),
    "categorical-h200-host-2026-11-29-de52ac0-q600-t16.json":
        ("0.96x", "0.96x", "1.00x", "0.89x", "0.83x", "0.84x"),
    "categorical-h200-host-2026-11-29-8c3406d-q600-t16-r5.json":
        ("0.90x", "0.97x", "0.96x", "0.87x", "0.79x", "0.82x"),
    "categorical-intel-xeon-2026-11-29-de52ac0-q600-t2.json":
        ("0.93x", "0.96x", "0.94x", "0.90x", "0.85x", "0.84x"),
    "categorical-intel-xeon-2026-11-29-de52ac0-q6000-t2.json":
        ("0.72x", "0.75x", "0.75x", "0.72x", "0.68x", "0.65x"),
    CATEGORICAL_16_LARGE:
        ("0.79x", "0.81x", "0.79x", "0.78x", "0.69x", "0.60x"),
}

YETIRANK = "yetirank-amd-epyc-2026-11-27-2366eb2-synthetic-100k-letor-1thread.json"
YETIRANK_NOW = "yetirank-amd-epyc-2026-11-27-08b788b-symmetric-5seeds.json"
YETIRANK_FAST = "yetirank-amd-epyc-2026-11-27-28719e5-symmetric-5seeds.json"
INTERNALS = ("docs/gbdt_internals.rst",)
_SYM = 'skltr yetirank {"growth": "symmetric"'
_SYM_NOISE = _SYM + ', "random_strength": 1.0'
_SYM_LEAF = _SYM_NOISE + ', "min_samples_leaf": 1'

#: GPU trees at 96d2dbc (feature-group split search, raw partition scan) and 9a2dc7b
#: (leaf-wise speculation by reach), H100, 200 rounds
DEPTH_96D = "train_gpu-h100-depthwise-lossguide-96d2dbc-200rounds-2026-11-28.json"
LOSSGUIDE_9A2 = "train_gpu-h100-lossguide-9a2dc7b-200rounds-2026-11-28.json"
SPECULATION = "leafwise_speculation-h100-9a2dc7b-2026-11-28.json"
SLOW_HOST_6B6 = "train_gpu-h100-6b63daa-50rounds-2026-11-28.json"
#: depth-wise levels planned on the device: e33a1c8 (H200), f87de96's code (H100, H200)
LEVELS_E33 = "train_gpu-h200-levels-e33a1c8-200rounds-2026-11-28.json"
LEVELS_H100 = "train_gpu-h100-levels-1827397-200rounds-2026-11-28.json"
LEVELS_H200 = "train_gpu-h200-levels-f87de96-200rounds-2026-11-28.json"
#: where a small categorical CPU fit's time goes (kernels, gradients, the rest)
SPLIT_OVERHEAD = "split_overhead-amd-epyc-2026-11-28-9ce91a6.json"
LEAFWISE = "995078 rows, 255 bins, leaf-wise 255 leaves"
#: the first run with the compiled leaf-wise grower
COLD_ABF = "cold_start-amd-epyc-2026-11-28-abf26f3-10k-demo.json"
#: CPU training with leaf-wise trees grown in one numba call, the 16-core host
COMPILED_00D = "scaling_train_cpu-h200-host-16core-00dce1e-2026-11-28.json"
COMPILED_20B = "scaling_train_cpu-h200-host-16core-20b8d9d-2026-11-28-partial.json"
COMPILED_43B = "scaling_train_cpu-h200-host-16core-43b4010-2026-11-28.json"
COMPILED_4DA = "scaling_train_cpu-h200-host-16core-4da196d-2026-11-28.json"
COMPILED_BF7 = "scaling_train_cpu-h200-host-16core-bf70b9d-2026-11-28-4threads-repeat3.json"
#: integer histograms in row chunks before feature blocks
COMPILED_174 = "scaling_train_cpu-h200-host-16core-174cac0-2026-11-28.json"
#: the compiled grower as the pre-compiler's background stage
COLD_57C = "cold_start-amd-epyc-2026-11-28-57c95d1-10k-demo.json"
SHIPPED = "cold_start-intel-xeon-2026-11-28-e1f0bb7-shipped-kernels.json"
SHIPPED_772 = "cold_start-intel-xeon-2026-11-28-772abe5-shipped-kernels.json"
SHIPPED_DAD = "cold_start-intel-xeon-2026-11-28-dad8149-shipped-kernels.json"
SHIPPED_OFF = "cold_start-intel-xeon-2026-11-28-dad8149-shipped-off.json"
GBDT_GPU_PAGES = ("docs/performance.rst", "docs/gbdt_gpu.rst")


def _gpu_work(stages):
    """A profiled round's GPU seconds: its stages without the host's gaps."""
    return sum(v for k, v in stages.items() if k != "host and launch gaps")


GPU_TREE_FIGURES = [
    Figure("9.33 ms", DEPTH_96D, "995078 rows, 255 bins", metric="per round", fmt="{:.2f} ms",
           scale=1000, pages=PERF),
    Figure("0.74x", DEPTH_96D, "995078 rows, 255 bins", field="ratio", metric="per round",
           fmt="{:.2f}x", pages=(*PERF, *GBDT_GPU)),
    Figure("1.99 s", DEPTH_96D, "995078 rows, 255 bins", metric="fit", fmt="{:.2f} s",
           pages=PERF),
    Figure("2.59 s", DEPTH_96D, "995078 rows, 255 bins", field="peer", metric="fit",
           fmt="{:.2f} s", pages=PERF),
    Figure("0.77x", DEPTH_96D, "995078 rows, 255 bins", field="ratio", metric="fit",
           fmt="{:.2f}x", pages=PERF),
    Figure("0.68 ms", DEPTH_96D, path=("params", "raw", "profile/255", "stage_s_per_round",
                                       "split"), fmt="{:.2f} ms", scale=1000, pages=PERF),
    Figure("1.08 ms", DEPTH_96D, path=("params", "raw", "profile/255", "stage_s_per_round",
                                       "partition"), fmt="{:.2f} ms", scale=1000, pages=PERF),
    Figure("4.7 ms", DEPTH_96D, path=("params", "raw", "profile/255", "stage_s_per_round",
                                      "host and launch gaps"), fmt="{:.1f} ms", scale=1000,
           pages=(*PERF, *GBDT_GPU)),
    Figure("7.5 ms", DEPTH_96D, path=("params", "raw", "profile/255", "stage_s_per_round"),
           reduce=_gpu_work, fmt="{:.1f} ms", scale=1000, pages=(*PERF, *GBDT_GPU)),
    Figure("1.95", SLOW_HOST_6B6, path=("params", "raw", "profile/255", "stage_s_per_round",
                                        "split"), fmt="{:.2f}", scale=1000, pages=PERF),
    Figure("1.72", SLOW_HOST_6B6, path=("params", "raw", "profile/255", "stage_s_per_round",
                                        "partition"), fmt="{:.2f}", scale=1000, pages=PERF),
    Figure("17.1 ms", SLOW_HOST_6B6, "995078 rows, 255 bins", metric="per round",
           fmt="{:.1f} ms", scale=1000, pages=PERF),
    Figure("13.9", SLOW_HOST_6B6, "995078 rows, 255 bins", field="peer", metric="per round",
           fmt="{:.1f}", scale=1000, pages=PERF),
    Figure("1.23x", SLOW_HOST_6B6, "995078 rows, 255 bins", field="ratio", metric="per round",
           fmt="{:.2f}x", pages=PERF),
    Figure("12.3", "train_gpu-h100-ab-6b63daa-2026-11-28.json",
           path=("params", "raw", "skltr-gpu/255", "per_round_s"), fmt="{:.1f}", scale=1000,
           pages=PERF),
    Figure("11.2 ms", "train_gpu-h100-ab-96d2dbc-2026-11-28.json",
           path=("params", "raw", "skltr-gpu/255", "per_round_s"), fmt="{:.1f} ms", scale=1000,
           pages=PERF),
    Figure("8.25 s", DEPTH_96D, LEAFWISE, metric="fit", fmt="{:.2f} s", pages=PERF),
    Figure("8.14 s", DEPTH_96D, LEAFWISE, field="peer", metric="fit", fmt="{:.2f} s",
           pages=PERF),
    Figure("1.01x", DEPTH_96D, LEAFWISE, field="ratio", metric="fit", fmt="{:.2f}x",
           pages=GBDT_GPU_PAGES),
    Figure("5.31 s", LOSSGUIDE_9A2, LEAFWISE, metric="fit", fmt="{:.2f} s",
           pages=GBDT_GPU_PAGES),
    Figure("7.60 s", LOSSGUIDE_9A2, LEAFWISE, field="peer", metric="fit", fmt="{:.2f} s",
           pages=GBDT_GPU_PAGES),
    Figure("0.70x", LOSSGUIDE_9A2, LEAFWISE, field="ratio", metric="fit", fmt="{:.2f}x",
           pages=(*GBDT_GPU_PAGES, "docs/user_guide/gbdt_ranker.rst", "README.md")),
    Figure("25.8 ms", LOSSGUIDE_9A2, LEAFWISE, metric="per round", fmt="{:.1f} ms",
           scale=1000, pages=PERF),
    Figure("37.6 ms", LOSSGUIDE_9A2, LEAFWISE, field="peer", metric="per round",
           fmt="{:.1f} ms", scale=1000, pages=PERF),
    Figure("0.69x", LOSSGUIDE_9A2, LEAFWISE, field="ratio", metric="per round",
           fmt="{:.2f}x", pages=PERF),
    Figure("101 ms", SPECULATION, path=("own", "windows", -1, "ms_per_tree"),
           fmt="{:.0f} ms", pages=GBDT_GPU_PAGES),
    Figure("27 ms", SPECULATION, path=("reach", "windows", -1, "ms_per_tree"),
           fmt="{:.0f} ms", pages=GBDT_GPU_PAGES),
    Figure("5.03 s", SPECULATION, path=("reach", "boosting_s"), fmt="{:.2f} s", pages=PERF),
    *(Figure(text, SPLIT_OVERHEAD, path=("params", "raw", "categorical", key), fmt=fmt,
             pages=("docs/user_guide/gbdt_ranker.rst",))
      for text, key, fmt in (("0.325 s", "boosting_s", "{:.3f} s"),
                             ("0.167 s", "kernels_s", "{:.3f} s"),
                             ("0.070 s", "gradients_s", "{:.3f} s"),
                             ("0.088 s", "rest_s", "{:.3f} s"),
                             ("29 us", "rest_us_a_split", "{:.0f} us"),
                             ("0.344 s", "fit_s", "{:.3f} s"),
                             ("0.261 s", "lightgbm_fit_s", "{:.3f} s"))),
    Figure("0.87x", "train_gpu-h100-depthwise-ba30c73-200rounds-2026-11-28.json",
           "995078 rows, 255 bins", field="ratio", metric="per round", fmt="{:.2f}x",
           pages=(*PERF, *GBDT_GPU)),
    # depth-wise levels planned on the device (skltr._gpu.levels)
    *(Figure(text, result, "995078 rows, 255 bins", field=field, metric=metric, fmt=fmt,
             scale=scale, pages=pages)
      for text, result, field, metric, fmt, scale, pages in (
          ("5.94 ms", LEVELS_H100, "skltr", "per round", "{:.2f} ms", 1000,
           (*PERF, *GBDT_GPU)),
          ("12.63", LEVELS_H100, "peer", "per round", "{:.2f}", 1000, (*PERF, *GBDT_GPU)),
          ("0.47x", LEVELS_H100, "ratio", "per round", "{:.2f}x", 1,
           (*PERF, *GBDT_GPU, *GBDT_RANKER, "README.md")),
          ("1.38 s", LEVELS_H100, "skltr", "fit", "{:.2f} s", 1, PERF),
          ("2.62 s", LEVELS_H100, "peer", "fit", "{:.2f} s", 1, PERF),
          ("0.53x", LEVELS_H100, "ratio", "fit", "{:.2f}x", 1, PERF),
          ("0.53x", LEVELS_H200, "ratio", "fit", "{:.2f}x", 1, GBDT_GPU),
          ("5.96 ms", LEVELS_H200, "skltr", "per round", "{:.2f} ms", 1000,
           (*PERF, *GBDT_GPU)),
          ("12.01 ms", LEVELS_H200, "peer", "per round", "{:.2f} ms", 1000, PERF),
          ("12.01", LEVELS_H200, "peer", "per round", "{:.2f}", 1000, GBDT_GPU),
          ("0.50x", LEVELS_H200, "ratio", "per round", "{:.2f}x", 1, (*PERF, *GBDT_GPU)),
          ("8.74 ms", LEVELS_E33, "skltr", "per round", "{:.2f} ms", 1000,
           (*PERF, *GBDT_GPU)),
          ("12.10 ms", LEVELS_E33, "peer", "per round", "{:.2f} ms", 1000, PERF),
          ("12.10", LEVELS_E33, "peer", "per round", "{:.2f}", 1000, GBDT_GPU),
          ("0.72x", LEVELS_E33, "ratio", "per round", "{:.2f}x", 1, (*PERF, *GBDT_GPU)))),
    Figure("585 MB", LEVELS_H200, path=("params", "raw", "skltr-gpu/255", "gpu_peak_mb"),
           fmt="{:.0f} MB", pages=GBDT_GPU),
    Figure("7.1 ms", LEVELS_H200, path=("params", "raw", "profile/255", "stage_s_per_round"),
           reduce=_gpu_work, fmt="{:.1f} ms", scale=1000, pages=GBDT_GPU),
    Figure("2.7 ms", LEVELS_H200, path=("params", "raw", "profile/255", "stage_s_per_round",
                                        "host and launch gaps"), fmt="{:.1f} ms", scale=1000,
           pages=GBDT_GPU),
    Figure("11.03 ms", "train_gpu-h100-depthwise-ba30c73-200rounds-2026-11-28.json",
           "995078 rows, 255 bins", metric="per round", fmt="{:.2f} ms", scale=1000,
           pages=PERF),
    Figure("12.68 ms", "train_gpu-h100-depthwise-ba30c73-200rounds-2026-11-28.json",
           "995078 rows, 255 bins", field="peer", metric="per round", fmt="{:.2f} ms",
           scale=1000, pages=PERF),
    Figure("24.2 s", "cold_start-amd-epyc-2026-11-28-ba30c73-profile-10k-inline-ab.json",
           "helpers not inlined", fmt="{:.1f} s", pages=PERF),
    Figure("25.6 s", "cold_start-amd-epyc-2026-11-28-ba30c73-profile-10k-inline-ab.json",
           "helpers not inlined", field="peer", fmt="{:.1f} s", pages=PERF),
]

FIGURES = [
    *GPU_TREE_FIGURES,
    # the depth-wise YetiRank run before symmetric trees (the kernel's cost)
    *(Figure(text, YETIRANK, f"{data}:", metric=metric, peer_name=peer, field=field, fmt=fmt,
             pages=INTERNALS)
      for text, data, metric, peer, field, fmt in (
          ("38.2 s", "synthetic", "skltr yetirank fit", "catboost", "peer", "{:.1f} s"),
          ("8.47 s", "synthetic", "skltr yetirank fit", "catboost", "skltr", "{:.2f} s"),
          ("4.61 s", "synthetic", "skltr lambdarank fit", "catboost", "skltr", "{:.2f} s"),
          ("0.71 s", "letor", "skltr yetirank fit", "catboost", "skltr", "{:.2f} s"),
          ("0.59 s", "letor", "skltr lambdarank fit", "catboost", "skltr", "{:.2f} s"),
          ("1.84x", "synthetic", "skltr yetirank fit", "skltr lambdarank", "ratio",
           "{:.2f}x"))),
    # YetiRank against CatBoost with symmetric trees (the user guide's table)
    *(Figure(text, YETIRANK_NOW, f"{data}:", metric=f"{engine} fit", peer_name=peer,
             field=field, fmt="{:.2f} s" if float(text[:-2]) < 10 else "{:.1f} s",
             pages=GBDT_RANKER)
      for text, data, engine, peer, field in (
          ("40.3 s", "synthetic", "skltr yetirank", "catboost", "peer"),
          ("1.93 s", "letor", "skltr yetirank", "catboost", "peer"),
          ("9.01 s", "synthetic", "skltr yetirank", "catboost", "skltr"),
          ("0.79 s", "letor", "skltr yetirank", "catboost", "skltr"),
          ("9.23 s", "synthetic", _SYM + "}", "catboost", "skltr"),
          ("1.24 s", "letor", _SYM + "}", "catboost", "skltr"),
          ("9.87 s", "synthetic", _SYM_NOISE + "}", "catboost", "skltr"),
          ("1.67 s", "letor", _SYM_NOISE + "}", "catboost", "skltr"),
          ("9.83 s", "synthetic", _SYM_LEAF + "}", "catboost", "skltr"),
          ("1.90 s", "letor", _SYM_LEAF + "}", "catboost", "skltr"),
          ("4.94 s", "synthetic", "skltr lambdarank", "catboost", "skltr"),
          ("0.67 s", "letor", "skltr lambdarank", "catboost", "skltr"),
          ("32.9 s", "synthetic", "catboost lambdamart", "catboost", "skltr"),
          ("1.42 s", "letor", "catboost lambdamart", "catboost", "skltr"),
          ("6.00 s", "synthetic", "lightgbm lambdarank", "catboost", "skltr"),
          ("0.40 s", "letor", "lightgbm lambdarank", "catboost", "skltr"))),
    *(Figure(text, YETIRANK_NOW, f"{data}:", metric=f"{engine} fit", peer_name=peer,
             field=field, fmt="{:.1f}x", pages=pages)
      for text, data, engine, peer, field, pages in (
          ("1.9x", "synthetic", _SYM + "}", "skltr lambdarank", "ratio", GBDT_RANKER),
          ("1.9x", "letor", _SYM + "}", "skltr lambdarank", "ratio", GBDT_RANKER),
          ("2.8x", "letor", _SYM_LEAF + "}", "skltr lambdarank", "ratio", GBDT_RANKER),
          ("4.4x", "synthetic", _SYM + "}", "catboost", "speedup", GBDT_RANKER + PERF),
          ("1.0x", "letor", _SYM_LEAF + "}", "catboost", "speedup", GBDT_RANKER),
          ("1.6x", "letor", _SYM + "}", "catboost", "speedup", GBDT_RANKER))),
    Figure("2.6x", "yetirank-amd-epyc-2026-11-27-8b37ee3-letor-noise-skip.json", "letor:",
           metric=_SYM_LEAF + "} fit", peer_name="skltr lambdarank", field="ratio",
           fmt="{:.1f}x", pages=GBDT_RANKER),
    *(Figure(text, "yetirank-amd-epyc-2026-11-27-db09e63-symmetric-5seeds.json", f"{data}:",
             metric=_SYM_LEAF + "} fit", peer_name="skltr lambdarank", field="ratio",
             fmt="{:.2f}x", pages=GBDT_RANKER)
      for text, data in (("1.48x", "synthetic"), ("1.68x", "letor"))),
    # the cheaper level search and sort (the same models)
    *(Figure(text, YETIRANK_FAST, f"{data}:", metric=_SYM_LEAF + "} fit", peer_name=peer,
             field=field, fmt=fmt, pages=pages)
      for text, data, peer, field, fmt, pages in (
          ("1.42x", "synthetic", "skltr lambdarank", "ratio", "{:.2f}x",
           GBDT_RANKER + ("README.md",)),
          ("1.72x", "letor", "skltr lambdarank", "ratio", "{:.2f}x",
           GBDT_RANKER + ("README.md",)),
          ("5.79 s", "synthetic", "catboost", "skltr", "{:.2f} s", GBDT_RANKER),
          ("1.10 s", "letor", "catboost", "skltr", "{:.2f} s", GBDT_RANKER),
          ("6.8x", "synthetic", "catboost", "speedup", "{:.1f}x",
           GBDT_RANKER + ("README.md",)))),
    *(_categorical_time(text, levels, engine, CATEGORICAL_2CORES_LARGE)
      for text, levels, engine in (
          ("0.78x", 10, "categorical"), ("0.80x", 1000, "categorical"),
          ("0.80x", 10000, "categorical"), ("0.76x", 10, "ordinal"),
          ("0.72x", 1000, "ordinal"), ("0.65x", 10000, "ordinal"))),
    *(_categorical_time(text, levels, engine, CATEGORICAL_2CORES)
      for text, levels, engine in (
          ("1.12x", 10, "categorical"), ("1.26x", 1000, "categorical"),
          ("1.29x", 10000, "categorical"), ("1.05x", 10, "ordinal"),
          ("1.07x", 1000, "ordinal"), ("1.06x", 10000, "ordinal"))),
    *(Figure(text, CATEGORICAL_PREDICT, f"{levels} categories", metric="skltr categorical predict",
             field="ratio", fmt="{:.2f}x", pages=GBDT_RANKER + ("README.md",))
      for text, levels in (("0.28x", 10), ("0.70x", 10000))),
    *(Figure(text, CATEGORICAL_PREDICT, f"{levels} categories", metric=f"skltr {engine}",
             field="ratio", fmt="{:.2f}x", pages=GBDT_RANKER)
      for text, levels, engine in (
          ("0.61x", 1000, "categorical predict"), ("0.15x", 10, "ordinal predict"),
          ("0.13x", 1000, "ordinal predict"), ("0.10x", 10000, "ordinal predict"),
          ("0.19x", 10, "categorical (cuda) predict"),
          ("0.17x", 1000, "categorical (cuda) predict"),
          ("0.16x", 10000, "categorical (cuda) predict"), ("1.15x", 10, "categorical fit"),
          ("1.14x", 1000, "categorical fit"), ("1.12x", 10000, "categorical fit"))),
    *(Figure(text, (f"predict_cpu-{commit}-255leaves-depth8.json" if "host" in commit else
                    f"predict_cpu-amd-epyc-2026-11-27-{commit}-255leaves-depth8.json"), case,
             metric=(metric_given or ["traversal"])[0], field=field, fmt=fmt, pages=pages)
      for text, commit, case, field, fmt, pages, *metric_given in (
          ("5.8 us/doc", "a05111e", "lightgbm 300", "skltr", "{:.1f} us/doc", PERF),
          ("9.3", "a05111e", "lightgbm 300", "peer", "{:.1f}", PERF),
          ("0.62x", "a05111e", "lightgbm 300", "ratio", "{:.2f}x",
           PERF + SCORING_INTERNALS + ("README.md",)),
          ("4.2 us/doc", "a05111e", "xgboost 300", "skltr", "{:.1f} us/doc", PERF),
          ("2.1", "a05111e", "xgboost 300", "peer", "{:.1f}", PERF),
          ("1.98x", "a05111e", "xgboost 300", "ratio", "{:.2f}x",
           PERF + SCORING_INTERNALS + ("README.md",)),
          ("3.8x", "3d05d0b", "xgboost 300", "ratio", "{:.1f}x", PERF),
          ("0.58x", "h100-host-16core-8656248", "lightgbm 300", "ratio", "{:.2f}x", PERF),
          *((text, "449d202", case, field, fmt, PERF, "latency 100 docs, backend auto (traversal)")
            for text, case, field, fmt in (
                ("0.60 ms", "lightgbm 300", "skltr", "{:.2f} ms"),
                ("0.94", "lightgbm 300", "peer", "{:.2f}"),
                ("0.63x", "lightgbm 300", "ratio", "{:.2f}x"),
                ("0.54 ms", "xgboost 300", "skltr", "{:.2f} ms"),
                ("0.86", "xgboost 300", "peer", "{:.2f}"),
                ("0.63x", "xgboost 300", "ratio", "{:.2f}x"))),
          ("1.69x", "h100-host-16core-8656248", "xgboost 300", "ratio", "{:.2f}x", PERF),
          ("0.86x", "3d05d0b", "lightgbm 300", "ratio", "{:.2f}x", SCORING_INTERNALS),
          ("3.77x", "3d05d0b", "xgboost 300", "ratio", "{:.2f}x", SCORING_INTERNALS),
          ("0.84x", "e6dbb14", "lightgbm 300", "ratio", "{:.2f}x", SCORING_INTERNALS),
          ("3.25x", "e6dbb14", "xgboost 300", "ratio", "{:.2f}x", SCORING_INTERNALS),
          ("0.65x", "03bb1d3", "lightgbm 300", "ratio", "{:.2f}x", SCORING_INTERNALS),
          ("2.27x", "03bb1d3", "xgboost 300", "ratio", "{:.2f}x", SCORING_INTERNALS))),
    *(_categorical_time(text, levels, engine, CATEGORICAL_SCAN) for text, levels, engine in (
        ("1.05x", 10, "categorical"), ("1.16x", 1000, "categorical"),
        ("1.13x", 10000, "categorical"), ("1.25x", 10, "categorical (cuda)"),
        ("1.38x", 1000, "categorical (cuda)"), ("1.43x", 10000, "categorical (cuda)"))),
    *(_categorical_time(text, levels, engine, CATEGORICAL_TASKS) for text, levels, engine in (
        ("1.04x", 10, "categorical"), ("1.16x", 1000, "categorical"),
        ("1.09x", 10000, "categorical"))),
    *(_categorical_time(text, levels, engine, result)
      for result, ratios in CATEGORICAL_RUNS.items()
      for (levels, engine), text in zip(_CATEGORICAL_CELLS, ratios) if text),
    # where a small node's wide rows are built: whole fits of each variant in one process
    *(Figure(text, "wide_tasks-h200-host-2026-11-28-85e2fba-q600.json", case, field=field,
             metric=f"skltr {variant} fit", fmt="{:.3f} s", pages=INTERNALS)
      for text, case, variant, field in (
          ("0.376 s", "1000 levels, 16 threads", "fit", "skltr"),
          ("0.425 s", "1000 levels, 16 threads", "apart", "skltr"),
          ("0.345 s", "1000 levels, 16 threads", "fit", "peer"),
          ("0.603 s", "1000 levels, 2 threads", "fit", "skltr"),
          ("0.757 s", "1000 levels, 2 threads", "apart", "skltr"),
          ("0.619 s", "1000 levels, 2 threads", "fit", "peer"),
          ("0.491 s", "10000 levels, 4 threads", "apart", "skltr"),
          ("0.511 s", "10000 levels, 4 threads", "fit", "skltr"))),
    *(Figure(text, "split_overhead-amd-epyc-2026-11-28-abf26f3.json",
             path=("params", "raw", case, key), fmt=fmt,
             pages=("docs/user_guide/gbdt_ranker.rst",))
      for text, case, key, fmt in (
          ("0.290 s", "categorical, compiled", "fit_s", "{:.3f} s"),
          ("0.348 s", "categorical, driver", "fit_s", "{:.3f} s"),
          ("0.288 s", "categorical, compiled", "lightgbm_fit_s", "{:.3f} s"),
          ("0.087 s", "categorical, driver", "rest_s", "{:.3f} s"),
          ("0.034 s", "categorical, compiled", "rest_s", "{:.3f} s"),
          ("11 us", "categorical, compiled", "rest_us_a_split", "{:.0f} us"),
          ("0.239 s", "ordinal, compiled", "fit_s", "{:.3f} s"),
          ("0.259 s", "ordinal, compiled", "lightgbm_fit_s", "{:.3f} s"))),
    *(_categorical_time(text, levels, engine,
                        "categorical-h100-2026-11-27-79043f0-q6000-t16-wide-parts.json")
      for text, levels, engine in (("1.08x", 10, "categorical"), ("1.13x", 1000, "categorical"),
                                   ("1.07x", 10000, "categorical"))),
    *(_categorical_time(text, levels, engine, CATEGORICAL_2CORES_NOW)
      for text, levels, engine in (
          ("1.13x", 10, "categorical"), ("1.26x", 1000, "categorical"),
          ("1.16x", 10000, "categorical"), ("1.03x", 10, "ordinal"),
          ("1.03x", 1000, "ordinal"), ("0.97x", 10000, "ordinal"))),
    *(_categorical_time(text, levels, engine, CATEGORICAL_DEVICE) for text, levels, engine in (
        ("1.29x", 10, "categorical (cuda)"), ("1.55x", 1000, "categorical (cuda)"),
        ("1.81x", 10000, "categorical (cuda)"))),
    *(_categorical_time(text, levels, engine, CATEGORICAL_NOW) for text, levels, engine in (
        ("1.12x", 10, "categorical"), ("1.21x", 1000, "categorical"),
        ("1.15x", 10000, "categorical"), ("1.04x", 10, "ordinal"), ("0.91x", 1000, "ordinal"),
        ("0.76x", 10000, "ordinal"))),
    *(_categorical_time(text, levels, engine) for text, levels, engine in (
        ("1.27x", 10, "categorical"), ("1.22x", 1000, "categorical"),
        ("1.24x", 10000, "categorical"), ("1.27x", 10, "ordinal"), ("0.98x", 1000, "ordinal"),
        ("0.86x", 10000, "ordinal"), ("1.54x", 10, "categorical (cuda)"),
        ("1.49x", 1000, "categorical (cuda)"), ("1.93x", 10000, "categorical (cuda)"),
        ("1.00x", 10, "ordinal (cuda)"), ("0.82x", 1000, "ordinal (cuda)"),
        ("0.72x", 10000, "ordinal (cuda)"))),
    *(Figure(text, "categorical-h100-2026-11-27-2937cce-q6000-t16-cuda.json",
             f"{levels} categories", metric="skltr categorical fit", field="ratio",
             fmt="{:.2f}x", pages=GBDT_RANKER)
      for text, levels in (("1.71x", 10), ("1.51x", 1000), ("1.45x", 10000))),
    *(Figure(text, f"categorical-amd-epyc-2026-11-27-fa6a6d5-{tag}.json", f"{levels} categories",
             metric=f"skltr {engine} fit", field="ratio", fmt="{:.2f}x", pages=GBDT_RANKER)
      for text, tag, levels, engine in (
          ("0.94x", "q6000-t2", 1000, "categorical"), ("0.97x", "q6000-t2", 10000, "categorical"),
          ("0.83x", "q6000-t2", 1000, "ordinal"), ("0.82x", "q6000-t2", 10000, "ordinal"),
          ("1.47x", "q600-t2", 10, "categorical"), ("1.59x", "q600-t2", 1000, "categorical"),
          ("1.58x", "q600-t2", 10000, "categorical"))),
    *(Figure(text, "categorical-amd-epyc-2026-11-27-1e8874a-q600-t2.json", f"{levels} categories",
             metric=f"skltr {engine} fit", field="ratio", fmt="{:.2f}x", pages=GBDT_RANKER)
      for text, levels, engine in (
          ("1.11x", 10, "categorical"), ("1.33x", 1000, "categorical"),
          ("1.31x", 10000, "categorical"), ("1.04x", 10, "ordinal"), ("1.08x", 1000, "ordinal"),
          ("1.10x", 10000, "ordinal"))),
    Figure("12.6x", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "lightgbm 1000 trees 64 leaves (64.0 leaves/tree, 400 training queries)",
           field="speedup", fmt="{:.1f}x", pages=("README.md", "docs/performance.rst")),
    Figure("4.1x", "scaling_predict_cpu-h100-host-16core-a8eed2e-xgboost-model-2026-11-27.json",
           "xgboost 1000 trees, 2 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=("README.md", "docs/performance.rst")),
    Figure("6.6x", "scaling_predict_cpu-h100-host-16core-a8eed2e-xgboost-model-2026-11-27.json",
           "xgboost 1000 trees, 8 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=("README.md", "docs/performance.rst")),
    Figure("118x", "metrics_cpu-amd-epyc-2026-11-22.json", "ndcg@10, 199819 rows", field="speedup",
           fmt="{:.0f}x", pages=("README.md", "docs/performance.rst")),
    Figure("28x", "rankboost_ranklib-intel-r-xeon-r-processor-2026-11-24.json",
           "fit time, 300 rounds, n_thresholds=255 vs RankLib tc=10", field="speedup",
           fmt="{:.0f}x",
           pages=("README.md", "docs/performance.rst", "docs/user_guide/rankboost.rst")),
    Figure("53.0 s", DEMO_9794, "skltr demo, empty caches vs warm", fmt="{:.1f} s",
           pages=("docs/performance.rst",)),
    Figure("15.3 s", DEMO_9794, "skltr demo, empty caches vs warm", field="peer",
           fmt="{:.1f} s", pages=("docs/performance.rst",)),
    # the compiled leaf-wise grower's first run (abf26f3)
    Figure("68.5 s", COLD_ABF, "skltr demo, empty caches vs warm", fmt="{:.1f} s",
           pages=PERF),
    Figure("14.4 s", COLD_ABF, "skltr demo, empty caches vs warm", field="peer",
           fmt="{:.1f} s", pages=PERF),
    # ... and as the pre-compiler's background stage (57c95d1)
    Figure("67.6 s", COLD_57C, "skltr demo, empty caches vs warm", fmt="{:.1f} s",
           pages=("README.md", "docs/performance.rst")),
    Figure("14.6 s", COLD_57C, "skltr demo, empty caches vs warm", field="peer",
           fmt="{:.1f} s", pages=("README.md", "docs/performance.rst")),
    Figure("17.8 s", COLD_57C, "first fit+predict in a process, 10k rows, cold cache",
           fmt="{:.1f} s", pages=PERF),
    Figure("18.3 s", COLD_57C, "first fit+predict, 10k rows, cold: CPU of the fit's process",
           fmt="{:.1f} s", pages=PERF),
    Figure("18.0 s", COLD_57C, "cold process, 10k rows: CPU of the pre-compiler's worker",
           fmt="{:.1f} s", pages=PERF),
    *[Figure(text, COLD_57C, "skltr demo CPU (with pre-compiler), empty vs warm caches",
             field=field, fmt="{:.1f} s", pages=PERF)
      for text, field in (("94.2 s", "skltr"), ("25.2 s", "peer"))],
    Figure("27.5 s", COLD_ABF, "first fit+predict in a process, 10k rows, cold cache",
           fmt="{:.1f} s", pages=PERF),
    Figure("26.7 s", COLD_ABF, "cold process, 10k rows: CPU of the pre-compiler's worker",
           fmt="{:.1f} s", pages=PERF),
    Figure("18.9 s", COLD_ABF, "first fit+predict, 10k rows, cold: CPU of the fit's process",
           fmt="{:.1f} s", pages=PERF),
    Figure("53.8 s", "cold_start-amd-epyc-2026-11-28-20b8d9d-compiled-grower.json",
           "first fit+predict in a process, 10k rows, cold cache", fmt="{:.1f} s", pages=PERF),
    *[Figure(text, f"cold_start-amd-epyc-2026-11-28-{commit}-profile-10k.json",
             "numba compilation CPU in the cold 10k fit+predict", fmt="{:.1f} s", pages=PERF)
      for text, commit in (("25.7 s", "f992e32"), ("35.1 s", "0ab3060"))],
    Figure("57.9 s", "cold_start-amd-epyc-2026-11-28-607929e-profile-demo.json",
           "numba compilation CPU in the cold demo", fmt="{:.1f} s", pages=PERF),
    Figure("4.5 s", "cold_start-amd-epyc-2026-11-28-607929e-profile-demo.json",
           path=("params", "raw", "compile_profile", "kernels", 3, "cpu_s"), fmt="{:.1f} s",
           pages=PERF),
    Figure("52.2 s", DEMO_9794, "numba compilation CPU in the cold demo", fmt="{:.1f} s",
           pages=PERF),
    # shipped kernels (772abe5; dad8149 without the sources' digest, and ignored)
    *[Figure(text, result, case, field, fmt, pages)
      for text, result, case, field, fmt, pages in (
          ("0.97 s", SHIPPED, "first fit+predict in a process, 10k rows, cold cache", "skltr",
           "{:.2f} s", PERF + ("README.md",)),
          ("15.0 s", SHIPPED, "skltr demo, empty caches vs warm", "skltr", "{:.1f} s",
           PERF + ("README.md",)),
          ("15.2 s", SHIPPED, "skltr demo, empty caches vs warm", "peer", "{:.1f} s", PERF),
          ("1.00 s", SHIPPED_772, "first fit+predict in a process, 10k rows, cold cache",
           "skltr", "{:.2f} s", PERF),
          ("17.0 s", SHIPPED_772, "skltr demo, empty caches vs warm", "skltr", "{:.1f} s",
           PERF),
          ("16.7 s", SHIPPED_772, "skltr demo, empty caches vs warm", "peer", "{:.1f} s", PERF),
          ("0.97 s", SHIPPED_DAD, "first fit+predict in a process, 10k rows, cold cache",
           "skltr", "{:.2f} s", PERF),
          ("16.2 s", SHIPPED_DAD, "skltr demo, empty caches vs warm", "skltr", "{:.1f} s",
           PERF),
          ("17.5 s", SHIPPED_OFF, "first fit+predict in a process, 10k rows, cold cache",
           "skltr", "{:.1f} s", PERF + ("README.md",)),
          ("64.6 s", SHIPPED_OFF, "skltr demo, empty caches vs warm", "skltr", "{:.1f} s",
           PERF + ("README.md",)),
          ("16.1 s", SHIPPED_OFF, "skltr demo, empty caches vs warm", "peer", "{:.1f} s",
           PERF))],
    *[Figure(text, result, path=("params", "raw", "fit_10k", 0, "cold", "process_wall_s"),
             fmt="{:.2f} s" if result == SHIPPED else "{:.1f} s", pages=PERF)
      for text, result in (("2.83 s", SHIPPED), ("20.3 s", SHIPPED_OFF))],
    Figure("59.3 s", "cold_start-amd-epyc-2026-11-27-ec33dd2-demo.json",
           "skltr demo, empty caches vs warm (pre-compiler default)", fmt="{:.1f} s",
           pages=("docs/performance.rst",)),
    Figure("70.9 s", "cold_start-amd-epyc-2026-11-27-ec33dd2-demo.json",
           "skltr demo, empty caches vs warm (pre-compiler off)", fmt="{:.1f} s",
           pages=("README.md", "docs/performance.rst")),
    Figure("16.1 s", "cold_start-amd-epyc-2026-11-27-ec33dd2-demo.json",
           "skltr demo, empty caches vs warm (pre-compiler default)", field="peer",
           fmt="{:.1f} s", pages=("docs/performance.rst",)),
    Figure("15.5 s", "cold_start-amd-epyc-2026-11-27-ec33dd2-demo.json",
           "skltr demo, empty caches vs warm (pre-compiler off)", field="peer",
           fmt="{:.1f} s", pages=("docs/performance.rst",)),
    Figure("330.8 s", "test_suite-amd-epyc-2026-11-27-a76c43c.json",
           "full test suite, 2-core AMD EPYC", fmt="{:.1f} s", pages=("README.md",)),
    Figure("13.1 ms", "train_gpu-h100-setup-2026-11-22.json",
           "995078 rows, 255 bins, min_samples_leaf=1", unit="s", metric="per round",
           fmt="{:.1f} ms", scale=1000, pages=("docs/gbdt_gpu.rst",)),
    Figure("12.8 ms", "train_gpu-h100-setup-2026-11-22.json", "995078 rows, 255 bins",
           field="peer", unit="s", metric="per round", fmt="{:.1f} ms", scale=1000,
           pages=("docs/gbdt_gpu.rst",)),
    Figure("12.9 s", "cold_start-amd-epyc-2026-11-27-48660da-precompile-10k.json",
           "first fit+predict in a process, 10k rows, cold cache (pre-compiler default)",
           fmt="{:.1f} s", pages=PERF),
    Figure("20.1 s", "cold_start-amd-epyc-2026-11-27-48660da-precompile-10k.json",
           "first fit+predict in a process, 10k rows, cold cache (pre-compiler off)",
           fmt="{:.1f} s", pages=PERF),
    Figure("14.1 s", "cold_start-amd-epyc-2026-11-27-48660da-precompile-10k.json",
           path=("params", "raw", "fit_10k", 3, "cold", "fit_predict_1_s"), fmt="{:.1f} s",
           pages=PERF),
    Figure("0.84 s", "cold_start-amd-epyc-2026-11-27-48660da-precompile-10k.json",
           "first fit+predict in a process, 10k rows, warm cache (pre-compiler default)",
           fmt="{:.2f} s", pages=PERF),
    Figure("15.9 s", "cold_start-amd-epyc-2026-11-27-ec33dd2-10k.json",
           "first fit+predict in a process, 10k rows, cold cache (pre-compiler default)",
           fmt="{:.1f} s", pages=PERF),
    Figure("26.8 s", "cold_start-amd-epyc-2026-11-27-ec33dd2-10k.json",
           "first fit+predict in a process, 10k rows, cold cache (pre-compiler off)",
           fmt="{:.1f} s", pages=PERF),
    Figure("1.02 s", "cold_start-amd-epyc-2026-11-27-ec33dd2-10k.json",
           "first fit+predict in a process, 10k rows, warm cache (pre-compiler default)",
           fmt="{:.2f} s", pages=PERF),
    Figure("3.56x", "predict_gpu-h100-1f0c39c-2026-11-24.json",
           "xgboost 1000 trees depth 6, 1M rows (throughput)", field="speedup", fmt="{:.2f}x",
           pages=PERF),
    Figure("3.30x", "predict_gpu-h100-1f0c39c-2026-11-24.json",
           "xgboost 5000 trees depth 6, 1M rows (throughput)", field="speedup", fmt="{:.2f}x",
           pages=PERF),
    Figure("2.70x", "predict_gpu-h100-1f0c39c-2026-11-24.json",
           "xgboost 20000 trees depth 6, 1M rows (throughput)", field="speedup", fmt="{:.2f}x",
           pages=PERF),
    Figure("28x", "predict_gpu-h100-1f0c39c-2026-11-24.json",
           "xgboost 1000 trees depth 6, 100 rows (latency)", field="speedup", fmt="{:.0f}x",
           pages=PERF),
    Figure("39x", "predict_gpu-h100-1f0c39c-2026-11-24.json",
           "xgboost 20000 trees depth 6, 100 rows (latency)", field="speedup", fmt="{:.0f}x",
           pages=PERF),
    Figure("1.27 s", "train_gpu-h200-lossguide-batch16-0d1270d-2026-11-26.json",
           "995078 rows, 255 bins, leaf-wise 255 leaves", fmt="{:.2f} s", pages=PERF),
    Figure("1.93 s", "train_gpu-h200-lossguide-batch16-0d1270d-2026-11-26.json",
           "995078 rows, 255 bins, leaf-wise 255 leaves", field="peer", fmt="{:.2f} s", pages=PERF),
    Figure("0.14 s", "rankboost_ranklib-intel-r-xeon-r-processor-2026-11-24.json",
           "fit time, 300 rounds, n_thresholds=255 vs RankLib tc=10", fmt="{:.2f} s",
           pages=("docs/performance.rst", "docs/user_guide/rankboost.rst")),
    Figure("3.93 s", "rankboost_ranklib-intel-r-xeon-r-processor-2026-11-24.json",
           "fit time, 300 rounds, n_thresholds=255 vs RankLib tc=10", field="peer", fmt="{:.2f} s",
           pages=("docs/performance.rst", "docs/user_guide/rankboost.rst")),
    Figure("273 ms", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           "time per round vs the paper's CPU (12.3 s)", fmt="{:.0f} ms", scale=1000,
           pages=("docs/performance.rst", "docs/user_guide/rankboost.rst")),
    Figure("1.08 ms", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           "time per round vs the paper's CPU (12.3 s)", fmt="{:.2f} ms", scale=1000,
           pages=("docs/performance.rst", "docs/user_guide/rankboost.rst")),
    Figure("497x", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           "time per round vs the paper's GPU (536 ms, 9800 GTX+)", field="speedup", fmt="{:.0f}x",
           pages=("docs/performance.rst", "docs/user_guide/rankboost.rst")),
    Figure("1.25 s", "ondemand_rules_cpu-amd-epyc-2026-11-26-speed-free.json",
           "s a query, size 3, 136 items a document", fmt="{:.2f} s", pages=PERF),
    Figure("2.6 s", "ondemand_rules_cpu-amd-epyc-2026-11-26-speed-free.json",
           "s a query, size 3, 136 items a document", field="peer", fmt="{:.1f} s", pages=PERF),
    Figure("1.30 s", "ondemand_rules_cpu-amd-epyc-2026-11-26-speed-free.json",
           "s a query, size 3, 136 items a document, awkward data", fmt="{:.2f} s", pages=PERF),
    Figure("39 s", "ondemand_rules_cpu-amd-epyc-2026-11-26-speed-free.json",
           "s a query, size 4, 136 items a document", fmt="{:.0f} s", pages=PERF),
    Figure("1.95 s", "ondemand_rules_cpu-amd-epyc-2026-11-26-speed-free.json",
           "s a query, size 4, 136 items a document", field="peer", fmt="{:.2f} s", pages=PERF),
    Figure("3.42 ms", RULES_GPU, "s a query, size 3, 136 items a document", fmt="{:.2f} ms",
           scale=1000, pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("7.58 ms", RULES_GPU, "s a query, size 3, 136 items a document", field="peer",
           peer_name=RULES_ITEMSETS, fmt="{:.2f} ms", scale=1000,
           pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("2.2x", RULES_GPU, "s a query, size 3, 136 items a document", field="speedup",
           peer_name=RULES_ITEMSETS, fmt="{:.1f}x", pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("3.66 ms", RULES_GPU, "s a query, size 3, 136 items a document, awkward data",
           fmt="{:.2f} ms", scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("8.73 ms", RULES_GPU, "s a query, size 3, 136 items a document, awkward data",
           field="peer", peer_name=RULES_ITEMSETS, fmt="{:.2f} ms", scale=1000,
           pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("20 ms", RULES_GPU, "s a query, size 3, 136 items a document", field="peer",
           peer_name="PROFL, GTX Titan Black (quoted)", fmt="{:.0f} ms", scale=1000,
           pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("5.8x", RULES_GPU, "s a query, size 3, 136 items a document", field="speedup",
           unit="s", metric="s", peer_name="PROFL, GTX Titan Black (quoted)", fmt="{:.1f}x",
           pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("178 ms", RULES_GPU, "s a query, size 4, 136 items a document", fmt="{:.0f} ms",
           scale=1000, pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("11.0x", RULES_GPU, "s a query, size 4, 136 items a document", field="speedup",
           fmt="{:.1f}x", pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("1.95 s", RULES_GPU, "s a query, size 4, 136 items a document", field="peer",
           fmt="{:.2f} s", pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("1.23 ms", RULES_GPU_H200, "s a query, size 3, 136 items a document",
           fmt="{:.2f} ms", scale=1000,
           pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst", "README.md")),
    Figure("7.01 ms", RULES_GPU_H200, "s a query, size 3, 136 items a document", field="peer",
           peer_name=RULES_ITEMSETS, fmt="{:.2f} ms", scale=1000,
           pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("5.7x", RULES_GPU_H200, "s a query, size 3, 136 items a document", field="speedup",
           peer_name=RULES_ITEMSETS, fmt="{:.1f}x", pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("16.3x", RULES_GPU_H200, "s a query, size 3, 136 items a document", field="speedup",
           unit="s", metric="s", peer_name="PROFL, GTX Titan Black (quoted)", fmt="{:.1f}x",
           pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst", "README.md")),
    Figure("20 ms", RULES_GPU_H200, "s a query, size 3, 136 items a document", field="peer",
           peer_name="PROFL, GTX Titan Black (quoted)", fmt="{:.0f} ms", scale=1000,
           pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst", "README.md")),
    Figure("2 ms", RULES_GPU_H200, "s a query, size 3, vs issue 16's target", field="peer",
           fmt="{:.0f} ms", scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("1.18 ms", RULES_GPU_H200, "s a query, size 3, 136 items a document, awkward data",
           fmt="{:.2f} ms", scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("7.34 ms", RULES_GPU_H200, "s a query, size 3, 136 items a document, awkward data",
           field="peer", peer_name=RULES_ITEMSETS, fmt="{:.2f} ms", scale=1000,
           pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("175 ms", RULES_GPU_H200, "s a query, size 4, 136 items a document", fmt="{:.0f} ms",
           scale=1000, pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("11.1x", RULES_GPU_H200, "s a query, size 4, 136 items a document", field="speedup",
           fmt="{:.1f}x", pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("1.95 s", RULES_GPU_H200, "s a query, size 4, 136 items a document", field="peer",
           fmt="{:.2f} s", pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("9.97 ms", "ondemand_rules_cuda-h200-2026-11-28-7ba109c-q5-second-process.json",
           "s a query, size 3, 136 items a document", fmt="{:.2f} ms", scale=1000,
           pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("3.76 ms", RULES_GPU_2, "s a query, size 3, 136 items a document", fmt="{:.2f} ms",
           scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("7.94 ms", RULES_GPU_2, "s a query, size 3, 136 items a document", field="peer",
           peer_name=RULES_ITEMSETS, fmt="{:.2f} ms", scale=1000,
           pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("2.3x", STUMPS, "RankBoostRanker, 300 stumps, 200 rows, 2 threads", field="speedup",
           fmt="{:.1f}x", pages=FAST_SCORING),
    Figure("5.1x", STUMPS, "XGBoost, 300 depth-1 trees, 20,000 rows, 1 thread",
           field="speedup", fmt="{:.1f}x", pages=FAST_SCORING),
    Figure("7.2 ms", "ondemand_rules_cuda-h100-2026-11-24.json",
           "s a query, size 3, 136 items a document", fmt="{:.1f} ms", scale=1000,
           pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("184 ms", "ondemand_rules_cuda-h100-2026-11-24.json",
           "s a query, size 4, 136 items a document", fmt="{:.0f} ms", scale=1000,
           pages=("docs/performance.rst", "docs/user_guide/rule_ranker.rst")),
    Figure("96 ms", "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json",
           "s a query, size 4, 136 items a document, cuda:all (2 GPUs)", fmt="{:.0f} ms",
           scale=1000, pages=PERF),
    Figure("29.0 s", "train_dask-h100-host-4x4-4d46c8c-2026-11-26.json",
           "1000k x 136, 200 trees, 4x4 CPU", fmt="{:.1f} s", pages=PERF),
    Figure("20.7 s", "train_dask-h100-host-4x4-4d46c8c-2026-11-26.json",
           "1000k x 136, 200 trees, 4x4 CPU", field="peer", fmt="{:.1f} s", pages=PERF),
    *[Figure(text, DASK_CPU_4, "4x4 CPU", field, fmt, PERF, metric="fit_s", peer_name=peer)
      for text, field, peer, fmt in (
          ("18.6 s", "skltr", "skltr local, 16 threads", "{:.1f} s"),
          ("15.8 s", "peer", "skltr local, 16 threads", "{:.1f} s"),
          ("1.18x", "ratio", "skltr local, 16 threads", "{:.2f}x"),
          ("27.5 s", "peer", "lightgbm.dask", "{:.1f} s"),
          ("0.68x", "ratio", "lightgbm.dask", "{:.2f}x"))],
    *[Figure(text, result, "4x4 CPU", "ratio", "{:.2f}x", PERF, metric="fit_s",
             peer_name="skltr local, 16 threads")
      for text, result in (("1.42x", DASK_CPU_8E1), ("1.53x", DASK_CPU_8C6))],
    *[Figure(text, result, "1 GPU worker", "ratio", "{:.2f}x", pages)
      for text, result, pages in (
          ("2.59x", "train_dask_gpu-h200-x1-1m-f5abb34-2026-11-28.json", PERF),
          ("1.05x", "train_dask_gpu-h200-x1-1m-8c68a10-2026-11-28.json", PERF + DASK),
          ("1.04x", DASK_GPU_4M, PERF + DASK))],
    *[Figure(text, DASK_GPU_4M, "1 GPU worker", field, "{:.2f} s", PERF + DASK)
      for text, field in (("5.08 s", "skltr"), ("4.89 s", "peer"))],
    Figure("0.99 s", DASK_GPU_4M, path=("params", "skltr_1gpu_workers", "timings", "prepare_s"),
           fmt="{:.2f} s", pages=DASK),
    *[Figure(text, "train_dask_gpu-h200-x1-1m-8c68a10-2026-11-28.json" if k else
             "train_dask_gpu-h200-x1-1m-f5abb34-2026-11-28.json",
             path=("params", "skltr_local_gpu_timings", "binning_s"), fmt="{:.2f} s",
             pages=PERF)
      for k, text in enumerate(("0.17 s", "0.88 s"))],
    Figure("46.0 s", "train_dask-nvidia-h100-80gb-hbm3-2026-11-25.json",
           "1000k x 136, 200 trees, 4x4 CPU", fmt="{:.1f} s", pages=PERF),
    Figure("28.9 s", "train_dask-nvidia-h100-80gb-hbm3-2026-11-25.json",
           "1000k x 136, 200 trees, 4x4 CPU", field="peer", fmt="{:.1f} s", pages=PERF),
    Figure("6.08 s", "train_dask_gpu-nvidia-h100-x2-4m-2026-11-25.json",
           "4000k x 136, 200 depth-6 trees, 2 GPU worker(s)", fmt="{:.2f} s", pages=PERF),
    Figure("4.46 s", "train_dask_gpu-nvidia-h100-x2-4m-2026-11-25.json",
           "4000k x 136, 200 depth-6 trees, 1 GPU worker(s)", field="peer", fmt="{:.2f} s",
           pages=PERF),
    Figure("12.48 s", "train_dask_gpu-nvidia-h100-x2-4m-2026-11-25.json",
           "4000k x 136, 200 depth-6 trees, 2 GPU worker(s)", field="peer", unit="s",
           metric="fit_s", peer_name="xgboost.dask, same GPUs", fmt="{:.2f} s", pages=PERF),
    Figure("3.86 s", "train_dask_gpu-nvidia-h100-x2-1m-2026-11-25.json",
           "1000k x 136, 200 depth-6 trees, 2 GPU worker(s)", fmt="{:.2f} s", pages=PERF),
    Figure("2.63 s", "train_dask_gpu-nvidia-h100-x2-1m-2026-11-25.json",
           "1000k x 136, 200 depth-6 trees, 1 GPU worker(s)", field="peer", fmt="{:.2f} s",
           pages=PERF),
    Figure("5.22 s", "train_dask_gpu-nvidia-h100-x2-1m-2026-11-25.json",
           "1000k x 136, 200 depth-6 trees, 2 GPU worker(s)", field="peer", unit="s",
           metric="fit_s", peer_name="xgboost.dask, same GPUs", fmt="{:.2f} s", pages=PERF),
    Figure("1.29x", "train_dask_gpu-nvidia-h100-x2-1m-2026-11-25.json",
           "1000k x 136, 200 depth-6 trees, 1 GPU worker(s)", field="ratio", fmt="{:.2f}x",
           pages=PERF),
    Figure("0.91x", "train_dask_gpu-nvidia-h100-x1-1m-2026-11-25.json",
           "1000k x 136, 200 depth-6 trees, 1 GPU worker(s)", field="ratio", fmt="{:.2f}x",
           pages=PERF),
    Figure("1.56x", "train_dask_gpu-nvidia-h100-x2-4m-2026-11-25.json",
           "4000k x 136, 200 depth-6 trees, 1 GPU worker(s)", field="ratio", fmt="{:.2f}x",
           pages=PERF),
    Figure("4.3x", "explain-cpu-h100-host-16threads-f6c439c-2026-11-26.json",
           "xgboost 1000x depth 6, 17947 rows", field="speedup", metric="contribs_s",
           fmt="{:.1f}x", pages=PERF),
    Figure("1.28 s", "explain-cpu-h100-host-16threads-f6c439c-2026-11-26.json",
           "xgboost 1000x depth 6, 17947 rows", unit="s", metric="contribs_s", fmt="{:.2f} s",
           pages=PERF),
    Figure("5.49 s", "explain-cpu-h100-host-16threads-f6c439c-2026-11-26.json",
           "xgboost 1000x depth 6, 17947 rows", field="peer", unit="s", metric="contribs_s",
           fmt="{:.2f} s", pages=PERF),
    Figure("2.1x", "explain-cpu-h100-host-16threads-2026-11-26.json",
           "xgboost 1000x depth 6, 17947 rows", field="ratio", fmt="{:.1f}x", pages=PERF),
    Figure("1.8x", "explain-cpu-h100-host-16threads-f6c439c-2026-11-26.json",
           "lightgbm 100x255 leaves (depth 29), 2000 rows", field="speedup", fmt="{:.1f}x",
           pages=PERF),
    Figure("2.13 s", "explain-cpu-h100-host-16threads-f6c439c-2026-11-26.json",
           "lightgbm 100x255 leaves (depth 29), 2000 rows", fmt="{:.2f} s", pages=PERF),
    Figure("3.76 s", "explain-cpu-h100-host-16threads-f6c439c-2026-11-26.json",
           "lightgbm 100x255 leaves (depth 29), 2000 rows", field="peer", fmt="{:.2f} s",
           pages=PERF),
    Figure("4.9x", "explain-cuda-nvidia-h100-80gb-hbm3-2026-11-26.json",
           "xgboost 1000x depth 6, 97278 rows", field="speedup", fmt="{:.1f}x", pages=PERF),
    Figure("0.25 s", "explain-cuda-nvidia-h100-80gb-hbm3-2026-11-26.json",
           "xgboost 1000x depth 6, 97278 rows", fmt="{:.2f} s", pages=PERF),
    Figure("1.24 s", "explain-cuda-nvidia-h100-80gb-hbm3-2026-11-26.json",
           "xgboost 1000x depth 6, 97278 rows", field="peer", fmt="{:.2f} s", pages=PERF),
    Figure("6.1x", "explain-cuda-nvidia-h100-80gb-hbm3-2026-11-26.json",
           "xgboost 1000x depth 6, 200 rows", field="speedup", fmt="{:.1f}x", pages=PERF),
    Figure("5.0 us/doc", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "lightgbm 1000 trees 64 leaves (64.0 leaves/tree, 400 training queries)",
           fmt="{:.1f} us/doc", pages=PERF),
    Figure("8.3x", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "lightgbm 1000 trees 64 leaves (64.0 leaves/tree, 400 training queries)",
           field="speedup", unit="us/doc", metric="quickscorer",
           peer_name="tl2cgen compiled (gcc)", fmt="{:.1f}x", pages=PERF),
    Figure("3.7 us/doc", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "xgboost 1000 trees depth 6 (44.6 leaves/tree, 400 training queries)",
           fmt="{:.1f} us/doc", pages=PERF),
    Figure("4.7x", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "xgboost 1000 trees depth 6 (44.6 leaves/tree, 400 training queries)", field="speedup",
           fmt="{:.1f}x", pages=PERF),
    Figure("8.6x", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "xgboost 1000 trees depth 6 (44.6 leaves/tree, 400 training queries)", field="speedup",
           unit="us/doc", metric="quickscorer", peer_name="tl2cgen compiled (gcc)", fmt="{:.1f}x",
           pages=PERF),
    Figure("14.7 us/doc", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-5000trees.json",
           "lightgbm 5000 trees 64 leaves (25.6 leaves/tree, 100 training queries)",
           fmt="{:.1f} us/doc", pages=PERF),
    Figure("244 us/doc", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-5000trees.json",
           "lightgbm 5000 trees 64 leaves (25.6 leaves/tree, 100 training queries)", field="peer",
           fmt="{:.0f} us/doc", pages=PERF),
    Figure("16.6x", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-5000trees.json",
           "lightgbm 5000 trees 64 leaves (25.6 leaves/tree, 100 training queries)",
           field="speedup", fmt="{:.1f}x", pages=PERF),
    Figure("4.7x", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-5000trees.json",
           "xgboost 5000 trees depth 6 (19.7 leaves/tree, 100 training queries)", field="speedup",
           fmt="{:.1f}x", pages=PERF),
    Figure("129.2 s", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 255 bins", fmt="{:.1f} s", pages=PERF),
    Figure("158.8 s", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 255 bins", field="peer", fmt="{:.1f} s", pages=PERF),
    Figure("0.81x", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 255 bins", field="ratio", fmt="{:.2f}x", pages=PERF),
    Figure("274.6 s", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 255 bins", field="peer", unit="s", metric="fit", peer_name="xgboost",
           fmt="{:.1f} s", pages=PERF),
    Figure("0.47x", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 255 bins", field="ratio", unit="s", metric="fit", peer_name="xgboost",
           fmt="{:.2f}x", pages=PERF),
    Figure("329 s", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 63 bins", field="peer", unit="s", metric="fit", peer_name="xgboost",
           fmt="{:.0f} s", pages=PERF),
    Figure("508 s", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           path=("params", "raw", "xgboost/63", "all_fit_s", 0), fmt="{:.0f} s", pages=PERF),
    Figure("98.5 s", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-710fdbc.json",
           "496664 rows, 63 bins", field="peer", unit="s", metric="fit", peer_name="xgboost",
           fmt="{:.1f} s", pages=PERF),
    Figure("0.70x", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-710fdbc.json",
           "496664 rows, 255 bins", field="ratio", fmt="{:.2f}x", pages=PERF),
    Figure("1.09x", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-1b0130d.json",
           "496664 rows, 255 bins", field="ratio", fmt="{:.2f}x", pages=PERF),
    Figure("1.47x", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-09bee2c.json",
           "496664 rows, 255 bins", field="ratio", fmt="{:.2f}x", pages=PERF),
    Figure("111.4 s", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 63 bins", fmt="{:.1f} s", pages=PERF),
    Figure("149.2 s", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 63 bins", field="peer", fmt="{:.1f} s", pages=PERF),
    Figure("0.75x", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 63 bins", field="ratio", fmt="{:.2f}x", pages=PERF),
    Figure("1.03x", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-710fdbc.json",
           "496664 rows, 63 bins", field="ratio", metric="fit", peer_name="lightgbm",
           fmt="{:.2f}x", pages=PERF),
    Figure("0.92x", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-1b0130d.json",
           "496664 rows, 63 bins", field="ratio", metric="fit", peer_name="lightgbm",
           fmt="{:.2f}x", pages=PERF),
    Figure("327 MB", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 255 bins", unit="MB", fmt="{:.0f} MB", pages=PERF),
    Figure("445 MB", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 255 bins", field="peer", unit="MB", fmt="{:.0f} MB", pages=PERF),
    Figure("0.73x", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 255 bins", field="ratio", unit="MB", fmt="{:.2f}x", pages=PERF),
    Figure("450 MB", "train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "496664 rows, 255 bins", field="peer", unit="MB", metric="peak memory",
           peer_name="xgboost", fmt="{:.0f} MB", pages=PERF),
    Figure("1.58 s", "scaling_train_cpu-h100-host-16core-c6a19a1-2026-11-26.json",
           "244761 rows, 16 threads", fmt="{:.2f} s", pages=PERF),
    Figure("2.15 s", "scaling_train_cpu-h100-host-16core-c6a19a1-2026-11-26.json",
           "244761 rows, 16 threads", field="peer", fmt="{:.2f} s", pages=PERF),
    Figure("4.6x", "scaling_predict_cpu-h100-host-16core-a8eed2e-xgboost-model-2026-11-27.json",
           "xgboost 1000 trees, 1 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("6.2x", "scaling_predict_cpu-h100-host-16core-a8eed2e-xgboost-model-2026-11-27.json",
           "xgboost 1000 trees, 4 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("5.7x", "scaling_predict_cpu-h100-host-16core-a8eed2e-xgboost-model-2026-11-27.json",
           "xgboost 1000 trees, 16 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("2.5x", "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
           "xgboost 1000 trees, 1 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("1.8x", "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
           "xgboost 1000 trees, 2 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("3.7x", "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
           "xgboost 1000 trees, 4 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("3.3x", "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
           "xgboost 1000 trees, 8 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("2.2x", "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
           "xgboost 1000 trees, 16 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("8.4x", "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
           "lightgbm 1000 trees, 1 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("9.5x", "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
           "lightgbm 1000 trees, 2 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    *[Figure("7.6x", "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
             f"lightgbm 1000 trees, {n} threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF)
      for n in (4, 16)],
    Figure("9.1x", "scaling_predict_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
           "lightgbm 1000 trees, 8 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("14.0x", "scaling_predict_cpu-h100-host-16core-f6c439c-lightgbm-only-2026-11-27.json",
           "lightgbm 1000 trees, 1 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("16.2x", "scaling_predict_cpu-h100-host-16core-f6c439c-lightgbm-only-2026-11-27.json",
           "lightgbm 1000 trees, 2 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("15.9x", "scaling_predict_cpu-h100-host-16core-f6c439c-lightgbm-only-2026-11-27.json",
           "lightgbm 1000 trees, 4 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("15.8x", "scaling_predict_cpu-h100-host-16core-f6c439c-lightgbm-only-2026-11-27.json",
           "lightgbm 1000 trees, 8 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("15.4x", "scaling_predict_cpu-h100-host-16core-f6c439c-lightgbm-only-2026-11-27.json",
           "lightgbm 1000 trees, 16 threads", field="speedup", metric="quickscorer",
           fmt="{:.1f}x", pages=PERF),
    Figure("1.22 s", "train_gpu-h100-lossguide-depthwise-4d46c8c-2026-11-26.json",
           "995078 rows, 255 bins, leaf-wise 255 leaves", fmt="{:.2f} s", pages=PERF),
    Figure("1.98 s", "train_gpu-h100-lossguide-depthwise-4d46c8c-2026-11-26.json",
           "995078 rows, 255 bins, leaf-wise 255 leaves", field="peer", fmt="{:.2f} s", pages=PERF),
    Figure("0.61x", "train_gpu-h100-lossguide-depthwise-4d46c8c-2026-11-26.json",
           "995078 rows, 255 bins, leaf-wise 255 leaves", field="ratio", fmt="{:.2f}x", pages=PERF),
    Figure("8.64 s", "train_gpu-h200-lossguide-batch1-0d1270d-2026-11-26.json",
           "995078 rows, 255 bins, leaf-wise 255 leaves", fmt="{:.2f} s", pages=PERF),
    Figure("1.90 s", "train_gpu-h100-countbins-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
           fmt="{:.2f} s", pages=PERF),
    Figure("2.49 s", "train_gpu-h100-countbins-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
           field="peer", fmt="{:.2f} s", pages=PERF),
    Figure("0.76x", "train_gpu-h100-countbins-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
           field="ratio", fmt="{:.2f}x", pages=PERF),
    Figure("2.28 s", "train_gpu-h100-countbins-e6ee752-2026-11-22.json", "995078 rows, 63 bins",
           fmt="{:.2f} s", pages=PERF),
    Figure("2.40 s", "train_gpu-h100-countbins-e6ee752-2026-11-22.json", "995078 rows, 63 bins",
           field="peer", fmt="{:.2f} s", pages=PERF),
    Figure("0.95x", "train_gpu-h100-countbins-e6ee752-2026-11-22.json", "995078 rows, 63 bins",
           field="ratio", fmt="{:.2f}x", pages=PERF),
    Figure("8.9 ms", "train_gpu-h100-countbins-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
           unit="s", metric="per round", fmt="{:.1f} ms", scale=1000, pages=PERF),
    Figure("12.0 ms", "train_gpu-h100-countbins-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
           field="peer", unit="s", metric="per round", fmt="{:.1f} ms", scale=1000, pages=PERF),
    Figure("21.3 s", "train_gpu-h100-countbins-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
           field="peer", unit="s", metric="fit", peer_name="lightgbm-cpu", fmt="{:.1f} s",
           pages=PERF),
    Figure("0.75x", "train_gpu-h100-setup-2026-11-22.json", "995078 rows, 255 bins", field="ratio",
           fmt="{:.2f}x", pages=PERF),
    Figure("1.08x", "train_gpu-h100-setup-2026-11-22.json", "995078 rows, 63 bins", field="ratio",
           fmt="{:.2f}x", pages=PERF),
    Figure("14.4x", "train_gpu-h100-vs-cpu-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
           field="speedup", fmt="{:.1f}x", pages=PERF),
    Figure("2.18 s", "train_gpu-h100-vs-cpu-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
           fmt="{:.2f} s", pages=PERF),
    Figure("31.3 s", "train_gpu-h100-vs-cpu-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
           field="peer", fmt="{:.1f} s", pages=PERF),
    Figure("15.7x", "train_gpu-h100-vs-cpu-8bce16d-2026-11-22.json", "995078 rows, 255 bins",
           field="speedup", fmt="{:.1f}x", pages=PERF),
    Figure("201.6 s", "train_gpu-h100-255bins-2026-11-22.json", "995078 rows, 255 bins",
           field="peer", unit="s", metric="fit", peer_name="skltr-cpu", fmt="{:.1f} s", pages=PERF),
    Figure("68 ms", "train_gpu-h100-vs-cpu-e6ee752-2026-11-22.json",
           path=("params", "raw", "skltr-gpu-scale/255", "per_round_s"), fmt="{:.0f} ms",
           scale=1000, pages=PERF),
    Figure("2.26 GB", "train_gpu-h100-vs-cpu-e6ee752-2026-11-22.json",
           path=("params", "raw", "skltr-gpu-scale/255", "gpu_peak_mb"), fmt="{:.2f} GB",
           scale=0.001, pages=PERF),
    Figure("28%", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           path=("params", "density"), fmt="{:.0f}%", scale=100, pages=PERF),
    Figure("5.70 s", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           "fit cpu CSR vs dense", fmt="{:.2f} s", pages=PERF),
    Figure("5.95 s", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           "fit cpu CSR vs dense", field="peer", fmt="{:.2f} s", pages=PERF),
    Figure("0.96x", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           "fit cpu CSR vs dense", field="ratio", fmt="{:.2f}x", pages=PERF),
    Figure("27 MB", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           "fit cpu CSR vs dense", unit="MB", fmt="{:.0f} MB", pages=PERF),
    Figure("214 MB", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           "fit cpu CSR vs dense", field="peer", unit="MB", fmt="{:.0f} MB", pages=PERF),
    Figure("0.13x", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           "fit cpu CSR vs dense", field="ratio", unit="MB", fmt="{:.2f}x", pages=PERF),
    Figure("4.35 s", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json", "fit cpu CSR",
           field="peer", unit="s", metric="fit_s", peer_name="lightgbm csr", fmt="{:.2f} s",
           pages=PERF),
    Figure("1.31x", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json", "fit cpu CSR",
           field="ratio", unit="s", metric="fit_s", peer_name="lightgbm csr", fmt="{:.2f}x",
           pages=PERF),
    Figure("3.0x", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           "predict lightgbm model, CSR", field="speedup", fmt="{:.1f}x", pages=PERF),
    Figure("1.8x", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           "predict xgboost model, CSR", field="speedup", fmt="{:.1f}x", pages=PERF),
    Figure("2.64 s", "sparse_input_gpu-h100-9d509b0-2026-11-23.json", "fit cuda CSR vs dense",
           fmt="{:.2f} s", pages=PERF),
    Figure("2.02 s", "sparse_input_gpu-h100-9d509b0-2026-11-23.json", "fit cuda CSR vs dense",
           field="peer", fmt="{:.2f} s", pages=PERF),
    Figure("0.011 s", "metrics_cpu-amd-epyc-2026-11-22.json", "ndcg@10, 199819 rows",
           fmt="{:.3f} s", pages=PERF),
    Figure("1.28 s", "metrics_cpu-amd-epyc-2026-11-22.json", "ndcg@10, 199819 rows", field="peer",
           fmt="{:.2f} s", pages=PERF),
    Figure("0.058 s", "metrics_cpu-amd-epyc-2026-11-22.json", path=("params", "full_rows_seconds"),
           fmt="{:.3f} s", pages=PERF),
    Figure("3.9 ms", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           path=("params", "stages_per_round_s", "potentials_s"), fmt="{:.1f} ms", scale=1000,
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("264 ms", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           path=("params", "stages_per_round_s", "histogram_s"), fmt="{:.0f} ms", scale=1000,
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("0.5 ms", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           path=("params", "stages_per_round_s", "best_stump_s"), fmt="{:.1f} ms", scale=1000,
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("3.7 ms", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           path=("params", "stages_per_round_s", "update_s"), fmt="{:.1f} ms", scale=1000,
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("21 s", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           path=("params", "binning_s"), fmt="{:.0f} s", pages=("docs/user_guide/rankboost.rst",)),
    Figure("12.3 s", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           "time per round vs the paper's CPU (12.3 s)", field="peer", fmt="{:.1f} s",
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("45x", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           "time per round vs the paper's CPU (12.3 s)", field="speedup", fmt="{:.0f}x",
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("536 ms", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           "time per round vs the paper's GPU (536 ms, 9800 GTX+)", field="peer", fmt="{:.0f} ms",
           scale=1000, pages=("docs/user_guide/rankboost.rst",)),
    Figure("2.0x", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           "time per round vs the paper's GPU (536 ms, 9800 GTX+)", field="speedup", fmt="{:.1f}x",
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("0.5 s", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           "time per round vs the issue's target", field="peer", fmt="{:.1f} s",
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("1.7 GB/s", "rankboost_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           path=("params", "histogram_gb_per_s"), fmt="{:.1f} GB/s",
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("0.064 ms", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           path=("params", "stages_per_round_s", "potentials_s"), fmt="{:.3f} ms", scale=1000,
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("0.573 ms", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           path=("params", "stages_per_round_s", "histogram_s"), fmt="{:.3f} ms", scale=1000,
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("0.046 ms", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           path=("params", "stages_per_round_s", "best_stump_s"), fmt="{:.3f} ms", scale=1000,
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("0.040 ms", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           path=("params", "stages_per_round_s", "update_s"), fmt="{:.3f} ms", scale=1000,
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("5 ms", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           "time per round vs the issue's target (0.005 s)", field="peer", fmt="{:.0f} ms",
           scale=1000, pages=("docs/user_guide/rankboost.rst",)),
    Figure("536 ms", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           "time per round vs the paper's GPU (536 ms, 9800 GTX+)", field="peer", fmt="{:.0f} ms",
           scale=1000, pages=("docs/user_guide/rankboost.rst",)),
    Figure("779 GB/s", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           path=("params", "histogram_gb_per_s"), fmt="{:.0f} GB/s",
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("27%", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           path=("params", "histogram_fraction_of_copy"), fmt="{:.0f}%", scale=100,
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("2,938 GB/s", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           path=("params", "copy_gb_per_s"), fmt="{:,.0f} GB/s",
           pages=("docs/user_guide/rankboost.rst",)),
    Figure("1.8 s", "rankboost_cuda-nvidia-h100-80gb-hbm3-2026-11-24.json",
           path=("params", "binning_s"), fmt="{:.1f} s", pages=("docs/user_guide/rankboost.rst",)),
    Figure("2.13 s", "ondemand_rules_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           "s a query, size 3, 136 items a document", fmt="{:.2f} s",
           pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("183.3 ms", "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json",
           "s a query, size 4, 136 items a document, cuda:all (2 GPUs)", field="peer",
           fmt="{:.1f} ms", scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("96.1 ms", "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json",
           "s a query, size 4, 136 items a document, cuda:all (2 GPUs)", fmt="{:.1f} ms",
           scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("7.31 ms", "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json",
           "s a query, size 3, 136 items a document, cuda:all (2 GPUs)", field="peer",
           fmt="{:.2f} ms", scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("5.97 ms", "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json",
           "s a query, size 3, 136 items a document, cuda:all (2 GPUs)", fmt="{:.2f} ms",
           scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("7 ms", "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json",
           "s a query, size 3, 136 items a document, cuda:all (2 GPUs)", field="peer",
           fmt="{:.0f} ms", scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    Figure("183 ms", "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json",
           "s a query, size 4, 136 items a document, cuda:all (2 GPUs)", field="peer",
           fmt="{:.0f} ms", scale=1000, pages=("docs/user_guide/rule_ranker.rst",)),
    # by hand: GPU scoring after calibrate, and GPU-QuickScorer against traversal
    *[Figure(text, GPU_PREDICT, path=_XGB_GPU + (f"xgboost {n} trees depth 6",
                                                "calibrated_placements_s", "shared_data"),
             peer_path=_XGB_GPU + (f"xgboost {n} trees depth 6", "xgboost_s"),
             fmt="{:.2f}x", pages=PERF)
      for text, n in (("3.75x", 1000), ("3.66x", 5000), ("3.03x", 20000))],
    Figure("4.9x", GPU_PREDICT,
           path=_XGB_GPU + ("xgboost 1000 trees depth 6", "placements_s", "shared_data"),
           peer_path=_XGB_GPU + ("xgboost 1000 trees depth 6", "placements_s", "quickscorer"),
           fmt="{:.1f}x", pages=PERF),
    Figure("1.1 ms", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "xgboost 1000 trees depth 6", metric="latency 100 docs", fmt="{:.1f} ms", pages=PERF),
    Figure("4.0 ms", "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
           "xgboost 1000 trees depth 6", field="peer", metric="latency 100 docs",
           fmt="{:.1f} ms", pages=PERF),
    Figure("20.7 s", "cold_start-amd-epyc-2026-11-27-48660da-precompile-10k.json",
           path=("params", "raw", "fit_10k", 2, "cold", "fit_predict_1_s"), pages=PERF),
    Figure("9.1", "train_gpu-h100-setup-cold-skltr-2026-11-22.json",
           path=("params", "raw", "skltr-gpu/63", "per_round_s"), fmt="{:.1f}", scale=1000,
           pages=("docs/gbdt_gpu.rst",)),
    Figure("11.6", "train_gpu-h100-setup-xgbfirst-2026-11-22.json",
           path=("params", "raw", "xgboost-gpu/63", "per_round_s"), fmt="{:.1f}", scale=1000,
           pages=("docs/gbdt_gpu.rst",)),
    # figures without a unit (NDCG, ratios, us/doc after a "vs"), checked all the same
    *[Figure(text, f"train_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22{run}.json",
             f"496664 rows, {bins} bins", field, fmt="{:.4f}", pages=PERF,
             metric="test NDCG@10", peer_name=peer)
      for text, run, bins, field, peer in (
          ("0.6592", "", 255, "skltr", "lightgbm"), ("0.6591", "", 255, "peer", "lightgbm"),
          ("0.6647", "", 255, "peer", "xgboost"), ("0.6627", "", 63, "skltr", "lightgbm"),
          ("0.6612", "", 63, "peer", "lightgbm"), ("0.6644", "", 63, "peer", "xgboost"))],
    *[Figure(text, "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json", case,
             "peer", "{:.1f}", PERF, metric="quickscorer", peer_name=peer)
      for text, case, peer in (("63.2", "lightgbm 1000 trees 64", "lightgbm native predict"),
                               ("42.0", "lightgbm 1000 trees 64", "tl2cgen compiled (gcc)"),
                               ("17.5", "xgboost 1000 trees depth 6", "xgboost native predict"),
                               ("31.8", "xgboost 1000 trees depth 6", "tl2cgen compiled (gcc)"))],
    *[Figure(text, "predict_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22-5000trees.json",
             "xgboost 5000 trees depth 6", field, "{:.1f}", PERF, metric="quickscorer")
      for text, field in (("11.1", "skltr"), ("52.7", "peer"))],
    *[Figure(text, "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json", case, field,
             "{:.1f}", PERF)
      for text, case, field in (("6.6", "predict lightgbm model, CSR", "peer"),
                                ("3.2", "predict xgboost model, CSR", "skltr"),
                                ("5.7", "predict xgboost model, CSR", "peer"))],
    *[Figure(text, "rankboost_ranklib-intel-r-xeon-r-processor-2026-11-24.json",
             "test NDCG@10, n_thresholds=255", field, "{:.4f}", PERF)
      for text, field in (("0.7706", "skltr"), ("0.7680", "peer"))],
    *[Figure(text, "ondemand_rules_cpu-intel-r-xeon-r-processor-2026-11-24.json",
             "test NDCG@10, letor_small", field, "{:.4f}", PERF, peer_name=peer)
      for text, field, peer in (("0.7540", "skltr", "LightGBM LGBMRanker (lambdarank)"),
                                ("0.7358", "peer", "LightGBM LGBMRanker (lambdarank)"),
                                ("0.7706", "peer", "skltr RankBoostRanker"))],
    *[Figure(text, "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json",
             path=("params", "speed", size, "efficiency"), fmt="{:.2f}", pages=PERF)
      for text, size in (("0.95", "size4"), ("0.61", "size3"))],
    *[Figure(text, "scaling_train_cpu-h100-host-16core-c6a19a1-2026-11-26.json",
             f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF, metric="fit")
      for text, n in (("0.61", 1), ("0.79", 2), ("0.78", 4), ("0.72", 8), ("0.73", 16))],
    *[Figure(text, "symmetric_gpu-h100-2026-11-27.json", "493808 rows", field, fmt, PERF,
             metric="gpu symmetric fit", peer_name=peer)
      for text, field, fmt, peer in (("4.80 s", "skltr", "{:.2f} s", "cpu symmetric"),
                                     ("8.35 s", "peer", "{:.2f} s", "cpu symmetric"),
                                     ("2.2x", "ratio", "{:.1f}x", "gpu depthwise"))],
    *[Figure(text, "scaling_train_cpu-h100-host-16core-af454c2-2026-11-27.json",
             f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF, metric="fit")
      for text, n in (("0.57", 1), ("1.06", 2), ("0.76", 4), ("0.83", 8), ("0.81", 16))],
    *[Figure(text, "scaling_train_cpu-h100-host-16core-af454c2-2026-11-27.json",
             "244761 rows, 16 threads", field, "{:.2f} s", PERF, metric="fit")
      for text, field in (("1.80 s", "skltr"), ("2.22 s", "peer"))],
    *[Figure(text, COMPILED_00D, f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF,
             metric="fit")
      for text, n in (("0.66", 1), ("0.72", 2), ("0.79", 4), ("0.80", 8), ("0.82", 16))],
    *[Figure(text, COMPILED_43B, f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF,
             metric="fit")
      for text, n in (("0.64", 1), ("0.62", 2), ("0.86", 4), ("0.66", 8), ("0.59", 16))],
    *[Figure(text, COMPILED_174, f"244761 rows, {n} threads", "ratio", "{:.2f}x",
             ("README.md", *PERF), metric="fit") for text, n in (("0.56x", 4), ("0.68x", 1))],
    *[Figure(text, COMPILED_174, f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF,
             metric="fit")
      for text, n in (("0.68", 1), ("0.68", 2), ("0.56", 4), ("0.63", 8), ("0.63", 16))],
    *[Figure(text, COMPILED_174, f"244761 rows, {n} threads", field, "{:.2f} s", PERF,
             metric="fit")
      for text, n, field in (("1.12 s", 16, "skltr"), ("1.79 s", 16, "peer"),
                             ("2.20 s", 4, "skltr"), ("3.93 s", 4, "peer"))],
    *[Figure(text, result, path=("params", "skltr_stages", "4", "tree growth (compiled)",
                                 "s_per_round"), fmt="{:.3f} s", pages=PERF)
      for text, result in (("0.074 s", COMPILED_174), ("0.111 s", COMPILED_43B))],
    Figure("1.18x", COMPILED_43B,
           path=("params", "skltr_stages", "4", "tree growth (compiled)", "s_per_round"),
           peer_path=("params", "skltr_stages", "2", "tree growth (compiled)", "s_per_round"),
           fmt="{:.2f}x", pages=PERF),
    Figure("0.77", COMPILED_BF7, "244761 rows, 4 threads", "ratio", "{:.2f}", PERF,
           metric="fit"),
    *[Figure(text, COMPILED_43B, "244761 rows, 16 threads", field, "{:.2f} s", PERF,
             metric="fit") for text, field in (("1.31 s", "skltr"), ("2.23 s", "peer"))],
    *[Figure(text, result, "244761 rows, 4 threads", field, "{:.2f} s", PERF, metric="fit")
      for text, result, field in (("3.39 s", COMPILED_43B, "skltr"),
                                  ("3.55 s", COMPILED_4DA, "skltr"),
                                  ("3.92 s", COMPILED_43B, "peer"),
                                  ("5.62 s", COMPILED_4DA, "peer"))],
    *[Figure(text, COMPILED_4DA, f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF,
             metric="fit") for text, n in (("0.63", 4), ("0.63", 8), ("0.65", 16))],
    *[Figure(text, COMPILED_20B, f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF,
             metric="fit") for text, n in (("0.65", 1), ("0.73", 2), ("0.70", 4), ("0.68", 8))],
    *[Figure(text, COMPILED_00D, "244761 rows, 16 threads", field, "{:.2f} s", PERF,
             metric="fit") for text, field in (("1.59 s", "skltr"), ("1.93 s", "peer"))],
    Figure("77%", COMPILED_00D, path=("params", "skltr_stages", "16", "tree growth (compiled)",
                                      "share"), fmt="{:.0%}", pages=PERF),
    Figure("3.7x", "scaling_train_cpu-h100-host-16core-9525ccf-2026-11-27.json",
           path=("params", "skltr_stages", "16", "histograms", "s_per_round"),
           peer_path=("params", "skltr_stages", "1", "histograms", "s_per_round"),
           fmt="{:.1f}x", pages=PERF),
    Figure("16.6 s", COMPILED_20B, path=("params", "raw_fit_s", "1", "lightgbm", 0),
           pages=PERF),
    Figure("11.5", COMPILED_00D, "244761 rows, 1 threads", "peer", "{:.1f}", PERF,
           metric="fit"),
    *[Figure(text, "scaling_train_cpu-h100-host-16core-9525ccf-2026-11-27.json",
             f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF, metric="fit")
      for text, n in (("0.60", 1), ("0.86", 2), ("0.82", 4), ("0.80", 8), ("0.84", 16))],
    *[Figure(text, "scaling_train_cpu-h100-host-16core-9525ccf-2026-11-27.json",
             "244761 rows, 16 threads", field, "{:.2f} s", PERF, metric="fit")
      for text, field in (("1.94 s", "skltr"), ("2.30 s", "peer"))],
    *[Figure(text, "scaling_train_cpu-h100-host-16core-2c93f40-2026-11-27.json",
             f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF, metric="fit")
      for text, n in (("0.57", 1), ("0.64", 2), ("0.79", 4), ("0.77", 8), ("0.79", 16))],
    *[Figure(text, "scaling_train_cpu-h100-host-16core-2c93f40-2026-11-27.json",
             "244761 rows, 16 threads", field, "{:.2f} s", PERF, metric="fit")
      for text, field in (("1.92 s", "skltr"), ("2.43 s", "peer"))],
    *[Figure(text, "scaling_train_cpu-h100-host-16core-c6a19a1-2026-11-26.json",
             "244761 rows, 16 threads", field, "{:.4f}", PERF, metric="test NDCG@10")
      for text, field in (("0.4919", "skltr"), ("0.4952", "peer"))],
    *[Figure(text, "scaling_train_cpu-h100-host-16core-4d46c8c-2026-11-26.json",
             f"244761 rows, {n} threads", "ratio", "{:.2f}", PERF, metric="fit",
             peer_name="xgboost")
      for text, n in (("0.59", 1), ("0.82", 2))],
    *[Figure(text, "train_gpu-h100-countbins-e6ee752-2026-11-22.json",
             f"995078 rows, {bins} bins", field, "{:.4f}", PERF, metric="test NDCG@10",
             peer_name=peer)
      for text, bins, field, peer in (
          ("0.6807", 255, "skltr", "xgboost-gpu"), ("0.6800", 255, "peer", "xgboost-gpu"),
          ("0.6784", 63, "skltr", "xgboost-gpu"), ("0.6778", 63, "peer", "xgboost-gpu"),
          ("0.6808", 255, "peer", "lightgbm-cpu"))],
    Figure("0.6788", "quality_gpu-h100-engine-ab-27-2026-11-26.json",
           path=("raw", "new", 0, "ndcg@10"), fmt="{:.4f}", pages=PERF),
    *[Figure(text, "quality_gpu-h100-engine-ab-27-2026-11-26.json",
             path=("summary", "255_bins", key), fmt="{:.4f}", pages=PERF)
      for text, key in (("-0.0007", "mean_diff"), ("0.0004", "se"))],
    *[Figure(text, "quality_gpu-h100-f3212bb-2026-11-22.json",
             path=("params", f"skltr-gpu - {peer}", key), fmt=fmt, pages=PERF)
      for text, peer, key, fmt in (
          ("+0.0002", "xgboost-gpu/255", "mean_diff", "{:+.4f}"),
          ("0.0010", "xgboost-gpu/255", "stderr", "{:.4f}"),
          ("+0.0002", "xgboost-gpu/63", "mean_diff", "{:+.4f}"),
          ("0.0008", "xgboost-gpu/63", "stderr", "{:.4f}"),
          ("+0.0002", "skltr-gpu-quantile/255", "mean_diff", "{:+.4f}"),
          ("0.0006", "skltr-gpu-quantile/255", "stderr", "{:.4f}"),
          ("-0.0004", "skltr-gpu-quantile/63", "mean_diff", "{:+.4f}"),
          ("0.0005", "skltr-gpu-quantile/63", "stderr", "{:.4f}"))],
    Figure("0.0017", "defaults_quality-intel-r-xeon-r-processor-2026-11-23.json",
           path=("params", "gap_skltr_minus_lightgbm", "20k", "mean"), fmt="{:.4f}", scale=-1,
           pages=PERF),  # "at least LightGBM's minus 0.0017": the lowest of the six means
    *[Figure(text, "explain-cpu-h100-host-16threads-f6c439c-2026-11-26.json", case,
             fmt=fmt, pages=PERF, metric="max_rel_diff", scale=scale)
      for text, case, fmt, scale in (("6.6e-7", "xgboost 1000x", "{:.1f}e-7", 1e7),
                                     ("8.5e-14", "lightgbm 100x255", "{:.1f}e-14", 1e14))],
    *[Figure(text, "rankboost_ranklib-intel-r-xeon-r-processor-2026-11-24.json",
             f"test NDCG@10, n_thresholds={n}", field, "{:.4f}", RANKBOOST)
      for text, n, field in (("0.7706", 255, "skltr"), ("0.7680", 255, "peer"),
                             ("0.7586", 11, "skltr"))],
    Figure("0.7358", "ondemand_rules_cpu-intel-r-xeon-r-processor-2026-11-24.json",
           "test NDCG@10, letor_small", "peer", "{:.4f}", RANKBOOST,
           peer_name="LightGBM LGBMRanker (lambdarank)"),
    *[Figure(text, result, path=("params", "speed", size, "efficiency"), fmt="{:.2f}",
             pages=("docs/user_guide/rule_ranker.rst",))
      for text, result, size in (
          ("0.95", "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json", "size4"),
          ("0.61", "rules_multi_gpu-nvidia-h100-x2-2026-11-25.json", "size3"),
          ("0.49", "rules_multi_gpu-nvidia-h100-x2-thread-per-gpu-41dbe2d-2026-11-25.json",
           "size4"))],
    Figure("2.2 us/doc", "sparse_input_cpu-intel-r-xeon-r-processor-2026-11-23.json",
           "predict lightgbm model, CSR", fmt="{:.1f} us/doc", pages=PERF),
    # docs/user_guide/gbdt_ranker.rst: the defaults-quality table and the paragraphs around it
    *[Figure(text, DEFAULTS, f"{case}: ", field, "{:.4f}", GBDT_RANKER, peer_name=peer)
      for case, row in (("5k", ("0.7259", "0.7259", "0.7226", "0.7230")),
                        ("20k", ("0.6950", "0.6725", "0.6967", "0.6897")),
                        ("63k", ("0.6180", "0.6119", "0.6187", "0.6129")),
                        ("200k", ("0.6588", "0.6559", "0.6569", "0.6570")),
                        ("letor", ("0.7425", "0.7425", "0.7358", "0.7464")),
                        ("letor-resplit", ("0.7784", "0.7784", "0.7795", "0.7742")))
      for text, field, peer in zip(row, ("skltr", "peer", "peer", "peer"),
                                   ("skltr-auto", "skltr-auto", "lightgbm", "xgboost"))],
    *[Figure(text, DEFAULTS, path=("params", "gap_skltr_minus_lightgbm", case, key), fmt=fmt,
             pages=GBDT_RANKER)
      for case, mean, se in (("5k", "+0.0033", "0.0029"), ("20k", "-0.0017", "0.0014"),
                             ("63k", "-0.0007", "0.0011"), ("200k", "+0.0019", "0.0010"),
                             ("letor", "+0.0068", None), ("letor-resplit", "-0.0011", "0.0024"))
      for text, key, fmt in ((mean, "mean", "{:+.4f}"), (se, "se", "{:.4f}")) if text],
    Figure("0.002", DEFAULTS, path=("params", "gap_skltr_minus_lightgbm", "20k", "mean"),
           fmt="{:.3f}", scale=-1, pages=GBDT_RANKER),  # "no mean trails by more than": the lowest
    *[Figure(text, DEFAULTS, path=("params", "raw", case, "skltr", seed, "ndcg@10"),
             minus_path=("params", "raw", case, peer, seed, "ndcg@10"), fmt="{:+.3f}"
             if peer == "lightgbm" else "{:.3f}", pages=GBDT_RANKER)
      for text, case, peer, seed in (("-0.010", "20k", "lightgbm", 1),
                                     ("+0.018", "5k", "lightgbm", 9),
                                     ("0.060", "20k", "skltr-auto", 0),
                                     ("0.016", "63k", "skltr-auto", 4))],
    *[Figure(text, DEFAULTS, path=("rows", row, "skltr"), minus_path=("rows", row, "peer"),
             fmt="{:.3f}", pages=GBDT_RANKER)  # the old default's mean loss: rows of skltr-auto
      for text, row in (("0.023", 5), ("0.006", 8))],
    *[Figure(text, DEFAULTS, path=("params", "raw", "20k", "skltr-auto", seed, "trees"),
             fmt="{}", pages=GBDT_RANKER)  # "kept 13 to 48 trees": the fewest and the most
      for text, seed in (("13", 0), ("48", 3))],
    # docs/user_guide/rule_ranker.rst: the "Measured" list (CPU)
    *[Figure(text, RULES_CPU, f"test NDCG@10, {case}", field, "{:.4f}", RULE_RANKER,
             peer_name=peer)
      for text, case, field, peer in (
          ("0.7540", "letor_small", "skltr", "LightGBM LGBMRanker (lambdarank)"),
          ("0.7358", "letor_small", "peer", "LightGBM LGBMRanker (lambdarank)"),
          ("0.7706", "letor_small", "peer", "skltr RankBoostRanker"),
          ("0.7826", "make_ranking", "skltr", "LightGBM LGBMRanker (lambdarank)"),
          ("0.8199", "make_ranking", "peer", "LightGBM LGBMRanker (lambdarank)"),
          ("0.8442", "make_ranking", "peer", "skltr RankBoostRanker"))],
    *[Figure(text, result, case, field, fmt, RULE_RANKER, peer_name=peer)
      for text, result, case, field, fmt, peer in (
          ("2.6 s", RULES_CPU, "size 3, 136 items", "peer", "{:.1f} s",
           "PROFL serial CPU baseline (quoted)"),
          ("1.2x", RULES_CPU, "size 3, 136 items", "speedup", "{:.1f}x",
           "PROFL serial CPU baseline (quoted)"),
          ("53 s", RULES_CPU, "size 4, 136 items", "skltr", "{:.0f} s",
           "PROFL, GTX Titan Black (quoted)"),
          ("1.95 s", RULES_CPU, "size 4, 136 items", "peer", "{:.2f} s",
           "PROFL, GTX Titan Black (quoted)"),
          ("27x", RULES_CPU, "size 4, 136 items", "ratio", "{:.0f}x",
           "PROFL, GTX Titan Black (quoted)"),
          ("1.25 s", RULES_FREE, "size 3, 136 items a document", "skltr", "{:.2f} s", None),
          ("1.30 s", RULES_FREE, "size 3, 136 items a document, awkward", "skltr", "{:.2f} s",
           None))],
    # docs/user_guide/rule_ranker.rst: the itemset cache (letor_small, the demo's data) and
    # the fingerprint study
    *[Figure(text, RULES_CPU, path=("params", "cache_study", case, "s_per_query"), fmt=fmt,
             pages=RULE_RANKER)
      for text, case, fmt in (("0.37 s", "off", "{:.2f} s"), ("0.72 s", "65536", "{:.2f} s"),
                              ("0.94 s", "4M splitmix", "{:.2f} s"),
                              ("0.94", "4M splitmix", "{:.2f}"),
                              ("0.89 s", "4M prime", "{:.2f} s"))],
    *[Figure(text, RULES_CPU, path=("params", "cache_study", case, "cache_probes"),
             peer_path=("params", "cache_study", case, key), fmt=fmt, scale=scale,
             pages=RULE_RANKER)
      for text, case, key, fmt, scale in (
          ("0.0%", "65536", "cache_hits", "{:.1f}%", 100),
          ("65.5%", "4M splitmix", "cache_hits", "{:.1f}%", 100),
          ("65.5%", "4M prime", "cache_hits", "{:.1f}%", 100),
          ("1.23", "4M splitmix", "probe_steps", "{:.2f}", 1),
          ("1.23", "4M prime", "probe_steps", "{:.2f}", 1))],
    *[Figure(text, RULES_FREE, path=("params", "wide_cache_study", key), fmt=fmt,
             pages=RULE_RANKER)
      for text, key, fmt in (("2.09 s", "cache_0_s", "{:.2f} s"),
                             ("1.58 s", "cache_65536_s", "{:.2f} s"),
                             ("19,227", "test_docs", "{:,}"), ("1,235", "words", "{:,}"))],
    # docs/user_guide/dask.rst: the CPU tables and the paragraphs after them
    *[Figure(text, DASK_CPU, "4x4 CPU", field, fmt, DASK, metric=metric, peer_name=peer)
      for text, field, metric, peer, fmt in (
          ("45.96", "skltr", "fit_s", "lightgbm.dask", "{:.2f}"),
          ("28.87", "peer", "fit_s", "skltr local, 16 threads", "{:.2f}"),
          ("31.56", "peer", "fit_s", "lightgbm.dask", "{:.2f}"),
          ("43.27", "peer", "fit_s", "xgboost.dask", "{:.2f}"),
          ("0.6820", "skltr", "test_ndcg@10", "lightgbm.dask", "{:.4f}"),
          ("0.6828", "peer", "test_ndcg@10", "lightgbm.dask", "{:.4f}"),
          ("0.6782", "peer", "test_ndcg@10", "xgboost.dask", "{:.4f}"),
          ("1.59x", "ratio", "fit_s", "skltr local, 16 threads", "{:.2f}x"),
          ("1.46x", "ratio", "fit_s", "lightgbm.dask", "{:.2f}x"),
          ("1.06x", "ratio", "fit_s", "xgboost.dask", "{:.2f}x"))],
    *[Figure(text, DASK_CPU, path=("notes",), pages=DASK)
      for text in ("35.9 s", "53.8 s", "26.0 s", "32.1 s")],
    *[Figure(text, DASK_CPU, path=_DT + (key,), fmt=fmt, pages=DASK)
      for text, key, fmt in (("12.1 s", "allreduce_s", "{:.1f} s"),
                             ("43.7 s", "boosting_s", "{:.1f} s"),
                             ("7,001", "allreduce_calls", "{:,}"))],
    *[Figure(text, f"train_dask-nvidia-h100-80gb-hbm3-4x{n}-threads-2026-11-25.json",
             "CPU", field, fmt, DASK)
      for text, n, field, fmt in (("48.84 s", 3, "skltr", "{:.2f} s"),
                                  ("48.57 s", 4, "skltr", "{:.2f} s"),
                                  ("33.39 s", 3, "peer", "{:.2f} s"),
                                  ("30.65 s", 4, "peer", "{:.2f} s"),
                                  ("1.46x", 3, "ratio", "{:.2f}x"),
                                  ("1.58x", 4, "ratio", "{:.2f}x"))],
    *[Figure(text, f"train_dask-nvidia-h100-80gb-hbm3-4x{n}-threads-2026-11-25.json",
             path=_DT + ("boosting_s",), fmt="{:.1f} s", pages=DASK)
      for text, n in (("46.6 s", 3), ("46.5 s", 4))],
    *[Figure(text, ALLREDUCE, f"{n} processes", field, fmt, DASK)
      for text, n, field, fmt in (("0.17 ms", 2, "skltr", "{:.2f} ms"),
                                  ("0.41 ms", 4, "skltr", "{:.2f} ms"),
                                  ("0.85 ms", 8, "skltr", "{:.2f} ms"),
                                  ("0.21 ms", 2, "peer", "{:.2f} ms"),
                                  ("0.52 ms", 4, "peer", "{:.2f} ms"),
                                  ("1.55 ms", 8, "peer", "{:.2f} ms"))],
    *[Figure(text, DASK_CPU_2, path=_DT + ("allreduce_calls",), fmt="{:,}", pages=DASK)
      for text in ("3,033",)],
    *[Figure(text, DASK_CPU_2, "4x4 CPU", field, fmt, DASK, metric=metric, peer_name=peer)
      for text, field, metric, peer, fmt in (
          ("29.02", "skltr", "fit_s", "lightgbm.dask", "{:.2f}"),
          ("30.57", "peer", "fit_s", "skltr dask, TCP star", "{:.2f}"),
          ("20.72", "peer", "fit_s", "skltr local, 16 threads", "{:.2f}"),
          ("25.09", "peer", "fit_s", "lightgbm.dask", "{:.2f}"),
          ("0.6820", "skltr", "test_ndcg@10", "lightgbm.dask", "{:.4f}"),
          ("0.6835", "peer", "test_ndcg@10", "lightgbm.dask", "{:.4f}"),
          ("1.40x", "ratio", "fit_s", "skltr local, 16 threads", "{:.2f}x"),
          ("1.16x", "ratio", "fit_s", "lightgbm.dask", "{:.2f}x"))],
    *[Figure(text, DASK_CPU, "4x4 CPU", "ratio", "{:.2f}x", DASK, metric="fit_s",
             peer_name=peer)
      for text, peer in (("1.59x", "skltr local, 16 threads"), ("1.46x", "lightgbm.dask"))],
    Figure("6.15 s", DASK_CPU_2, path=_DT + ("allreduce_s",), fmt="{:.2f} s", pages=DASK),
    Figure("27.7 s", DASK_CPU_2, path=_DT + ("boosting_s",), fmt="{:.1f} s", pages=DASK),
    Figure("2 ms", DASK_CPU_2, path=_DT + ("allreduce_calls",),
           peer_path=_DT + ("allreduce_s",), fmt="{:.0f} ms", scale=1000, pages=DASK),
    Figure("0.41 ms", ALLREDUCE, "4 processes", fmt="{:.2f} ms", pages=DASK),
    Figure("30.16 s", "train_dask-h100-host-4x4-feature-share-c6a19a1-2026-11-26.json", "CPU",
           fmt="{:.2f} s", pages=DASK),
    Figure("5,033", "train_dask-h100-host-4x4-feature-share-c6a19a1-2026-11-26.json",
           path=_DT + ("allreduce_calls",), fmt="{:,}", pages=DASK),
    # the compiled distributed grower (2026-11-28)
    *[Figure(text, DASK_CPU_F5A, "4x4 CPU", field, fmt, DASK, metric="fit_s", peer_name=peer)
      for text, field, peer, fmt in (
          ("24.68 s", "skltr", "lightgbm.dask", "{:.2f} s"),
          ("13.29 s", "peer", "skltr local, 16 threads", "{:.2f} s"),
          ("1.86x", "ratio", "skltr local, 16 threads", "{:.2f}x"),
          ("22.35 s", "peer", "lightgbm.dask", "{:.2f} s"),
          ("1.10x", "ratio", "lightgbm.dask", "{:.2f}x"))],
    *[Figure(text, DASK_CPU_F5A, path=_DT + ("ranks", rank, key), fmt=fmt, pages=DASK,
             minus_path=_DT + ("ranks", rank, minus) if minus else None)
      for text, rank, key, minus, fmt in (
          ("16.2 s", 1, "boosting_s", "allreduce_s", "{:.1f} s"),
          ("17.2 s", 0, "boosting_s", "allreduce_s", "{:.1f} s"),
          ("22 s", 0, "boosting_s", None, "{:.0f} s"))],
    *[Figure(text, DASK_CPU_4, "4x4 CPU", field, fmt, DASK, metric=metric, peer_name=peer)
      for text, field, metric, peer, fmt in (
          ("18.63", "skltr", "fit_s", "lightgbm.dask", "{:.2f}"),
          ("15.79", "peer", "fit_s", "skltr local, 16 threads", "{:.2f}"),
          ("27.55", "peer", "fit_s", "lightgbm.dask", "{:.2f}"),
          ("0.6820", "skltr", "test_ndcg@10", "lightgbm.dask", "{:.4f}"),
          ("0.6813", "peer", "test_ndcg@10", "lightgbm.dask", "{:.4f}"),
          ("1.18x", "ratio", "fit_s", "skltr local, 16 threads", "{:.2f}x"),
          ("0.68x", "ratio", "fit_s", "lightgbm.dask", "{:.2f}x"))],
    *[Figure(text, DASK_CPU_4, path=("params", "skltr_dask_variants", k, "fit_s"),
             fmt="{:.2f} s", pages=DASK)
      for k, text in enumerate(("19.92 s", "20.27 s", "18.03 s", "19.54 s", "18.87 s",
                                "20.52 s", "19.03 s", "19.20 s"))],
    *[Figure(text, DASK_CPU_4, path=_DT + ("ranks", rank, key), fmt="{:.1f} s", pages=DASK)
      for text, rank, key in (("4.2 s", 0, "barrier_s"), ("4.9 s", 2, "barrier_s"),
                              ("17.4 s", 0, "boosting_s"))],
    *[Figure(text, result, "4x4 CPU", field, "{:.2f} s", DASK, metric="fit_s",
             peer_name=peer)
      for text, result, field, peer in (
          ("20.49 s", DASK_CPU_8E1, "skltr", "skltr local, 16 threads"),
          ("14.46 s", DASK_CPU_8E1, "peer", "skltr local, 16 threads"),
          ("22.82 s", DASK_CPU_8C6, "skltr", "skltr local, 16 threads"),
          ("14.96 s", DASK_CPU_8C6, "peer", "skltr local, 16 threads"),
          ("19.23 s", DASK_CPU_8C6, "peer", "skltr dask, barriers polling 200 us"))],
    # every rank's figures (4b559ca): rank 0 first, then the least and the most of the four
    *[Figure(text, DASK_CPU_3, "4x4 CPU", field, fmt, DASK, metric="fit_s", peer_name=peer)
      for text, field, peer, fmt in (
          ("24.8 s", "peer", "skltr local, 16 threads", "{:.1f} s"),
          ("29.6 s", "peer", "lightgbm.dask", "{:.1f} s"),
          ("38.6 s", "skltr", "lightgbm.dask", "{:.1f} s"),
          ("1.55x", "ratio", "skltr local, 16 threads", "{:.2f}x"),
          ("1.30x", "ratio", "lightgbm.dask", "{:.2f}x"))],
    *[Figure(text, DASK_CPU_3, path=_DT + ("ranks", rank, key), fmt="{:.1f} s", pages=DASK,
             minus_path=_DT + ("ranks", rank, minus) if minus else None)
      for text, rank, key, minus in (
          ("36.5 s", 0, "boosting_s", None), ("7.8 s", 3, "allreduce_s", None),
          ("8.7 s", 1, "allreduce_s", None), ("5.1 s", 0, "barrier_s", None),
          ("6.2 s", 1, "barrier_s", None), ("2.7 s", 0, "allreduce_s", "barrier_s"),
          ("27.9 s", 1, "boosting_s", "allreduce_s"),
          ("28.7 s", 3, "boosting_s", "allreduce_s"))],
    Figure("23.9 s", DASK_CPU_3, path=("params", "skltr_local_timings", "boosting_s"),
           fmt="{:.1f} s", pages=DASK),
    *[Figure(text, "dask_worker_settings-h100-host-4x4-4b559ca-2026-11-26.json", case, field,
             "{:.2f} s", DASK, metric=f"fit_s {metric}")
      for text, case, field, metric in (("17.35 s", "run 1", "skltr", "noprofile"),
                                        ("25.26 s", "run 1", "peer", "noprofile"),
                                        ("16.05 s", "run 2", "skltr", "noprofile"),
                                        ("17.43 s", "run 2", "peer", "noprofile"))],
    Figure("0.94 s", "dask_worker_settings-h100-host-4x4-4b559ca-2026-11-26.json",
           path=("rows", 8, "peer"), minus_path=("rows", 8, "skltr"), fmt="{:.2f} s",
           pages=DASK),  # row 8: base-again against base, run 2
    # docs/user_guide/dask.rst: GPU workers (the TCP star, the table, the paragraph after it)
    Figure("12.85 s", "train_dask_gpu-nvidia-h100-x2-1m-host-staged-02f16bd-2026-11-25.json",
           "2 GPU worker(s)", fmt="{:.2f} s", pages=DASK),
    Figure("3.86 s", DASK_GPU.format("1m"), "2 GPU worker(s)", fmt="{:.2f} s", pages=DASK),
    *[Figure(text, DASK_GPU.format(size), f"{n} GPU worker(s)", field, "{:.2f}", DASK,
             peer_name=peer)
      for size, cells in (("1m", ("2.63", "3.39", "3.86", "7.36", "5.22")),
                          ("4m", ("4.46", "6.97", "6.08", "22.24", "12.48")))
      for text, n, field, peer in zip(cells, (1, 1, 2, 1, 2),
                                      ("peer", "skltr", "skltr", "peer", "peer"),
                                      ("skltr local, 1 GPU", None, None,
                                       "xgboost.dask, same GPUs", "xgboost.dask, same GPUs"))],
    *[Figure(text, DASK_GPU.format(size), path=("params", key, *timings, "boosting_s"),
             fmt="{:.1f} ms", scale=1000 / 200, pages=DASK)  # 200 rounds
      for size, cells in (("1m", ("8.2 ms", "9.9 ms", "12.6 ms")),
                          ("4m", ("19.4 ms", "20.6 ms", "17.1 ms")))
      for text, key, timings in zip(cells, ("skltr_local_gpu_timings", "skltr_1gpu_workers",
                                            "skltr_2gpu_workers"), ((), ("timings",),
                                                                    ("timings",)))],
    *[Figure(text, DASK_GPU.format(size), f"{n} GPU worker(s)", "ratio", "{:.2f}x", DASK,
             peer_name=peer)
      for text, size, n, peer in (("0.74x", "1m", 2, "xgboost.dask, same GPUs"),
                                  ("0.49x", "4m", 2, "xgboost.dask, same GPUs"),
                                  ("1.29x", "1m", 1, "skltr local, 1 GPU"),
                                  ("1.56x", "4m", 1, "skltr local, 1 GPU"))],
    *[Figure(text, DASK_GPU.format("1m"), path=("params", key), fmt="{:.4f}", pages=DASK)
      for text, key in (("0.6819", "skltr_local_gpu_ndcg@10"),)],
    Figure("0.6791", DASK_GPU.format("1m"), path=("params", "xgboost_dask_2gpu", "ndcg@10"),
           fmt="{:.4f}", pages=DASK),
    *[Figure(text, "train_dask_gpu-nvidia-h100-x1-1m-2026-11-25.json", "1 GPU worker(s)", field,
             fmt, DASK)
      for text, field, fmt in (("3.21 s", "skltr", "{:.2f} s"), ("3.54 s", "peer", "{:.2f} s"),
                               ("0.91x", "ratio", "{:.2f}x"))],
    *[Figure(text, result, path=("params", *keys), fmt="{:.2f} s", pages=DASK)
      for text, result, keys in (
          ("1.44 s", "train_dask_gpu-nvidia-h100-x1-1m-2026-11-25.json",
           ("skltr_local_gpu_timings", "binning_s")),
          ("0.44 s", DASK_GPU.format("4m"), ("skltr_local_gpu_timings", "binning_s")),
          ("0.92 s", DASK_GPU.format("1m"), ("skltr_local_gpu_timings", "binning_s")),
          ("1.04 s", "train_dask_gpu-nvidia-h100-x1-1m-2026-11-25.json",
           ("skltr_1gpu_workers", "timings", "prepare_s")),
          ("1.74 s", DASK_GPU.format("4m"), ("skltr_1gpu_workers", "timings", "prepare_s")))],
    Figure("0.34 s", DASK_GPU.format("1m"),
           path=("params", "skltr_1gpu_workers", "timings", "boosting_s"),
           minus_path=("params", "skltr_local_gpu_timings", "boosting_s"), fmt="{:.2f} s",
           pages=DASK),  # the largest of the three runs' worker-minus-local boosting
    # docs/user_guide/explanations.rst: the 16-core host with the tables, the table before them
    *[Figure(text, EXPLAIN_16.format("f6c439c-"), case, field, "{:.2f} s", EXPLANATIONS,
             metric=metric)
      for text, case, field, metric in (
          ("1.28 s", "17947 rows", "skltr", "contribs_s"),
          ("5.49 s", "17947 rows", "peer", "contribs_s"),
          ("1.38 s", "17947 rows", "skltr", "first_call_s"),
          ("5.94 s", "17947 rows", "peer", "first_call_s"),
          ("2.13 s", "2000 rows", "skltr", "contribs_s"),
          ("3.76 s", "2000 rows", "peer", "contribs_s"),
          ("0.21 s", "50 rows", "skltr", "interactions_s"),
          ("0.15 s", "50 rows", "peer", "interactions_s"))],
    Figure("4.3x", EXPLAIN_16.format("f6c439c-"), "17947 rows", "speedup", "{:.1f}x",
           EXPLANATIONS, metric="contribs_s"),
    *[Figure(text, result, case, field, fmt, EXPLANATIONS, metric=metric, scale=scale)
      for result, case, metric, cells in (
          ("explain-cuda-nvidia-h100-80gb-hbm3-2026-11-26.json", "97278 rows", "contribs_s",
           (("0.25 s", "{:.2f} s"), ("1.24 s", "{:.2f} s"), ("0.20", "{:.2f}"))),
          ("explain-cuda-nvidia-h100-80gb-hbm3-2026-11-26.json", "200 rows", "interactions_s",
           (("4.0 ms", "{:.1f} ms"), ("24 ms", "{:.0f} ms"), ("0.16", "{:.2f}"))),
          (EXPLAIN_16.format(""), "17947 rows", "contribs_s",
           (("12.6 s", "{:.1f} s"), ("5.9 s", "{:.1f} s"), ("2.13", "{:.2f}"))),
          ("explain-cpu-h100-host-1thread-2026-11-26.json", "1891 rows", "contribs_s",
           (("15.3 s", "{:.1f} s"), ("5.8 s", "{:.1f} s"), ("2.64", "{:.2f}"))),
          (EXPLAIN_16.format(""), "2000 rows", "contribs_s",
           (("2.29 s", "{:.2f} s"), ("2.88 s", "{:.2f} s"), ("0.79", "{:.2f}"))))
      for (text, fmt), field in zip(cells, ("skltr", "peer", "ratio"))
      for scale in [1000 if text.endswith("ms") else 1]],
    *[Figure(text, result, "17947 rows", fmt="{:.2f} s", pages=EXPLANATIONS,
             metric="contribs_s")
      for text, result in (("12.53 s", EXPLAIN_16.format("pattern-tables-")),
                           ("12.58 s", EXPLAIN_16.format("")))],
    # docs/gbdt_gpu.rst: the paragraphs around the tables
    *[Figure(text, "objectives_gpu-h100-same-bits-ab-2026-11-26.json",
             path=("summary", "lambdarank", new_old, "gpu_ms", run), fmt="{:.2f} ms",
             pages=GBDT_GPU)
      for text, new_old, run in (("0.55 ms", "new", 0), ("0.54 ms", "new", 1),
                                 ("0.38 ms", "old", 0), ("0.37 ms", "old", 1))],
    *[Figure(text, "objectives_gpu-h100-same-bits-ab-2026-11-26.json",
             path=("summary", "lambdarank", "new", "gpu_ms", run),
             minus_path=("summary", "lambdarank", "old", "gpu_ms", run), fmt="{:.2f} ms",
             pages=GBDT_GPU)
      for text, run in (("0.18 ms", 0), ("0.17 ms", 1))],
    *[Figure(text, "objectives_gpu-h200-2026-11-27-4363460-yetirank.json", "999960 rows", field,
             fmt, GBDT_GPU, metric=metric, scale=1000)
      for text, field, metric, fmt in (("4.7 ms", "skltr", "yetirank", "{:.1f} ms"),
                                       ("60.8 ms", "peer", "yetirank", "{:.1f} ms"))],
    *[Figure(text, CATEGORICAL_NOW, f"{levels} categories", field, "{:.2f} s", GBDT_RANKER,
             metric=metric)
      for text, levels, field, metric in (
          ("1.26 s", 10, "skltr", "skltr ordinal fit"),
          ("1.22 s", 1000, "skltr", "skltr ordinal fit"),
          ("1.26 s", 10000, "skltr", "skltr ordinal fit"),
          ("1.21 s", 10, "skltr", "lightgbm ordinal fit"),
          ("1.13 s", 1000, "skltr", "lightgbm ordinal fit"),
          ("1.18 s", 10000, "skltr", "lightgbm ordinal fit"),
          ("1.36 s", 10, "skltr", "skltr categorical fit"),
          ("1.62 s", 1000, "skltr", "skltr categorical fit"),
          ("1.90 s", 10000, "skltr", "skltr categorical fit"),
          ("1.21 s", 10, "peer", "skltr categorical fit"),
          ("1.34 s", 1000, "peer", "skltr categorical fit"),
          ("1.66 s", 10000, "peer", "skltr categorical fit"))],
    *[Figure(text, "objectives_gpu-h100-2026-11-22.json", case, field, "{:.2f} ms", GBDT_GPU,
             metric=metric, scale=1000)
      for text, case, field, metric in (("0.51 ms", "999960 rows", "skltr", "rank_xendcg"),
                                        ("2.67 ms", "999960 rows", "peer", "rank_xendcg"),
                                        ("0.38 ms", "999960 rows", "skltr", "lambdarank"))],
    *[Figure(text, f"train_gpu-h200-lossguide-batch{n}-0d1270d-2026-11-26.json",
             "leaf-wise 255 leaves", field, fmt, GBDT_GPU, metric=metric)
      for text, n, field, metric, fmt in (
          ("8.64 s", 1, "skltr", "fit", "{:.2f} s"), ("1.27 s", 16, "skltr", "fit", "{:.2f} s"),
          ("1.26 s", 32, "skltr", "fit", "{:.2f} s"), ("1.90 s", 1, "peer", "fit", "{:.2f} s"),
          ("1.94 s", 32, "peer", "fit", "{:.2f} s"), ("0.66x", 16, "ratio", "fit", "{:.2f}x"),
          ("0.6724", 16, "skltr", "test NDCG@10", "{:.4f}"),
          ("0.6592", 16, "peer", "test NDCG@10", "{:.4f}"))],
    *[Figure(text, "train_gpu-h100-engine-ab-27-2026-11-26.json",
             path=("summary", "skltr-gpu/255", key), fmt=fmt, pages=GBDT_GPU)
      for text, key, fmt in (("2.04 s", "new_median", "{:.2f} s"),
                             ("2.03 s", "old_median", "{:.2f} s"),
                             ("0.6788", "ndcg@10_new", "{:.4f}"),
                             ("0.6807", "ndcg@10_old", "{:.4f}"))],
    *[Figure(text, "train_gpu-h100-vs-cpu-e6ee752-2026-11-22.json", "995078 rows, 255 bins",
             field, fmt, GBDT_GPU)
      for text, field, fmt in (("2.18 s", "skltr", "{:.2f} s"), ("31.3 s", "peer", "{:.1f} s"),
                               ("14.4x", "speedup", "{:.1f}x"))],
    Figure("68 ms", "train_gpu-h100-vs-cpu-e6ee752-2026-11-22.json",
           path=("params", "raw", "skltr-gpu-scale/255", "per_round_s"), fmt="{:.0f} ms",
           scale=1000, pages=GBDT_GPU),
    Figure("2.26 GB", "train_gpu-h100-vs-cpu-e6ee752-2026-11-22.json",
           path=("params", "raw", "skltr-gpu-scale/255", "gpu_peak_mb"), fmt="{:.2f} GB",
           scale=0.001, pages=GBDT_GPU),
    *[Figure(text, "train_gpu-h100-bounded-4849c88-2026-11-22.json", "255 bins", field, fmt,
             GBDT_GPU, metric=metric, peer_name="xgboost-gpu")
      for text, field, metric, fmt in (("1.73 s", "skltr", "fit", "{:.2f} s"),
                                       ("0.67x", "ratio", "fit", "{:.2f}x"),
                                       ("0.6788", "skltr", "test NDCG@10", "{:.4f}"))],
    # the histogram stage with bounded sums: only the quality file's note records it
    *[Figure(text, BOUNDED.format(""), path=("commit_note",), pages=GBDT_GPU)
      for text in ("4.4", "2.5 ms")],
    # the bounded-sums table: bounded minus two-word test NDCG@10 +- its standard error
    *[Figure(text, BOUNDED.format(rows), path=("rows", row, "skltr"),
             minus_path=("rows", row, "peer"), fmt="{:+.4f}", pages=GBDT_GPU)
      for rows, row, text in (("", 0, "-0.0007"), ("", 2, "+0.0002"), ("-500k", 0, "+0.0004"),
                              ("-500k", 1, "+0.0011"), ("-250k", 0, "-0.0025"),
                              ("-250k", 1, "+0.0001"))],
    *[Figure(text, BOUNDED.format(rows), path=("params", "raw"), fmt="{:.4f}", pages=GBDT_GPU,
             reduce=_paired_se(bins, "skltr-gpu", "skltr-gpu-twoword"))
      for rows, bins, text in (("", 255, "0.0004"), ("", 63, "0.0004"), ("-500k", 255, "0.0007"),
                               ("-500k", 63, "0.0006"), ("-250k", 255, "0.0022"),
                               ("-250k", 63, "0.0003"))],
    # the 7f5bc11 table's "one process" ratios: skltr's fit in one process over XGBoost's in
    # another
    *[Figure(text, "train_gpu-h100-setup-cold-xgboost-2026-11-22.json",
             path=("params", "raw", f"xgboost-gpu/{bins}", "fit_s"),
             peer_result="train_gpu-h100-setup-cold-skltr-2026-11-22.json",
             peer_path=("params", "raw", f"skltr-gpu/{bins}", "fit_s"), fmt="{:.2f}",
             pages=GBDT_GPU)
      for text, bins in (("0.84", 255), ("0.80", 63))],
    *[Figure(text, "train_gpu-h100-merged-3261768-2026-11-22.json", f"{bins} bins", field,
             fmt, GBDT_GPU, metric=metric, scale=1000 if text.endswith("ms") else 1)
      for text, bins, field, metric, fmt in (
          ("2.51 s", 255, "skltr", "fit", "{:.2f} s"), ("2.59 s", 255, "peer", "fit", "{:.2f} s"),
          ("0.97x", 255, "ratio", "fit", "{:.2f}x"), ("2.44 s", 63, "skltr", "fit", "{:.2f} s"),
          ("2.45 s", 63, "peer", "fit", "{:.2f} s"), ("1.00x", 63, "ratio", "fit", "{:.2f}x"),
          ("11.9 ms", 255, "skltr", "per round", "{:.1f} ms"),
          ("12.5 ms", 255, "peer", "per round", "{:.1f} ms"),
          ("0.95x", 255, "ratio", "per round", "{:.2f}x"),
          ("11.3 ms", 63, "skltr", "per round", "{:.1f} ms"),
          ("11.8 ms", 63, "peer", "per round", "{:.1f} ms"),
          ("0.96x", 63, "ratio", "per round", "{:.2f}x"),
          ("0.6788", 255, "skltr", "test NDCG@10", "{:.4f}"),
          ("0.6800", 63, "skltr", "test NDCG@10", "{:.4f}"),
          ("0.6778", 63, "peer", "test NDCG@10", "{:.4f}"))],
    *[Figure(text, "train_gpu-h100-vs-cpu-8bce16d-2026-11-22.json", "255 bins", field, fmt,
             GBDT_GPU, metric=metric)
      for text, field, metric, fmt in (("34.8 s", "peer", "fit", "{:.1f} s"),
                                       ("2.2 s", "skltr", "fit", "{:.1f} s"),
                                       ("15.7x", "speedup", "fit", "{:.1f}x"),
                                       ("0.6778", "peer", "test NDCG@10", "{:.4f}"))],
    *[Figure(text, "train_gpu-h100-vs-cpu-8bce16d-2026-11-22.json",
             path=("params", "raw", "skltr-gpu-scale/255", key), fmt=fmt, scale=scale,
             pages=GBDT_GPU)
      for text, key, fmt, scale in (("72 ms", "per_round_s", "{:.0f} ms", 1000),
                                    ("2.3 GB", "gpu_peak_mb", "{:.1f} GB", 0.001))],
    *[Figure(text, "train_gpu-h100-255bins-2026-11-22.json", "255 bins", field, fmt, GBDT_GPU,
             metric="fit", peer_name="skltr-cpu")
      for text, field, fmt in (("201.6 s", "peer", "{:.1f} s"), ("45x", "speedup", "{:.0f}x"),
                               ("4.5 s", "skltr", "{:.1f} s"))],
    Figure("26.3 s", "train_gpu-h100-resident-1dd605d-2026-11-22.json", "255 bins", "peer",
           "{:.1f} s", GBDT_GPU, metric="fit", peer_name="lightgbm-cpu"),
    # docs/gbdt_gpu.rst: where the set-up time went (7f5bc11)
    *[Figure(text, "fit_setup_gpu-h100-7f5bc11-2026-11-22.json", path=(key, step),
             fmt="{:.0f} ms", scale=1000, pages=GBDT_GPU)
      for text, step, key in (
          ("40 ms", "host: gather sample rows", "steps_s"),
          ("121 ms", "host: transpose sample", "steps_s"),
          ("105 ms", "host: np.sort per feature", "steps_s"),
          ("272 ms", "host: whole BinMapper._fit_cuts", "steps_s"),
          ("46 ms", "device: whole fit_bin_mapper (host X: what a fit does)", "steps_s"),
          ("10 ms", "device: sample gather + sort, X already on the GPU", "steps_s"),
          ("1 ms", "device: column_cuts (GPU cut rule, cuts to host)", "steps_s"),
          ("73 ms", "device: DeviceBinned.from_mapper(host X)", "steps_s"),
          ("9 ms", "validation, +-inf left to the GPU (GPU fit)", "steps_s"),
          ("82 ms", "validation, host search for +-inf (CPU fit)", "steps_s"),
          ("16 ms", "_assemble (200 trees)", "steps_s"),
          ("663 ms", "device: upload X whole (not done by a fit)", "first_call_s"),
          ("64 ms", "device: upload X whole (not done by a fit)", "steps_s"))],
    *[Figure(text, "fit_setup_gpu-h100-2026-11-22.json",
             path=(key, "device: upload X whole (not done by a fit)"), fmt=fmt, scale=1000,
             pages=GBDT_GPU)
      for text, key, fmt in (("670", "first_call_s", "{:.0f}"), ("61 ms", "steps_s", "{:.0f} ms"))],
    Figure("405 MB", "fit_setup_gpu-h100-7f5bc11-2026-11-22.json", path=("fits", 0, "pool_mb"),
           fmt="{:.0f} MB", pages=GBDT_GPU),
    *[Figure(text, "train_gpu-h100-resident-1dd605d-2026-11-22.json",
             path=("params", "raw", "skltr-gpu/255", key), fmt=fmt, pages=GBDT_GPU)
      for text, key, fmt in (("855 MB", "gpu_peak_mb", "{:.0f} MB"),
                             ("0.67 s", "binning_s", "{:.2f} s"))],
    Figure("2.1 ms", "fit_setup_gpu-h100-2026-11-22.json",
           path=("steps_s", "device: column_cuts (GPU cut rule, cuts to host)"), fmt="{:.1f} ms",
           scale=1000, pages=GBDT_GPU),
    # docs/gbdt_gpu.rst: per-round GPU time by stage (the profile of 30 rounds at 7f5bc11)
    *[Figure(text, SETUP, path=("params", "raw", f"profile/{bins}", "stage_s_per_round", stage),
             fmt="{:.1f} ms", scale=1000, pages=GBDT_GPU)
      for text, bins, stage in (
          ("4.5 ms", 255, "histogram"), ("4.0 ms", 63, "histogram"),
          ("2.5 ms", 255, "partition"), ("2.4 ms", 63, "partition"),
          ("1.5 ms", 255, "split"), ("1.1 ms", 63, "split"), ("0.6 ms", 255, "gradients"),
          ("0.6 ms", 63, "gradients"), ("4.8 ms", 255, "host and launch gaps"),
          ("4.9 ms", 63, "host and launch gaps"))],
    # docs/scoring_internals.rst: QuickScorer's scaling on the 16-core host (4d46c8c)
    *[Figure(text, SCALING_16, f"{model} 1000 trees, {n} threads", "speedup", fmt,
             SCORING_INTERNALS, metric=metric)
      for model, metric, fmt, cells in (
          ("xgboost", "quickscorer", "{:.2f}x", ("2.46x", "1.85x", "3.69x", "3.31x", "2.24x")),
          ("xgboost", "quickscorer tb512", "{:.2f}x",
           ("2.64x", "2.46x", "2.37x", "3.86x", "2.63x")),
          ("lightgbm", "quickscorer", "{:.2f}x", ("8.37x", "9.51x", "7.61x", "9.08x", "7.59x")),
          ("lightgbm", "quickscorer tb512", "{:.1f}x", ("11.2x", "8.8x", "10.8x", "8.4x", "6.6x")))
      for text, n in zip(cells, (1, 2, 4, 8, 16))],
    Figure("2.2x", SCALING_16, "xgboost 1000 trees, 16 threads", "speedup", "{:.1f}x",
           SCORING_INTERNALS, metric="quickscorer"),
    *[Figure(text, SCALING_16, "xgboost 1000 trees, 16 threads", field, "{:.1f} GB/s",
             SCORING_INTERNALS, metric=metric)
      for text, field, metric in (("1.2 GB/s", "skltr", "qs DRAM GB/s"),
                                  ("8.6 GB/s", "skltr", "qs table GB/s"))],
    Figure("25.5 GB/s", SCALING_16, path=("params", "copy_bandwidth_GBps"), fmt="{:.1f} GB/s",
           pages=SCORING_INTERNALS),
    # docs/gbdt_internals.rst: the objective kernels (CPU time of one thread; wall time of two)
    *[Figure(text, "objectives_cpu-intel-r-xeon-r-processor-2-50ghz-2026-11-22.json",
             f"{objective}, 499920 rows, {n} thr", field, "{:.0f} ms",
             ("docs/gbdt_internals.rst",), scale=1000)
      for text, objective, n, field in (
          ("151 ms", "lambdarank", 1, "skltr"), ("207 ms", "lambdarank", 1, "peer"),
          ("18 ms", "rank_xendcg", 1, "skltr"), ("15 ms", "rank_xendcg", 1, "peer"),
          ("276 ms", "rank_pairwise", 1, "skltr"), ("3 ms", "regression", 1, "skltr"),
          ("125 ms", "lambdarank", 2, "skltr"), ("134 ms", "lambdarank", 2, "peer"))],
    # docs/security.rst: what a refused cache folder costs each process
    *[Figure(text, "cold_start-amd-epyc-2026-11-27-ec33dd2-10k.json",
             f"first fit+predict in a process, 10k rows, {cache} cache (pre-compiler default)",
             fmt=fmt, pages=("docs/security.rst",))
      for text, cache, fmt in (("15.9 s", "cold", "{:.1f} s"), ("1.02 s", "warm", "{:.2f} s"))],
    # docs/gbdt_gpu.rst: the table at e6ee752 (count-balanced binning)
    *[Figure(text, COUNTBINS, f"995078 rows, {bins} bins", field, fmt, GBDT_GPU, unit=unit,
             metric=metric, peer_name=peer, scale=scale)
      for bins, cells in (
          (255, (("1.90 s", "skltr", "fit"), ("2.49 s", "peer", "fit"), ("0.76", "ratio", "fit"),
                 ("8.9 ms", "skltr", "per round"), ("12.0 ms", "peer", "per round"),
                 ("0.74", "ratio", "per round"), ("0.6807", "skltr", "test NDCG@10"),
                 ("0.6800", "peer", "test NDCG@10"))),
          (63, (("2.28 s", "skltr", "fit"), ("2.40 s", "peer", "fit"), ("0.95", "ratio", "fit"),
                ("10.7 ms", "skltr", "per round"), ("11.5 ms", "peer", "per round"),
                ("0.93", "ratio", "per round"), ("0.6784", "skltr", "test NDCG@10"),
                ("0.6778", "peer", "test NDCG@10"))))
      for text, field, metric in cells
      for fmt, unit, scale, peer in [(
          {"s": "{:.2f} s", "ms": "{:.1f} ms"}.get(text.split(" ")[-1], "{:.4f}"
                                                   if metric == "test NDCG@10" else "{:.2f}"),
          "ndcg" if metric == "test NDCG@10" else "s", 1000 if text.endswith("ms") else 1,
          "xgboost-gpu")]],
    *[Figure(text, COUNTBINS, f"995078 rows, {bins} bins", "peer", fmt, GBDT_GPU,
             metric=metric, peer_name="lightgbm-cpu")
      for text, bins, metric, fmt in (("21.3 s", 255, "fit", "{:.1f} s"),
                                      ("18.4 s", 63, "fit", "{:.1f} s"),
                                      ("0.6808", 255, "test NDCG@10", "{:.4f}"),
                                      ("0.6793", 63, "test NDCG@10", "{:.4f}"))],
    # docs/gbdt_gpu.rst: the table at 7f5bc11 (skltr first, XGBoost first, one process each)
    *[Figure(text, result, f"995078 rows, {bins} bins", field, fmt, GBDT_GPU,
             metric=metric, scale=1000 if text.endswith("ms") else 1)
      for result, bins, cells in (
          (SETUP, 255, (("2.00 s", "skltr", "fit"), ("2.67 s", "peer", "fit"),
                        ("0.75", "ratio", "fit"), ("9.4 ms", "skltr", "per round"),
                        ("12.8 ms", "peer", "per round"), ("0.73", "ratio", "per round"),
                        ("0.6784", "skltr", "test NDCG@10"), ("0.6800", "peer", "test NDCG@10"))),
          (SETUP, 63, (("2.63 s", "skltr", "fit"), ("2.43 s", "peer", "fit"),
                       ("1.08", "ratio", "fit"), ("12.3 ms", "skltr", "per round"),
                       ("11.7 ms", "peer", "per round"), ("1.05", "ratio", "per round"),
                       ("0.6792", "skltr", "test NDCG@10"), ("0.6778", "peer", "test NDCG@10"))),
          (SETUP_XGB_FIRST, 255, (("2.47 s", "skltr", "fit"), ("2.60 s", "peer", "fit"),
                                  ("0.95", "ratio", "fit"), ("11.5 ms", "skltr", "per round"),
                                  ("12.5 ms", "peer", "per round"),
                                  ("0.93", "ratio", "per round"))),
          (SETUP_XGB_FIRST, 63, (("2.12 s", "skltr", "fit"), ("2.42 s", "peer", "fit"),
                                 ("0.88", "ratio", "fit"), ("9.7 ms", "skltr", "per round"),
                                 ("11.6 ms", "peer", "per round"),
                                 ("0.84", "ratio", "per round"))))
      for text, field, metric in cells
      for fmt in [{"s": "{:.2f} s", "ms": "{:.1f} ms"}.get(
          text.split(" ")[-1], "{:.4f}" if metric == "test NDCG@10" else "{:.2f}")]],
    *[Figure(text, SETUP, f"995078 rows, {bins} bins, min_samples_leaf=1", fmt="{:.4f}",
             pages=GBDT_GPU, metric="test NDCG@10")
      for text, bins in (("0.6785", 255), ("0.6784", 63))],
    *[Figure(text, f"train_gpu-h100-setup-cold-{who}-2026-11-22.json",
             path=("params", "raw", engine, "fit_s"), fmt="{:.2f} s", pages=GBDT_GPU)
      for text, who, engine in (("2.49 s", "skltr", "skltr-gpu/255"),
                                ("2.95 s", "xgboost", "xgboost-gpu/255"),
                                ("1.95 s", "skltr", "skltr-gpu/63"),
                                ("2.43 s", "xgboost", "xgboost-gpu/63"))],
    # set-up = fit minus rounds: skltr 0.13 (255 bins) to 0.17 s (63 bins), XGBoost 0.10 s
    *[Figure(text, SETUP, path=("params", "raw", engine, "fit_s"),
             minus_path=("params", "raw", engine, "rounds_s"), fmt="{:.2f} s", pages=GBDT_GPU)
      for text, engine in (("0.13 s", "skltr-gpu/255"), ("0.17 s", "skltr-gpu/63"),
                           ("0.10 s", "xgboost-gpu/255"))],
    # the footnote: XGBoost's set-up on its first full-size fit of a process
    *[Figure(text, result, path=("params", "raw", "xgboost-gpu/255", "binning_s_each", 0),
             fmt="{:.2f} s", pages=GBDT_GPU)
      for text, result in (("0.48 s", "train_gpu-h100-setup-cold-xgboost-2026-11-22.json"),
                           ("0.64 s", SETUP))],
    # docs/user_guide/fast_scoring.rst: the CPU and GPU tables and the paragraphs after them
    *[Figure(text, PREDICT_CPU + suffix, case, field, "{:.1f}" if "." in text else "{:.0f}",
             FAST_SCORING, metric=metric)
      for text, suffix, case, field, metric in (
          ("5.0", ".json", "lightgbm 1000 trees 64", "skltr", "quickscorer"),
          ("54.8", ".json", "lightgbm 1000 trees 64", "skltr", "traversal"),
          ("63.2", ".json", "lightgbm 1000 trees 64", "peer", "quickscorer"),
          ("3.7", ".json", "xgboost 1000 trees depth 6", "skltr", "quickscorer"),
          ("79.6", ".json", "xgboost 1000 trees depth 6", "skltr", "traversal"),
          ("17.5", ".json", "xgboost 1000 trees depth 6", "peer", "quickscorer"),
          ("14.7", "-5000trees.json", "lightgbm 5000 trees 64", "skltr", "quickscorer"),
          ("233", "-5000trees.json", "lightgbm 5000 trees 64", "skltr", "traversal"),
          ("244", "-5000trees.json", "lightgbm 5000 trees 64", "peer", "quickscorer"),
          ("11.1", "-5000trees.json", "xgboost 5000 trees depth 6", "skltr", "quickscorer"),
          ("219", "-5000trees.json", "xgboost 5000 trees depth 6", "skltr", "traversal"),
          ("52.7", "-5000trees.json", "xgboost 5000 trees depth 6", "peer", "quickscorer"))],
    *[Figure(text, PREDICT_CPU + ".json", case, "peer", "{:.1f}", FAST_SCORING,
             metric="quickscorer", peer_name="tl2cgen compiled (gcc)")
      for text, case in (("42.0", "lightgbm 1000 trees 64"), ("31.8", "xgboost 1000 trees"))],
    *[Figure(text, PREDICT_CPU + ".json", case, field, f"{{:.{len(text) - 5}f}} ms",
             FAST_SCORING, metric="latency 100 docs")
      for text, case, field in (("0.87 ms", "lightgbm 1000 trees 64", "skltr"),
                                ("5.6 ms", "lightgbm 1000 trees 64", "peer"),
                                ("1.1 ms", "xgboost 1000 trees depth 6", "skltr"),
                                ("4.0 ms", "xgboost 1000 trees depth 6", "peer"))],
    *[Figure(text, GPU_PREDICT, f"xgboost {n} trees depth 6, 1M rows", field, fmt,
             FAST_SCORING, scale=scale)
      for n, row in ((1000, ("102.1", "28.6", "3.56x")), (5000, ("482.6", "146.1", "3.30x")),
                     (20000, ("1,672.8", "618.9", "2.70x")))
      for text, field, fmt, scale in zip(row, ("peer", "skltr", "speedup"),
                                         ("{:,.1f}", "{:.1f}", "{:.2f}x"), (1000, 1000, 1))],
    *[Figure(text, GPU_PREDICT, path=_XGB_GPU + (f"xgboost {n} trees depth 6",
                                                "calibrated_placements_s", "shared_data"),
             fmt="{:.1f}", scale=1000, pages=FAST_SCORING)
      for text, n in (("27.2", 1000), ("131.9", 5000), ("552.5", 20000))],
    *[Figure(text, GPU_PREDICT, path=_XGB_GPU + (f"xgboost {n} trees depth 6",
                                                "calibrated_placements_s", "shared_data"),
             peer_path=_XGB_GPU + (f"xgboost {n} trees depth 6", "xgboost_s"),
             fmt="{:.2f}x", pages=FAST_SCORING)
      for text, n in (("3.75x", 1000), ("3.66x", 5000), ("3.03x", 20000))],
    *[Figure(text, GPU_PREDICT, f"xgboost {n} trees depth 6, 100 rows", field, fmt,
             FAST_SCORING, scale=scale)
      for n, row in ((1000, ("0.15 ms", "4.28 ms", "28x")), (5000, ("0.53 ms", "20.3 ms", "38x")),
                     (20000, ("2.3 ms", "89.1 ms", "39x")))
      for text, field, fmt, scale in zip(
          row, ("skltr", "peer", "speedup"),
          ("{:.2f} ms" if n < 20000 else "{:.1f} ms", "{:.2f} ms" if n == 1000 else "{:.1f} ms",
           "{:.0f}x"), (1000, 1000, 1))],
    *[Figure(text, "predict_gpu-h100-af3130f-2026-11-24.json",
             f"xgboost {n} trees depth 6, 100 rows", fmt=fmt, scale=1000, pages=FAST_SCORING)
      for text, n, fmt in (("0.85 ms", 1000, "{:.2f} ms"), ("3.8 ms", 5000, "{:.1f} ms"),
                           ("13.8 ms", 20000, "{:.1f} ms"))],
    Figure("92 ms", GPU_PREDICT, "lightgbm 1000 trees 255 leaves, 1M rows", fmt="{:.0f} ms",
           scale=1000, pages=FAST_SCORING),
    Figure("15.8 s", GPU_PREDICT, "lightgbm 1000 trees 255 leaves, 1M rows", "peer",
           fmt="{:.1f} s", pages=FAST_SCORING),
    *[Figure(text, GPU_PREDICT, path=_XGB_GPU + ("lightgbm 1000 trees 255 leaves", key),
             fmt=fmt, scale=1000, pages=FAST_SCORING)
      for text, key, fmt in (("0.12 ms", "skltr_latency_100_s", "{:.2f} ms"),)],
    Figure("89", GPU_PREDICT, path=_XGB_GPU + ("lightgbm 1000 trees 255 leaves",
                                              "calibrated_placements_s", "shared_data"),
           fmt="{:.0f}", scale=1000, pages=FAST_SCORING),
    *[Figure(text, GPU_PREDICT, path=_XGB_GPU + (f"xgboost {n} trees depth 6", *keys),
             fmt=fmt, scale=scale, pages=FAST_SCORING)
      for text, n, keys, fmt, scale in (
          ("138 ms", 1000, ("placements_s", "quickscorer"), "{:.0f} ms", 1000),
          ("718 ms", 5000, ("placements_s", "quickscorer"), "{:.0f} ms", 1000),
          ("2.7 s", 20000, ("placements_s", "quickscorer"), "{:.1f} s", 1),
          ("0.23 ms", 1000, ("placements_100_rows_s", "quickscorer"), "{:.2f} ms", 1000),
          ("0.13", 1000, ("placements_100_rows_s", "split_rows"), "{:.2f}", 1000),
          ("187 ms", 1000, ("quickscorer_docs_per_block", "1", "1M_s"), "{:.0f} ms", 1000),
          ("185 ms", 1000, ("quickscorer_docs_per_block", "4", "1M_s"), "{:.0f} ms", 1000))],
    Figure("4.9x", GPU_PREDICT,
           path=_XGB_GPU + ("xgboost 1000 trees depth 6", "placements_s", "shared_data"),
           peer_path=_XGB_GPU + ("xgboost 1000 trees depth 6", "placements_s", "quickscorer"),
           fmt="{:.1f}x", pages=FAST_SCORING),
    Figure("0.64%", GPU_PREDICT, path=_XGB_GPU + ("xgboost 1000 trees depth 6",
                                                 "bandwidth_fraction"),
           fmt="{:.2f}%", scale=100, pages=FAST_SCORING),  # the largest of the models'
    *[Figure(text, f"predict_gpu-h100-{run}-2026-11-24.json", f"xgboost {n} trees depth 6, 1M",
             field="speedup", fmt="{:.1f}x" if text == "2.3x" else "{:.2f}x",
             pages=FAST_SCORING)
      for text, run, n in (("2.96x", "63ffd52", 1000), ("2.39x", "63ffd52", 5000),
                           ("2.24x", "63ffd52", 20000), ("2.3x", "ilp1", 1000),
                           ("2.96x", "1a76901", 1000), ("3.57x", "af3130f", 1000),
                           ("3.37x", "af3130f", 5000), ("2.71x", "af3130f", 20000))],
]


def _load(result):
    return json.loads((ROOT / "benchmarks" / "results" / result).read_text())


def _value(figure):
    doc = _load(figure.result)

    def at(path, value=doc):
        for key in path:
            value = value[key]
        return value

    if figure.path is not None:
        value = at(figure.path)
        if isinstance(value, str):
            return value
        value = figure.reduce(value) if figure.reduce else value
        peer_doc = _load(figure.peer_result) if figure.peer_result else doc
        value = at(figure.peer_path, peer_doc) / value if figure.peer_path else value
        value = value - at(figure.minus_path) if figure.minus_path else value
        return value * figure.scale
    rows = [r for r in doc["rows"] if figure.case in r["case"]
            and figure.unit in (None, r.get("unit"))
            and figure.peer_name in (None, r.get("peer_name"))
            and figure.metric in (None, r.get("metric"))]
    assert rows, f"{figure.result} has no row for {figure.case!r}"
    row = rows[0]  # the first matching row: the measurement the page quotes
    value = row["peer"] / row["skltr"] if figure.field == "speedup" else row[figure.field]
    return value * figure.scale


def _is_table(paragraph):
    """A simple or grid table, a list-table directive, or list-table rows."""
    return TABLE.match(paragraph.lstrip("\n")) is not None


def _is_list(paragraph):
    """Items of a bulleted list, or their indented continuation."""
    return re.match(r"\n*(?:[*-] |  )", paragraph) is not None


def _blocks(text):
    """A page's paragraphs, and the rows of its list-tables apart, each with the result files
    it cites: those written in it and, for a table (a whole simple table, a list-table row)
    or a bulleted list introduced by a paragraph ending with a colon, also those of that
    paragraph (the last one before the table / list that is neither)."""
    blocks, intro_cites, intro_colon = [], [], False
    for paragraph in re.split(r"\n\s*\n", text):
        follows = _is_table(paragraph) or (_is_list(paragraph) and intro_colon)
        if not follows:
            intro_cites = RESULT.findall(paragraph)
            intro_colon = paragraph.rstrip().endswith(":")
        inherited = intro_cites if follows else []
        blocks += [(row, set(RESULT.findall(row)) | set(inherited))
                   for row in re.split(r"\n   \* - ", paragraph)]
    return [(block, {Path(c).name for c in cited}) for block, cited in blocks]


def _figures_with_a_unit(block):
    """``["2.5x", "1.8x", "93.9s", ...]``: each number with a unit, spaces dropped."""
    found = []
    for match in FIGURE_WITH_UNIT.finditer(block):
        unit = match.group(2).strip()
        found += [number + unit for number in re.split(r"\s*/\s*|\s+vs\s+|-", match.group(1))]
    return found


def _written(text, block):
    """``text`` is written in ``block``: as a figure with a unit, or as a whole number."""
    return (text.replace(" ", "") in _figures_with_a_unit(block)
            or re.search(rf"(?<![\w.]){re.escape(text)}(?![\w])", block) is not None)


def _scanned_blocks(page):
    """Every paragraph, table row and list item of the page: all are scanned."""
    return _blocks((ROOT / page).read_text(encoding="utf-8"))


def test_every_cited_result_file_exists():
    missing = [(page.relative_to(ROOT), path) for page in PAGES
               for path in RESULT.findall(page.read_text(encoding="utf-8"))
               if not (ROOT / path).is_file()]
    assert not missing, missing


@pytest.mark.parametrize("figure", FIGURES,
                         ids=[f"{f.text} {f.case or f.path[-1]} {f.result}" for f in FIGURES])
def test_figure_equals_its_result_file(figure):
    value = _value(figure)
    if isinstance(value, str):  # a note's text: the figure is written there as on the page
        assert figure.text.split(" ")[0] in value, f"{figure.result}: {value!r}"
    else:
        assert figure.fmt.format(value) == figure.text, (
            f"{figure.result} now says {figure.fmt.format(value)}, the pages {figure.text}")
    files = {figure.result, figure.peer_result} - {None}
    for page in figure.pages:
        # the figure and its file(s) on one line or within one paragraph / table row
        assert any(_written(figure.text, block) and files <= cited
                   for block, cited in _blocks((ROOT / page).read_text(encoding="utf-8"))), (
            f"{page} does not quote {figure.text} next to {figure.result}")


@pytest.mark.parametrize("page", [p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_figure_with_a_unit_is_checked(page):
    figures = [f for f in FIGURES if page in f.pages]
    unchecked = [(text, block.strip()[:80]) for block, cited in _scanned_blocks(page)
                 for text in _figures_with_a_unit(block)
                 if (page, text) not in NOT_MEASURED
                 and not any(f.text.replace(" ", "") == text and f.result in cited
                             for f in figures)]
    assert not unchecked, (
        f"{page}: figures without an entry in FIGURES (read from a result file cited in the "
        f"same paragraph / table row) or NOT_MEASURED: {unchecked}")


def test_every_not_measured_entry_is_on_its_page():
    """The allow-list holds no entry its page no longer writes (a stale excuse would let a
    later measurement with the same text through unchecked)."""
    stale = [(page, text) for page, text in NOT_MEASURED
             if not any(text in _figures_with_a_unit(block) for block, _ in _scanned_blocks(page))]
    assert not stale, stale
