"""From the rules of a document to its score: LRAR's equations 1 and 2, written once.

For a document ``d`` with rules ``R_d`` (``X -> r`` with ``X`` an itemset of ``d``'s items)
and ``R_d^r`` those that predict level ``r``:

* each rule's confidence ``theta = count(X, r) / support(X)`` enters in fixed point,
  ``floor(theta * 2**shift)`` (``skltr._cpu.rules.confidence_fixed``), so that its sums are
  exact integers in any order, on any device and thread count;
* equation 1, the score of a level: the mean confidence of the rules predicting it,
  ``s(d, r) = sum_{R_d^r} theta / |R_d^r|`` (0 when no rule predicts ``r``);
* equation 2, the document's score: the expected relevance under the normalised level
  scores, ``rank(d) = sum_r r * s(d, r) / sum_r s(d, r)``.

A document without any rule (no itemset of its items passes ``min_support`` and
``min_confidence``) gets the **training prior**, ``sum_r r * n_r / n``: the expected relevance
of a training document, the score of the empty antecedent.

The fixed-point scale ``shift`` is the largest (at most 40 bits) for which the sum of a
document's confidences cannot exceed 2**63 - 1 and a float64 division gives the exact
integer quotient (``shift <= 52 - bits of n_train``: ``skltr._cpu.rules.confidence_fixed``).
"""

from __future__ import annotations

import numpy as np

from .._cpu.combinadic import binomials

__all__ = ["MAX_SHIFT", "confidence_shift", "max_itemsets", "prior_score", "scores"]

#: Fixed-point bits of a confidence at most (2**-40 ~ 9e-13).
MAX_SHIFT = 40
#: Fewer bits than this would blur the confidences: such a model is refused.
MIN_SHIFT = 20


def max_itemsets(n_cols, max_rule_size):
    """Itemsets of sizes 1..``max_rule_size`` of ``n_cols`` items (a document's most)."""
    k = min(int(max_rule_size), int(n_cols))
    if k == 0:
        return 0
    table = binomials(int(n_cols), k)
    return int(table[n_cols, 1:k + 1].sum())


def confidence_shift(n_train, n_cols, max_rule_size):
    """Fixed-point bits of the confidences for this model and rule size (see module doc)."""
    try:
        itemsets = max_itemsets(n_cols, max_rule_size)
    except OverflowError:
        itemsets = 2**62
    shift = min(MAX_SHIFT, 52 - int(n_train).bit_length(), 62 - int(itemsets).bit_length())
    if shift < MIN_SHIFT:
        raise ValueError(
            f"max_rule_size={max_rule_size} over {n_cols} used features makes up to "
            f"{itemsets:.3g} itemsets a document, too many to score (and to enumerate); "
            f"lower max_rule_size or use fewer features.")
    return shift


def prior_score(level_doc_ptr, levels):
    """The expected relevance of a training document: a document without rules gets it."""
    sizes = np.diff(level_doc_ptr).astype(np.float64)
    return float(np.dot(levels, sizes) / sizes.sum())


def level_scores(n_rules, conf_sum, shift):
    """Equation 1: ``s[d, r]``, the mean confidence of the rules of ``d`` predicting ``r``."""
    n_rules = np.asarray(n_rules)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.asarray(conf_sum, dtype=np.float64) / (2.0 ** shift) / n_rules
    return np.where(n_rules > 0, s, 0.0)


def scores(n_rules, conf_sum, shift, levels, prior):
    """Equation 2 over the rule statistics of each document (rows): float64 scores."""
    s = level_scores(n_rules, conf_sum, shift)
    total = s.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = (s * np.asarray(levels, dtype=np.float64)).sum(axis=1) / total
    return np.where(total > 0, expected, prior)
