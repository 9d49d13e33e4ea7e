"""numba kernels of ``OnDemandRuleRanker``: MDL cuts, item bitmaps, and on-demand rules.

Training documents are stored **sorted by relevance level**, each level padded to whole
64-bit words, so that one AND + popcount pass over a bitmap yields the support of an itemset
in every level at once (a level is a range of words)::

    words   |  level 0 (n_0 docs)  |pad| level 1 |pad| level 2      |pad|
    bit i of word w  =  training document  level_doc_ptr[l] + (w - level_word_ptr[l])*64 + i
    item_bits[item]   one bitmap per item (feature interval), uint64 words
    train_codes[t]    the same documents as rows of interval codes (uint8 per used column)

For a document to rank, every itemset ``X`` of its items (one per used feature) up to
``max_rule_size`` is a candidate antecedent; ``X -> level`` is a rule when ``count(X, level)
>= min_support`` and ``count(X, level) / support(X) >= min_confidence``. The walk is depth
first in lexicographic order of the items, each node keeping its training documents as

* a **bitmap** (``n_words`` words, and the list of its non-zero words) while its support is
  at least ``list_threshold``: a child's counts cost one AND + popcount over the non-zero
  words, and the child's own bitmap one AND;
* a sorted **list** of document ids, split by level, once the support is small: all its
  children are counted in one pass over the rows ``train_codes[t]`` of its documents
  (``count[level, column] += train_codes[t, column] == x[column]``, vectorised across
  columns), so the cost is the support times the columns, not the bitmap width.

Pruning is exact: when ``support(X) < min_support`` no rule can have ``X`` or a superset of
it as antecedent (supports only shrink), so its subtree is skipped; nothing that could
qualify is skipped. Counts of itemsets met on the bitmap path go through a per-thread hash
cache shared by the documents a thread ranks in one call (open addressing, linear probing,
keys verified against the stored items, so a collision costs time, never a wrong count).

Parallelism: ``prange`` over tasks; a task is one document and a range of lexicographic
ranks of its item pairs (``skltr._cpu.combinadic``), with every superset of those pairs; a
document's singletons belong to its task that starts at rank 0. Each task writes its own
output row; integer sums make the result independent of the split and the thread count.

A rule's confidence enters the scores in fixed point, :func:`confidence_fixed`: integer sums
are exact in any order, on any device.
"""

import math

import numpy as np
from numba import get_thread_id, njit, prange

from ._intrinsics import ctz64, popcount64
from .binning import _midpoint
from .combinadic import unrank

#: Code of "no item" in a document's row of codes (a NaN where training had none).
NO_ITEM = 255
#: Node representations.
BITMAP = 0
LIST = 1
#: Cache keys: the additive 64-bit hash (``HASH_SPLITMIX``) or PROFL's sum of prime
#: reciprocals in 62-bit fixed point (``HASH_PRIME``).
HASH_SPLITMIX = 0
HASH_PRIME = 1
#: Columns of the per-task work counters.
W_ITEMSETS = 0      # itemsets whose counts were found (every node but the root)
W_BITMAP = 1        # of them, counted by AND + popcount
W_LIST_ROWS = 2     # training rows read by the list path
W_PROBES = 3        # cache look-ups
W_HITS = 4          # cache hits
W_PROBE_STEPS = 5   # slots inspected by the look-ups
W_KEY_CLASHES = 6   # slots with the same key but other items (fingerprint collisions)
N_WORK = 7

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)
_M4 = np.uint64(0xD6E8FEB86659FD93)
_PRIME_SCALE = 2.0 ** 62


# -- formulas (the CUDA kernels must compute the same integers) -----------------------------

