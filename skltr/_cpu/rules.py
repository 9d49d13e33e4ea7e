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

from ..utils._sorting import sort_inplace
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
def confidence_fixed(count, support, scale):
    """``floor(count * 2**shift / support)`` (``scale = 2.0**shift``): a rule's confidence
    in fixed point, exactly.

    One float64 division, not an int64 one (4-5x the throughput): ``count * scale`` is exact,
    and with ``support < 2**b`` and ``shift <= 52 - b`` the division's rounding error (at most
    ``2**(shift - 53)``) is smaller than the distance ``>= 1 / support`` of a non-integer
    quotient from the nearest integer, so the floor is the exact integer quotient.
    """
    return np.int64(math.floor(np.float64(count) * scale / np.float64(support)))


#: Training documents below which :func:`confidence_table`'s 32-bit path is exact (a count
#: times a remainder, both below it, fits 32 bits).
CONFIDENCE_TABLE_MAX_TRAIN = 2**16


def confidence_table(n_train, shift):
    """The CUDA ``triples`` kernel's record of each support ``s = 0 .. n_train`` (int64,
    ``(n_train + 1, 2)``): ``D = 2**shift // s`` and ``(M << 32) | R`` with ``R = 2**shift
    % s`` and ``M = (2**32 - 1) // s`` (``s = 0`` as 1: never read for a rule), from which
    it finds :func:`confidence_fixed` in 32-bit integers
    (``skltr._gpu.rules``: ``floor(c 2**shift / s) = c D + floor(c R / s)``, the last by a
    multiply-high with ``M``, one below at most). Needs ``n_train <
    CONFIDENCE_TABLE_MAX_TRAIN``."""
    if not 0 <= int(n_train) < CONFIDENCE_TABLE_MAX_TRAIN:
        raise ValueError(f"confidence_table needs fewer than 2**16 training documents, "
                         f"got {n_train}.")
    s = np.arange(int(n_train) + 1, dtype=np.uint64)
    s[0] = 1
    big = np.uint64(1) << np.uint64(shift)
    table = np.empty((s.size, 2), np.uint64)
    table[:, 0] = big // s
    table[:, 1] = ((np.uint64(2**32 - 1) // s) << np.uint64(32)) | (big % s)
    return table.view(np.int64)


@njit(cache=True, inline="always")
def qualifies(count, support, min_support, min_confidence):
    """Whether ``X -> level`` with ``count(X, level)`` and ``support(X)`` is a rule."""
    return count >= min_support and count / support >= min_confidence


@njit(cache=True)
def min_counts(n_train, min_support, min_confidence):
    """``t[s]``: the least ``count`` for which :func:`qualifies` holds with support ``s``
    (``s + 1`` when none does), for ``s = 0 .. n_train``.

    ``count / s`` grows with ``count`` (IEEE division is monotone), so ``count >= t[s]`` is
    exactly ``qualifies(count, s, ...)``: the kernels test rules with one comparison.
    """
    t = np.empty(n_train + 1, np.int64)
    t[0] = 1
    c = 0
    for s in range(1, n_train + 1):
        while c <= s and not qualifies(c, s, min_support, min_confidence):
            c += 1
        t[s] = c  # the least count only grows with the support: carry it
    return t


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
    at_sorted = at[:k]
    sort_inplace(at_sorted)  # np.sort's result, without compiling numba's quicksort
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
def rule_stats(model, params, min_count, codes, task_doc, task_r0, task_r1, binom, work,
               out_rules, out_conf, out_digest, out_work):
    """Rule statistics of every task: per level, the number of rules, the sum of their
    fixed-point confidences and (with ``params.digest``) the sum of their digests.

    ``model``: ``skltr._rules.model.RuleModel``; ``params``: ``RuleParams``; ``min_count``:
    :func:`min_counts` of the parameters; ``codes``:
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
    w_lo, w_hi = work.s_lo, work.s_hi
    c_size, c_keys, c_items, c_cnt, w_tmp = (work.c_size, work.c_keys, work.c_items,
                                             work.c_counts, work.tmp)
    for p in prange(task_doc.shape[0]):
        i = np.int64(p)
        tid = get_thread_id()
        _task(codes[task_doc[i]], task_r0[i], task_r1[i], params, min_count, ib, tc,
              col_item_ptr, item_counts, item_support, ldp, lwp, item_key, item_recip, binom,
              w_cols[tid], w_items[tid], w_kind[tid], w_bm[tid], w_nzw[tid], w_nnz[tid],
              w_nzl[tid], w_lst[tid], w_lofs[tid], w_cc[tid], w_csup[tid], w_sitem[tid],
              w_skey[tid], w_sfp[tid], w_next[tid], w_lo[tid], w_hi[tid], c_size[tid],
              c_keys[tid], c_items[tid], c_cnt[tid], w_tmp[tid], out_rules[i], out_conf[i],
              out_digest[i], out_work[i])


@njit(cache=True, inline="always")
def _emit(cnt, sup, key, params, min_count, o_rules, o_conf, o_digest):
    # the rules X -> level of one itemset X with level counts cnt (its first entries: the
    # caller's buffer may be longer) and support sup
    if sup < params.min_support:
        return
    least = min_count[sup]  # qualifies(c, sup, ...) is c >= least
    for lv in range(o_rules.shape[0]):
        c = cnt[lv]
        if c >= least:
            o_rules[lv] += 1
            o_conf[lv] += confidence_fixed(c, sup, params.scale)
            if params.digest:
                o_digest[lv] += rule_digest(key, lv)


@njit(cache=True, inline="always")
def _nonzero_words(bits, lwp, nzw_d, nzl_d):
    # the non-zero words of a bitmap, and where each level starts in that list
    n_levels = lwp.shape[0] - 1
    k = 0
    for lv in range(n_levels):
        nzl_d[lv] = k
        for w in range(lwp[lv], lwp[lv + 1]):
            if bits[w] != 0:
                nzw_d[k] = w
                k += 1
    nzl_d[n_levels] = k
    return k


@njit(cache=True, inline="always")
def _bits_to_list(bits_a, bits_b, nzw_d, nzl_d, ldp, lwp, lst_d, lofs_d):
    # the documents of bits_a & bits_b over bits_a's non-zero words, as a sorted list split
    # by level
    n_levels = lwp.shape[0] - 1
    k = 0
    for lv in range(n_levels):
        lofs_d[lv] = k
        for j in range(nzl_d[lv], nzl_d[lv + 1]):
            w = nzw_d[j]
            word = bits_a[w] & bits_b[w]
            first = ldp[lv] + (w - lwp[lv]) * 64
            while word != 0:
                lst_d[k] = first + np.int64(ctz64(word))
                k += 1
                word &= word - np.uint64(1)
    lofs_d[n_levels] = k


@njit(cache=True, inline="always")
def _probe(ckey, d, it, s_item, max_probe, cache_shift, c_size, c_keys, c_items, o_work):
    # linear probing from the key's home slot (Fibonacci hashing); returns (slot holding the
    # itemset s_item[1..d] + it, or -1; the slot to fill on a miss: the first empty one met,
    # else the home slot, whose itemset is evicted)
    n_slots = c_size.shape[0]
    home = np.int64((ckey * _M1) >> np.uint64(cache_shift))
    o_work[W_PROBES] += 1
    for p in range(max_probe):
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


@njit(cache=True)
def _task(x, r0, r1, params, min_count, ib, tc, col_item_ptr, item_counts, item_support, ldp,
          lwp, item_key, item_recip, binom, cols, items, kind, bm, nzw, nnz, nzl, lst, lofs,
          cc, csup, s_item, s_key, s_fp, s_next, s_lo, s_hi, c_size, c_keys, c_items, c_cnt,
          tmp, o_rules, o_conf, o_digest, o_work):
    # One document, its pairs of ranks r0:r1 and their supersets, depth first. The node of
    # d items sits at depth d of the stack: its representation (kind, bm / lst), its last
    # item, key and fingerprint (s_item, s_key, s_fp), its children's positions s_lo:s_hi,
    # the next one to descend into (s_next), their level counts cc[d, :, column] and
    # supports csup[d, column]. One function, no calls with arrays in the loop: measured
    # 2.3x faster than helpers per node (each call passes ~40 arrays).
    K, min_sup, list_thr = params.max_rule_size, params.min_support, params.list_threshold
    n_levels = item_counts.shape[1]
    n_words = ib.shape[1]
    use_cache = c_size.shape[0] > 1
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
            _emit(item_counts[it], item_support[it], item_key[it], params, min_count,
                  o_rules, o_conf, o_digest)
    if K < 2 or r1 <= r0:
        return
    pair = np.empty(2, np.int64)
    # m as int64: typed as the literal 0 of ``m = 0`` first, the call compiled unrank for
    # that literal too (a second signature, 0.45 s of a first run)
    unrank(r0, np.int64(m), 2, binom, pair)
    a, b = pair[0], pair[1]
    left = r1 - r0
    while left > 0:  # node 1 = item a, its children b .. b_hi - 1 (the task's pairs)
        b_hi = min(m, b + left)
        it = items[a]
        s_item[1], s_key[1], s_fp[1] = it, item_key[it], item_recip[it]
        bm1 = bm[1]
        for w in range(n_words):
            bm1[w] = ib[it, w]
        nnz[1] = _nonzero_words(bm1, lwp, nzw[1], nzl[1])
        if item_support[it] >= list_thr:
            kind[1] = BITMAP
        else:
            kind[1] = LIST
            _bits_to_list(bm1, bm1, nzw[1], nzl[1], ldp, lwp, lst[1], lofs[1])
        s_lo[1], s_hi[1] = b, b_hi
        d = 1
        fresh = True
        while d >= 1:
            if fresh:  # count node d's children s_lo[d]:s_hi[d] and emit their rules
                fresh = False
                q_lo, q_hi = s_lo[d], s_hi[d]
                s_next[d] = q_lo
                if q_lo >= q_hi:
                    continue
                cc_d, cs_d = cc[d], csup[d]
                o_work[W_ITEMSETS] += q_hi - q_lo
                if kind[d] == LIST:
                    # every child in one pass over the node's rows: loops from 0 over
                    # slices, so that numba knows the indices are not negative and LLVM
                    # vectorises (a loop from c_lo stayed scalar, 7x slower: measured)
                    c_lo, c_hi = cols[q_lo], cols[q_hi - 1] + 1
                    n = c_hi - c_lo
                    xx = x[c_lo:c_hi]
                    src, so = lst[d], lofs[d]
                    for lv in range(n_levels):
                        out = cc_d[lv, c_lo:c_hi]
                        for c in range(n):
                            out[c] = 0
                        for j in range(so[lv], so[lv + 1]):
                            row = tc[src[j], c_lo:c_hi]
                            for c in range(n):
                                out[c] += np.int32(row[c] == xx[c])
                    o_work[W_LIST_ROWS] += so[n_levels]
                    for q in range(q_lo, q_hi):
                        c = cols[q]
                        sup = 0
                        for lv in range(n_levels):
                            tmp[lv] = cc_d[lv, c]
                            sup += tmp[lv]
                        cs_d[c] = sup
                        _emit(tmp, sup, s_key[d] + item_key[items[q]], params, min_count,
                              o_rules, o_conf, o_digest)
                else:
                    o_work[W_BITMAP] += q_hi - q_lo
                    bm_d, nzw_d, nzl_d = bm[d], nzw[d], nzl[d]
                    # every word, vectorised (vpopcntq), unless few words are non-zero: a
                    # gathered word costs ~2.4x a word of the full pass (measured)
                    dense = nnz[d] * 5 >= n_words * 2
                    for q in range(q_lo, q_hi):
                        it = items[q]
                        c = cols[q]
                        key = s_key[d] + item_key[it]
                        found, slot, ckey = -1, 0, key
                        if use_cache:
                            if params.hash_kind == HASH_PRIME:
                                ckey = np.uint64(np.int64((s_fp[d] + item_recip[it])
                                                          * _PRIME_SCALE))
                            found, slot = _probe(ckey, d, it, s_item, params.max_probe,
                                                 params.cache_shift, c_size, c_keys, c_items,
                                                 o_work)
                        sup = 0
                        if found >= 0:
                            for lv in range(n_levels):
                                tmp[lv] = c_cnt[found, lv]
                                sup += tmp[lv]
                        else:
                            item_row = ib[it]
                            for lv in range(n_levels):
                                acc = np.uint64(0)
                                if dense:
                                    wa = bm_d[lwp[lv]:lwp[lv + 1]]
                                    wb = item_row[lwp[lv]:lwp[lv + 1]]
                                    for w in range(wa.shape[0]):
                                        acc += popcount64(wa[w] & wb[w])
                                else:
                                    idx = nzw_d[nzl_d[lv]:nzl_d[lv + 1]]
                                    for j in range(idx.shape[0]):
                                        acc += popcount64(bm_d[idx[j]] & item_row[idx[j]])
                                tmp[lv] = np.int64(acc)
                                sup += tmp[lv]
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
                        cs_d[c] = sup
                        _emit(tmp, sup, key, params, min_count, o_rules, o_conf, o_digest)
            q = s_next[d]
            if d + 1 >= K or q >= s_hi[d]:  # children of size K are leaves: done
                d -= 1
                continue
            s_next[d] = q + 1
            c = cols[q]
            if csup[d, c] < min_sup or q + 1 >= m:  # pruned: no superset can qualify
                continue
            # materialise node d + 1 = node d + the item at position q
            it = items[q]
            s_item[d + 1] = it
            s_key[d + 1] = s_key[d] + item_key[it]
            s_fp[d + 1] = s_fp[d] + item_recip[it]
            if kind[d] == BITMAP:
                if csup[d, c] >= list_thr:
                    kind[d + 1] = BITMAP
                    parent, child, item_row = bm[d], bm[d + 1], ib[it]
                    for w in range(n_words):
                        child[w] = parent[w] & item_row[w]
                    nnz[d + 1] = _nonzero_words(child, lwp, nzw[d + 1], nzl[d + 1])
                else:
                    kind[d + 1] = LIST
                    _bits_to_list(bm[d], ib[it], nzw[d], nzl[d], ldp, lwp, lst[d + 1],
                                  lofs[d + 1])
            else:  # a list's child: the list filtered on the item's column
                kind[d + 1] = LIST
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
            d += 1
            s_lo[d], s_hi[d] = q + 1, m
            fresh = True
        left -= b_hi - b
        a += 1
        b = a + 1
