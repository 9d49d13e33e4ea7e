"""TreeEnsemble -> ONNX: one ``ai.onnx.ml`` ``TreeEnsembleRegressor`` (opset 3) with thresholds,
leaf values and base scores as tensors of the input's type, read by ONNX Runtime.

ONNX Runtime compares in the input's type. float32 input: float32 thresholds and
``BRANCH_LT`` (:func:`~skltr.trees._export_common.float32_lt_thresholds`); double input:
double thresholds and ``BRANCH_LEQ`` (:func:`~skltr.trees._export_common.double_le_thresholds`).
Either way every input of that type is routed as skltr routes it; NaN follows
``nodes_missing_value_tracks_true`` (see ``node_default_left``). The output is float32 and the
base score is added after the trees: scores equal skltr's within float32 rounding and ONNX
Runtime's summation order (the tests report the largest difference). Categorical splits have
no counterpart in this operator (``BRANCH_EQ`` tests one value): such models are refused.
Output transforms become standard operators (Sigmoid, Softmax, Exp) in float32.
"""

from __future__ import annotations

import numpy as np

from .._dtypes import NodeFlags
from ._export_common import (ExportError, write_file, categorical_sides,
                             check_category_sets_nonempty, check_exportable,
                             double_le_thresholds, float32_lt_thresholds, folded_copy,
                             node_categories, node_default_left)

__all__ = ["onnx_model", "to_onnx"]

_TARGET = "ONNX"
#: output transform -> the standard ONNX operator applied to the raw scores
_TRANSFORMS = {"identity": None, "sigmoid": "Sigmoid", "xgb_sigmoid": "Sigmoid", "exp": "Exp",
               "xgb_exp": "Exp", "sklearn_exp": "Exp", "softmax": "Softmax",
               "xgb_softmax": "Softmax", "sklearn_softmax": "Softmax"}


def _import_onnx():
    try:
        import onnx  # noqa: PLC0415 - optional dependency
    except ImportError as exc:
        raise ImportError("export to ONNX needs the onnx package: pip install onnx (or, from "
                          "a clone of skltr, pip install \".[export-onnx]\").") from exc
    return onnx


