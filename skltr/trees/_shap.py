"""Exact path-dependent TreeSHAP for every ``TreeEnsemble``: the host driver.

``predict_contribs`` and ``predict_interactions`` read ``X`` as ``predict_raw`` does (input
rule, DataFrame rule, sparse blocks), build the ensemble's root-to-leaf paths once
(:func:`skltr._cpu.treeshap.build_paths`, cached per ensemble; for the CPU's contributions
also their per-pattern tables, :func:`shap_tables`) and run the CPU kernels, or the
CUDA ones registered by :mod:`skltr._gpu.treeshap` (a layer above this one, imported by name
when a GPU is asked for). Outputs follow XGBoost's ``pred_contribs`` / ``pred_interactions``
layout: one column per feature and the expected value (base score included) last.
"""

from __future__ import annotations

import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import import_module

import numpy as np

from .._records import routing
from ..utils._threads import numba_threads, resolve_n_jobs
from ._input import model_input
from ._sparse_input import is_sparse, map_row_chunks

__all__ = ["ShapPaths", "shap_paths", "ShapTables", "shap_tables", "predict_contribs",
           "predict_interactions", "check_explainable", "register_gpu", "NO_COVER_MESSAGE"]

NO_COVER_MESSAGE = (
    "this model has no cover statistics (the training weight of each tree node: hessian sums "
    "or row counts), which TreeSHAP needs to weigh the branches an explanation does not "
    "take. Models fitted or converted by skltr before schema 1.3 lack them: refit the ranker "
    "with this version of skltr, or convert the source XGBoost / LightGBM / scikit-learn "
    "model again (skltr.convert.to_tree_ensemble), which reads its covers.")



@dataclass(frozen=True)
class ShapPaths:
    """The root-to-leaf paths of an ensemble (see :mod:`skltr._cpu.treeshap`) and each
    output's expected value."""

    tree_path_ptr: np.ndarray
    path_ptr: np.ndarray
    path_value: np.ndarray
    path_output: np.ndarray
    path_zero: np.ndarray
    path_leaf: np.ndarray
    elem_feature: np.ndarray
    elem_zero: np.ndarray
    elem_cond_ptr: np.ndarray
    cond_node: np.ndarray
    cond_left: np.ndarray
    max_elems: int
    max_nodes: int
    bias: np.ndarray  # (n_outputs,): base score + expected value of the trees

    def kernel_args(self):
        return (self.tree_path_ptr, self.path_ptr, self.path_value, self.path_output,
                self.elem_feature, self.elem_zero, self.elem_cond_ptr, self.cond_node,
                self.cond_left, self.max_elems, self.max_nodes)


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_GPU = {}


def register_gpu(contribs, interactions) -> None:
    """Called by :mod:`skltr._gpu.treeshap` on import: its two entry points."""
    _GPU["contribs"], _GPU["interactions"] = contribs, interactions


def check_explainable(ensemble) -> None:
    """Raise a ValueError saying why ``ensemble`` cannot be explained, if it cannot."""
    if getattr(ensemble, "cover", None) is None:
        raise ValueError(NO_COVER_MESSAGE)


def shap_paths(ensemble) -> ShapPaths:
    """The :class:`ShapPaths` of ``ensemble``, built once per ensemble and cover array."""
    from .._cpu.treeshap import build_paths  # noqa: PLC0415 - numba on use

    check_explainable(ensemble)
    e = ensemble
    key = (id(e.cover), id(e.value), id(e.left), id(e.tree_weight), e.cover.size)
    hit = _CACHE.get(e)
    if hit is not None and hit[0] == key:
        return hit[1]
    scale = np.asarray(e.tree_weight, dtype=np.float64).copy()
    if e.average_output:
        counts = np.bincount(e.tree_output, minlength=e.n_outputs).astype(np.float64)
        scale /= np.maximum(counts, 1.0)[e.tree_output]
    (tree_path_ptr, path_ptr, path_value, path_output, path_zero, path_leaf, elem_feature,
     elem_zero, elem_cond_ptr, cond_node, cond_left, max_elems) = build_paths(
        e.tree_ptr, e.feature, e.left, e.right, e.cover, e.value, scale, e.tree_output)
    bias = np.asarray(e.base_score, dtype=np.float64).copy()
    np.add.at(bias, path_output, path_value * path_zero)
    sizes = np.diff(e.tree_ptr)
    paths = ShapPaths(tree_path_ptr, path_ptr, path_value, path_output, path_zero, path_leaf,
                      elem_feature, elem_zero, elem_cond_ptr, cond_node, cond_left,
                      int(max_elems), int(sizes.max()) if sizes.size else 1, bias)
    _CACHE[e] = (key, paths)
    return paths


