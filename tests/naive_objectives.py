"""Slow, obviously-correct references for skltr._cpu.objectives (tests only).

Pure Python, one query at a time, written from the definitions rather than from the kernels:
pairs are enumerated by label (every ordered pair "a has a higher label than b"), positions
come from an explicit sort key, the sigmoid is evaluated per pair, XE-NDCG's generator is
stepped one draw at a time, and YetiRank's pair weights are summed per (winner, loser) pair
before any derivative is taken (CatBoost's order of work). Each function takes one query's
labels and scores (lists) and returns ``(grad, hess)`` lists of floats (float64, not rounded
to float32); ``per_query`` applies one of them to query-grouped arrays.
"""

import math

from naive_metrics import discount, gain_of, ideal_dcg_query

LIGHTGBM_001F = 0.009999999776482582  # the float literal 0.01f that LightGBM adds, as a double


def logistic_tail(x):
    """1 / (1 + exp(x)) without overflow."""
    if x >= 0:
        e = math.exp(-x)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(x))


def lightgbm_table_sigmoid(x, sigmoid):
    """1 / (1 + exp(sigmoid * x)) read from LightGBM's lookup table, as it does: 2**20 bins
    over [-25 / sigmoid, 25 / sigmoid], each holding the value at its left edge, clamped
    outside (LambdarankNDCG::ConstructSigmoidTable / GetSigmoid)."""
    bins = 1024 * 1024
    lo = -50.0 / sigmoid / 2
    hi = -lo
    factor = bins / (hi - lo)
    if x <= lo:
        i = 0
    elif x >= hi:
        i = bins - 1
    else:
        i = int((x - lo) * factor)
    return 1.0 / (1.0 + math.exp((i / factor + lo) * sigmoid))


def positions(scores):
    """0-based position of each document when sorted by descending score (ties: row order)."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    pos = [0] * len(scores)
    for p, i in enumerate(order):
        pos[i] = p
    return pos


def pairs(labels, pos, top):
    """(more relevant, less relevant) document pairs with a document in the top ``top``
    positions; each pair is visited once, from its better-placed document."""
    for u in range(len(labels)):
        if pos[u] >= top:
            continue
        for v in range(len(labels)):
            if pos[v] > pos[u] and labels[u] != labels[v]:
                yield (u, v) if labels[u] > labels[v] else (v, u)


def query_weight(weights):
    return 1.0 if weights is None else sum(weights) / len(weights)


def _lambdarank_pairs(labels, scores, gain, truncation_level, normalize):
    """LambdaMART's pairs ``(high, low, |delta NDCG|)``, score-distance normalised when
    ``normalize`` (and the scores are not all equal)."""
    pos = positions(scores)
    idcg = ideal_dcg_query(labels, truncation_level, gain)
    inv_idcg = 1.0 / idcg if idcg > 0 else 0.0
    by_distance = normalize and max(scores) != min(scores)
    for a, b in pairs(labels, pos, truncation_level):
        delta = (abs(gain_of(labels[a], gain) - gain_of(labels[b], gain))
                 * abs(discount(pos[a]) - discount(pos[b])) * inv_idcg)
        if by_distance:
            delta /= LIGHTGBM_001F + abs(scores[a] - scores[b])
        yield a, b, delta


def lambdarank(labels, scores, weights=None, gain="exp2", truncation_level=30, sigmoid=1.0,
               normalize=True, lightgbm_table=False):
    """LambdaMART; ``lightgbm_table=True`` reads the sigmoid from LightGBM's table."""
    n = len(labels)
    grad, hess = [0.0] * n, [0.0] * n
    if n <= 1 or len(set(labels)) == 1:
        return grad, hess
    total = 0.0
    for a, b, delta in _lambdarank_pairs(labels, scores, gain, truncation_level, normalize):
        if lightgbm_table:
            p = lightgbm_table_sigmoid(scores[a] - scores[b], sigmoid)
        else:
            p = logistic_tail(sigmoid * (scores[a] - scores[b]))
        grad[a] -= sigmoid * p * delta
        grad[b] += sigmoid * p * delta
        hess[a] += sigmoid ** 2 * p * (1 - p) * delta
        hess[b] += sigmoid ** 2 * p * (1 - p) * delta
        total += 2 * sigmoid * p * delta
    factor = query_weight(weights)
    if normalize and total > 0:
        factor *= math.log2(1 + total) / total
    return [g * factor for g in grad], [h * factor for h in hess]


def ranknet(labels, scores, weights=None, truncation_level=None, sigmoid=1.0, normalize=True):
    n = len(labels)
    grad, hess = [0.0] * n, [0.0] * n
    pos = positions(scores)
    top = n if truncation_level is None else truncation_level
    total = 0.0
    for a, b in pairs(labels, pos, top):
        p = logistic_tail(sigmoid * (scores[a] - scores[b]))
        h = 2 * sigmoid ** 2 * max(p * (1 - p), 1e-16)
        grad[a] -= sigmoid * p
        grad[b] += sigmoid * p
        hess[a] += h
        hess[b] += h
        total += 2 * sigmoid * p
    factor = query_weight(weights)
    if normalize and total > 0:
        factor *= math.log2(1 + total) / total
    return [g * factor for g in grad], [h * factor for h in hess]