def onnx_model(ens, *, input_type="float32", raw_score=False, ml_opset=None):
    """The ``onnx.ModelProto`` of ``ens``: input ``X`` (n, n_features) of ``input_type``,
    output ``Y`` (n, n_outputs) -- raw scores when ``raw_score``, else with the ensemble's
    output transform as standard ONNX operators (Sigmoid, with a Mul for a scale; Softmax;
    Exp).

    ``ml_opset=3``: ``TreeEnsembleRegressor`` (the widely supported operator; float32 output,
    no categorical splits). ``ml_opset=5``: ``TreeEnsemble`` (tested with onnx 1.23 and ONNX
    Runtime 1.32): output in the input's type, categorical splits as ``BRANCH_MEMBER`` sets.
    Default: 3, or 5 when the model has categorical splits.
    """
    if input_type not in ("float32", "float64"):
        raise ValueError(f"input_type={input_type!r}; expected 'float32' or 'float64'.")
    has_cat = bool(np.any((ens.left >= 0) & ((ens.flags & NodeFlags.CATEGORICAL) != 0)))
    if ml_opset is None:
        ml_opset = 5 if has_cat else 3
    if ml_opset not in (3, 5):
        raise ValueError(f"ml_opset={ml_opset!r}; expected 3 (TreeEnsembleRegressor) or 5 "
                         f"(TreeEnsemble).")
    target = f"{_TARGET} (ai.onnx.ml opset {ml_opset})"
    check_exportable(ens, target, categorical=ml_opset == 5)
    check_category_sets_nonempty(ens, target)
    tr = "identity" if raw_score else ens.output_transform
    if tr not in _TRANSFORMS:
        raise ExportError(target, f"the output transform {ens.output_transform!r} has no "
                                  f"ONNX operator here; export raw scores (raw_score=True).")
    onnx = _import_onnx()
    from onnx import TensorProto, helper  # noqa: PLC0415 - optional dependency

    f32 = input_type == "float32"
    prepared = folded_copy(ens, target, fold_base=ml_opset == 5, float32=f32 and ml_opset == 5,
                           every_output_a_tree=True)
    if f32:  # ONNX Runtime compares in the input's type
        thr = float32_lt_thresholds(prepared)
        dleft = node_default_left(prepared, target, lambda x: x.astype(np.float32) < thr)
    else:
        thr = double_le_thresholds(prepared)
        dleft = node_default_left(prepared, target, lambda x: x <= thr)
    elem = TensorProto.FLOAT if f32 else TensorProto.DOUBLE
    if ml_opset == 3:
        node = _regressor_v3(prepared, thr, dleft, f32, elem, helper)
        out_elem = TensorProto.FLOAT
    else:
        node = _tree_ensemble_v5(prepared, thr, dleft, f32, elem, helper)
        out_elem = elem
    nodes, inits = [node], []
    op = _TRANSFORMS[tr]
    scale = float(ens.transform_params.get("scale", 1.0))
    if op is None:
        node.output[0] = "Y"
    elif op == "Sigmoid" and tr == "sigmoid" and scale != 1.0:
        inits.append(helper.make_tensor("scale", out_elem, [], [scale]))
        nodes.append(helper.make_node("Mul", ["raw", "scale"], ["scaled"]))
        nodes.append(helper.make_node("Sigmoid", ["scaled"], ["Y"]))
    elif op == "Softmax":
        nodes.append(helper.make_node("Softmax", ["raw"], ["Y"], axis=-1))
    else:
        nodes.append(helper.make_node(op, ["raw"], ["Y"]))
    graph = helper.make_graph(
        nodes, "skltr_tree_ensemble",
        [helper.make_tensor_value_info("X", elem, [None, prepared.n_features])],
        [helper.make_tensor_value_info("Y", out_elem, [None, prepared.n_outputs])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17 if ml_opset == 3 else 21),
        helper.make_opsetid("ai.onnx.ml", ml_opset)], producer_name="skltr")
    model.ir_version = min(model.ir_version, 9 if ml_opset == 3 else 10)
    onnx.checker.check_model(model)
    return model


def _regressor_v3(prepared, thr, dleft, f32, elem, helper):
    tree_of = np.repeat(np.arange(prepared.n_trees), np.diff(prepared.tree_ptr))
    local = np.arange(prepared.n_nodes) - prepared.tree_ptr[tree_of]
    leaf = prepared.left < 0
    branch = "BRANCH_LT" if f32 else "BRANCH_LEQ"
    dtype = np.float32 if f32 else np.float64
    return helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["raw"], domain="ai.onnx.ml",
        nodes_values_as_tensor=helper.make_tensor("nodes_values", elem, [prepared.n_nodes],
                                                  thr.astype(dtype).tolist()),
        target_weights_as_tensor=helper.make_tensor(
            "target_weights", elem, [int(leaf.sum())], prepared.value[leaf].astype(dtype)
            .tolist()),
        base_values_as_tensor=helper.make_tensor(
            "base_values", elem, [prepared.n_outputs],
            prepared.base_score.astype(dtype).tolist()),
        nodes_treeids=tree_of.tolist(),
        nodes_nodeids=local.tolist(),
        nodes_featureids=np.where(leaf, 0, prepared.feature).tolist(),
        nodes_modes=np.where(leaf, "LEAF", branch).tolist(),
        nodes_truenodeids=np.where(leaf, 0, prepared.left).tolist(),
        nodes_falsenodeids=np.where(leaf, 0, prepared.right).tolist(),
        nodes_missing_value_tracks_true=dleft.astype(int).tolist(),
        target_treeids=tree_of[leaf].tolist(),
        target_nodeids=local[leaf].tolist(),
        target_ids=prepared.tree_output[tree_of[leaf]].tolist(),
        n_targets=prepared.n_outputs,
        aggregate_function="SUM",
        post_transform="NONE")


