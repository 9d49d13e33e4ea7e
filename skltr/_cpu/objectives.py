"""numba kernels for the GBDT objectives: per-row gradients and hessians.

Plain functions over arrays: no scikit-learn import, no validation (``skltr/_gbdt/objectives.py``
does it). Rows arrive grouped by query and every kernel writes float32 ``grad`` / ``hess`` in
place. The ranking kernels run one parallel driver over *chunks* of whole queries (about the
same number of rows per chunk); each chunk owns scratch buffers sized to the largest query, and
each query is computed by one thread from its own rows only, so the result never depends on the
thread count or the chunking::

    y          2 0 1 | 0 0 | 3 1 0 1          rows in query-grouped order
    group_ptr  0       3     5         9      query q = rows group_ptr[q]:group_ptr[q + 1]
    chunks     [ q0    q1 ] [ q2          ]   prange over chunks, a loop over queries inside
    scratch    per chunk: order, gains, lambdas (float64), ... of length max query size

Inside a query (LambdaMART, as LightGBM 4.x ``LambdarankNDCG::GetGradientsForOneQuery``)::

    sorted position   0    1    2    3  ...  cnt-1     documents by descending score (stable)
                      |<- i < min(truncation_level, cnt - 1) ->|
    pairs (i, j)      every j > i whose label differs from i's: the one with the higher
                      label is "high", the other "low", whatever their positions

Per pair: ``delta = |gain_h - gain_l| * |disc(pos_h) - disc(pos_l)| / maxDCG@truncation``,
divided by ``0.01 + |s_h - s_l|`` when ``normalize`` and the query's best and worst scores
differ; ``p = 1 / (1 + exp(sigmoid * (s_h - s_l)))``; the high document gets
``-sigmoid * p * delta`` and the low one ``+sigmoid * p * delta``, both get the hessian
``sigmoid**2 * p * (1 - p) * delta``. With ``normalize`` the query's gradients and hessians are
finally scaled by ``log2(1 + S) / S``, ``S`` the sum of ``2 * sigmoid * p * delta`` over its
pairs.

Differences from the libraries (all deliberate, all documented where they apply):

* the sigmoid is ``exp`` to under 1 ulp (fdlibm's, :mod:`skltr._cpu.libm`: the same bits
  on the GPU; so are ``log2`` and the order of every sum, so that both devices give the
  same gradients); LightGBM reads a 2**20-bin lookup table over
  ``[-25 / sigmoid, 25 / sigmoid]`` (the value at each bin's left edge, clamped beyond),
  which shifts its pair probabilities by up to ~5e-5 relative for score gaps of order 1 and
  more for large gaps (tiny probabilities): measured on LightGBM's tree leaves, 1e-5 typically
  and up to 2e-3 (``tests/test_objectives.py::test_lightgbm_lambdarank``);
* lambdas accumulate in float64 and are rounded to float32 once; LightGBM rounds every pair's
  contribution into a float32 accumulator;
* gains are ``2**label - 1`` (or ``label``) in float64 for any label, not LightGBM's default
  ``label_gain`` table (which stops at label 30);
* weights: a query's gradients are multiplied by the **mean of its rows' weights** (the
  policy of ``skltr.metrics``); LightGBM multiplies each row by its own weight. The two agree
  when weights are constant within each query (XGBoost only accepts per-query weights);
* LightGBM skips documents whose score is ``-inf`` (its query-subsampling marker); scores here
  are always finite;
* queries longer than 10,000 documents are accepted (LightGBM refuses them).

Speed: 500,000 rows in 4,166 queries of 120 documents (labels 0-4), lambdarank with
truncation 30 visits ~13 million pairs at ~8 ns each on one thread; the figures against
LightGBM are in ``skltr/_gbdt/objectives.py`` and ``benchmarks/objectives_cpu.py``. What
makes it fast: per-query arrays are gathered in sorted-position order once (contiguous
inner loops), the pair probability comes from per-document exponentials (one division per
pair, no ``exp``), and the ideal DCG counts labels instead of sorting.
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..utils._sorting import insertion_from, insertion_order, sort_inplace
from .libm import exp, log2

#: log2(e): the logistic loss in bits, ``log2(1 + exp(x)) = x log2(e) + log2(1 + exp(-x))``.
_LOG2E = 1.4426950408889634
#: XGBoost's ``Eps64``: propensities below it are treated as unknown (no debiasing).
_T_EPS = 1e-16

# ------------------------------------------------------------------------------------------
# helpers shared by the ranking kernels
# ------------------------------------------------------------------------------------------


class QueryMemo(NamedTuple):
    """What the pair kernels keep about each query from one round of a fit to the next.

    Both depend on the training set alone, so they never change a gradient: ``order`` only
    makes the sort faster, ``inv_max_dcg`` is computed once instead of every round (together
    ~11% of a lambdarank call at 40 documents a query, one thread).
    """

    #: int32 (n_rows,): each query's documents (local indices) by descending score at the
    #: last round's scores; any permutation of ``0..cnt-1`` per query is a valid start
    order: np.ndarray
    #: float64 (n_queries,): 1 / ideal DCG at the truncation level, -1 until computed
    inv_max_dcg: np.ndarray

    @classmethod
    def start(cls, group_ptr):
        """A fit's memo: the documents in row order, no ideal DCG known."""
        sizes = np.diff(group_ptr)
        n = int(group_ptr[-1])
        order = (np.arange(n, dtype=np.int64) - np.repeat(group_ptr[:-1], sizes)).astype(np.int32)
        return cls(order, np.full(sizes.size, -1.0))

    @classmethod
    def none(cls):
        """No memo: every call sorts and computes from scratch."""
        return cls(np.empty(0, np.int32), np.empty(0, np.float64))


