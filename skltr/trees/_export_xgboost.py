"""TreeEnsemble -> XGBoost: the JSON model (``Booster.save_model("m.json")`` schema) and the
JSON dump (``Booster.get_dump(dump_format="json")``) that the OpenSearch / Elasticsearch
Learning-to-Rank plugin and Vespa read.

XGBoost rounds every input to float32 and goes left when ``x < t``; thresholds are rewritten
(:func:`~skltr.trees._export_common.float32_lt_thresholds`) so that every float32 input
takes the path it takes in skltr. Leaf values become float32 and XGBoost sums in float32:
the exported model's raw score is the ensemble's with float32 leaves and a float32
accumulator (bit for bit what ``skltr.convert.from_xgboost`` of the file predicts). A leaf
that leaves float32's range once its tree weight (or a base score) is folded in is refused
(:class:`~skltr.trees._export_common.ExportError`). A ``missing=`` sentinel given to
XGBoost's predict is rounded to float32 there too: a model whose ``missing_value`` is not a
float32 number sees the inputs equal to the rounded sentinel as missing in XGBoost only.

Categorical nodes: XGBoost sends the categories of the set right, so a node whose set goes
left (LightGBM, scikit-learn) is written with its children swapped. XGBoost sends negative
values and values >= 2**24 to the not-in-set side and NaN to the default side.

Nodes are renumbered as XGBoost numbers them (breadth first, siblings on consecutive ids:
:func:`node_order`): XGBoost's CPU predictor takes a numeric node's right child to be
``LeftChild() + 1`` (``GetNextNode`` in ``src/predictor/predict_fn.h``) whatever
``right_children`` says.
"""

from __future__ import annotations

import json
import math

import numpy as np
from numba import njit

from .. import _numba_cache  # noqa: F401 - kernel caches outside the package
from ._input import XGB_CATEGORY_TYPES
from ._export_common import (ExportError, write_file, categorical_sides,
                             check_category_sets_nonempty, check_exportable,
                             float32_lt_thresholds, folded_copy, node_categories,
                             node_default_left)

__all__ = ["to_xgboost", "to_xgboost_dump", "xgboost_document", "xgboost_dump"]

_TARGET = "XGBoost JSON"
_DUMP = "XGBoost JSON dump"
_XGB_VERSION = [3, 0, 0]
_ROOT_PARENT = 2147483647
#: The threshold +inf (every finite float32 left, +inf right; skltr's "missing versus the
#: rest" splits): a decimal above FLT_MAX that float32 parsers read as +inf (XGBoost does),
#: so that the file stays standard JSON.
_ABOVE_FLT_MAX = 3.4028236e+38

# XGBoost objectives by output transform (link of base_score: identity / logit / log).
_IDENTITY_OBJECTIVES = ("reg:squarederror", "reg:linear", "reg:squaredlogerror",
                        "reg:pseudohubererror", "reg:absoluteerror", "reg:quantileerror",
                        "binary:logitraw", "binary:hinge", "rank:pairwise", "rank:ndcg",
                        "rank:map")
_LOG_OBJECTIVES = ("count:poisson", "reg:gamma", "reg:tweedie")


@njit(cache=True)
def _logit_f32(p):
    """XGBoost's LogisticRegression::ProbToMargin in float32 (glibc logf)."""
    return -math.log(np.float32(1.0) / p - np.float32(1.0))


@njit(cache=True)
def _log_f32(p):
    return math.log(p)


def _objective(ens):
    """(objective name, base-score link) for ``ens``'s output transform."""
    tr, src = ens.output_transform, ens.source
    src_obj = src.get("objective") if src.get("library") == "xgboost" else None
    if tr == "identity":
        if src_obj in _IDENTITY_OBJECTIVES:
            return src_obj, "identity"
        if ens.n_outputs == 1 and src.get("library") == "skltr":
            return "rank:ndcg", "identity"
        return "reg:squarederror", "identity"
    scale = float(ens.transform_params.get("scale", 1.0))
    if ens.n_outputs > 1 and not tr.endswith("softmax"):
        raise ExportError(_TARGET, f"the output transform {tr!r} on {ens.n_outputs} outputs "
                                   f"has no XGBoost objective (multi-output XGBoost models "
                                   f"are identity or softmax). Export the raw scores of a "
                                   f"copy with output_transform='identity'.")
    if tr == "xgb_sigmoid" or (tr == "sigmoid" and scale == 1.0):
        if src_obj in ("reg:logistic", "binary:logistic"):
            return src_obj, "logit"
        return "binary:logistic", "logit"
    if tr in ("xgb_exp", "exp", "sklearn_exp"):
        return (src_obj if src_obj in _LOG_OBJECTIVES else "count:poisson"), "log"
    if tr in ("xgb_softmax", "softmax", "sklearn_softmax"):
        return ("multi:softmax" if src_obj == "multi:softmax" else "multi:softprob"), "identity"
    raise ExportError(_TARGET, f"the output transform {tr!r} with parameters "
                               f"{ens.transform_params} has no XGBoost objective. Export the "
                               f"raw scores of a copy with output_transform='identity'.")


