"""What every exporter of a :class:`~skltr.trees.TreeEnsemble` shares: the error type, atomic
file writing, effective leaf values and the threshold arithmetic that keeps routing exact.

Routing is carried over exactly by rewriting each numeric threshold for the target's own
comparison and input type (see ``docs/user_guide/export.rst``):

* float32 input, ``x < t'`` (XGBoost, its JSON dump, ONNX with float32 input): ``t'`` is the
  smallest float32 that is greater than every float32 the source sends left, i.e. the
  smallest float32 ``>= t`` for ``decision="<"`` and ``> t`` for ``decision="<="``. For every
  float32 ``x``, ``x < t'`` is then the source's test. ``t'`` may be ``+inf`` (every finite
  value left, ``+inf`` right).
* double input, ``x <= t'`` (LightGBM, Treelite, ONNX with double input): ``t' = t`` for
  ``decision="<="`` and the largest double below ``t`` for ``decision="<"``; for a
  float32-precision ensemble (which rounds its input to float32 first) the largest double
  that rounds below the float32 threshold. Exact for every double input.

Missing values: a target that sends NaN to a per-node default direction represents the
missing types as follows. ``NAN``: the node's default. ``NONE`` (NaN reads as 0.0): the
direction 0.0 takes. ``ZERO`` (NaN and ``|x| <= kZeroThreshold`` take the default): exact only
when the whole band ``[-kZeroThreshold, kZeroThreshold]`` takes the default direction by
comparison anyway; otherwise the export is refused.
"""

from __future__ import annotations


import numpy as np

from .._dtypes import NodeFlags
from ..utils._atomic import atomic_write

__all__ = ["ExportError", "write_file", "categorical_sides", "check_category_sets_nonempty",
           "check_exportable", "double_le_thresholds", "effective_leaves",
           "float32_lt_thresholds", "folded_copy", "node_categories", "node_default_left",
           "tree_roots_per_output"]

#: LightGBM's ``kZeroThreshold`` (1e-35f) as a double: the band of missing type ZERO.
K_ZERO_THRESHOLD = float(np.float32(1e-35))


class ExportError(ValueError):
    """A model the target format cannot represent (the message names target and reason)."""

    def __init__(self, target: str, reason: str):
        super().__init__(f"cannot export to {target}: {reason}")
        self.target = target
        self.reason = reason


def write_file(path, data) -> None:
    """Write ``data`` (str or bytes) to ``path`` atomically
    (:func:`skltr.utils._atomic.atomic_write`): readers never see a partial file, and a
    failed export leaves no file behind."""
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    with atomic_write(path, "wb") as fh:
        fh.write(payload)


def _categorical(ens) -> np.ndarray:
    return (ens.left >= 0) & ((ens.flags & NodeFlags.CATEGORICAL) != 0)


def check_exportable(ens, target: str, *, categorical=True, multi_output=True,
                     sentinel=False, average=True) -> None:
    """Refuse what ``target`` cannot represent, before anything is written (``ens`` is a
    TreeEnsemble: the exports are its methods)."""
    if not categorical and np.any(_categorical(ens)):
        node = int(np.flatnonzero(_categorical(ens))[0])
        raise ExportError(target, f"the model has categorical splits (first: "
                                  f"{ens._where(node, 'is categorical')[:-1]}), which "
                                  f"{target} cannot represent.")
    if not multi_output and ens.n_outputs > 1:
        raise ExportError(target, f"the model has {ens.n_outputs} outputs (e.g. one per "
                                  f"class); {target} holds single-output models only.")
    if not sentinel and not np.isnan(ens.missing_value):
        raise ExportError(target, f"the model treats the value {ens.missing_value!r} as "
                                  f"missing (an XGBoost missing= sentinel); {target} knows "
                                  f"only NaN as missing. Replace that value by NaN in the "
                                  f"inputs and export a copy with missing_value=nan.")
    if not average and ens.average_output:
        raise ExportError(target, "the model averages its trees (random-forest mode), which "
                                  f"{target} cannot express.")


def check_category_sets_nonempty(ens, target: str) -> None:
    """Refuse categorical nodes with an empty category set (XGBoost and ONNX Runtime do not
    load them)."""
    for node in np.flatnonzero(_categorical(ens)):
        off, nw = int(ens.cat_offset[node]), int(ens.cat_nwords[node])
        if not np.any(ens.cat_bitsets[off:off + nw]):
            raise ExportError(target, ens._where(
                int(node), f"is categorical with an empty category set, which {target} "
                           f"does not load")[:-1] + ".")


