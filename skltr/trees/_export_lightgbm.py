"""TreeEnsemble -> LightGBM: the text model (``Booster.model_to_string()`` /
``save_model``) and the ``Booster.dump_model()`` JSON document that Vespa's ``lightgbm(...)``
rank feature reads.

LightGBM compares in double and goes left when ``x <= t``: a ``"<="`` ensemble keeps its
thresholds, a ``"<"`` one gets the largest double below each threshold
(:func:`~skltr.trees._export_common.double_le_thresholds`). Missing types and default
directions are LightGBM's own encoding (``NodeFlags`` bits 0-3 are its ``decision_type``).
Leaf values are written as the shortest decimal that reads back as the same double, the base
score is added to the first tree of each output (LightGBM has no base score; its
``boost_from_average`` does the same) and trees are summed in double from 0: the exported
model's raw score equals a float64 ensemble's bit for bit.

Categorical nodes: LightGBM sends the set left, NaN and negative values (after truncation
toward zero) right. A node whose set goes right is written with its children swapped; a node
that sends NaN into its set cannot be written.
"""

from __future__ import annotations

import json

import numpy as np

from ._export_common import (ExportError, write_file, categorical_sides, check_exportable,
                             double_le_thresholds, folded_copy, node_categories)

__all__ = ["lightgbm_model", "lightgbm_text", "lightgbm_json", "to_lightgbm"]

_TARGET = "LightGBM"
_MISSING_NAMES = {0: "None", 1: "Zero", 2: "NaN"}


def _objective(ens):
    tr, k = ens.output_transform, ens.n_outputs
    src = ens.source
    if tr == "identity":
        if k > 1:
            return None  # no objective line: LightGBM's predict returns the raw scores
        if src.get("library") == "skltr":
            return "lambdarank"
        if src.get("library") == "lightgbm" and src.get("objective"):
            return str(src["objective"])
        return "regression"
    if tr in ("sigmoid", "xgb_sigmoid") and k == 1:
        scale = float(ens.transform_params.get("scale", 1.0)) if tr == "sigmoid" else 1.0
        return f"binary sigmoid:{scale!r}"
    if tr in ("exp", "xgb_exp", "sklearn_exp") and k == 1:
        return "poisson"
    if tr in ("softmax", "xgb_softmax", "sklearn_softmax"):
        return f"multiclass num_class:{k}"
    raise ExportError(_TARGET, f"the output transform {tr!r} with {k} output(s) has no "
                               f"LightGBM objective. Export the raw scores of a copy with "
                               f"output_transform='identity'.")


def _round_robin(ens):
    """Tree order for LightGBM (tree j adds to class j % K): each output's trees in their
    order, shorter outputs padded with one-leaf zero trees. Returns a list of tree indices,
    -1 for a padding tree."""
    k = ens.n_outputs
    per = [list(np.flatnonzero(ens.tree_output == c)) for c in range(k)]
    n_iter = max((len(p) for p in per), default=0)
    order = []
    for i in range(n_iter):
        for c in range(k):
            order.append(int(per[c][i]) if i < len(per[c]) else -1)
    return order