def _exact_prob(margin32: np.float32, link: str):
    """A float32 ``p`` whose margin, computed as XGBoost does, is exactly ``margin32``; None
    if no float32 near the exact inverse has that property."""
    m = float(margin32)
    try:
        p0 = 1.0 / (1.0 + math.exp(-m)) if link == "logit" else math.exp(m)
    except OverflowError:
        return None
    with np.errstate(over="ignore"):
        p = np.float32(p0)
    if not np.isfinite(p) or p <= 0 or (link == "logit" and p >= 1):
        return None
    fn = _logit_f32 if link == "logit" else _log_f32
    cands = [p]
    lo = hi = p
    for _ in range(64):
        lo, hi = np.nextafter(lo, np.float32(0)), np.nextafter(hi, np.float32(np.inf))
        cands += [lo, hi]
    for c in cands:
        if c <= 0 or (link == "logit" and c >= 1):
            continue
        if np.float32(fn(np.float32(c))) == margin32:
            return np.float32(c)
    return None


def _num(v) -> float:
    """A float32 value as a JSON number that parses back to the same float32 (exact double)."""
    return float(np.float32(v))


def _prepared(ens, target, *, dump=False, base_score="keep"):
    check_exportable(ens, target, categorical=not dump, multi_output=not dump, sentinel=True)
    objective, link = _objective(ens) if not dump else ("", "identity")
    # Base score: XGBoost holds it in output space; fold it into the first trees' leaves when
    # no float32 probability maps back onto the float32 margin exactly.
    base32 = ens.base_score.astype(np.float32)
    fold = False
    probs = base32
    if dump:
        fold = base_score == "fold"
    elif link != "identity":
        found = [_exact_prob(b, link) for b in base32]
        if all(p is not None for p in found):
            probs = np.asarray(found, dtype=np.float32)
        else:
            fold = True
    check_category_sets_nonempty(ens, target)
    prepared = folded_copy(ens, target, fold_base=fold, float32=True)
    if fold and link == "logit":
        probs = np.full(ens.n_outputs, 0.5, dtype=np.float32)
    elif fold and link == "log":
        probs = np.ones(ens.n_outputs, dtype=np.float32)
    elif fold or dump:
        probs = np.zeros(ens.n_outputs, dtype=np.float32)
    thr = float32_lt_thresholds(prepared)

    def goes_left(x):
        return x.astype(np.float32) < thr

    dleft = node_default_left(prepared, target, goes_left)
    return prepared, objective, probs, thr, dleft


def node_order(left, right) -> np.ndarray:
    """XGBoost's node numbering of one tree: breadth first, the two children of a node on
    consecutive ids (left, then right), as XGBoost grows trees; its predictor relies on it.
    Returns old local index by new index."""
    order, k = [0], 0
    while k < len(order):
        node = order[k]
        if left[node] >= 0:
            order += [int(left[node]), int(right[node])]
        k += 1
    return np.asarray(order, dtype=np.int64)


def _tree_arrays(ens, t, thr, dleft, target):
    """Per-node arrays of tree ``t`` in XGBoost's layout and numbering (:func:`node_order`)."""
    s, e = int(ens.tree_ptr[t]), int(ens.tree_ptr[t + 1])
    left = ens.left[s:e].astype(np.int64).copy()
    right = ens.right[s:e].astype(np.int64).copy()
    default_left = dleft[s:e].astype(bool).copy()
    split_type = np.zeros(e - s, dtype=np.int64)
    cond = np.where(left < 0, ens.value[s:e].astype(np.float32), thr[s:e]).astype(np.float32)
    cats = {}
    for i in np.flatnonzero((left >= 0) & ((ens.flags[s:e] & 1) != 0)):
        node = s + int(i)
        in_set, other, nan_in = categorical_sides(ens, node)
        values = node_categories(ens, node)
        if values[-1] >= 1 << 24:
            raise ExportError(target, ens._where(node, f"has category {int(values[-1])} in its "
                                                       f"set; XGBoost compares categories "
                                                       f"below 2**24 only")[:-1] + ".")
        left[i], right[i] = other, in_set  # XGBoost: in the set -> right
        default_left[i] = not nan_in
        split_type[i] = 1
        cond[i] = 0.0
        cats[int(i)] = values
    order = node_order(left, right)
    new_id = np.empty_like(order)
    new_id[order] = np.arange(order.size)
    internal = left[order] >= 0
    left = np.where(internal, new_id[np.maximum(left[order], 0)], -1)
    right = np.where(internal, new_id[np.maximum(right[order], 0)], -1)
    parents = np.full(order.size, _ROOT_PARENT, dtype=np.int64)
    inner = np.flatnonzero(internal)
    parents[left[inner]] = inner
    parents[right[inner]] = inner
    feature = np.maximum(ens.feature[s:e][order], 0)
    cat_nodes = sorted(int(new_id[i]) for i in cats)
    cat_lists = [cats[int(order[i])] for i in cat_nodes]
    return (left, right, parents, default_left[order], split_type[order], cond[order], feature,
            cat_nodes, cat_lists)