@njit(cache=True, inline="always")
def splitmix64(x):
    """SplitMix64's finaliser of ``x + 0x9E3779B97F4A7C15`` (Steele et al.), uint64."""
    z = np.uint64(x) + _M1
    z = (z ^ (z >> np.uint64(30))) * _M2
    z = (z ^ (z >> np.uint64(27))) * _M3
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def splitmix64_range(n):
    """``splitmix64(i)`` for ``i = 0 .. n-1``: the items' keys."""
    out = np.empty(n, np.uint64)
    for i in range(n):
        out[i] = splitmix64(i)
    return out


@njit(cache=True, inline="always")
def rule_digest(key, level):
    """Fingerprint of the rule ``X -> level`` from the itemset key ``sum(splitmix64(item))``.

    Summed per document and level (mod 2**64) it fingerprints the rule *set*: the tests
    compare it with the naive enumeration's.
    """
    return splitmix64(np.uint64(key) ^ (np.uint64(level + 1) * _M4))


@njit(cache=True, inline="always")
def confidence_fixed(count, support, shift):
    """``floor(count / support * 2**shift)``: a rule's confidence in fixed point (exact)."""
    return (np.int64(count) << np.int64(shift)) // np.int64(support)


@njit(cache=True, inline="always")
def qualifies(count, support, min_support, min_confidence):
    """Whether ``X -> level`` with ``count(X, level)`` and ``support(X)`` is a rule."""
    return count >= min_support and count / support >= min_confidence


# -- discretisation -------------------------------------------------------------------------

@njit(cache=True)
def xlog2x_table(n):
    """``t[x] = x * log2(x)`` for ``x = 0 .. n`` (``t[0] = 0``): ``N * entropy`` is
    ``t[N] - sum_c t[n_c]``."""
    t = np.zeros(n + 1)
    for x in range(2, n + 1):
        t[x] = x * math.log2(x)
    return t


@njit(cache=True)
def _sum_t(t, counts, n_levels):
    s = 0.0
    for lv in range(n_levels):
        s += t[counts[lv]]
    return s


@njit(cache=True)
def _n_present(counts, n_levels):
    k = 0
    for lv in range(n_levels):
        if counts[lv] > 0:
            k += 1
    return k


@njit(cache=True)
def _best_cut(vals, labs, lo, hi, n_levels, t, left, right):
    # Fayyad & Irani: the boundary of least class entropy in vals[lo:hi] (sorted), if MDL
    # accepts it; returns its index i (cut between vals[i-1] and vals[i]) or -1
    n = hi - lo
    if n < 2:
        return -1
    right[:] = 0
    left[:] = 0
    for i in range(lo, hi):
        right[labs[i]] += 1
    total_t = t[n] - _sum_t(t, right, n_levels)  # n * Ent(S)
    best_i, best_e = -1, np.inf
    for i in range(lo + 1, hi):
        lv = labs[i - 1]
        left[lv] += 1
        right[lv] -= 1
        if vals[i] == vals[i - 1]:
            continue
        n1 = i - lo
        e = (t[n1] - _sum_t(t, left, n_levels)) + (t[n - n1] - _sum_t(t, right, n_levels))
        if e < best_e:
            best_i, best_e = i, e
    if best_i < 0:
        return -1
    # the MDL criterion at the best boundary
    left[:] = 0
    right[:] = 0
    for i in range(lo, best_i):
        left[labs[i]] += 1
    for i in range(best_i, hi):
        right[labs[i]] += 1
    n1 = best_i - lo
    n2 = hi - best_i
    ent = total_t / n
    ent1 = (t[n1] - _sum_t(t, left, n_levels)) / n1
    ent2 = (t[n2] - _sum_t(t, right, n_levels)) / n2
    gain = ent - best_e / n
    k1 = _n_present(left, n_levels)
    k2 = _n_present(right, n_levels)
    k = 0  # levels present in the segment
    for lv in range(n_levels):
        if left[lv] + right[lv] > 0:
            k += 1
    delta = math.log2(3.0 ** k - 2.0) - (k * ent - k1 * ent1 - k2 * ent2)
    if gain > (math.log2(n - 1.0) + delta) / n:
        return best_i
    return -1


