"""The GPU node layout (``skltr._gpu.forest_layout``, host NumPy: runs without a GPU) and the
visit counts it orders children by (``skltr.trees._traversal.node_visits``).

A slow walker follows the records exactly as the CUDA ``walk`` does (next record = the hot
child, offset = the other) and must reach every row's leaf of the naive reference, for any
child order; the visit counts must equal a naive count of the rows through each node.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_trees import naive_go_left, naive_leaf
from skltr._gpu.forest_layout import HOT_RIGHT, forest_arrays
from skltr._records import routing
from skltr.trees._traversal import node_visits
from strategies_trees import ensemble_and_inputs


def _walk(fa, old_of_new, ens, tree, row):
    """The leaf (ensemble index) the layout's records lead ``row`` to in ``tree``."""
    i = int(fa.tree_ptr[tree])
    while True:
        if fa.compact:
            packed = int(fa.nodes["packed"][i])
            if packed & 0x7FFF == 0x7FFF:
                return old_of_new[i]
            hot_right, offset = bool(packed >> 15 & 1), packed >> 19
            assert packed & 0x7FFF == ens.feature[old_of_new[i]]
        else:
            if fa.nodes["feature"][i] < 0:
                return old_of_new[i]
            meta = int(fa.nodes["meta"][i])
            hot_right, offset = bool(meta & HOT_RIGHT), meta >> 8
        left = naive_go_left(ens, old_of_new[i], row[ens.feature[old_of_new[i]]])
        i += 1 if left != hot_right else offset


def _naive_visits(ens, X):
    visits = np.zeros(ens.n_nodes, np.int64)
    for row in X:
        for t in range(ens.n_trees):
            start = int(ens.tree_ptr[t])
            node = start
            while True:
                visits[node] += 1
                if ens.left[node] < 0:
                    break
                node = start + int(ens.left[node] if naive_go_left(ens, node, row[
                    ens.feature[node]]) else ens.right[node])
    return visits


@settings(max_examples=80, deadline=None)
@given(ensemble_and_inputs(), st.sampled_from(["none", "measured", "random"]))
def test_every_child_order_leads_each_row_to_its_leaf(case, order):
    ens, X = case
    visits = None
    if order == "measured":
        visits = node_visits(ens, X)
        np.testing.assert_array_equal(visits, _naive_visits(ens, X))
    elif order == "random":
        visits = np.random.default_rng(ens.n_nodes).integers(0, 5, ens.n_nodes)
    fa = forest_arrays(ens, routing(ens), visits)
    old_of_new = np.argsort(fa.new_of_old[:ens.n_nodes])
    for row in X:
        for t in range(ens.n_trees):
            assert _walk(fa, old_of_new, ens, t, row) == int(ens.tree_ptr[t]) + naive_leaf(
                ens, t, row)
    if visits is not None:  # the hot child sits right after its parent
        split = np.flatnonzero(ens.left >= 0)
        base = ens.tree_ptr[np.searchsorted(ens.tree_ptr, split, side="right") - 1]
        hot = np.where(visits[base + ens.right[split]] > visits[base + ens.left[split]],
                       base + ens.right[split], base + ens.left[split])
        np.testing.assert_array_equal(fa.new_of_old[hot], fa.new_of_old[split] + 1)
