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

from ._export_common import (ExportError, atomic_write, check_exportable,
                             double_le_thresholds, float32_lt_thresholds, folded_copy,
                             node_default_left)

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
        raise ImportError("export to ONNX needs the onnx package: pip install "
                          "'skltr[export-onnx]' (or pip install onnx).") from exc
    return onnx


def onnx_model(ens, *, input_type="float32", raw_score=False):
    """The ``onnx.ModelProto`` of ``ens``: input ``X`` (n, n_features) of ``input_type``,
    output ``Y`` (n, n_outputs) float32 -- raw scores when ``raw_score``, else with the
    ensemble's output transform as standard ONNX operators (Sigmoid, with a Mul for a
    scale; Softmax; Exp) computed in float32."""
    if input_type not in ("float32", "float64"):
        raise ValueError(f"input_type={input_type!r}; expected 'float32' or 'float64'.")
    check_exportable(ens, _TARGET, categorical=False)
    tr = "identity" if raw_score else ens.output_transform
    if tr not in _TRANSFORMS:
        raise ExportError(_TARGET, f"the output transform {ens.output_transform!r} has no "
                                   f"ONNX operator here; export raw scores (raw_score=True).")
    op = _TRANSFORMS[tr]
    onnx = _import_onnx()
    from onnx import TensorProto, helper  # noqa: PLC0415 - optional dependency

    prepared = folded_copy(ens, fold_base=False, float32=False, every_output_a_tree=True)
    if input_type == "float32":  # ONNX Runtime compares in the input's type
        thr = float32_lt_thresholds(prepared)
        dleft = node_default_left(prepared, _TARGET, lambda x: x.astype(np.float32) < thr)
        branch, tensor_type = "BRANCH_LT", TensorProto.FLOAT
    else:
        thr = double_le_thresholds(prepared)
        dleft = node_default_left(prepared, _TARGET, lambda x: x <= thr)
        branch, tensor_type = "BRANCH_LEQ", TensorProto.DOUBLE
    tree_of = np.repeat(np.arange(prepared.n_trees), np.diff(prepared.tree_ptr))
    local = np.arange(prepared.n_nodes) - prepared.tree_ptr[tree_of]
    leaf = prepared.left < 0
    modes = np.where(leaf, "LEAF", branch).tolist()
    attrs = dict(
        nodes_treeids=tree_of.tolist(),
        nodes_nodeids=local.tolist(),
        nodes_featureids=np.where(leaf, 0, prepared.feature).tolist(),
        nodes_modes=modes,
        nodes_truenodeids=np.where(leaf, 0, prepared.left).tolist(),
        nodes_falsenodeids=np.where(leaf, 0, prepared.right).tolist(),
        nodes_missing_value_tracks_true=dleft.astype(int).tolist(),
        target_treeids=tree_of[leaf].tolist(),
        target_nodeids=local[leaf].tolist(),
        target_ids=prepared.tree_output[tree_of[leaf]].tolist(),
        n_targets=prepared.n_outputs,
        aggregate_function="SUM",
        post_transform="NONE",
    )
    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["Y" if op is None else "raw"], domain="ai.onnx.ml",
        nodes_values_as_tensor=helper.make_tensor(
            "nodes_values", tensor_type, [prepared.n_nodes], thr.tolist()),
        target_weights_as_tensor=helper.make_tensor(
            "target_weights", tensor_type, [int(leaf.sum())],
            prepared.value[leaf].astype(np.float32 if input_type == "float32"
                                        else np.float64).tolist()),
        base_values_as_tensor=helper.make_tensor(
            "base_values", tensor_type, [prepared.n_outputs],
            prepared.base_score.tolist()),
        **attrs)
    nodes, inits = [node], []
    scale = float(ens.transform_params.get("scale", 1.0))
    if op == "Sigmoid" and tr == "sigmoid" and scale != 1.0:
        inits.append(helper.make_tensor("scale", TensorProto.FLOAT, [], [scale]))
        nodes.append(helper.make_node("Mul", ["raw", "scale"], ["scaled"]))
        nodes.append(helper.make_node("Sigmoid", ["scaled"], ["Y"]))
    elif op == "Softmax":
        nodes.append(helper.make_node("Softmax", ["raw"], ["Y"], axis=-1))
    elif op is not None:
        nodes.append(helper.make_node(op, ["raw"], ["Y"]))
    elem = TensorProto.FLOAT if input_type == "float32" else TensorProto.DOUBLE
    graph = helper.make_graph(
        nodes, "skltr_tree_ensemble",
        [helper.make_tensor_value_info("X", elem, [None, prepared.n_features])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, prepared.n_outputs])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 3)],
                              producer_name="skltr")
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model


def to_onnx(ens, path=None, *, input_type="float32", raw_score=False):
    """The ONNX model of ``ens`` (see :func:`onnx_model`), written to ``path`` when given."""
    model = onnx_model(ens, input_type=input_type, raw_score=raw_score)
    if path is not None:
        atomic_write(path, model.SerializeToString())
    return model