@njit(parallel=True, cache=True)
def mdl_cuts(sorted_vals, sorted_labs, n_valid, n_levels, max_cuts, t, cuts, n_cuts):
    """Fayyad & Irani's recursive entropy / MDL cuts of every feature, breadth first.

    ``sorted_vals[f, :n_valid[f]]``: feature ``f``'s non-NaN training values, ascending,
    with their level indices ``sorted_labs``; ``t`` from :func:`xlog2x_table`. Segments are
    split in first-in first-out order (coarse cuts first) until ``max_cuts``; without that
    cap the cuts are the recursion's, in any order. Writes ``cuts[f, :n_cuts[f]]``
    (ascending, midpoints between distinct values).
    """
    n_features = sorted_vals.shape[0]
    for p in prange(n_features):
        f = np.int64(p)
        n_cuts[f] = _feature_mdl_cuts(sorted_vals[f], sorted_labs[f], n_valid[f], n_levels,
                                      max_cuts, t, cuts[f])


@njit(cache=True)
def _feature_mdl_cuts(vals, labs, n, n_levels, max_cuts, t, out):
    left = np.zeros(n_levels, np.int64)
    right = np.zeros(n_levels, np.int64)
    queue = np.empty((2 * max_cuts + 2, 2), np.int64)
    at = np.empty(max_cuts, np.int64)
    head, tail, k = 0, 0, 0
    queue[tail, 0], queue[tail, 1] = 0, n
    tail += 1
    while head < tail and k < max_cuts:
        lo, hi = queue[head, 0], queue[head, 1]
        head += 1
        i = _best_cut(vals, labs, lo, hi, n_levels, t, left, right)
        if i < 0:
            continue
        at[k] = i
        k += 1
        queue[tail, 0], queue[tail, 1] = lo, i
        queue[tail + 1, 0], queue[tail + 1, 1] = i, hi
        tail += 2
    at_sorted = np.sort(at[:k])
    for j in range(k):
        i = at_sorted[j]
        out[j] = _midpoint(np.float64(vals[i - 1]), np.float64(vals[i]))
    return k


@njit(parallel=True, cache=True)
def build_item_bits(train_codes, col_item_ptr, level_of_doc, level_doc_ptr, level_word_ptr,
                    item_bits):
    """Set bit (document ``t``) of ``item_bits[col_item_ptr[c] + train_codes[t, c]]``.

    ``item_bits`` (uint64, zeroed, shape ``(n_items, n_words)``); documents are sorted by
    level and level ``l`` starts at word ``level_word_ptr[l]``. Parallel over columns (each
    column owns its items' rows).
    """
    n, n_cols = train_codes.shape
    for p in prange(n_cols):
        c = np.int64(p)
        for t in range(n):
            lv = level_of_doc[t]
            j = t - level_doc_ptr[lv]
            w = level_word_ptr[lv] + (j >> 6)
            item = col_item_ptr[c] + train_codes[t, c]
            item_bits[item, w] |= np.uint64(1) << np.uint64(j & 63)


# -- on-demand rules ------------------------------------------------------------------------
#
# Scalars travel in ``params`` (a ``RuleParams`` NamedTuple of scalars: free to pass); arrays
# as positional arguments, taken out of the records once per task (devguide, numba).

