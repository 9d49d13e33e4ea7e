"""TreeEnsemble -> Treelite (>= 4): a ``treelite.Model`` built with ``treelite.model_builder``,
for ``treelite.gtil.predict`` or compilation to C with TL2cgen.

Thresholds are float64 with the ``<=`` operator
(:func:`~skltr.trees._export_common.double_le_thresholds`): Treelite compares a float32 or
float64 input with them in double, so every input is routed as skltr routes it. NaN follows
each node's default direction (``node_default_left``). Leaf values are float64 and the base
score is folded into the first tree of each output (Treelite adds its base scores after the
trees), so that with float64 input ``gtil.predict`` sums exactly as skltr does; with float32
input Treelite accumulates in float32.

Categorical nodes become Treelite category lists (``category_list_right_child`` keeps the
side of the set). Treelite treats negative values and values above 2**24 (float32 input) or
2**32 - 1 (float64 input) as not in the set.
"""

from __future__ import annotations


from ._export_common import (ExportError, categorical_sides, check_exportable,
                             double_le_thresholds, folded_copy, node_categories,
                             node_default_left)

__all__ = ["to_treelite"]

_TARGET = "Treelite"


def _import_treelite():
    try:
        import treelite  # noqa: PLC0415 - optional dependency
        from treelite import model_builder  # noqa: PLC0415, F401
    except ImportError as exc:
        raise ImportError("export to Treelite needs treelite >= 4: pip install treelite "
                          "(and tl2cgen to compile the model to C).") from exc
    return treelite


def _postprocessor(ens, mb):
    tr, k = ens.output_transform, ens.n_outputs
    if tr == "identity":
        return mb.PostProcessorFunc(name="identity"), "kRegressor"
    if tr in ("sigmoid", "xgb_sigmoid") and k == 1:
        alpha = float(ens.transform_params.get("scale", 1.0)) if tr == "sigmoid" else 1.0
        return mb.PostProcessorFunc(name="sigmoid", sigmoid_alpha=alpha), "kBinaryClf"
    if tr in ("exp", "xgb_exp", "sklearn_exp") and k == 1:
        return mb.PostProcessorFunc(name="exponential"), "kRegressor"
    if tr in ("softmax", "xgb_softmax", "sklearn_softmax"):
        return mb.PostProcessorFunc(name="softmax"), "kMultiClf"
    raise ExportError(_TARGET, f"the output transform {tr!r} with {k} output(s) has no "
                               f"Treelite postprocessor.")


def to_treelite(ens):
    """The ``treelite.Model`` of ``ens`` (see the module docstring for exactness)."""
    check_exportable(ens, _TARGET)
    treelite = _import_treelite()
    mb = treelite.model_builder
    post, task = _postprocessor(ens, mb)
    prepared = folded_copy(ens, _TARGET, fold_base=True, float32=False, every_output_a_tree=True)
    thr = double_le_thresholds(prepared)
    dleft = node_default_left(prepared, _TARGET, lambda x: x <= thr)
    k = prepared.n_outputs
    if task == "kMultiClf":
        metadata = mb.Metadata(num_feature=prepared.n_features, task_type=task,
                               average_tree_output=False, num_target=1, num_class=[k],
                               leaf_vector_shape=(1, 1))
        annotation = mb.TreeAnnotation(num_tree=prepared.n_trees,
                                       target_id=[0] * prepared.n_trees,
                                       class_id=prepared.tree_output.tolist())
        base = [0.0] * k
    else:
        metadata = mb.Metadata(num_feature=prepared.n_features, task_type=task,
                               average_tree_output=False, num_target=k, num_class=[1] * k,
                               leaf_vector_shape=(1, 1))
        annotation = mb.TreeAnnotation(num_tree=prepared.n_trees,
                                       target_id=prepared.tree_output.tolist(),
                                       class_id=[0] * prepared.n_trees)
        base = [0.0] * k
    builder = mb.ModelBuilder(threshold_type="float64", leaf_output_type="float64",
                              metadata=metadata, tree_annotation=annotation,
                              postprocessor=post, base_scores=base)
    for t in range(prepared.n_trees):
        s, e = int(prepared.tree_ptr[t]), int(prepared.tree_ptr[t + 1])
        builder.start_tree()
        for node in range(e - s):
            g = s + node
            builder.start_node(node)
            if prepared.left[g] < 0:
                builder.leaf(float(prepared.value[g]))
            elif prepared.flags[g] & 1:
                in_set, other, nan_in = categorical_sides(prepared, g)
                cats = node_categories(prepared, g)
                if cats.size and cats[-1] >= 2**32 - 1:
                    raise ExportError(_TARGET, prepared._where(
                        g, f"has category {int(cats[-1])}; Treelite's categories are "
                           f"below 2**32 - 1")[:-1] + ".")
                left, right = int(prepared.left[g]), int(prepared.right[g])
                builder.categorical_test(
                    int(prepared.feature[g]), default_left=bool(
                        (in_set == left) if nan_in else (other == left)),
                    category_list=[int(c) for c in cats],
                    category_list_right_child=bool(in_set == right),
                    left_child_key=left, right_child_key=right)
            else:
                builder.numerical_test(int(prepared.feature[g]), float(thr[g]),
                                       default_left=bool(dleft[g]), opname="<=",
                                       left_child_key=int(prepared.left[g]),
                                       right_child_key=int(prepared.right[g]))
            builder.end_node()
        builder.end_tree()
    return builder.commit()