def effective_leaves(ens) -> np.ndarray:
    """Leaf values with tree weights (dart) and, in random-forest mode, the division by the
    number of trees of each output folded in (float64; 0 on internal nodes)."""
    tree_of = np.repeat(np.arange(ens.n_trees), np.diff(ens.tree_ptr))
    weight = ens.tree_weight[tree_of]
    if ens.sum_dtype == "float32":
        # skltr's float32 accumulator adds float32(float32(v) * float32(w)); the double
        # product of two float32 values is exact, so rounding it once gives the same value.
        value = (ens.value.astype(np.float32).astype(np.float64)
                 * weight.astype(np.float32).astype(np.float64))
    else:
        value = ens.value * weight
    if ens.average_output:
        counts = np.bincount(ens.tree_output, minlength=ens.n_outputs).astype(np.float64)
        value = value / counts[ens.tree_output[tree_of]]
    return np.where(ens.left < 0, value, 0.0)


def _first_float32_above(t: np.ndarray, strict: bool) -> np.ndarray:
    """Smallest float32 ``> t`` (strict) or ``>= t``, elementwise, as float32 (may be inf)."""
    with np.errstate(over="ignore"):
        f = t.astype(np.float32)
    wide = f.astype(np.float64)
    bump = (wide <= t) if strict else (wide < t)
    with np.errstate(over="ignore"):
        f = np.where(bump, np.nextafter(f, np.float32(np.inf)), f)
    return f.astype(np.float32)


def float32_lt_thresholds(ens) -> np.ndarray:
    """Thresholds ``t'`` (float32) such that, for every float32 input ``x``, ``x < t'`` is the
    ensemble's own numeric test (0 on leaves and categorical nodes)."""
    numeric = (ens.left >= 0) & ~_categorical(ens)
    t = np.where(numeric, ens.threshold, 0.0)
    out = _first_float32_above(t, strict=ens.decision == "<=")
    return np.where(numeric, out, np.float32(0.0)).astype(np.float32)


def double_le_thresholds(ens) -> np.ndarray:
    """Thresholds ``t'`` (float64) such that, for every double input ``x``, ``x <= t'`` is the
    ensemble's numeric test (0 on leaves and categorical nodes).

    A float64-precision ensemble keeps ``t`` (``"<="``) or takes the double below it
    (``"<"``). A float32-precision ensemble rounds ``x`` to float32 first; rounding is
    monotone, so the doubles it sends left are those up to the largest double whose float32
    rounding is below ``float32_lt_thresholds``'s ``t32`` (a midpoint between two float32
    values rounds to the even one).
    """
    numeric = (ens.left >= 0) & ~_categorical(ens)
    t = np.where(numeric, ens.threshold, 0.0)
    if ens.precision == "float32":
        t32 = float32_lt_thresholds(ens)
        with np.errstate(over="ignore"):
            below = np.nextafter(t32, np.float32(-np.inf))
        two128 = 2.0 ** 128  # where float32 rounding overflows, in double
        hi = np.where(np.isinf(t32), np.copysign(two128, t32.astype(np.float64)),
                      t32.astype(np.float64))
        lo = np.where(np.isinf(below), np.copysign(two128, below.astype(np.float64)),
                      below.astype(np.float64))
        mid = lo / 2 + hi / 2  # exact: both are float32 values (or +-2**128)
        with np.errstate(over="ignore"):
            mid_left = mid.astype(np.float32) < t32
        t = np.where(mid_left, mid, np.nextafter(mid, -np.inf))
    elif ens.decision == "<":
        t = np.nextafter(t, -np.inf)
    return np.where(numeric, t, 0.0)


def node_default_left(ens, target: str, goes_left) -> np.ndarray:
    """Default direction of NaN per numeric node for a target that has only NaN-missing
    (``goes_left(x)``: the node's test on a scalar value per node, vectorised).

    Raises ExportError when a ZERO-type node's band is split or goes against its default.
    """
    internal = ens.left >= 0
    numeric = internal & ~_categorical(ens)
    mtype = NodeFlags.missing_type(ens.flags)
    default = (ens.flags & NodeFlags.DEFAULT_LEFT) != 0
    zero_left = goes_left(np.zeros(ens.n_nodes))
    out = np.where(mtype == NodeFlags.MISSING_NAN, default, zero_left)
    zero = numeric & (mtype == NodeFlags.MISSING_ZERO)
    if np.any(zero):
        lo = goes_left(np.full(ens.n_nodes, -K_ZERO_THRESHOLD))
        hi = goes_left(np.full(ens.n_nodes, K_ZERO_THRESHOLD))
        bad = zero & ~((lo == hi) & (lo == default))
        if np.any(bad):
            node = int(np.flatnonzero(bad)[0])
            raise ExportError(target, ens._where(
                node, "has LightGBM's missing type 'zero' (values with |x| <= 1e-35 follow "
                      "the default direction) with a threshold or default direction that "
                      f"sends that band apart from the comparison; {target} sends only NaN "
                      "to a default direction")[:-1] + ".")
        out = np.where(zero, default, out)
    return np.where(numeric, out, False)