@njit(parallel=True, cache=True)
def rule_stats(model, params, codes, task_doc, task_r0, task_r1, binom, work, out_rules,
               out_conf, out_digest, out_work):
    """Rule statistics of every task: per level, the number of rules, the sum of their
    fixed-point confidences and (with ``params.digest``) the sum of their digests.

    ``model``: ``skltr._rules.model.RuleModel``; ``params``: ``RuleParams``; ``codes``:
    uint8 ``(n_docs, n_cols)`` interval codes of the documents (``NO_ITEM``: none); task
    ``i`` is document ``task_doc[i]`` and its pair ranks ``task_r0[i]:task_r1[i]``;
    ``binom``: ``skltr._cpu.combinadic.binomials`` table; ``work``: ``RuleWork``
    (per-thread buffers and caches; the caller empties the caches). Writes row ``i`` of
    ``out_rules``, ``out_conf`` (int64), ``out_digest`` (uint64) and ``out_work`` (int64
    counters ``W_*``).
    """
    ib, tc, col_item_ptr = model.item_bits, model.train_codes, model.col_item_ptr
    item_counts, item_support = model.item_counts, model.item_support
    ldp, lwp = model.level_doc_ptr, model.level_word_ptr
    item_key, item_recip = model.item_key, model.item_recip
    w_cols, w_items, w_kind, w_bm, w_nzw, w_nnz = (work.cols, work.items, work.kind, work.bm,
                                                   work.nzw, work.nnz)
    w_nzl, w_lst, w_lofs, w_cc, w_csup = work.nz_lofs, work.lst, work.lofs, work.cc, work.csup
    w_sitem, w_skey, w_sfp, w_next = work.s_item, work.s_key, work.s_fp, work.s_next
    c_size, c_keys, c_items, c_cnt, w_tmp = (work.c_size, work.c_keys, work.c_items,
                                             work.c_counts, work.tmp)
    for p in prange(task_doc.shape[0]):
        i = np.int64(p)
        tid = get_thread_id()
        _task(codes[task_doc[i]], task_r0[i], task_r1[i], params, ib, tc, col_item_ptr,
              item_counts, item_support, ldp, lwp, item_key, item_recip, binom, w_cols[tid],
              w_items[tid], w_kind[tid], w_bm[tid], w_nzw[tid], w_nnz[tid], w_nzl[tid],
              w_lst[tid], w_lofs[tid], w_cc[tid], w_csup[tid], w_sitem[tid], w_skey[tid],
              w_sfp[tid], w_next[tid], c_size[tid], c_keys[tid], c_items[tid], c_cnt[tid],
              w_tmp[tid], out_rules[i], out_conf[i], out_digest[i], out_work[i])


@njit(cache=True)
def _emit(cnt, sup, key, params, o_rules, o_conf, o_digest):
    # the rules X -> level of one itemset X with level counts cnt and support sup
    min_sup = params.min_support
    if sup < min_sup:
        return
    for lv in range(cnt.shape[0]):
        c = cnt[lv]
        if qualifies(c, sup, min_sup, params.min_confidence):
            o_rules[lv] += 1
            o_conf[lv] += confidence_fixed(c, sup, params.shift)
            if params.digest:
                o_digest[lv] += rule_digest(key, lv)