# ai.onnx.ml opset 5 TreeEnsemble node modes
_LEQ, _LT, _MEMBER = 0, 1, 6


def _tree_ensemble_v5(prepared, thr, dleft, f32, elem, helper):
    """Interior nodes and leaves in separate arrays; a child is a node or (``*_leafs``) a
    leaf index; category sets are runs of ``membership_values`` ended by NaN."""
    leaf = prepared.left < 0
    tree_of = np.repeat(np.arange(prepared.n_trees), np.diff(prepared.tree_ptr))
    interior_id = np.cumsum(~leaf) - 1
    leaf_id = np.cumsum(leaf) - 1
    modes, splits, feats, tracks, members = [], [], [], [], []
    t_ids, t_leaf, f_ids, f_leaf = [], [], [], []
    for g in np.flatnonzero(~leaf):
        start = prepared.tree_ptr[tree_of[g]]
        left, right = start + prepared.left[g], start + prepared.right[g]
        if prepared.flags[g] & NodeFlags.CATEGORICAL:
            in_set, other, nan_in = categorical_sides(prepared, g)
            left, right = start + in_set, start + other  # true branch: in the set
            modes.append(_MEMBER)
            splits.append(float("nan"))
            members += [float(c) for c in node_categories(prepared, g)] + [float("nan")]
            tracks.append(int(nan_in))
        else:
            modes.append(_LT if f32 else _LEQ)
            splits.append(float(thr[g]))
            tracks.append(int(dleft[g]))
        feats.append(int(prepared.feature[g]))
        for child, ids, is_leaf in ((left, t_ids, t_leaf), (right, f_ids, f_leaf)):
            is_leaf.append(int(leaf[child]))
            ids.append(int(leaf_id[child] if leaf[child] else interior_id[child]))
    # a tree that is one leaf: an always-true split on feature 0 with both sides that leaf
    roots = []
    for t in range(prepared.n_trees):
        root = prepared.tree_ptr[t]
        if leaf[root]:
            roots.append(len(modes))
            modes.append(_LEQ)
            splits.append(0.0)
            feats.append(0)
            tracks.append(1)
            t_ids.append(int(leaf_id[root]))
            f_ids.append(int(leaf_id[root]))
            t_leaf.append(1)
            f_leaf.append(1)
        else:
            roots.append(int(interior_id[root]))
    dtype = np.float32 if f32 else np.float64
    kw = {}
    if members:
        kw["membership_values"] = helper.make_tensor("membership_values", elem, [len(members)],
                                                     members)
    return helper.make_node(
        "TreeEnsemble", ["X"], ["raw"], domain="ai.onnx.ml",
        n_targets=prepared.n_outputs, aggregate_function=1, post_transform=0,
        tree_roots=roots,
        nodes_modes=helper.make_tensor("nodes_modes", 2, [len(modes)], modes),  # UINT8
        nodes_featureids=feats,
        nodes_splits=helper.make_tensor("nodes_splits", elem, [len(splits)],
                                        np.asarray(splits, dtype=dtype).tolist()),
        nodes_truenodeids=t_ids, nodes_trueleafs=t_leaf,
        nodes_falsenodeids=f_ids, nodes_falseleafs=f_leaf,
        nodes_missing_value_tracks_true=tracks,
        leaf_targetids=prepared.tree_output[tree_of[leaf]].tolist(),
        leaf_weights=helper.make_tensor("leaf_weights", elem, [int(leaf.sum())],
                                        prepared.value[leaf].astype(dtype).tolist()),
        **kw)


def to_onnx(ens, path=None, *, input_type="float32", raw_score=False, ml_opset=None):
    """The ONNX model of ``ens`` (see :func:`onnx_model`), written to ``path`` when given."""
    model = onnx_model(ens, input_type=input_type, raw_score=raw_score, ml_opset=ml_opset)
    if path is not None:
        write_file(path, model.SerializeToString())
    return model