def _tree(ens, t, thr):
    """One tree as LightGBM's arrays (internal nodes in preorder, leaves left to right)."""
    s = int(ens.tree_ptr[t])
    internal, leaves = [], []
    pending = [0]
    kids = {}
    while pending:  # preorder: internal ids 0.., leaves numbered left to right
        node = pending.pop()
        g = s + node
        if ens.left[g] < 0:
            leaves.append(node)
            continue
        internal.append(node)
        left, right = int(ens.left[g]), int(ens.right[g])
        if ens.flags[g] & 1:
            in_set, other, nan_in = categorical_sides(ens, g)
            if nan_in:
                raise ExportError(_TARGET, ens._where(
                    g, "is categorical and sends NaN into its category set; LightGBM sends "
                       "NaN to the side of the categories not in the set")[:-1] + ".")
            left, right = in_set, other
        kids[node] = (left, right)
        pending += [right, left]
    int_id = {n: i for i, n in enumerate(internal)}
    leaf_id = {n: i for i, n in enumerate(leaves)}

    def child(n):
        return int_id[n] if n in int_id else ~leaf_id[n]

    out = {"num_leaves": len(leaves), "split_feature": [], "threshold": [],
           "decision_type": [], "left_child": [], "right_child": [], "cat_words": [],
           "leaf_value": [float(ens.value[s + n]) for n in leaves], "cat_lists": []}
    for n in internal:
        g = s + n
        left, right = kids[n]
        out["split_feature"].append(int(ens.feature[g]))
        out["left_child"].append(child(left))
        out["right_child"].append(child(right))
        if ens.flags[g] & 1:
            cats = node_categories(ens, g)
            words = np.zeros(int(cats[-1]) // 32 + 1 if cats.size else 1, dtype=np.uint32)
            if cats.size:
                np.bitwise_or.at(words, cats // 32,
                                 (np.uint32(1) << (cats % 32).astype(np.uint32)))
            out["threshold"].append(len(out["cat_words"]))  # index of this node's set
            out["cat_words"].append(words)
            out["cat_lists"].append(cats)
            out["decision_type"].append(1 | (2 << 2))  # categorical, missing type NaN
        else:
            out["threshold"].append(float(thr[g]))
            out["decision_type"].append(int(ens.flags[g]) & 0x0E)
    return out


def lightgbm_model(ens) -> dict:
    """Header fields and per-tree arrays of ``ens`` as LightGBM holds them."""
    check_exportable(ens, _TARGET)
    objective = _objective(ens)
    prepared = folded_copy(ens, _TARGET, fold_base=True, float32=False, every_output_a_tree=True)
    thr = double_le_thresholds(prepared)
    trees = []
    for t in _round_robin(prepared):
        if t < 0:
            trees.append({"num_leaves": 1, "split_feature": [], "threshold": [],
                          "decision_type": [], "left_child": [], "right_child": [],
                          "cat_words": [], "cat_lists": [], "leaf_value": [0.0]})
        else:
            trees.append(_tree(prepared, t, thr))
    names = prepared.feature_names or [f"Column_{i}" for i in range(prepared.n_features)]
    bad = [n for n in names if not n or any(c.isspace() for c in n)]
    if bad:
        raise ExportError(_TARGET, f"feature name {bad[0]!r} is empty or contains white space, "
                                   f"which LightGBM's text format cannot hold.")
    return {"num_class": prepared.n_outputs, "objective": objective, "feature_names": names,
            "trees": trees, "max_feature_idx": prepared.n_features - 1,
            "pandas_categorical": prepared.pandas_categorical}


def _fmt(values) -> str:
    return " ".join(repr(float(v)) if isinstance(v, float) else str(int(v)) for v in values)


def _tree_text(tree) -> str:
    nl = tree["num_leaves"]
    lines = [f"num_leaves={nl}", f"num_cat={len(tree['cat_words'])}"]
    n_int = nl - 1
    lines += [
        "split_feature=" + _fmt(tree["split_feature"]),
        "split_gain=" + " ".join(["0"] * n_int),
        "threshold=" + " ".join(repr(float(v)) if dt & 1 == 0 else str(int(v))
                                for v, dt in zip(tree["threshold"], tree["decision_type"])),
        "decision_type=" + _fmt(tree["decision_type"]),
        "left_child=" + _fmt(tree["left_child"]),
        "right_child=" + _fmt(tree["right_child"]),
        "leaf_value=" + " ".join(repr(float(v)) for v in tree["leaf_value"]),
        "leaf_weight=" + " ".join(["0"] * nl),
        "leaf_count=" + " ".join(["0"] * nl),
        "internal_value=" + " ".join(["0"] * n_int),
        "internal_weight=" + " ".join(["0"] * n_int),
        "internal_count=" + " ".join(["0"] * n_int),
    ]
    if tree["cat_words"]:
        bounds = np.concatenate([[0], np.cumsum([w.size for w in tree["cat_words"]])])
        lines.append("cat_boundaries=" + _fmt(bounds))
        lines.append("cat_threshold=" + _fmt(np.concatenate(tree["cat_words"])))
    lines += ["is_linear=0", "shrinkage=1"]
    return "\n".join(lines) + "\n"


def lightgbm_text(ens) -> str:
    """``ens`` as LightGBM's text model (what ``lightgbm.Booster(model_str=...)`` reads)."""
    m = lightgbm_model(ens)
    blocks = [f"Tree={i}\n" + _tree_text(tree) + "\n\n" for i, tree in enumerate(m["trees"])]
    header = ["tree", "version=v4", f"num_class={m['num_class']}",
              f"num_tree_per_iteration={m['num_class']}", "label_index=0",
              f"max_feature_idx={m['max_feature_idx']}"]
    if m["objective"] is not None:
        header.append(f"objective={m['objective']}")
    header += ["feature_names=" + " ".join(m["feature_names"]),
               "feature_infos=" + " ".join(["none"] * len(m["feature_names"])),
               "tree_sizes=" + " ".join(str(len(b.encode("utf-8"))) for b in blocks)]
    pandas = json.dumps(m["pandas_categorical"]) if m["pandas_categorical"] is not None \
        else "null"
    return ("\n".join(header) + "\n\n" + "".join(blocks) + "end of trees\n\n"
            + "feature_importances:\n\nparameters:\nend of parameters\n\n"
            + f"pandas_categorical:{pandas}\n")


def lightgbm_json(ens) -> dict:
    """``ens`` as LightGBM's ``Booster.dump_model()`` document (read by Vespa)."""
    m = lightgbm_model(ens)
    names = m["feature_names"]
    info = []
    for i, tree in enumerate(m["trees"]):
        def node(c, tree=tree):
            if c < 0:
                leaf = ~c
                return {"leaf_index": leaf, "leaf_value": tree["leaf_value"][leaf],
                        "leaf_weight": 0, "leaf_count": 0}
            dt = tree["decision_type"][c]
            cat = bool(dt & 1)
            thr = ("||".join(str(int(v)) for v in tree["cat_lists"][tree["threshold"][c]])
                   if cat else tree["threshold"][c])
            return {"split_index": c, "split_feature": tree["split_feature"][c],
                    "split_gain": 0, "threshold": thr, "decision_type": "==" if cat else "<=",
                    "default_left": bool(dt & 2), "missing_type": _MISSING_NAMES[(dt >> 2) & 3],
                    "internal_value": 0, "internal_weight": 0, "internal_count": 0,
                    "left_child": node(tree["left_child"][c]),
                    "right_child": node(tree["right_child"][c])}

        root = node(0) if tree["num_leaves"] > 1 else {"leaf_value": tree["leaf_value"][0]}
        info.append({"tree_index": i, "num_leaves": tree["num_leaves"],
                     "num_cat": len(tree["cat_words"]), "shrinkage": 1,
                     "tree_structure": root})
    return {"name": "tree", "version": "v4", "num_class": m["num_class"],
            "num_tree_per_iteration": m["num_class"], "label_index": 0,
            "max_feature_idx": m["max_feature_idx"], "objective": m["objective"] or "custom",
            "average_output": False, "feature_names": names, "monotone_constraints": [],
            "feature_infos": {}, "tree_info": info, "feature_importances": {},
            "pandas_categorical": m["pandas_categorical"]}


def to_lightgbm(ens, path, *, format="text") -> None:
    """Write ``ens`` as a LightGBM text model (``format="text"``) or ``dump_model()`` JSON
    (``format="json"``)."""
    if format == "text":
        data = lightgbm_text(ens)
    elif format == "json":
        data = json.dumps(lightgbm_json(ens))
    else:
        raise ValueError(f"format={format!r}; expected 'text' (LightGBM model file) or 'json' "
                         f"(Booster.dump_model() document).")
    write_file(path, data)