@njit(cache=True)
def _task(x, r0, r1, params, ib, tc, col_item_ptr, item_counts, item_support, ldp, lwp,
          item_key, item_recip, binom, cols, items, kind, bm, nzw, nnz, nzl, lst, lofs, cc,
          csup, s_item, s_key, s_fp, s_next, c_size, c_keys, c_items, c_cnt, tmp, o_rules,
          o_conf, o_digest, o_work):
    K, min_sup = params.max_rule_size, params.min_support
    # the document's items: one per used column, unless missing or below min_support
    m = 0
    for c in range(x.shape[0]):
        v = x[c]
        if v != NO_ITEM:
            it = col_item_ptr[c] + v
            if item_support[it] >= min_sup:
                cols[m] = c
                items[m] = it
                m += 1
    if r0 == 0:  # singletons: their counts are the items' own
        for q in range(m):
            it = items[q]
            _emit(item_counts[it], item_support[it], item_key[it], params, o_rules, o_conf,
                  o_digest)
    if K < 2 or r1 <= r0:
        return
    pair = np.empty(2, np.int64)
    unrank(r0, m, 2, binom, pair)
    a, b = pair[0], pair[1]
    left = r1 - r0
    while left > 0:  # pairs (a, b) in lexicographic order from rank r0
        b_hi = min(m, b + left)
        it = items[a]
        s_item[1] = it
        s_key[1] = item_key[it]
        s_fp[1] = item_recip[it]
        _single(it, item_support[it], params.list_threshold, ib, ldp, lwp, kind, bm, nzw,
                nnz, nzl, lst, lofs)
        _children(1, b, b_hi, x, params, cols, items, ib, tc, ldp, lwp, item_key, item_recip,
                  kind, bm, nzw, nnz, nzl, lst, lofs, cc, csup, s_item, s_key, s_fp, c_size,
                  c_keys, c_items, c_cnt, tmp, o_rules, o_conf, o_digest, o_work)
        if K >= 3:
            for q in range(b, b_hi):
                if csup[1, cols[q]] >= min_sup and q + 1 < m:
                    _subtree(q, m, x, params, cols, items, ib, tc, ldp, lwp, item_key,
                             item_recip, kind, bm, nzw, nnz, nzl, lst, lofs, cc, csup, s_item,
                             s_key, s_fp, s_next, c_size, c_keys, c_items, c_cnt, tmp,
                             o_rules, o_conf, o_digest, o_work)
        left -= b_hi - b
        a += 1
        b = a + 1


@njit(cache=True)
def _subtree(q0, m, x, params, cols, items, ib, tc, ldp, lwp, item_key, item_recip, kind, bm,
             nzw, nnz, nzl, lst, lofs, cc, csup, s_item, s_key, s_fp, s_next, c_size, c_keys,
             c_items, c_cnt, tmp, o_rules, o_conf, o_digest, o_work):
    # the supersets of the pair (node 1, item at position q0): node d (an itemset of size d)
    # sits at stack depth d; its next child position is s_next[d]
    K, min_sup = params.max_rule_size, params.min_support
    _descend(1, q0, x, params, cols, items, ib, tc, ldp, lwp, item_key, item_recip, kind, bm,
             nzw, nnz, nzl, lst, lofs, csup, s_item, s_key, s_fp, o_work)
    _children(2, q0 + 1, m, x, params, cols, items, ib, tc, ldp, lwp, item_key, item_recip,
              kind, bm, nzw, nnz, nzl, lst, lofs, cc, csup, s_item, s_key, s_fp, c_size,
              c_keys, c_items, c_cnt, tmp, o_rules, o_conf, o_digest, o_work)
    s_next[2] = q0 + 1
    d = 2
    while d >= 2:
        q = s_next[d]
        if d + 1 >= K or q >= m:  # children of size K are leaves, already counted
            d -= 1
            continue
        s_next[d] = q + 1
        if csup[d, cols[q]] >= min_sup and q + 1 < m:
            _descend(d, q, x, params, cols, items, ib, tc, ldp, lwp, item_key, item_recip,
                     kind, bm, nzw, nnz, nzl, lst, lofs, csup, s_item, s_key, s_fp, o_work)
            _children(d + 1, q + 1, m, x, params, cols, items, ib, tc, ldp, lwp, item_key,
                      item_recip, kind, bm, nzw, nnz, nzl, lst, lofs, cc, csup, s_item,
                      s_key, s_fp, c_size, c_keys, c_items, c_cnt, tmp, o_rules, o_conf,
                      o_digest, o_work)
            s_next[d + 1] = q + 1
            d += 1


@njit(cache=True)
def _nonzero_words(bm_d, lwp, nzw_d, nzl_d):
    # the non-zero words of a bitmap, and where each level starts in that list
    n_levels = lwp.shape[0] - 1
    k = 0
    for lv in range(n_levels):
        nzl_d[lv] = k
        for w in range(lwp[lv], lwp[lv + 1]):
            if bm_d[w] != 0:
                nzw_d[k] = w
                k += 1
    nzl_d[n_levels] = k
    return k