#: the most memory the CPU's pattern tables of one ensemble may take, in bytes: 1,000 trees
#: of depth 6 take ~100 MB; 100 LightGBM trees of 255 leaves would take 400 MB for their
#: paths of up to 10 elements (10% faster than up to 9, 160 MB, on the 2-core machine)
TABLE_BYTES = 256 * 2**20
#: the longest path (distinct features) given a table: ``2**k`` patterns of ``k`` float64
TABLE_MAX_K = 12
#: the tables of a block of trees, which a thread's rows read while they stay in its core's
#: cache (2 MB of L2 a core on the 16-core Intel host, 1 MB on the 2-core AMD machine)
BLOCK_BYTES = 2**20
#: the most rows a thread takes at a time: each block's tables are read once per chunk of
#: rows (from memory), the rows' inputs and values once per block (from L2 or L3). On the
#: 2-core machine 1,024 rows took 0.92 s of CPU where 256 took 1.12 s (1,000 depth-6 trees)
ROW_CHUNK = 1024
#: the fewest rows a thread takes (each chunk reads the tables of every tree: a few rows are
#: not worth a thread)
ROW_CHUNK_MIN = 64
#: rows an ensemble explains, over its calls, per pattern of a table before the table is
#: built: a path of ``k`` elements gets one once ``2**k`` rows have been explained, as its
#: ``2**k`` outcomes cost about what that many rows cost row by row (1,000 depth-6 trees: 64
#: rows, 0.3 s of CPU, 4 ms a row without the tables; a LightGBM path of 12 elements: 4,096)
TABLE_ROWS_PER_PATTERN = 1

_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_ROWS_SEEN: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class ShapTables:
    """The CPU contributions kernel's per-pattern tables and tree blocks (see
    :mod:`skltr._cpu.treeshap`): ``table_off[p]`` is -1 for a path computed row by row."""

    node_bit: np.ndarray
    node_order: np.ndarray
    table_off: np.ndarray
    table: np.ndarray
    block_ptr: np.ndarray
    block_table: np.ndarray

    def kernel_args(self, ensemble, paths: ShapPaths):
        return (ensemble.right, paths.path_leaf, self.node_bit, self.node_order,
                self.table_off, self.table, self.block_ptr, self.block_table)


def _table_sizes(k: np.ndarray, max_k: int) -> np.ndarray:
    """The table size, in float64, of each path of ``k`` elements: ``2**k * k`` for ``1 <= k
    <= max_k``, 0 for the paths left row by row."""
    return np.where((k >= 1) & (k <= max_k), k << np.minimum(k, max_k), 0)


def _table_max_k(paths: ShapPaths, seen: int) -> int:
    """The longest paths given tables once the ensemble has explained ``seen`` rows: at most
    :data:`TABLE_MAX_K`, ``2**k`` patterns for :data:`TABLE_ROWS_PER_PATTERN` rows each, and
    tables within :data:`TABLE_BYTES` (deep LightGBM trees: their longest paths, whose tables
    would not fit in a cache either, stay row by row)."""
    k = np.diff(paths.path_ptr)
    limit = min(TABLE_MAX_K, paths.max_elems)
    if TABLE_ROWS_PER_PATTERN > 0:
        limit = min(limit, int(seen / TABLE_ROWS_PER_PATTERN).bit_length() - 1)
    for max_k in range(limit, 0, -1):
        if 8 * int(_table_sizes(k, max_k).sum()) <= TABLE_BYTES:
            return max_k
    return 0


def _fill_tables(paths: ShapPaths, sizes, table_off, table, n_threads: int) -> None:
    """Compute the tables (:func:`skltr._cpu.treeshap.fill_tables`) in ``n_threads`` threads,
    each range of paths about the same share of the tables (the long paths' dominate)."""
    from .._cpu.treeshap import fill_tables  # noqa: PLC0415 - numba on use

    p, n_paths = paths, sizes.size
    edges = np.searchsorted(np.cumsum(sizes), np.linspace(0, sizes.sum(), 4 * n_threads + 1))
    bounds = np.unique(np.concatenate(([0], np.minimum(edges + 1, n_paths), [n_paths])))
    in_threads(lambda ab: fill_tables(ab[0], ab[1], p.path_ptr, p.path_value, p.elem_zero,
                                      table_off, max(p.max_elems, 1), table),
               list(zip(bounds[:-1], bounds[1:])), n_threads)


def _tree_blocks(paths: ShapPaths, sizes: np.ndarray) -> np.ndarray:
    """``block_ptr``: consecutive trees whose tables take about :data:`BLOCK_BYTES` (a tree
    larger than that stays alone in its block); trees without tables ride along free."""
    before = np.concatenate(([0], np.cumsum(sizes)))[paths.tree_path_ptr[:-1]]
    block = before * 8 // max(BLOCK_BYTES, 1)
    starts = np.flatnonzero(np.diff(block)) + 1
    return np.concatenate(([0], starts, [block.size])).astype(np.int64)


