"""Slow, obviously-correct reference of OnDemandRuleRanker (LRAR), from the definitions.

Python sets of training-document ids, ``itertools.combinations`` over every itemset of a
document's items, exact rational arithmetic (``fractions.Fraction``) for confidences and
scores. No bitmaps, no pruning, no cache, no fixed point except where the definition of the
kernel's output is fixed point (``conf_fixed``).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import deque
from fractions import Fraction

import numpy as np

MASK = 2**64 - 1


# -- discretisation --------------------------------------------------------------------------

def xlog2x(x):
    return 0.0 if x < 2 else x * math.log2(x)


def _n_ent(counts):
    # N * Ent(S) for class counts, summed in level order as t[N] - sum_c t[c]
    s = 0.0
    for c in counts:
        s += xlog2x(c)
    return xlog2x(sum(counts)) - s


def best_mdl_cut(vals, labs, n_levels):
    """Fayyad & Irani: index i of the cut between vals[i-1] and vals[i] of least weighted
    class entropy (the first on ties), if the MDL criterion accepts it; else None."""
    n = len(vals)
    if n < 2:
        return None
    best_i, best_e = None, math.inf
    for i in range(1, n):
        if vals[i] == vals[i - 1]:
            continue
        left = [labs[:i].count(lv) for lv in range(n_levels)]
        right = [labs[i:].count(lv) for lv in range(n_levels)]
        e = _n_ent(left) + _n_ent(right)
        if e < best_e:
            best_i, best_e = i, e
    if best_i is None:
        return None
    left = [labs[:best_i].count(lv) for lv in range(n_levels)]
    right = [labs[best_i:].count(lv) for lv in range(n_levels)]
    total = [a + b for a, b in zip(left, right)]
    n1, n2 = best_i, n - best_i
    ent = _n_ent(total) / n
    ent1, ent2 = _n_ent(left) / n1, _n_ent(right) / n2
    gain = ent - best_e / n
    k = sum(c > 0 for c in total)
    k1 = sum(c > 0 for c in left)
    k2 = sum(c > 0 for c in right)
    delta = math.log2(3.0 ** k - 2.0) - (k * ent - k1 * ent1 - k2 * ent2)
    return best_i if gain > (math.log2(n - 1.0) + delta) / n else None


def midpoint(lo, hi):
    mid = 0.5 * lo + 0.5 * hi
    return mid if lo <= mid < hi else lo


def mdl_cuts(column, level_idx, n_levels, max_intervals=254, breadth_first=True):
    """Cut values of one feature: recursive MDL splits, breadth first (or depth first),
    at most ``max_intervals`` intervals."""
    keep = ~np.isnan(column)
    pairs = sorted(zip(column[keep].tolist(), np.asarray(level_idx)[keep].tolist()),
                   key=lambda p: p[0])  # stable: ties keep row order
    vals = [p[0] for p in pairs]
    labs = [p[1] for p in pairs]
    cut_at = []
    todo = deque([(0, len(vals))])
    while todo and len(cut_at) < max_intervals - 1:
        lo, hi = todo.popleft() if breadth_first else todo.pop()
        i = best_mdl_cut(vals[lo:hi], labs[lo:hi], n_levels)
        if i is None:
            continue
        cut_at.append(lo + i)
        halves = [(lo, lo + i), (lo + i, hi)]
        todo.extend(halves if breadth_first else halves[::-1])
    return [midpoint(vals[i - 1], vals[i]) for i in sorted(cut_at)]


def interval(x, cuts):
    """Interval of ``x``: the number of cuts below it (``x <= cut`` goes below)."""
    return bisect.bisect_left(cuts, x)


class Items:
    """Items of a discretisation: feature f's intervals, then its NaN item when training had
    NaN; features with an item covering every training document are left out."""

    def __init__(self, X, cuts, has_missing):
        self.cuts, self.has_missing = cuts, has_missing
        n, F = X.shape
        self.used, self.offset = [], []
        next_item = 0
        for f in range(F):
            codes = [self.code(f, x) for x in X[:, f]]
            if max(codes.count(c) for c in set(codes)) == n:
                continue
            self.used.append(f)
            self.offset.append(next_item)
            next_item += len(cuts[f]) + 1 + int(has_missing[f])
        self.n_items = next_item

    def code(self, f, x):
        if math.isnan(x):
            return len(self.cuts[f]) + 1 if self.has_missing[f] else None
        return interval(x, self.cuts[f])

    def of(self, row):
        """Item ids of a document (one per used feature that has one)."""
        out = []
        for f, off in zip(self.used, self.offset):
            c = self.code(f, row[f])
            if c is not None:
                out.append(off + c)
        return out


# -- rules ------------------------------------------------------------------------------------

def splitmix64(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def itemset_key(itemset):
    return sum(splitmix64(i) for i in itemset) & MASK


def rule_digest(itemset, level):
    return splitmix64(itemset_key(itemset) ^ (((level + 1) * 0xD6E8FEB86659FD93) & MASK))


def conf_fixed(count, support, shift):
    return (count << shift) // support


def rules_of(doc_items, train_items, train_level, n_levels, max_rule_size, min_support,
             min_confidence):
    """Every rule ``X -> level`` of a document: ``(X, level, count, support)``, by full
    enumeration of the itemsets of its items."""
    holders = {}
    for t, items in enumerate(train_items):
        for i in items:
            holders.setdefault(i, set()).add(t)
    out = []
    for k in range(1, max_rule_size + 1):
        for X in itertools.combinations(sorted(doc_items), k):
            docs = set.intersection(*(holders.get(i, set()) for i in X))
            support = len(docs)
            if support == 0:
                continue
            for lv in range(n_levels):
                count = sum(1 for t in docs if train_level[t] == lv)
                if count >= min_support and count / support >= min_confidence:
                    out.append((X, lv, count, support))
    return out


def stats_of(rules, n_levels, shift):
    """Per level: number of rules, sum of fixed-point confidences, digest (mod 2**64)."""
    n = [0] * n_levels
    conf = [0] * n_levels
    dig = [0] * n_levels
    for X, lv, count, support in rules:
        n[lv] += 1
        conf[lv] += conf_fixed(count, support, shift)
        dig[lv] = (dig[lv] + rule_digest(X, lv)) & MASK
    return n, conf, dig


def score_of(rules, levels, prior):
    """LRAR's equations 1 and 2 in exact arithmetic (the prior when there is no rule)."""
    s = []
    for lv in range(len(levels)):
        thetas = [Fraction(c, sup) for X, r, c, sup in rules if r == lv]
        s.append(sum(thetas, Fraction(0)) / len(thetas) if thetas else Fraction(0))
    total = sum(s)
    if total == 0:
        return prior
    return sum(Fraction(levels[lv]) * s[lv] for lv in range(len(levels))) / total


def prior_of(y_train):
    return Fraction(sum(Fraction(v) for v in y_train), len(y_train))