def tree_roots_per_output(ens) -> np.ndarray:
    """Index of the first tree of each output (-1 for an output without trees)."""
    first = np.full(ens.n_outputs, -1, dtype=np.int64)
    for t in range(ens.n_trees - 1, -1, -1):
        first[ens.tree_output[t]] = t
    return first


def folded_copy(ens, target, *, fold_base: bool, float32: bool, every_output_a_tree=False):
    """A copy of ``ens`` whose leaf values already hold tree weights and averaging
    (:func:`effective_leaves`) and, with ``fold_base``, the base score of each output added to
    the leaves of that output's first tree (a one-leaf tree is appended for an output without
    trees); ``base_score`` is then 0.

    ``every_output_a_tree`` also appends a one-leaf zero tree to every output without trees
    (for targets that need at least one tree). Folding is exact for the sum: the target
    starts from 0 and adds ``base + leaf`` first, which is the source's ``base + leaf``
    (rounded to float32 when ``float32``).

    Raises :class:`ExportError` (naming ``target``) when a folded leaf is not finite: a
    leaf times its tree weight, or plus a base score, beyond float32's range (3.4e38) where
    the target stores float32 leaves.
    """
    value = effective_leaves(ens)
    tree_ptr, tree_output = ens.tree_ptr.copy(), ens.tree_output.copy()
    arrays = {name: getattr(ens, name).copy() for name in
              ("feature", "threshold", "left", "right", "flags", "cat_offset", "cat_nwords")}
    base = ens.base_score.copy()
    first = tree_roots_per_output(ens)
    if fold_base and np.any(base != 0):
        leaf = ens.left < 0
        tree_of = np.repeat(np.arange(ens.n_trees), np.diff(ens.tree_ptr))
        for k in np.flatnonzero((first >= 0) & (base != 0)):
            sel = leaf & (tree_of == first[k])
            if float32:
                value[sel] = (np.float32(base[k]) + value[sel].astype(np.float32)).astype(
                    np.float64)
            else:
                value[sel] = base[k] + value[sel]
    # outputs without trees: one leaf holding the base (folded) or 0
    add = [k for k in range(ens.n_outputs) if first[k] < 0
           and (every_output_a_tree or (fold_base and base[k] != 0))]
    for k in add:
        b = base[k] if fold_base else 0.0
        tree_ptr = np.append(tree_ptr, tree_ptr[-1] + 1)
        tree_output = np.append(tree_output, k)
        value = np.append(value, np.float32(b) if float32 else b)
        for name, fill in (("feature", -1), ("threshold", 0.0), ("left", -1), ("right", -1),
                           ("flags", 0), ("cat_offset", 0), ("cat_nwords", 0)):
            arrays[name] = np.append(arrays[name], fill)
    if fold_base:
        base = np.zeros_like(base)
    if float32:
        with np.errstate(over="ignore"):
            value = value.astype(np.float32).astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(value))
    if bad.size:
        stored = " and stored as float32" if float32 else ""
        folded = "tree weights and base scores" if fold_base else "tree weights"
        raise ExportError(target, f"node {bad[0]}'s leaf value becomes {value[bad[0]]} once "
                                  f"{folded} are folded in{stored}; scale the model's leaves "
                                  f"or tree weights down.")
    return type(ens)(  # a TreeEnsemble (importing its module here would make a cycle)
        tree_ptr=tree_ptr, value=value, **arrays, n_features=ens.n_features,
        cat_bitsets=ens.cat_bitsets, tree_output=tree_output, base_score=base,
        n_outputs=ens.n_outputs, decision=ens.decision, precision=ens.precision,
        sum_dtype=ens.sum_dtype, missing_value=ens.missing_value, input_rule=ens.input_rule,
        absent_value=ens.absent_value, frame_rule=ens.frame_rule, categories=ens.categories,
        pandas_categorical=ens.pandas_categorical, average_output=False,
        output_transform=ens.output_transform, transform_params=dict(ens.transform_params),
        feature_names=ens.feature_names, source=dict(ens.source))


def node_categories(ens, node: int) -> np.ndarray:
    """Sorted categories (int64) in the set of categorical node ``node`` (global index)."""
    off, nw = int(ens.cat_offset[node]), int(ens.cat_nwords[node])
    words = ens.cat_bitsets[off:off + nw].astype(np.uint64)
    bits = (words[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)
    return np.flatnonzero(bits.ravel()).astype(np.int64)


def categorical_sides(ens, node: int):
    """(in-set child, other child, NaN goes to the in-set child) of a categorical node, local
    indices."""
    flags = int(ens.flags[node])
    left, right = int(ens.left[node]), int(ens.right[node])
    in_set, other = (right, left) if flags & NodeFlags.CAT_SET_RIGHT else (left, right)
    default = left if flags & NodeFlags.DEFAULT_LEFT else right
    return in_set, other, default == in_set