def unbiased_lambdarank(labels, scores, shown, tplus, tminus, weights=None, gain="exp2",
                        truncation_level=30, sigmoid=1.0, normalize=True, xgboost_cost=False):
    """Unbiased LambdaMART (Hu et al. 2019, eqs. 30-31 as XGBoost computes them) of one
    query: ``shown`` holds each document's displayed position, ``tplus`` / ``tminus`` the
    propensities of positions ``0 .. k-1``. Returns ``(grad, hess, li, lj)``: ``li[d]`` sums
    the costs of pairs where ``d`` is the more relevant (clicked) document, divided by the
    other's ``tminus``; ``lj[d]`` those where it is the less relevant one, divided by the
    other's ``tplus``. The cost is the pair's |delta NDCG| (score-distance normalised like
    the lambda) times its logistic loss ``log(1 + exp(-sigmoid (s_h - s_l)))`` in bits
    (``xgboost_cost``: XGBoost's, the loss of the reversed pair, ``x`` negated)."""
    n = len(labels)
    grad, hess, li, lj = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    if n <= 1 or len(set(labels)) == 1:
        return grad, hess, li, lj
    k = len(tplus)
    total = 0.0
    for a, b, delta in _lambdarank_pairs(labels, scores, gain, truncation_level, normalize):
        p = logistic_tail(sigmoid * (scores[a] - scores[b]))
        lam = sigmoid * p * delta
        h = sigmoid ** 2 * p * (1 - p) * delta
        if shown[a] < k and shown[b] < k:
            x = sigmoid * (scores[a] - scores[b]) * (-1.0 if xgboost_cost else 1.0)
            # log(1 + exp(-x)) in bits, written apart for either sign (no overflow)
            loss = (math.log1p(math.exp(-x)) if x >= 0
                    else -x + math.log1p(math.exp(x))) / math.log(2.0)
            cost = delta * loss
            if tminus[shown[b]] >= 1e-16:
                li[a] += cost / tminus[shown[b]]
            if tplus[shown[a]] >= 1e-16:
                lj[b] += cost / tplus[shown[a]]
            if tminus[shown[b]] >= 1e-16 and tplus[shown[a]] >= 1e-16:
                lam /= tplus[shown[a]] * tminus[shown[b]]
                h /= tplus[shown[a]] * tminus[shown[b]]
        grad[a] -= lam
        grad[b] += lam
        hess[a] += h
        hess[b] += h
        total += 2 * lam
    factor = query_weight(weights)
    if normalize and total > 0:
        factor *= math.log2(1 + total) / total
    return [g * factor for g in grad], [v * factor for v in hess], li, lj


def propensities(li, lj, shown, k, bias_norm=1.0):
    """Hu et al.'s eqs. 30-31: per position p < k, L+[p] (L-[p]) sums ``li`` (``lj``) over the
    documents shown at p; t+[p] = (L+[p] / L+[0]) ** (1 / (1 + bias_norm)), t- alike. None
    where position 0's sum is (about) zero (the caller keeps its propensities). The sums are
    ``math.fsum``'s, correctly rounded: skltr's exact sums (``skltr._cpu.exact_sum``) must
    give their bits (``+ 0.0``: an exact zero is +0.0 there)."""
    plus = [math.fsum(v for v, p in zip(li, shown) if p == q) + 0.0 for q in range(k)]
    minus = [math.fsum(v for v, p in zip(lj, shown) if p == q) + 0.0 for q in range(k)]
    e = 1.0 / (1.0 + bias_norm)
    tp = [(v / plus[0]) ** e for v in plus] if plus[0] >= 1e-16 else None
    tm = [(v / minus[0]) ** e for v in minus] if minus[0] >= 1e-16 else None
    return tp, tm


def additive_bias_step(grad, hess, shown, bias, learning_rate, regularization):
    """LightGBM's UpdatePositionBiasFactors: one Newton step on each position's additive
    score from the gradients of the documents shown there (sums by ``math.fsum``: correctly
    rounded, as skltr's exact sums)."""
    out = list(bias)
    for q in range(len(bias)):
        rows = [r for r, p in enumerate(shown) if p == q]
        d1 = -(math.fsum(grad[r] for r in rows) + 0.0) - bias[q] * regularization * len(rows)
        d2 = -(math.fsum(hess[r] for r in rows) + 0.0) - regularization * len(rows)
        out[q] = bias[q] + learning_rate * d1 / (abs(d2) + 0.001)
    return out


def lightgbm_floats(seed, n_skip, n):
    """Draws n_skip..n_skip+n-1 of LightGBM's Random(seed).NextFloat(), stepped one by one."""
    x = seed % 2**32
    out = []
    for k in range(n_skip + n):
        x = (214013 * x + 2531011) % 2**32
        if k >= n_skip:
            out.append(((x >> 16) & 0x7FFF) / 32768.0)
    return out


