"""Slow, obviously-correct references for skltr.metrics (tests only).

Pure Python, one query at a time, written from the definitions rather than from the kernels:
ties are handled by linearity of expectation (each tied document is equally likely to sit
at any position its tie group covers) or by an explicit sort key, never by scanning runs.

Every function takes per-row lists/arrays like the public API and returns
``(per_query_values, unique_qids)`` with the queries in sorted id order; ``mean`` reduces
them the way the public functions do.
"""

import math

NAN = float("nan")
_ZERO = {"one": 1.0, "zero": 0.0, "skip": NAN}


def queries(qid, n):
    """Sorted unique ids and, for each, the list of its rows in original order."""
    if qid is None:
        return [0], [list(range(n))]
    rows = {}
    for i, q in enumerate(list(qid)):
        rows.setdefault(q, []).append(i)
    keys = sorted(rows)
    return keys, [rows[q] for q in keys]


def mean(values, qid=None, sample_weight=None, n=None):
    """Mean over non-NaN queries, weighting each query by the mean of its rows' weights."""
    num = den = 0.0
    if sample_weight is None:
        kept = [v for v in values if not math.isnan(v)]
        return sum(kept) / len(kept) if kept else NAN
    _, groups = queries(qid, len(sample_weight))
    for v, rows in zip(values, groups):
        if math.isnan(v):
            continue
        w = sum(float(sample_weight[i]) for i in rows) / len(rows)
        num += w * v
        den += w
    return num / den if den > 0 else NAN


def ranking(scores, labels, ties):
    """Local indices in ranked order."""
    idx = range(len(scores))
    if ties in ("stable", "average"):
        return sorted(idx, key=lambda i: (-scores[i], i))
    if ties == "pessimistic":
        return sorted(idx, key=lambda i: (-scores[i], labels[i], i))
    if ties == "optimistic":
        return sorted(idx, key=lambda i: (-scores[i], -labels[i], i))
    raise ValueError(ties)


def tie_span(scores, i):
    """Positions [a, b) that document i's tie group occupies in the descending ranking."""
    a = sum(1 for s in scores if s > scores[i])
    b = a + sum(1 for s in scores if s == scores[i])
    return a, b


def gain_of(label, gain):
    if gain == "linear":
        return float(label)
    if float(label).is_integer():
        return float(2 ** int(label) - 1)  # exact integer, rounded once
    return 2.0 ** label - 1.0


def discount(r):
    """Discount of 0-based position r."""
    return 1.0 / math.log2(r + 2)


def dcg_query(labels, scores, k, gain, ties):
    n = len(labels)
    kk = n if k is None else min(k, n)
    g = [gain_of(v, gain) for v in labels]
    if ties == "stable":
        order = ranking(scores, labels, "stable")
        return sum(g[order[r]] * discount(r) for r in range(kk))
    total = 0.0
    for i in range(n):
        a, b = tie_span(scores, i)
        expected_discount = sum(discount(r) for r in range(a, min(b, kk))) / (b - a)
        total += g[i] * expected_discount
    return total


def ideal_dcg_query(labels, k, gain):
    g = sorted((gain_of(v, gain) for v in labels), reverse=True)
    kk = len(g) if k is None else min(k, len(g))
    return sum(g[r] * discount(r) for r in range(kk))


def _per_query(fn, y_true, y_score, qid, single_document):
    y_true = [float(v) for v in y_true]
    y_score = [float(v) for v in y_score]
    keys, groups = queries(qid, len(y_true))
    out = []
    for rows in groups:
        labels = [y_true[i] for i in rows]
        scores = [y_score[i] for i in rows]
        if single_document == "skip" and len(rows) == 1:
            out.append(NAN)
        else:
            out.append(fn(labels, scores))
    return out, keys