def shap_tables(ensemble, paths: ShapPaths, n_threads: int = 1, n_rows: int = 0) -> ShapTables:
    """The :class:`ShapTables` of ``ensemble`` for a call explaining ``n_rows`` rows, cached
    per ensemble, paths and settings, as users explain a model again and again. The tables
    grow with the rows the ensemble has explained (:data:`TABLE_ROWS_PER_PATTERN`): a few
    rows once would pay for tables they do not use. Filled in ``n_threads`` threads."""
    from .._cpu.treeshap import pattern_layout  # noqa: PLC0415 - numba on use

    seen = _ROWS_SEEN[ensemble] = _ROWS_SEEN.get(ensemble, 0) + n_rows
    key = (_table_max_k(paths, seen), BLOCK_BYTES)
    hit = _TABLES.get(ensemble)
    if hit is not None and hit[0] is paths and hit[1] == key:
        return hit[2]
    e, p = ensemble, paths
    node_bit, node_order = pattern_layout(e.tree_ptr, e.left, e.right, p.tree_path_ptr,
                                          p.path_ptr, p.elem_cond_ptr, p.cond_node)
    sizes = _table_sizes(np.diff(p.path_ptr), key[0])
    table_off = np.where(sizes > 0, np.cumsum(sizes) - sizes, -1).astype(np.int64)
    table = np.zeros(max(int(sizes.sum()), 1), np.float64)
    if sizes.any():
        _fill_tables(p, sizes, table_off, table, n_threads)
    block_ptr = _tree_blocks(p, sizes)
    block_table = np.concatenate(([0], np.cumsum(sizes)))[p.tree_path_ptr[block_ptr]]
    tables = ShapTables(node_bit, node_order, table_off, table, block_ptr, block_table)
    _TABLES[e] = (paths, key, tables)
    return tables


def in_threads(fn, items, n_threads: int) -> None:
    """``fn(item)`` for each item, in up to ``n_threads`` threads (the CPU kernels called
    this way release the GIL)."""
    n_threads = min(n_threads, len(items))
    if n_threads <= 1:
        for item in items:
            fn(item)
        return
    with ThreadPoolExecutor(n_threads) as pool:
        list(pool.map(fn, items))


def row_chunk(n_rows: int, n_threads: int) -> int:
    """Rows a thread takes at a time: at most :data:`ROW_CHUNK`, and the same number of
    chunks for every thread (71 chunks on 16 threads would leave the threads with five to do
    idle while those with four wait), but at least :data:`ROW_CHUNK_MIN`."""
    per_thread = -(-n_rows // (n_threads * ROW_CHUNK))
    return max(1, min(n_rows, ROW_CHUNK_MIN), -(-n_rows // (n_threads * per_thread)))


def _device_kind(device) -> tuple[str, int]:
    from .._device import resolve_device  # noqa: PLC0415

    d = resolve_device(device)
    return d.kind, d.index


def _gpu_entry(name):
    # skltr._gpu sits above this layer (it imports CuPy): load it by name on request, as the
    # front-ends load the GPU scoring backends.
    import_module("skltr._gpu.treeshap")
    return _GPU[name]


def _shape(out, n_outputs):
    return out[:, 0] if n_outputs == 1 else out


def predict_contribs(ensemble, X, *, device="cpu", n_jobs=None) -> np.ndarray:
    """See :meth:`skltr.trees.TreeEnsemble.predict_contribs`."""
    return _explain("contribs", ensemble, X, device, n_jobs)


def predict_interactions(ensemble, X, *, device="cpu", n_jobs=None) -> np.ndarray:
    """See :meth:`skltr.trees.TreeEnsemble.predict_interactions`."""
    return _explain("interactions", ensemble, X, device, n_jobs)


def _explain(what, ensemble, X, device, n_jobs):
    """SHAP values (``what="contribs"``) or interaction values of ``X``: the checks, the
    device and the sparse row blocks are the same for both, the kernel and the output's
    shape differ."""
    check_explainable(ensemble)
    kind, index = _device_kind(device)
    if kind == "cuda":
        return _gpu_entry(what)(ensemble, X, device_index=index)
    if is_sparse(X):
        return map_row_chunks(ensemble, X, lambda rows: _explain(what, ensemble, rows,
                                                                 "cpu", n_jobs))
    X = model_input(ensemble, X)
    e, paths = ensemble, shap_paths(ensemble)
    nf1 = e.n_features + 1
    interactions = what == "interactions"
    shape = (X.shape[0], e.n_outputs) + ((nf1, nf1) if interactions else (nf1,))
    out = np.zeros(shape, dtype=np.float64)
    if X.shape[0]:
        from .._cpu import treeshap  # noqa: PLC0415

        r = routing(e)
        model = (e.tree_ptr, e.feature, e.threshold, e.left, e.flags, e.cat_offset,
                 e.cat_nwords, e.cat_bitsets, r.strict, r.f32_inputs, r.missing_value,
                 r.has_sentinel, *paths.kernel_args())
        if interactions:  # the expected value on the diagonal's last cell
            with numba_threads(n_jobs):
                treeshap.treeshap_interactions(X, *model, paths.bias, out)
        else:
            n_threads = resolve_n_jobs(n_jobs)
            tables = shap_tables(e, paths, n_threads, X.shape[0])
            n, chunk = X.shape[0], row_chunk(X.shape[0], n_threads)
            in_threads(lambda r0: treeshap.treeshap_contribs(
                X, r0, min(r0 + chunk, n), *model, *tables.kernel_args(e, paths), out),
                range(0, n, chunk), n_threads)
    if not interactions:
        out[:, :, -1] += paths.bias
    return _shape(out, e.n_outputs)
