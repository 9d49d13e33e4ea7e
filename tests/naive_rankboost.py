"""RankBoost by materialising every crucial pair: the slow reference of skltr._cpu.rankboost
and skltr._rankboost.boosting."""

import numpy as np


def pairs_of(y, group_ptr):
    """(a, b, q) of every crucial pair: same query, y_b > y_a (b should rank above a)."""
    out = []
    for q in range(len(group_ptr) - 1):
        rows = range(group_ptr[q], group_ptr[q + 1])
        out += [(a, b, q) for a in rows for b in rows if y[b] > y[a]]
    return out


def initial_weights(y, group_ptr, sample_weight, pair_weighting):
    pairs = pairs_of(y, group_ptr)
    sizes = np.diff(group_ptr)
    w = np.ones(len(sizes)) if sample_weight is None else np.array(
        [np.mean(sample_weight[group_ptr[q]:group_ptr[q + 1]]) for q in range(len(sizes))])
    count = np.bincount([q for _, _, q in pairs], minlength=len(sizes)).astype(float)
    d = np.array([w[q] / (count[q] if pair_weighting == "query" else 1.0)
                  for _, _, q in pairs])
    return pairs, d / d.sum()


def potentials(n, pairs, D):
    """pi(d) = sum over pairs (a, d) of D - sum over pairs (d, b) of D."""
    pi = np.zeros(n)
    for (a, b, _), w in zip(pairs, D):
        pi[b] += w
        pi[a] -= w
    return pi


def stump_r(Xb, pi, f, b, q_def, missing_bin):
    """r = sum_d h(d) pi(d) with h = [bin > b], missing rows taking q_def."""
    col = Xb[:, f].astype(np.int64)
    h = np.where(col == missing_bin, q_def, (col > b) & (col != missing_bin))
    return float(np.dot(h.astype(float), pi))


def best_stump(Xb, pi, n_bins, missing_bin):
    """Largest |r|; ties: lowest feature, lowest bin, q_def 0 (as the kernel)."""
    best = (-1.0, None)
    for f in range(Xb.shape[1]):
        for b in range(n_bins[f]):
            for q_def in (0, 1):
                r = stump_r(Xb, pi, f, b, q_def, missing_bin)
                if abs(r) > best[0] + 1e-12:
                    best = (abs(r), (f, b, q_def, r))
    return best[1]


def fit(Xb, y, group_ptr, n_bins, missing_bin, rounds, pair_weighting="query",
        sample_weight=None):
    """The stumps (f, b, q_def, alpha) of ``rounds`` rounds, pairs materialised."""
    pairs, D = initial_weights(y, group_ptr, sample_weight, pair_weighting)
    out = []
    for _ in range(rounds):
        pi = potentials(len(y), pairs, D)
        f, b, q_def, r = best_stump(Xb, pi, n_bins, missing_bin)
        r = float(np.clip(r, -(1 - 1e-10), 1 - 1e-10))
        alpha = 0.5 * np.log((1 + r) / (1 - r))
        col = Xb[:, f].astype(np.int64)
        h = np.where(col == missing_bin, q_def, (col > b) & (col != missing_bin)).astype(float)
        D = D * np.exp(alpha * np.array([h[a] - h[bb] for a, bb, _ in pairs]))
        D = D / D.sum()
        out.append((f, b, q_def, alpha, pi))
    return out