def safe_div(term, rest):
    """term / (1 - rho); 0 where the other documents' mass underflowed to 0 (the limit of
    everything the quotient is multiplied by)."""
    return term / rest if rest > 0 else 0.0


def xendcg(labels, scores, weights=None, seed=0, iteration=0, query=0):
    """LightGBM's RankXENDCG for query number ``query`` at round ``iteration``."""
    n = len(labels)
    if n <= 1:
        return [0.0] * n, [0.0] * n
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    rho = [v / sum(e) for v in e]
    # 1 - rho as the mass of the other documents (no cancellation when rho is near 1)
    rest = [sum(e[j] for j in range(n) if j != i) / sum(e) for i in range(n)]
    gammas = lightgbm_floats(seed + query, iteration * n, n)
    phi = [2.0 ** int(label) - g for label, g in zip(labels, gammas)]
    target = [v / max(1e-15, sum(phi)) for v in phi]
    # LightGBM's gradient: first, second and third order terms of its series
    first = [rho[i] - target[i] for i in range(n)]
    c1 = [safe_div(first[i], rest[i]) for i in range(n)]
    second = [rho[i] * sum(c1[j] for j in range(n) if j != i) for i in range(n)]
    c2 = [safe_div(second[i], rest[i]) for i in range(n)]
    third = [rho[i] * sum(c2[j] for j in range(n) if j != i) for i in range(n)]
    w = query_weight(weights)
    grad = [(first[i] + second[i] + third[i]) * w for i in range(n)]
    hess = [rho[i] * rest[i] * w for i in range(n)]
    return grad, hess


_MASK64 = 2**64 - 1


def splitmix64(x):
    """SplitMix64's finaliser of ``x + 0x9E3779B97F4A7C15``, on Python ints mod 2**64."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def yetirank_uniforms(seed, iteration, query, permutation, n):
    """The n uniforms in (0, 1) of one YetiRank permutation: the hash chained over
    (seed, iteration, query, permutation), then one more step per document."""
    key = splitmix64(seed)
    for counter in (iteration, query, permutation):
        key = splitmix64(key ^ counter)
    return [((splitmix64(key ^ i) >> 11) + 0.5) / 2.0**53 for i in range(n)]


def yetirank(labels, scores, weights=None, seed=0, iteration=0, query=0, permutations=10,
             decay=0.85):
    """YetiRank as CatBoost describes it: per permutation, sort by ``exp(s) * u / (1.000001
    - u)`` (ties in row order), give each pair of neighbours with different labels the weight
    ``0.15 * decay**k * |label difference|`` (k: the upper one's position), accumulate the
    weights of every (winner, loser) pair over the permutations, divide by their number and
    take the pairwise logistic loss's derivatives of every weighted pair."""
    n = len(labels)
    pair_weight = {}
    for m in range(permutations):
        u = yetirank_uniforms(seed, iteration, query, m, n)
        top = max(scores)  # exp(s - top): CatBoost's exp(s) without overflow
        noisy = [math.exp(s - top) * (ui / (1.000001 - ui)) for s, ui in zip(scores, u)]
        order = sorted(range(n), key=lambda i: (-noisy[i], i))
        for k in range(n - 1):
            a, b = order[k], order[k + 1]
            if labels[a] == labels[b]:
                continue
            win, lose = (a, b) if labels[a] > labels[b] else (b, a)
            pair_weight[win, lose] = pair_weight.get((win, lose), 0.0) + (
                0.15 * decay ** k * abs(labels[a] - labels[b]))
    grad, hess = [0.0] * n, [0.0] * n
    w_q = query_weight(weights)
    for (win, lose), total in pair_weight.items():
        w = total / permutations * w_q
        p = logistic_tail(scores[win] - scores[lose])  # P(the pair is ordered wrongly)
        grad[win] -= w * p
        grad[lose] += w * p
        hess[win] += w * p * (1 - p)
        hess[lose] += w * p * (1 - p)
    return grad, hess


def regression(labels, scores, weights=None):
    w = [1.0] * len(labels) if weights is None else list(weights)
    return ([wi * (s - y) for wi, s, y in zip(w, scores, labels)], w)


def per_query(fn, y, scores, group_ptr, weights=None, with_query=False, **params):
    """Apply a per-query reference to query-grouped arrays; returns (grad, hess) lists."""
    grad, hess = [], []
    for q in range(len(group_ptr) - 1):
        lo, hi = int(group_ptr[q]), int(group_ptr[q + 1])
        w = None if weights is None else [float(v) for v in weights[lo:hi]]
        extra = {"query": q} if with_query else {}
        g, h = fn([float(v) for v in y[lo:hi]], [float(v) for v in scores[lo:hi]], w,
                  **params, **extra)
        grad += g
        hess += h
    return grad, hess