@njit(cache=True)
def _max_query_size(group_ptr):
    m = 0
    for q in range(group_ptr.shape[0] - 1):
        m = max(m, group_ptr[q + 1] - group_ptr[q])
    return m


@njit(cache=True)
def _chunk_bounds(group_ptr):
    """Query boundaries of (at most) 256 chunks holding about the same number of rows.

    A fixed count, not one per thread: reading the thread count would keep numba from
    caching the kernels, and 256 chunks balance any realistic core count while keeping the
    per-chunk scratch allocations negligible.
    """
    n_queries = group_ptr.shape[0] - 1
    n_chunks = max(1, min(n_queries, 256))
    n_rows = group_ptr[n_queries]
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    for c in range(n_chunks):
        # first query starting at or after row c * n_rows / n_chunks
        bounds[c] = np.searchsorted(group_ptr[:n_queries], (c * n_rows) // n_chunks)
    bounds[n_chunks] = n_queries
    return bounds


@njit(cache=True)
def _query_weight(weights, lo, hi):
    """Mean of the query's row weights; 1 when unweighted (``weights`` of length 0)."""
    if weights.shape[0] == 0:
        return 1.0
    total = 0.0
    for r in range(lo, hi):
        total += weights[r]
    return total / (hi - lo)


@njit(cache=True)
def _all_labels_equal(y, lo, hi):
    for r in range(lo + 1, hi):
        if y[r] != y[lo]:
            return False
    return True


#: Largest query sorted by insertion (in the caller's scratch) rather than ``np.argsort``
_INSERTION_MAX = 64


@njit(cache=True)
def _descending_order(scores, lo, hi, neg, out):
    """Local indices of rows lo:hi by descending score, ties in row order (stable; ``neg``
    float64 and ``out`` int64 scratch of the query's size). Up to :data:`_INSERTION_MAX`
    rows by insertion into ``out`` (the scores moving along in ``neg``): the same order as the
    merge sort above it, without its two allocations a query, which threads contend for."""
    cnt = hi - lo
    if cnt > _INSERTION_MAX:
        for i in range(cnt):
            neg[i] = -scores[lo + i]
        return np.argsort(neg[:cnt], kind="mergesort")
    return insertion_order(scores[lo:hi], cnt, out[:cnt], neg, False)


#: Shifts a hinted order may take per document before it gives way to a sort from scratch.
_HINT_SHIFTS = 8


@njit(cache=True)
def _hinted_order(scores, lo, hi, hint, skey, out):
    """:func:`_descending_order` from ``hint[lo:hi]``, the query's order at the last round's
    scores (any permutation of ``0..cnt-1``), which it then holds for the next: boosting
    moves each score by a fraction of a tree a round, so that order is nearly sorted and
    insertion from it (:func:`~skltr.utils._sorting.insertion_from`) is about one comparison
    a document. Past ``_HINT_SHIFTS`` shifts a document (a reshuffled query) it sorts from
    scratch."""
    cnt = hi - lo
    for i in range(cnt):
        out[i] = hint[lo + i]
        skey[i] = scores[lo + out[i]]
    if not insertion_from(skey, out, cnt, _HINT_SHIFTS * cnt):
        order = _descending_order(scores, lo, hi, skey, out)
        for k in range(cnt):
            out[k] = order[k]
    for i in range(cnt):
        hint[lo + i] = out[i]
    return out[:cnt]


@njit(cache=True)
def _inverse_max_dcg(labels, gains, gain_exp2, discount, k, counts, buf):
    """1 / (ideal DCG@k) of one query, 0 when the ideal DCG is 0.

    ``labels`` / ``gains``: the query's labels and their gains, in any order. Labels are
    integers >= 0 (validated by the host); below ``counts.shape[0]`` they are counted, as
    LightGBM does (linear in the query size, no sort); larger ones are sorted by gain.
    ``counts`` must be all zero, and is left so.
    """
    cnt = labels.shape[0]
    kk = min(k, cnt)
    top = labels.max()
    total = 0.0
    if top < counts.shape[0]:
        for i in range(cnt):
            counts[np.int64(labels[i])] += 1
        label = np.int64(top)
        r = 0
        while r < kk:
            while counts[label] == 0:
                label -= 1
            g = 2.0 ** np.float64(label) - 1.0 if gain_exp2 else np.float64(label)
            while counts[label] > 0 and r < kk:
                total += g * discount[r]
                counts[label] -= 1
                r += 1
        for i in range(cnt):
            counts[np.int64(labels[i])] = 0
    else:
        for i in range(cnt):
            buf[i] = -gains[i]
        ideal = buf[:cnt]
        sort_inplace(ideal)  # the gains in decreasing order, negated (np.sort's result)
        for r in range(kk):
            total -= ideal[r] * discount[r]
    return 1.0 / total if total > 0.0 else 0.0


@njit(cache=True, error_model="numpy")
def _pair_values(ps, py, pg, pe, discount, i, cnt, si, yi, gi, di, ei, inv_max_dcg, sigmoid,
                 sig2, dist0, dist1, ranknet, lam, hes):
    """Signed lambda and hessian of the pairs (i, j > i) of plain LambdaRank / RankNet into
    ``lam[j]`` / ``hes[j]`` (:func:`_pair_lambdas`' arithmetic for ``exact=False``).

    No iteration reads another's result, so LLVM vectorises the loop (``error_model="numpy"``:
    numba's Python model would test every divisor for zero; here ``(e_i + e_j) * dist`` > 0).
    """
    # slices from j = i + 1, indexed from 0: indices numba cannot prove >= 0 get a
    # wraparound test each, which turns the vector loads into gathers
    lo = i + 1
    ps_, py_, pg_, pe_, dc_ = ps[lo:cnt], py[lo:cnt], pg[lo:cnt], pe[lo:cnt], discount[lo:cnt]
    lam_, hes_ = lam[lo:cnt], hes[lo:cnt]
    for t in range(cnt - lo):
        yj = py_[t]
        ds = si - ps_[t]  # >= 0: positions are sorted by descending score
        i_high = yi > yj
        dist = dist0 + dist1 * ds
        ej = pe_[t]
        inv = 1.0 / ((ei + ej) * dist)
        pl = (ej if i_high else ei) * inv  # p / dist
        ql = (ei if i_high else ej) * inv * dist  # 1 - p, without cancellation
        if ranknet:  # dist is 1; a pair of equal labels is no pair: exact zeros
            lm = sigmoid * pl if yj != yi else 0.0
            hs = 2.0 * sig2 * max(pl * ql, 1e-16) if yj != yi else 0.0
        else:  # |delta NDCG| / dist; equal labels weigh 0 (equal gains)
            w = abs((gi - pg_[t]) * (di - dc_[t])) * inv_max_dcg
            lm = sigmoid * w * pl
            hs = sig2 * w * pl * ql
        # the high document is pushed up (negative gradient), the low one down
        lam_[t] = -lm if i_high else lm
        hes_[t] = hs


@njit(cache=True, inline="always")
def _pair_sums(plam, phes, lam, hes, i, cnt):
    """Add :func:`_pair_values`' pairs of row ``i`` to the low documents (``plam[j] -= lam[j]``,
    ``phes[j] += hes[j]``); returns their sums for ``i`` and the row's ``sum 2 |lambda|``,
    added in ``j`` order (the one-loop form's order: the same bits). A lambda is ``>= 0``
    before its sign, so ``2 |lam[j]|`` is the one-loop ``2 * lam``; the exact zeros of
    RankNet's equal-label pairs, which that form skips, change no sum (from +0.0, a sum
    never becomes -0.0, and ``x - 0.0`` is ``x``)."""
    lam_i = 0.0
    hes_i = 0.0
    row = 0.0
    for j in range(i + 1, cnt):
        s = lam[j]
        h = hes[j]
        lam_i += s
        plam[j] -= s
        hes_i += h
        phes[j] += h
        row += 2.0 * abs(s)
    return lam_i, hes_i, row


@njit(cache=True)
def _pair_lambdas(ps, py, pg, pe, discount, inv_max_dcg, n_high, sigmoid, norm_by_diff,
                  ranknet, exact, plam, phes, ppos, bias, pli, plj):
    """Accumulate the pair lambdas of one query, everything indexed by sorted position.

    ``ps``, ``py``, ``pg``: scores (descending), labels and gains by position; ``pe``:
    ``exp(sigmoid * (s - s_max))``, so that the pair probability
    ``p = 1 / (1 + exp(sigmoid * (s_high - s_low)))`` is ``e_low / (e_high + e_low)`` without
    an ``exp`` per pair (``exact=False``; with ``exact=True``, for queries whose scores span
    so far that the exponentials could underflow, one ``exp`` per pair). LambdaRank
    (``ranknet=False``) weighs a pair by its |delta NDCG| (LightGBM's formula); RankNet
    (``ranknet=True``) by 1, with XGBoost's hessian ``2 * max(p (1 - p), 1e-16)``. Returns
    LightGBM's ``sum_lambdas``: the sum of ``2 * |lambda|`` over the pairs.

    Unbiased LambdaMART (``bias``: as :func:`_pairwise_query`'s, None for plain LambdaRank,
    which numba then compiles without any of it; ``tplus`` of length ``k > 0``; Hu et al.
    2019, XGBoost's
    ``lambdarank_unbiased``): ``ppos`` holds each document's *displayed* position. A pair
    whose two documents were shown above ``k`` has its lambda and hessian divided by
    ``tplus[pos_high] * tminus[pos_low]`` (both >= 1e-16), and its cost
    ``|delta NDCG| / dist * log2(1 + exp(-sigmoid (s_high - s_low)))`` (the pair's logistic
    loss, in bits: the propensity update only reads ratios) is added to the high document's
    ``pli`` divided by ``tminus[pos_low]`` and to the low document's ``plj`` divided by
    ``tplus[pos_high]``, in the order ``plam`` accumulates (the GPU's too). ``cost_flag[0]``
    != 0: XGBoost 3.x's cost instead, ``log2(1 + exp(+sigmoid (s_high - s_low)))`` (the loss
    of the reversed pair: XGBoost takes ``log(1 / (1 - sigmoid))`` of its
    ``sigmoid = 1 / (1 + exp(-(s_h - s_l)))``, where the paper's ``sigmoid`` is the other
    tail).
    """
    cnt = ps.shape[0]
    sum_lambdas = 0.0
    # score-distance normalisation: divide by 0.01f + |s_i - s_j| (LightGBM adds the float
    # literal 0.01f, i.e. the double below), or by 1
    dist0 = 0.009999999776482582 if norm_by_diff else 1.0
    dist1 = 1.0 if norm_by_diff else 0.0
    sig2 = sigmoid * sigmoid
    k = 0  # positions tracked by Unbiased LambdaMART; 0: no debiasing
    xgboost_cost = False
    if bias is not None:
        k = bias[1].shape[0]
        xgboost_cost = k > 0 and bias[5][0] != 0
    for i in range(n_high):
        yi = py[i]
        si = ps[i]
        gi = pg[i]
        di = 0.0 if ranknet else discount[i]
        ei = pe[i]
        if bias is None and not exact:
            # plain LambdaRank / RankNet: the pairs' values in one loop without a carried
            # dependency (LLVM vectorises it), then the sums in a second, in the order of
            # the one-loop form below -- the same bits, ~20% less time on 180k rows (taking
            # the sums of two rows side by side, six add chains instead of three, was slower)
            _pair_values(ps, py, pg, pe, discount, i, cnt, si, yi, gi, di, ei, inv_max_dcg,
                         sigmoid, sig2, dist0, dist1, ranknet, pli, plj)
            lam_i, hes_i, row = _pair_sums(plam, phes, pli, plj, i, cnt)
            plam[i] += lam_i
            phes[i] += hes_i
            sum_lambdas += row
            continue
        lam_i = 0.0
        hes_i = 0.0
        li_i = 0.0
        lj_i = 0.0
        row = 0.0  # this row's 2 * |lambda|s: sum_lambdas adds rows (the GPU's order too)
        for j in range(i + 1, cnt):
            yj = py[j]
            # LambdaRank weighs a pair of equal labels 0 (equal gains): it adds exact zeros,
            # and running through beats a branch the labels make unpredictable; RankNet's
            # hessian floor and the unbiased costs would not be zero
            if (ranknet or bias is not None) and yj == yi:
                continue
            ds = si - ps[j]  # >= 0: positions are sorted by descending score
            i_high = yi > yj
            dist = dist0 + dist1 * ds
            if exact:  # the exponentials may underflow: one exp per pair
                p = 1.0 / (1.0 + exp(sigmoid * (ds if i_high else -ds)))
                pl = p / dist
                ql = 1.0 - p
            else:  # p = e_low / (e_high + e_low), and a single division
                ej = pe[j]
                inv = 1.0 / ((ei + ej) * dist)
                pl = (ej if i_high else ei) * inv  # p / dist
                ql = (ei if i_high else ej) * inv * dist  # 1 - p, without cancellation
            if ranknet:  # dist is 1
                lam = sigmoid * pl
                hes = 2.0 * sig2 * max(pl * ql, 1e-16)
            else:  # |delta NDCG| / dist
                w = abs((gi - pg[j]) * (di - discount[j])) * inv_max_dcg
                lam = sigmoid * w * pl
                hes = sig2 * w * pl * ql
                if bias is not None and k > 0:
                    pos_h = ppos[i] if i_high else ppos[j]
                    pos_l = ppos[j] if i_high else ppos[i]
                    if pos_h < k and pos_l < k:
                        t_h = bias[1][pos_h]
                        t_l = bias[2][pos_l]
                        # the pair's logistic loss in bits, without overflow or cancellation;
                        # XGBoost's cost is the loss of the reversed pair (xgboost_cost)
                        if exact:
                            loss = log2(1.0 + exp(-sigmoid * ds))
                            if i_high == xgboost_cost:
                                loss += sigmoid * ds * _LOG2E
                        elif xgboost_cost:
                            loss = -log2(pl * dist)
                        else:
                            loss = -log2(ql)
                        cost = w / dist * loss  # XGBoost's |delta NDCG| (normalised) x loss
                        if t_l >= _T_EPS:
                            if i_high:
                                li_i += cost / t_l
                            else:
                                pli[j] += cost / t_l
                        if t_h >= _T_EPS:
                            if i_high:
                                plj[j] += cost / t_h
                            else:
                                lj_i += cost / t_h
                        if t_l >= _T_EPS and t_h >= _T_EPS:
                            lam /= t_h * t_l
                            hes /= t_h * t_l
            # the high document is pushed up (negative gradient), the low one down; x - y is
            # x + (-y) in IEEE arithmetic, so the signed lambda gives the same bits branch-free
            signed = -lam if i_high else lam
            lam_i += signed
            plam[j] -= signed
            hes_i += hes
            phes[j] += hes
            row += 2.0 * lam
        plam[i] += lam_i
        phes[i] += hes_i
        if bias is not None and k > 0:
            pli[i] += li_i
            plj[i] += lj_i
        sum_lambdas += row
    return sum_lambdas


@njit(cache=True)
def _pairwise_query(scores, y, lo, hi, weights, gain_exp2, discount, truncation_level, sigmoid,
                    normalize, ranknet, grad, hess, scratch, counts, bias, ipos, memo, q):
    """Gradients of one query for LambdaRank or RankNet; zero for 1 document / equal labels.

    ``bias``: ``(position, tplus, tminus, li_row, lj_row, cost_flag)`` of Unbiased LambdaMART
    (:func:`unbiased_lambdarank_gradients`), or None: plain LambdaRank / RankNet, compiled
    without it (a run-time test in the pair loop cost plain LambdaRank 14%); ``ipos`` int64
    scratch: row 0 the displayed positions, row 1 the sort's order. ``memo``: the fit's
    :class:`QueryMemo` (``q`` the query's index in it), or :meth:`QueryMemo.none`.
    """
    unbiased = False
    if bias is not None:
        unbiased = bias[1].shape[0] > 0
    cnt = hi - lo
    for r in range(lo, hi):
        grad[r] = 0.0
        hess[r] = 0.0
        if bias is not None and unbiased:
            bias[3][r] = 0.0
            bias[4][r] = 0.0
    if cnt <= 1 or _all_labels_equal(y, lo, hi):
        return
    # scratch rows: sort keys, then scores, labels, gains, exps, lambdas, hessians by position
    hint, inv_dcg = memo
    if hint.shape[0] > 0:
        order = _hinted_order(scores, lo, hi, hint, scratch[0], ipos[1])
    else:
        order = _descending_order(scores, lo, hi, scratch[0], ipos[1])
    ps = scratch[1, :cnt]
    py = scratch[2, :cnt]
    pg = scratch[3, :cnt]
    pe = scratch[4, :cnt]
    plam = scratch[5, :cnt]
    phes = scratch[6, :cnt]
    pli = scratch[7, :cnt]
    plj = scratch[8, :cnt]
    ppos = ipos[0, :cnt]
    s_max = scores[lo + order[0]]
    for i in range(cnt):
        r = lo + order[i]
        ps[i] = scores[r]
        py[i] = y[r]
        pg[i] = 2.0 ** y[r] - 1.0 if gain_exp2 else y[r]
        pe[i] = exp(sigmoid * (scores[r] - s_max))
        plam[i] = 0.0
        phes[i] = 0.0
        if bias is not None:
            pli[i] = 0.0
            plj[i] = 0.0
            ppos[i] = bias[0][r] if unbiased else 0
    inv_max_dcg = 0.0
    if not ranknet:
        if inv_dcg.shape[0] > 0 and inv_dcg[q] >= 0.0:  # labels fixed: once a fit
            inv_max_dcg = inv_dcg[q]
        else:
            inv_max_dcg = _inverse_max_dcg(py, pg, gain_exp2, discount, truncation_level,
                                           counts, scratch[0])
            if inv_dcg.shape[0] > 0:
                inv_dcg[q] = inv_max_dcg
    norm_by_diff = normalize and ps[0] != ps[cnt - 1] and not ranknet
    n_high = min(cnt - 1, truncation_level)
    # exp(-700) is still a normal double: below that span e_high + e_low cannot underflow
    exact = sigmoid * (ps[0] - ps[cnt - 1]) > 700.0
    sum_lambdas = _pair_lambdas(ps, py, pg, pe, discount, inv_max_dcg, n_high, sigmoid,
                                norm_by_diff, ranknet, exact, plam, phes, ppos, bias, pli,
                                plj)
    factor = _query_weight(weights, lo, hi)
    if normalize and sum_lambdas > 0.0:
        factor *= log2(1.0 + sum_lambdas) / sum_lambdas
    for i in range(cnt):
        r = lo + order[i]
        grad[r] = plam[i] * factor
        hess[r] = phes[i] * factor
        if bias is not None and unbiased:  # costs: neither weighted nor normalised (XGBoost)
            bias[3][r] = pli[i]
            bias[4][r] = plj[i]


@njit(cache=True)
def _pairwise_chunk(scores, y, group_ptr, weights, gain_exp2, truncation_level, sigmoid,
                    normalize, ranknet, grad, hess, bounds, discount, max_cnt, c, bias, memo):
    """The queries of chunk ``c``, with this chunk's scratch buffers."""
    scratch = np.empty((9, max_cnt), dtype=np.float64)
    ipos = np.empty((2, max_cnt), dtype=np.int64)  # displayed positions, the sort's order
    # label counts for the ideal DCG: labels 0..1023 (all exponential-gain labels) counted,
    # as many as the chunk's largest label needs (8 KB zeroed for each of 256 chunks: a call
    # on 600 queries of 40 documents took 952 us against 873 us, 2 threads, by hand)
    top = 0.0
    if not ranknet:
        for r in range(group_ptr[bounds[c]], group_ptr[bounds[c + 1]]):
            top = max(top, y[r])
    counts = np.zeros(0 if ranknet else min(1024, np.int64(top) + 1), dtype=np.int64)
    for q in range(bounds[c], bounds[c + 1]):
        _pairwise_query(scores, y, group_ptr[q], group_ptr[q + 1], weights, gain_exp2,
                        discount, truncation_level, sigmoid, normalize, ranknet, grad, hess,
                        scratch, counts, bias, ipos, memo, q)


@njit(cache=True)
def discounts(n):
    """``1 / log2(position + 2)`` for 0-based positions ``0..n-1`` (LightGBM's discount_)."""
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        out[i] = 1.0 / math.log2(2.0 + i)
    return out


# ------------------------------------------------------------------------------------------
# public kernels
# ------------------------------------------------------------------------------------------


@njit(parallel=True, cache=True)
def lambdarank_gradients(scores, y, group_ptr, weights, gain_exp2, truncation_level, sigmoid,
                         normalize, grad, hess, memo):
    """LambdaMART (NDCG) gradients and hessians, as LightGBM 4.x ``lambdarank``.

    Parameters
    ----------
    scores : float64 array of shape (n_rows,)
        Current raw scores, query-grouped.
    y : float64 array of shape (n_rows,)
        Relevance labels (validated by the host: integers >= 0, gains finite).
    group_ptr : int64 array of shape (n_queries + 1,)
        Query ``q`` owns rows ``group_ptr[q]:group_ptr[q + 1]``.
    weights : float64 array of shape (n_rows,) or (0,)
        Row weights; a query's gradients are scaled by the mean of its rows' weights. A
        length-0 array means unweighted.
    gain_exp2 : bool
        Gain ``2**label - 1`` (True) or ``label`` (False).
    truncation_level : int
        Pairs need at least one document in the top ``truncation_level`` positions, and the
        ideal DCG is taken at this cutoff (LightGBM's ``lambdarank_truncation_level``).
    sigmoid : float
        Steepness of the pair probability (LightGBM's ``sigmoid``), > 0.
    normalize : bool
        LightGBM's ``lambdarank_norm``: divide each pair's delta NDCG by
        ``0.01 + |s_i - s_j|`` (unless every score of the query is equal) and scale each
        query by ``log2(1 + S) / S``.
    grad, hess : float32 arrays of shape (n_rows,)
        Written in place. Queries with one document or with all labels equal get zeros.
    memo : QueryMemo
        What a fit keeps from round to round (:meth:`QueryMemo.start`, updated in place), or
        :meth:`QueryMemo.none`; the gradients are the same either way.
    """
    max_cnt = _max_query_size(group_ptr)
    discount = discounts(max_cnt)
    bounds = _chunk_bounds(group_ptr)
    for c in prange(bounds.shape[0] - 1):
        # int64 index: the parfor's own index is unsigned, and the chunk function would
        # compile a second time for it
        _pairwise_chunk(scores, y, group_ptr, weights, gain_exp2, truncation_level, sigmoid,
                         normalize, False, grad, hess, bounds, discount, max_cnt, np.int64(c),
                         None, memo)


@njit(parallel=True, cache=True)
def pairwise_gradients(scores, y, group_ptr, weights, truncation_level, sigmoid, normalize,
                       grad, hess, memo):
    """RankNet gradients and hessians, as XGBoost's ``rank:pairwise`` with top-k pairs.

    Same pairs as :func:`lambdarank_gradients` (documents in the top ``truncation_level``
    positions with every later document of a different label; ``truncation_level >= n_docs``
    means all pairs), each weighted 1 instead of by its delta NDCG:
    ``p = 1 / (1 + exp(sigmoid * (s_h - s_l)))``, the high document gets ``-sigmoid * p``,
    the low one ``+sigmoid * p``, both ``2 * sigmoid**2 * max(p * (1 - p), 1e-16)`` (XGBoost's
    hessian, twice the loss's second derivative). ``normalize`` scales each query by
    ``log2(1 + S) / S`` (XGBoost's ``lambdarank_normalization`` for top-k pairs); there is no
    score-distance normalisation. Parameters are those of :func:`lambdarank_gradients`.
    """
    max_cnt = _max_query_size(group_ptr)
    discount = np.empty(0, dtype=np.float64)  # RankNet has no discount
    bounds = _chunk_bounds(group_ptr)
    for c in prange(bounds.shape[0] - 1):
        _pairwise_chunk(scores, y, group_ptr, weights, False, truncation_level, sigmoid,
                         normalize, True, grad, hess, bounds, discount, max_cnt, np.int64(c),
                         None, memo)


# ------------------------------------------------------------------------------------------
# position bias (learning from clicks)
# ------------------------------------------------------------------------------------------


@njit(parallel=True, cache=True)
def unbiased_lambdarank_gradients(scores, y, group_ptr, weights, gain_exp2, truncation_level,
                                  sigmoid, normalize, position, tplus, tminus, li_row, lj_row,
                                  grad, hess, memo, xgboost_cost=False):
    """Unbiased LambdaMART gradients (Hu et al., WWW 2019; XGBoost's ``lambdarank_unbiased``).

    :func:`lambdarank_gradients` with each pair of documents both *shown* above ``k =
    tplus.shape[0]`` divided by ``tplus[pos_high] * tminus[pos_low]`` (the propensities of
    the clicked and the unclicked position), and each such pair's cost written for the
    propensity update (:func:`propensities_from_sums`)::

        pair (h, l), h more relevant:  cost = |delta NDCG| / dist * log2(1 + exp(-s (s_h - s_l)))
                                       li_row[h] += cost / tminus[pos_l]
                                       lj_row[l] += cost / tplus[pos_h]

    Parameters
    ----------
    scores, y, group_ptr, weights, gain_exp2, truncation_level, sigmoid, normalize
        As in :func:`lambdarank_gradients`.
    position : int64 array of shape (n_rows,)
        Displayed position of each row (0-based, >= 0; validated by the host).
    tplus, tminus : float64 arrays of shape (k,), k >= 1
        The current propensities of clicked / unclicked documents per position.
    li_row, lj_row : float64 arrays of shape (n_rows,)
        Overwritten: each row's summed costs as the clicked (li) and unclicked (lj) side.
    grad, hess : float32 arrays of shape (n_rows,)
        Written in place.
    memo : QueryMemo
        As in :func:`lambdarank_gradients`.
    xgboost_cost : bool, default=False
        XGBoost 3.x's pair cost (the loss of the reversed pair) instead of the paper's.
    """
    max_cnt = _max_query_size(group_ptr)
    discount = discounts(max_cnt)
    bounds = _chunk_bounds(group_ptr)
    bias = (position, tplus, tminus, li_row, lj_row,
            np.full(1, 1 if xgboost_cost else 0, dtype=np.int64))
    for c in prange(bounds.shape[0] - 1):
        _pairwise_chunk(scores, y, group_ptr, weights, gain_exp2, truncation_level, sigmoid,
                         normalize, False, grad, hess, bounds, discount, max_cnt, np.int64(c),
                         bias, memo)


@njit(cache=True)
def propensities_from_sums(li, lj, regularizer, tplus, tminus):
    """Unbiased LambdaMART's propensity update (eqs. 30-31; XGBoost's
    ``LambdaRankUpdatePositionBias``), in place, from the round's cost sums per position.

    ``li[p]`` / ``lj[p]`` (``L+[p]`` / ``L-[p]``): the sums of ``li_row`` / ``lj_row`` over
    the rows shown at position ``p < k`` (all workers' rows, rounded once:
    :class:`skltr._gbdt.position_bias.UnbiasedRound`). Then ``tplus[p] = (L+[p] / L+[0]) **
    regularizer`` when ``L+[0] >= 1e-16`` (else unchanged), the same for ``tminus``;
    ``regularizer`` is ``1 / (1 + lambdarank_bias_norm)``. Position 0's propensities are
    thus 1.
    """
    for p in range(tplus.shape[0]):
        if li[0] >= _T_EPS:
            tplus[p] = (li[p] / li[0]) ** regularizer
        if lj[0] >= _T_EPS:
            tminus[p] = (lj[p] / lj[0]) ** regularizer


@njit(cache=True)
def shift_by_position(scores, position, bias, out):
    """``out = scores + bias[position]`` (positions beyond ``bias`` get no bias): LightGBM's
    ``score_adjusted`` of the additive position bias."""
    k = bias.shape[0]
    for r in range(scores.shape[0]):
        p = position[r]
        out[r] = scores[r] + bias[p] if p < k else scores[r]


@njit(cache=True)
def additive_bias_step(grad_sum, hess_sum, count, learning_rate, regularization, bias):
    """LightGBM 4.x's ``UpdatePositionBiasFactors``, in place: one Newton step per position.

    ``grad_sum[p]``, ``hess_sum[p]``, ``count[p]``: the sums of the round's gradients and
    hessians, and the number of rows, over the rows shown at position ``p`` (of those
    tracked, ``p < bias.shape[0]``; all workers' rows, rounded once:
    :class:`skltr._gbdt.position_bias.AdditiveRound`). Then
    ``d1 = -grad_sum[p] - bias[p] * regularization * n_p``,
    ``d2 = -hess_sum[p] - regularization * n_p`` and
    ``bias[p] += learning_rate * d1 / (|d2| + 0.001)``.
    """
    for p in range(bias.shape[0]):
        first = -grad_sum[p] - bias[p] * regularization * count[p]
        second = -hess_sum[p] - regularization * count[p]
        bias[p] += learning_rate * first / (abs(second) + 0.001)


# ------------------------------------------------------------------------------------------
# XE-NDCG
# ------------------------------------------------------------------------------------------

_LCG_MASK = 0xFFFFFFFF  # fixed constant: LightGBM's generator works modulo 2**32


@njit(cache=True)
def _lcg_state(seed, query, n_draws):
    """State of LightGBM's ``Random(seed + query)`` after ``n_draws`` draws (jump-ahead).

    LightGBM's generator is ``x <- 214013 x + 2531011 (mod 2**32)``; ``n`` steps are the
    affine map ``x <- A_n x + C_n``, composed by repeated squaring in O(log n).
    """
    mask = np.uint64(_LCG_MASK)
    x = np.uint64((seed + query) & _LCG_MASK)
    mult = np.uint64(214013)
    plus = np.uint64(2531011)
    acc_mult = np.uint64(1)
    acc_plus = np.uint64(0)
    n = n_draws
    while n > 0:
        if n & 1:
            acc_mult = (acc_mult * mult) & mask
            acc_plus = (acc_plus * mult + plus) & mask
        plus = ((mult + np.uint64(1)) * plus) & mask
        mult = (mult * mult) & mask
        n >>= 1
    return (acc_mult * x + acc_plus) & mask


@njit(cache=True)
def _ratio(term, one_minus_rho):
    return term / one_minus_rho if one_minus_rho > 0.0 else 0.0


@njit(cache=True)
def _xendcg_query(scores, y, lo, hi, weights, seed, iteration, q, grad, hess, rho, params,
                  lam):
    """XE-NDCG gradients of one query (LightGBM's ``RankXENDCG::GetGradientsForOneQuery``)."""
    cnt = hi - lo
    if cnt <= 1:
        for r in range(lo, hi):
            grad[r] = 0.0
            hess[r] = 0.0
        return
    # softmax of the scores
    m = lo
    for r in range(lo, hi):
        if scores[r] > scores[m]:
            m = r
    total = 0.0
    for i in range(cnt):
        rho[i] = exp(scores[lo + i] - scores[m])
        total += rho[i]
    # 1 - rho of the most probable document, from the others' mass: 1 - rho cancels
    # catastrophically when one document holds nearly all of it (any other has rho <= 1/2)
    others = 0.0
    for i in range(cnt):
        if lo + i != m:
            others += rho[i]
    one_minus_top = others / total
    for i in range(cnt):
        rho[i] /= total
    # gammas: LightGBM draws cnt floats per query and iteration from Random(seed + q)
    mask = np.uint64(_LCG_MASK)
    x = _lcg_state(seed, q, iteration * cnt)
    denom = 0.0
    for i in range(cnt):
        x = (np.uint64(214013) * x + np.uint64(2531011)) & mask
        gamma = np.float64((x >> np.uint64(16)) & np.uint64(0x7FFF)) / 32768.0
        params[i] = 2.0 ** y[lo + i] - gamma
        denom += params[i]
    inv_denominator = 1.0 / max(1.0000000036274937e-15, denom)  # LightGBM's kEpsilon (1e-15f)
    # first, second and third order terms of the gradient (LightGBM's series); each term
    # divided by 1 - rho. Where that is 0 (every other document's probability underflowed)
    # the quotient is only ever multiplied by those zero probabilities: use its limit, 0
    # (LightGBM divides by 0 there and returns NaN).
    # Each term needs the sum of the other documents' quotients: ``sum - own`` (LightGBM),
    # except for the top document, whose own quotient may dwarf the rest: its sum of the
    # others is accumulated separately.
    sum_l1 = 0.0
    rest_l1 = 0.0
    for i in range(cnt):
        term = -params[i] * inv_denominator + rho[i]
        lam[i] = term
        params[i] = _ratio(term, one_minus_top if lo + i == m else 1.0 - rho[i])
        sum_l1 += params[i]
        rest_l1 += 0.0 if lo + i == m else params[i]
    sum_l2 = 0.0
    rest_l2 = 0.0
    for i in range(cnt):
        term = rho[i] * (rest_l1 if lo + i == m else sum_l1 - params[i])
        lam[i] += term
        params[i] = _ratio(term, one_minus_top if lo + i == m else 1.0 - rho[i])
        sum_l2 += params[i]
        rest_l2 += 0.0 if lo + i == m else params[i]
    w = _query_weight(weights, lo, hi)
    for i in range(cnt):
        lam[i] += rho[i] * (rest_l2 if lo + i == m else sum_l2 - params[i])
        grad[lo + i] = lam[i] * w
        hess[lo + i] = rho[i] * (one_minus_top if lo + i == m else 1.0 - rho[i]) * w


@njit(parallel=True, cache=True)
def xendcg_gradients(scores, y, group_ptr, weights, seed, iteration, query_index, grad, hess):
    """XE-NDCG gradients and hessians, as LightGBM 4.x ``rank_xendcg``.

    Bruch et al., "An Alternative Cross Entropy Loss for Learning-to-Rank" (2019). Each
    query's scores go through a softmax ``rho``; the target distribution is proportional to
    ``2**label - gamma`` with one ``gamma`` in ``[0, 1)`` per document and iteration; the
    gradient is LightGBM's third-order approximation and the hessian ``rho * (1 - rho)``.

    The gammas are exactly LightGBM's: document ``i`` of query ``q`` at iteration ``t``
    takes draw number ``t * n_docs(q) + i`` of LightGBM's generator ``Random(seed + q)``
    (``x <- 214013 x + 2531011 mod 2**32``, gamma ``((x >> 16) & 0x7FFF) / 32768``), found
    by jump-ahead. They are a function of ``(seed, iteration, q)`` and the query's size only,
    so they do not depend on threads, and they equal LightGBM's with
    ``objective_seed=seed`` when every round computes gradients once. ``q`` is
    ``query_index[j]`` for the ``j``-th query of ``group_ptr``: ``arange`` when ``group_ptr``
    holds every query, the queries' global indices when it holds a shard of them (a Dask
    worker's), so that every layout of the same queries draws the same gammas.

    Parameters
    ----------
    scores, y, group_ptr, weights, grad, hess
        As in :func:`lambdarank_gradients` (labels: integers >= 0).
    seed : int
        LightGBM's ``objective_seed``.
    iteration : int
        0-based boosting round.
    query_index : ndarray of int64, shape (n_queries,)
        Index of each query in the whole training set (LightGBM's ``q``).
    """
    max_cnt = _max_query_size(group_ptr)
    bounds = _chunk_bounds(group_ptr)
    for c in prange(bounds.shape[0] - 1):
        rho = np.empty(max_cnt, dtype=np.float64)
        params = np.empty(max_cnt, dtype=np.float64)
        lam = np.empty(max_cnt, dtype=np.float64)
        for q in range(bounds[c], bounds[c + 1]):
            _xendcg_query(scores, y, group_ptr[q], group_ptr[q + 1], weights, seed, iteration,
                          query_index[q], grad, hess, rho, params, lam)


# ------------------------------------------------------------------------------------------
# pointwise
# ------------------------------------------------------------------------------------------


@njit(parallel=True, cache=True)
def regression_gradients(scores, y, weights, grad, hess):
    """Squared error ``w * (s - y)**2 / 2``: ``grad = w * (s - y)``, ``hess = w``.

    ``weights`` is per row (length 0: unweighted); no query structure is involved.
    """
    n = scores.shape[0]
    n_chunks = max(1, min(n, 256))
    weighted = weights.shape[0] > 0
    for c in prange(n_chunks):
        for r in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            w = weights[r] if weighted else 1.0
            grad[r] = w * (scores[r] - y[r])
            hess[r] = w