@njit(cache=True)
def _bits_to_list(bits_a, bits_b, use_b, nzw_d, nzl_d, ldp, lwp, lst_d, lofs_d):
    # the documents of bits_a (& bits_b) over bits_a's non-zero words, as a sorted list
    # split by level
    n_levels = lwp.shape[0] - 1
    k = 0
    for lv in range(n_levels):
        lofs_d[lv] = k
        for j in range(nzl_d[lv], nzl_d[lv + 1]):
            w = nzw_d[j]
            word = bits_a[w] & bits_b[w] if use_b else bits_a[w]
            first = ldp[lv] + (w - lwp[lv]) * 64
            while word != 0:
                lst_d[k] = first + np.int64(ctz64(word))
                k += 1
                word &= word - np.uint64(1)
    lofs_d[n_levels] = k


@njit(cache=True)
def _single(it, sup, list_thr, ib, ldp, lwp, kind, bm, nzw, nnz, nzl, lst, lofs):
    # node 1: the item's own documents, as a bitmap or (small support) a list
    bm1 = bm[1]
    for w in range(ib.shape[1]):
        bm1[w] = ib[it, w]
    nnz[1] = _nonzero_words(bm1, lwp, nzw[1], nzl[1])
    if sup >= list_thr:
        kind[1] = BITMAP
    else:
        kind[1] = LIST
        _bits_to_list(bm1, bm1, False, nzw[1], nzl[1], ldp, lwp, lst[1], lofs[1])


@njit(cache=True)
def _descend(d, q, x, params, cols, items, ib, tc, ldp, lwp, item_key, item_recip, kind, bm,
             nzw, nnz, nzl, lst, lofs, csup, s_item, s_key, s_fp, o_work):
    # materialise node d + 1: node d and the item at position q
    n_levels = ldp.shape[0] - 1
    it = items[q]
    c = cols[q]
    s_item[d + 1] = it
    s_key[d + 1] = s_key[d] + item_key[it]
    s_fp[d + 1] = s_fp[d] + item_recip[it]
    if kind[d] == BITMAP:
        if csup[d, c] >= params.list_threshold:
            kind[d + 1] = BITMAP
            parent, child = bm[d], bm[d + 1]
            for w in range(ib.shape[1]):
                child[w] = parent[w] & ib[it, w]
            nnz[d + 1] = _nonzero_words(child, lwp, nzw[d + 1], nzl[d + 1])
        else:
            kind[d + 1] = LIST
            _bits_to_list(bm[d], ib[it], True, nzw[d], nzl[d], ldp, lwp, lst[d + 1],
                          lofs[d + 1])
        return
    kind[d + 1] = LIST  # a list's child: the list filtered on the item's column
    v = x[c]
    src, dst = lst[d], lst[d + 1]
    so, do = lofs[d], lofs[d + 1]
    k = 0
    for lv in range(n_levels):
        do[lv] = k
        for j in range(so[lv], so[lv + 1]):
            t = src[j]
            if tc[t, c] == v:
                dst[k] = t
                k += 1
    do[n_levels] = k
    o_work[W_LIST_ROWS] += so[n_levels]