def xgboost_document(ens) -> dict:
    """The XGBoost JSON model document of ``ens`` (``json.dump`` it, or use :func:`to_xgboost`).
    """
    prepared, objective, probs, thr, dleft = _prepared(ens, _TARGET)
    trees = []
    for t in range(prepared.n_trees):
        (left, right, parents, default_left, split_type, cond, feature, cat_nodes,
         cats) = _tree_arrays(prepared, t, thr, dleft, _TARGET)
        n = left.size
        segments = np.concatenate([[0], np.cumsum([c.size for c in cats])])[:-1]
        leaf_vals = [_num(c) if child < 0 else 0.0 for c, child in zip(cond, left)]
        trees.append({
            "base_weights": leaf_vals,
            "categories": [int(v) for c in cats for v in c],
            "categories_nodes": cat_nodes,
            "categories_segments": [int(v) for v in segments],
            "categories_sizes": [int(c.size) for c in cats],
            "default_left": [int(v) for v in default_left],
            "id": t,
            "left_children": [int(v) for v in left],
            "loss_changes": [0.0] * n,
            "parents": [int(v) for v in parents],
            "right_children": [int(v) for v in right],
            "split_conditions": [_dump_threshold(v) for v in cond],
            "split_indices": [int(f) for f in feature],
            "split_type": [int(v) for v in split_type],
            "sum_hessian": [0.0] * n,
            "tree_param": {"num_deleted": "0", "num_feature": str(prepared.n_features),
                           "num_nodes": str(n), "size_leaf_vector": "1"},
        })
    k = prepared.n_outputs
    tree_info = [int(v) for v in prepared.tree_output]
    n_trees = prepared.n_trees
    round_robin = k > 1 and n_trees % k == 0 and np.array_equal(
        prepared.tree_output, np.tile(np.arange(k), n_trees // k))
    step = k if (round_robin or k == 1) else 1
    indptr = list(range(0, n_trees + 1, step))
    multiclass = objective.startswith("multi:")
    cat_features = sorted({int(f) for f in prepared.feature[
        (prepared.left >= 0) & ((prepared.flags & 1) != 0)]})
    names = list(prepared.feature_names) if prepared.feature_names is not None else []
    training_cats = prepared.categories or [None] * prepared.n_features
    types = (["c" if f in cat_features or training_cats[f] is not None else "float"
              for f in range(prepared.n_features)] if names else [])
    base_text = "[" + ",".join(f"{float(p)!r}" for p in probs) + "]"
    return {
        "learner": {
            "attributes": {},
            "feature_names": names,
            "feature_types": types,
            "gradient_booster": {
                "model": {
                    "cats": _cats_document(prepared.categories),
                    "gbtree_model_param": {"num_parallel_tree": "1",
                                           "num_trees": str(n_trees)},
                    "iteration_indptr": indptr,
                    "tree_info": tree_info,
                    "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {
                "base_score": base_text,
                "boost_from_average": "0",
                "num_class": str(k if multiclass else 0),
                "num_feature": str(prepared.n_features),
                "num_target": str(1 if multiclass else k),
            },
            "objective": _objective_block(objective, k),
        },
        "version": _XGB_VERSION,
    }


_TYPE_CODES = {name: code for code, name in XGB_CATEGORY_TYPES.items()}


def _cats_document(categories) -> dict:
    """XGBoost's ``model.cats`` (training categories of a DataFrame-trained model, used to
    re-code a frame's category columns) from ``TreeEnsemble.categories``: per feature, the
    category values in code order (strings as UTF-8 bytes cut at offsets), the features'
    segments, and each feature's values' sorting order."""
    if not categories:
        return {"enc": [], "feature_segments": [], "sorted_idx": []}
    enc, segments, sorted_idx = [], [0], []
    for entry in categories:
        if entry is None:
            enc.append({"offsets": [], "values": []})
            segments.append(segments[-1])
            continue
        values = entry["values"]
        if entry["type"] == "str":
            # XGBoost holds the UTF-8 bytes as signed chars, and sorts by them
            raw = [[c - 256 if c > 127 else c for c in v.encode("utf-8", "surrogateescape")]
                   for v in values]
            offsets = np.concatenate([[0], np.cumsum([len(b) for b in raw])]).tolist()
            enc.append({"offsets": [int(o) for o in offsets],
                        "values": [int(c) for b in raw for c in b]})
            order = sorted(range(len(raw)), key=lambda i: raw[i])
        else:
            enc.append({"type": _TYPE_CODES[entry["type"]], "values": [int(v) for v in values]})
            order = sorted(range(len(values)), key=lambda i: values[i])
        sorted_idx += order
        segments.append(segments[-1] + len(values))
    return {"enc": enc, "feature_segments": segments, "sorted_idx": sorted_idx}


def _objective_block(objective, k):
    if objective.startswith("multi:"):
        return {"name": objective, "softmax_multiclass_param": {"num_class": str(k)}}
    if objective.startswith("rank:"):
        return {"name": objective, "lambdarank_param": {
            "lambdarank_num_pair_per_sample": "1", "lambdarank_pair_method": "topk",
            "lambdarank_unbiased": "0", "lambdarank_bias_norm": "2", "ndcg_exp_gain": "1",
            "lambdarank_normalization": "1", "lambdarank_score_normalization": "1"}}
    if objective in ("binary:logistic", "reg:logistic", "binary:logitraw"):
        return {"name": objective, "reg_loss_param": {"scale_pos_weight": "1"}}
    if objective == "count:poisson":
        return {"name": objective, "poisson_regression_param": {"max_delta_step": "0.7"}}
    if objective == "reg:tweedie":
        return {"name": objective, "tweedie_regression_param": {"tweedie_variance_power": "1.5"}}
    if objective == "reg:pseudohubererror":
        return {"name": objective, "pseudo_huber_param": {"huber_slope": "1"}}
    if objective == "reg:quantileerror":
        return {"name": objective, "quantile_loss_param": {"quantile_alpha": "[0.5]"}}
    return {"name": objective}


def _dump_threshold(t) -> float:
    return _ABOVE_FLT_MAX if np.isinf(t) else _num(t)


def xgboost_dump(ens, *, base_score="fold", feature_names=None) -> list:
    """The trees of ``ens`` as XGBoost's ``get_dump(dump_format="json")`` objects (a list of
    nested dicts, one per tree), the form the OpenSearch / Elasticsearch LTR plugin
    (``model/xgboost+json``) and Vespa's ``xgboost(...)`` read."""
    if base_score not in ("fold", "drop"):
        raise ValueError(f"base_score={base_score!r}; expected 'fold' (add the base score to "
                         f"the first tree's leaves) or 'drop'.")
    prepared, _, _, thr, dleft = _prepared(ens, _DUMP, dump=True, base_score=base_score)
    names = feature_names if feature_names is not None else prepared.feature_names
    if names is None:
        names = [f"f{i}" for i in range(prepared.n_features)]
    names = [str(n) for n in names]
    if len(names) != prepared.n_features:
        raise ValueError(f"feature_names has {len(names)} names for {prepared.n_features} "
                         f"features.")
    out = []
    for t in range(prepared.n_trees):
        left, right, _, dl, _, cond, feature, _, _ = _tree_arrays(prepared, t, thr, dleft,
                                                                  _DUMP)

        def node(i, depth=0):
            if left[i] < 0:
                return {"nodeid": i, "leaf": _num(cond[i])}
            yes, no = int(left[i]), int(right[i])
            return {"nodeid": i, "depth": depth, "split": names[feature[i]],
                    "split_condition": _dump_threshold(cond[i]), "yes": yes, "no": no,
                    "missing": yes if dl[i] else no,
                    "children": [node(yes, depth + 1), node(no, depth + 1)]}

        out.append(node(0))
    return out


def to_xgboost(ens, path) -> None:
    """Write ``ens`` as an XGBoost JSON model file (``xgboost.Booster(model_file=path)``)."""
    doc = xgboost_document(ens)  # all checks before the file is touched
    write_file(path, json.dumps(doc))


def to_xgboost_dump(ens, path, *, base_score="fold", feature_names=None) -> None:
    """Write ``ens`` as an XGBoost JSON dump (a JSON array of trees)."""
    write_file(path, json.dumps(xgboost_dump(ens, base_score=base_score,
                                              feature_names=feature_names), indent=1))
