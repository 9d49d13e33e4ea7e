"""Slow, obviously correct SHAP values of a TreeEnsemble: Shapley's formula over every subset
of the features, with the path-dependent conditional expectation of TreeSHAP.

``v(S)`` of one tree: at a node splitting on a feature in ``S`` follow the row (the model's
routing, ``naive_trees.naive_go_left``); on any other feature average both children, weighted
by ``cover[child] / cover[node]`` (1/2 each when the node's cover is 0, skltr's rule). Only
for ensembles of a few features (2**n_features subsets per row).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from naive_trees import naive_go_left


def _value(ens, tree: int, row, S: frozenset) -> float:
    start = int(ens.tree_ptr[tree])

    def visit(local):
        node = start + local
        if ens.left[node] < 0:
            return float(ens.value[node])
        lc, rc = int(ens.left[node]), int(ens.right[node])
        f = int(ens.feature[node])
        if f in S:
            return visit(lc if naive_go_left(ens, node, row[f]) else rc)
        cover = float(ens.cover[node])
        if cover > 0:
            wl, wr = ens.cover[start + lc] / cover, ens.cover[start + rc] / cover
        else:
            wl = wr = 0.5
        return wl * visit(lc) + wr * visit(rc)

    return visit(0)


def _scales(ens) -> np.ndarray:
    scale = np.asarray(ens.tree_weight, dtype=np.float64).copy()
    if ens.average_output:
        counts = np.bincount(ens.tree_output, minlength=ens.n_outputs)
        scale /= np.maximum(counts, 1)[ens.tree_output]
    return scale


def _v(ens, row, S, scale) -> np.ndarray:
    out = np.zeros(ens.n_outputs)
    for t in range(ens.n_trees):
        out[ens.tree_output[t]] += scale[t] * _value(ens, t, row, S)
    return out


def naive_contribs(ens, X) -> np.ndarray:
    """(n, n_outputs, n_features + 1): Shapley values and the expected value last."""
    M = ens.n_features
    scale = _scales(ens)
    out = np.zeros((X.shape[0], ens.n_outputs, M + 1))
    for r, row in enumerate(np.asarray(X, dtype=np.float64)):
        cache = {}

        def v(S):
            if S not in cache:
                cache[S] = _v(ens, row, S, scale)
            return cache[S]

        for i in range(M):
            others = [f for f in range(M) if f != i]
            for size in range(M):
                w = math.factorial(size) * math.factorial(M - size - 1) / math.factorial(M)
                for S in itertools.combinations(others, size):
                    S = frozenset(S)
                    out[r, :, i] += w * (v(S | {i}) - v(S))
        out[r, :, M] = v(frozenset()) + ens.base_score
    return out


def naive_interactions(ens, X) -> np.ndarray:
    """(n, n_outputs, M + 1, M + 1): Shapley interaction values (Lundberg et al. 2020), half
    of each interaction off the diagonal, main effects on it, the expected value at [M, M]."""
    M = ens.n_features
    scale = _scales(ens)
    contribs = naive_contribs(ens, X)
    out = np.zeros((X.shape[0], ens.n_outputs, M + 1, M + 1))
    for r, row in enumerate(np.asarray(X, dtype=np.float64)):
        cache = {}

        def v(S):
            if S not in cache:
                cache[S] = _v(ens, row, S, scale)
            return cache[S]

        for i, j in itertools.permutations(range(M), 2):
            others = [f for f in range(M) if f not in (i, j)]
            for size in range(M - 1):
                w = (math.factorial(size) * math.factorial(M - size - 2)
                     / (2 * math.factorial(M - 1)))
                for S in itertools.combinations(others, size):
                    S = frozenset(S)
                    out[r, :, i, j] += w * (v(S | {i, j}) - v(S | {i}) - v(S | {j}) + v(S))
        for i in range(M):
            out[r, :, i, i] = contribs[r, :, i] - out[r, :, i, :M].sum(axis=1)  # diag still 0
        out[r, :, M, M] = contribs[r, :, M]
    return out