@njit(cache=True)
def _children(d, q_lo, q_hi, x, params, cols, items, ib, tc, ldp, lwp, item_key, item_recip,
              kind, bm, nzw, nnz, nzl, lst, lofs, cc, csup, s_item, s_key, s_fp, c_size,
              c_keys, c_items, c_cnt, tmp, o_rules, o_conf, o_digest, o_work):
    # level counts of node d's children at positions q_lo:q_hi into cc[d, :, column] and
    # their supports into csup[d, column]; emits their rules
    if q_lo >= q_hi:
        return
    n_levels = ldp.shape[0] - 1
    cc_d, cs_d = cc[d], csup[d]
    o_work[W_ITEMSETS] += q_hi - q_lo
    if kind[d] == LIST:
        c_lo, c_hi = cols[q_lo], cols[q_hi - 1] + 1
        for lv in range(n_levels):
            row = cc_d[lv]
            for c in range(c_lo, c_hi):
                row[c] = 0
        src, so = lst[d], lofs[d]
        for lv in range(n_levels):
            row = cc_d[lv]
            for j in range(so[lv], so[lv + 1]):
                t = src[j]
                for c in range(c_lo, c_hi):  # one compare per column, vectorised
                    row[c] += np.int32(tc[t, c] == x[c])
        o_work[W_LIST_ROWS] += so[n_levels]
        for q in range(q_lo, q_hi):
            c = cols[q]
            s = 0
            for lv in range(n_levels):
                tmp[lv] = cc_d[lv, c]
                s += cc_d[lv, c]
            cs_d[c] = s
            _emit(tmp, s, s_key[d] + item_key[items[q]], params, o_rules, o_conf, o_digest)
        return
    o_work[W_BITMAP] += q_hi - q_lo
    bm_d, nzw_d, nzl_d = bm[d], nzw[d], nzl[d]
    dense = nnz[d] * 4 >= ib.shape[1] * 3  # then read every word, without the indirection
    use_cache = c_size.shape[0] > 1
    for q in range(q_lo, q_hi):
        it = items[q]
        c = cols[q]
        key = s_key[d] + item_key[it]
        found, slot, ckey = -1, 0, key
        if use_cache:
            if params.hash_kind == HASH_PRIME:
                ckey = np.uint64(np.int64((s_fp[d] + item_recip[it]) * _PRIME_SCALE))
            found, slot = _probe(ckey, d, it, s_item, params, c_size, c_keys, c_items, o_work)
        s = 0
        if found >= 0:
            for lv in range(n_levels):
                tmp[lv] = c_cnt[found, lv]
                s += tmp[lv]
        else:
            for lv in range(n_levels):
                acc = np.uint64(0)
                if dense:
                    for w in range(lwp[lv], lwp[lv + 1]):
                        acc += popcount64(bm_d[w] & ib[it, w])
                else:
                    for j in range(nzl_d[lv], nzl_d[lv + 1]):
                        w = nzw_d[j]
                        acc += popcount64(bm_d[w] & ib[it, w])
                tmp[lv] = np.int32(acc)
                s += tmp[lv]
            if use_cache:
                c_size[slot] = d + 1
                c_keys[slot] = ckey
                for j in range(1, d + 1):
                    c_items[slot, j - 1] = s_item[j]
                c_items[slot, d] = it
                for lv in range(n_levels):
                    c_cnt[slot, lv] = tmp[lv]
        for lv in range(n_levels):
            cc_d[lv, c] = tmp[lv]
        cs_d[c] = s
        _emit(tmp, s, key, params, o_rules, o_conf, o_digest)


@njit(cache=True)
def _probe(ckey, d, it, s_item, params, c_size, c_keys, c_items, o_work):
    # linear probing from the key's home slot (Fibonacci hashing); returns (slot holding the
    # itemset s_item[1..d] + it, or -1; the slot to fill on a miss: the first empty one met,
    # else the home slot, whose itemset is evicted)
    n_slots = c_size.shape[0]
    home = np.int64((ckey * _M1) >> np.uint64(params.cache_shift))
    o_work[W_PROBES] += 1
    for p in range(params.max_probe):
        s = (home + p) & (n_slots - 1)
        o_work[W_PROBE_STEPS] += 1
        size = c_size[s]
        if size == 0:
            return -1, s
        if c_keys[s] == ckey:
            same = size == d + 1 and c_items[s, d] == it
            j = 1
            while same and j <= d:
                same = c_items[s, j - 1] == s_item[j]
                j += 1
            if same:
                o_work[W_HITS] += 1
                return s, s
            o_work[W_KEY_CLASHES] += 1
    return -1, home
