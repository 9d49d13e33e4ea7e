"""Exact path-dependent TreeSHAP for every ``TreeEnsemble``: the host driver.

``predict_contribs`` and ``predict_interactions`` read ``X`` as ``predict_raw`` does (input
rule, DataFrame rule, sparse blocks), build the ensemble's root-to-leaf paths once
(:func:`skltr._cpu.treeshap.build_paths`, cached per ensemble) and run the CPU kernels, or the
CUDA ones registered by :mod:`skltr._gpu.treeshap` (a layer above this one, imported by name
when a GPU is asked for). Outputs follow XGBoost's ``pred_contribs`` / ``pred_interactions``
layout: one column per feature and the expected value (base score included) last.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from importlib import import_module

import numpy as np

from .._records import routing
from ..utils._threads import numba_threads
from ._input import model_input
from ._sparse_input import is_sparse, map_row_chunks

__all__ = ["ShapPaths", "shap_paths", "predict_contribs", "predict_interactions",
           "check_explainable", "register_gpu", "NO_COVER_MESSAGE"]

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
    (tree_path_ptr, path_ptr, path_value, path_output, path_zero, elem_feature, elem_zero,
     elem_cond_ptr, cond_node, cond_left, max_elems) = build_paths(
        e.tree_ptr, e.feature, e.left, e.right, e.cover, e.value, scale, e.tree_output)
    bias = np.asarray(e.base_score, dtype=np.float64).copy()
    np.add.at(bias, path_output, path_value * path_zero)
    sizes = np.diff(e.tree_ptr)
    paths = ShapPaths(tree_path_ptr, path_ptr, path_value, path_output, path_zero,
                      elem_feature, elem_zero, elem_cond_ptr, cond_node, cond_left,
                      int(max_elems), int(sizes.max()) if sizes.size else 1, bias)
    _CACHE[e] = (key, paths)
    return paths


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
        args = (X, e.tree_ptr, e.feature, e.threshold, e.left, e.flags, e.cat_offset,
                e.cat_nwords, e.cat_bitsets, r.strict, r.f32_inputs, r.missing_value,
                r.has_sentinel, *paths.kernel_args())
        with numba_threads(n_jobs):
            if interactions:  # the expected value on the diagonal's last cell
                treeshap.treeshap_interactions(*args, paths.bias, out)
            else:
                treeshap.treeshap_contribs(*args, out)
    if not interactions:
        out[:, :, -1] += paths.bias
    return _shape(out, e.n_outputs)