def ndcg(y_true, y_score, qid=None, k=None, gain="exp2", ties="average",
         zero_relevance="one", single_document="include"):
    def fn(labels, scores):
        if all(v == 0 for v in labels):
            return _ZERO[zero_relevance]
        return dcg_query(labels, scores, k, gain, ties) / ideal_dcg_query(labels, k, gain)
    return _per_query(fn, y_true, y_score, qid, single_document)


def dcg(y_true, y_score, qid=None, k=None, gain="exp2", ties="average",
        zero_relevance="zero", single_document="include"):
    def fn(labels, scores):
        if all(v == 0 for v in labels):
            return _ZERO[zero_relevance]
        return dcg_query(labels, scores, k, gain, ties)
    return _per_query(fn, y_true, y_score, qid, single_document)


def average_precision(y_true, y_score, qid=None, k=None, relevance_threshold=1,
                      ties="pessimistic", zero_relevance="one", single_document="include"):
    def fn(labels, scores):
        rel = [v >= relevance_threshold for v in labels]
        n_rel = sum(rel)
        if n_rel == 0:
            return _ZERO[zero_relevance]
        order = ranking(scores, labels, ties)
        kk = len(labels) if k is None else min(k, len(labels))
        total = 0.0
        for r in range(kk):
            if rel[order[r]]:
                hits_so_far = sum(rel[order[j]] for j in range(r + 1))
                total += hits_so_far / (r + 1)
        return total / min(kk, n_rel)
    return _per_query(fn, y_true, y_score, qid, single_document)


def reciprocal_rank(y_true, y_score, qid=None, k=None, relevance_threshold=1,
                    ties="pessimistic", zero_relevance="one", single_document="include"):
    def fn(labels, scores):
        if not any(v >= relevance_threshold for v in labels):
            return _ZERO[zero_relevance]
        order = ranking(scores, labels, ties)
        kk = len(labels) if k is None else min(k, len(labels))
        for r in range(kk):
            if labels[order[r]] >= relevance_threshold:
                return 1.0 / (r + 1)
        return 0.0
    return _per_query(fn, y_true, y_score, qid, single_document)


def stop_probability(g, g_max):
    """(2**g - 1) / 2**g_max, exactly rounded for integer grades."""
    if float(g).is_integer() and float(g_max).is_integer():
        return (2 ** int(g) - 1) / 2 ** int(g_max)
    return (2.0 ** g - 1.0) / 2.0 ** g_max


def err(y_true, y_score, qid=None, k=None, max_grade=None, ties="pessimistic",
        zero_relevance="one", single_document="include"):
    g_max = max(float(v) for v in y_true) if max_grade is None else max_grade

    def fn(labels, scores):
        if all(v == 0 for v in labels):
            return _ZERO[zero_relevance]
        order = ranking(scores, labels, ties)
        kk = len(labels) if k is None else min(k, len(labels))
        total = 0.0
        for r in range(kk):
            p_reach = 1.0
            for i in range(r):
                p_reach *= 1.0 - stop_probability(labels[order[i]], g_max)
            total += p_reach * stop_probability(labels[order[r]], g_max) / (r + 1)
        return total
    return _per_query(fn, y_true, y_score, qid, single_document)


def precision(y_true, y_score, qid=None, k=None, relevance_threshold=1, ties="average",
              zero_relevance="zero", single_document="include"):
    def fn(labels, scores):
        rel = [v >= relevance_threshold for v in labels]
        if not any(rel):
            return _ZERO[zero_relevance]
        kk = len(labels) if k is None else min(k, len(labels))
        if ties == "stable":
            order = ranking(scores, labels, "stable")
            return sum(rel[order[r]] for r in range(kk)) / kk
        expected_hits = 0.0
        for i in range(len(labels)):
            if rel[i]:
                a, b = tie_span(scores, i)
                expected_hits += max(0, min(b, kk) - a) / (b - a)  # P(doc i in top kk)
        return expected_hits / kk
    return _per_query(fn, y_true, y_score, qid, single_document)
