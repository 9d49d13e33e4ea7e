"""Ranking with on-demand rules: documents -> item codes -> rule statistics -> scores.

The engine is written once for both devices. The device-specific step, counting the rules of
every document, is a method of a kernels class::

    kernels = cls(model, params, n_jobs=..., device=device)   # CPURuleKernels or the GPU's
                                      # (the estimator's kernels_for: the one place devices branch)
    stats = kernels.rule_stats(codes)                 # RuleStats: host int64 arrays
    scores(stats.n_rules, stats.conf_sum, ...)        # equations 1 and 2 (scoring.py)

:class:`CPURuleKernels` runs ``skltr._cpu.rules.rule_stats`` (numba, parallel over tasks:
a document and a range of its pair ranks); a GPU class (``skltr._gpu.rules.GPURuleKernels``)
takes the same :class:`~skltr._rules.model.RuleModel` and :class:`RuleParams` and returns the
same :class:`RuleStats`. Counts and fixed-point sums are integers, so both devices give the
same scores bit for bit.
"""

from __future__ import annotations

import math
import os
import time
from typing import NamedTuple

import numba
import numpy as np

from .._cpu.combinadic import binomials, binomials_float, pair_rank_bounds
from .._cpu.rules import HASH_PRIME, HASH_SPLITMIX, N_WORK, NO_ITEM, min_counts, rule_stats
from ..utils._threads import numba_threads
from .model import RuleModel
from .scoring import confidence_shift, prior_score, scores

__all__ = ["CPURuleKernels", "RuleParams", "RuleStats", "RuleWork", "HASH_KINDS",
           "BatchSizer", "TaskPlan", "cache_bytes", "candidate_itemsets", "doc_tasks",
           "itemset_seconds", "make_params", "physical_memory", "predict_scores"]

#: Cache key functions by name (``make_params(hash=...)``); see ``docs/user_guide/
#: rule_ranker.rst`` for the measurement behind the default.
HASH_KINDS = {"splitmix": HASH_SPLITMIX, "prime": HASH_PRIME}

#: A node keeps its documents as a list once its support is below this many times the
#: bitmap's words (measured: ``docs/user_guide/rule_ranker.rst``).
LIST_THRESHOLD_PER_WORD = 1
#: Slots inspected by a cache look-up before it gives up (and evicts the home slot).
MAX_PROBE = 8
#: The CPU's cache, when on by default: entries per thread, and the bitmap width from which
#: it is on. A look-up (a random access into a 3.4 MB table) costs about an AND + popcount of
#: a thousand words: measured, the cache slowed narrower bitmaps (letor_small, 50 words:
#: 0.35 vs 0.55 s a query) and sped wider ones up (78,875 training documents, 1,235 words:
#: 2.94 vs 1.93 s for 19,600 documents at size 3); see docs/user_guide/rule_ranker.rst.
CPU_CACHE_ENTRIES = 1 << 16
CPU_CACHE_MIN_WORDS = 1024
#: Tasks per thread when a call has few documents: a document's pairs are split so that
#: every thread gets work.
TASKS_PER_THREAD = 4
#: A rough cost of a counted itemset on one core, ``ITEMSET_NS + WORD_NS * n_words``
#: nanoseconds, from the development machine (2-core Xeon, docs/user_guide/rule_ranker.rst):
#: 31-80 ns at 3-116 words, about 520 ns at 1,235 words (the wide cache study). It sizes the
#: kernel's tasks and batches, and words the estimates of the itemset limit's messages.
ITEMSET_NS = 40.0
WORD_NS = 0.4
#: Seconds of one thread a task is sized for (at the rough cost above): a document with more
#: itemsets than that is split into tasks of about that many.
TASK_SECONDS = 0.01
#: Seconds a launch of the kernel is sized for: tasks are launched in batches from Python
#: so that Ctrl-C (KeyboardInterrupt, which a numba kernel cannot see) lands between two
#: batches. The first batch takes the rough cost above; later ones the rate measured, at
#: most ``MAX_BATCH_GROWTH`` times the first. Many tasks a thread in a batch keep the
#: threads' shares even (static scheduling: a batch lasts as long as its slowest thread).
BATCH_SECONDS = 0.2
MAX_BATCH_GROWTH = 2.5


class RuleParams(NamedTuple):
    """Scalars of one predict call, as the kernels read them (fixed types: one signature).

    ``shift``: fixed-point bits of a confidence (``scoring.confidence_shift``), ``scale``
    ``2.0**shift``;
    ``list_threshold``: a node with a smaller support keeps a document list, not a bitmap;
    ``hash_kind``: cache key (``HASH_KINDS``); ``cache_slots``: slots of each thread's
    itemset cache (a power of two; 1: no cache), ``cache_shift``: ``64 - log2(slots)``;
    ``digest``: also sum the rules' digests (for tests).
    """

    max_rule_size: int
    min_support: int
    min_confidence: float
    shift: int
    scale: float
    list_threshold: int
    hash_kind: int
    max_probe: int
    cache_slots: int
    cache_shift: int
    digest: bool


class RuleStats(NamedTuple):
    """Per document and level: rules, the sum of their fixed-point confidences, the sum of
    their digests (0 unless ``RuleParams.digest``); per document the work counters
    (``skltr._cpu.rules.W_*``)."""

    n_rules: np.ndarray   # int64 (n_docs, n_levels)
    conf_sum: np.ndarray  # int64 (n_docs, n_levels)
    digest: np.ndarray    # uint64 (n_docs, n_levels)
    work: np.ndarray      # int64 (n_docs, N_WORK)


class RuleWork(NamedTuple):
    """Per-thread buffers of the CPU kernel (first axis: thread), and its itemset cache.

    Stack depth ``d`` holds the node of ``d`` items: its representation (``kind``), bitmap
    ``bm`` with its non-zero words ``nzw`` (``nnz`` of them; ``nz_lofs``: where each level
    starts among them) or document list ``lst`` (``lofs``: level offsets); its children's
    level counts ``cc[d, level, column]`` and supports ``csup[d, column]``; its last item,
    key, prime fingerprint, children's positions ``s_lo:s_hi`` and next child
    (``s_*``). Cache slot ``s`` holds an itemset of
    ``c_size[s]`` items (0: empty), its key and its level counts.
    """

    cols: np.ndarray
    items: np.ndarray
    kind: np.ndarray
    bm: np.ndarray
    nzw: np.ndarray
    nnz: np.ndarray
    nz_lofs: np.ndarray
    lst: np.ndarray
    lofs: np.ndarray
    cc: np.ndarray
    csup: np.ndarray
    s_item: np.ndarray
    s_key: np.ndarray
    s_fp: np.ndarray
    s_next: np.ndarray
    s_lo: np.ndarray
    s_hi: np.ndarray
    c_size: np.ndarray
    c_keys: np.ndarray
    c_items: np.ndarray
    c_counts: np.ndarray
    tmp: np.ndarray


def cache_slots(cache_size) -> int:
    """Slots of the itemset cache for ``cache_size`` entries: the next power of two (0: no
    cache, one dummy slot)."""
    return 1 if cache_size <= 0 else 1 << max(1, math.ceil(math.log2(cache_size)))


def make_params(model: RuleModel, *, max_rule_size, min_support, min_confidence, cache_size,
                hash="splitmix", list_threshold=None, digest=False) -> RuleParams:
    """The :class:`RuleParams` of a predict call with this model."""
    n_cols = model.train_codes.shape[1]
    slots = cache_slots(int(cache_size))
    if list_threshold is None:
        list_threshold = LIST_THRESHOLD_PER_WORD * model.n_words
    shift = confidence_shift(model.n_train, n_cols, max_rule_size)
    return RuleParams(
        max_rule_size=int(max_rule_size), min_support=int(min_support),
        min_confidence=float(min_confidence), shift=shift, scale=float(2.0 ** shift),
        list_threshold=int(list_threshold), hash_kind=int(HASH_KINDS[hash]),
        max_probe=MAX_PROBE, cache_slots=slots,
        cache_shift=64 - int(math.log2(slots)) if slots > 1 else 63,
        digest=bool(digest))


def rule_work(model: RuleModel, params: RuleParams, n_threads) -> RuleWork:
    """Per-thread buffers for ``n_threads`` threads and empty caches."""
    T, K = int(n_threads), params.max_rule_size
    n_cols = model.train_codes.shape[1]
    n_words, n_levels, n_train = model.n_words, model.n_levels, model.n_train
    depth = K + 1
    slots = params.cache_slots
    return RuleWork(
        cols=np.empty((T, n_cols), np.int64), items=np.empty((T, n_cols), np.int64),
        kind=np.zeros((T, depth), np.int8), bm=np.empty((T, depth, n_words), np.uint64),
        nzw=np.empty((T, depth, n_words), np.int64), nnz=np.zeros((T, depth), np.int64),
        nz_lofs=np.zeros((T, depth, n_levels + 1), np.int64),
        lst=np.empty((T, depth, n_train), np.int64),
        lofs=np.zeros((T, depth, n_levels + 1), np.int64),
        cc=np.zeros((T, depth, n_levels, n_cols), np.int32),
        csup=np.zeros((T, depth, n_cols), np.int64),
        s_item=np.zeros((T, depth), np.int64), s_key=np.zeros((T, depth), np.uint64),
        s_fp=np.zeros((T, depth), np.float64), s_next=np.zeros((T, depth), np.int64),
        s_lo=np.zeros((T, depth), np.int64), s_hi=np.zeros((T, depth), np.int64),
        c_size=np.zeros((T, slots), np.int8), c_keys=np.zeros((T, slots), np.uint64),
        c_items=np.zeros((T, slots, K), np.int64),
        c_counts=np.zeros((T, slots, n_levels), np.int32),
        tmp=np.zeros((T, n_levels), np.int64))


def n_items_per_doc(model: RuleModel, codes, min_support):
    """Items of each document that can be in a rule: present, with support >= min_support."""
    present = codes != NO_ITEM
    item = np.where(present, codes.astype(np.int64) + model.col_item_ptr[:-1], 0)
    ok = present & (model.item_support[item] >= min_support)
    return ok.sum(axis=1)


def candidate_itemsets(n_items, max_rule_size):
    """Itemsets of 1 .. ``max_rule_size`` of ``n_items`` items (an array: each document's),
    ``sum_k C(m, k)``: what the kernels count for a document with ``m`` items when nothing
    is pruned (int64, exact; capped at 2**62)."""
    m = np.asarray(n_items, dtype=np.int64)
    out = np.zeros(m.shape, dtype=np.int64)
    K = int(max_rule_size)
    for v in np.unique(m):
        v = int(v)
        total = 2**v - 1 if K >= v else sum(math.comb(v, k) for k in range(1, K + 1))
        out[m == v] = min(total, 2**62)
    return out


def itemset_seconds(n_itemsets, n_words):
    """A rough time of one core for ``n_itemsets`` counted itemsets (``ITEMSET_NS``)."""
    return float(n_itemsets) * (ITEMSET_NS + WORD_NS * n_words) * 1e-9


def task_itemsets(n_words):
    """Itemsets a task is sized for (``TASK_SECONDS`` at the rough cost of an itemset)."""
    return max(1.0, TASK_SECONDS / itemset_seconds(1, n_words))


class BatchSizer:
    """Itemsets of the next batch of tasks: ``BATCH_SECONDS`` of ``n_threads`` threads at
    the rough cost of an itemset, then at the rate measured (at least a task a thread, at
    most ``MAX_BATCH_GROWTH`` times the first batch)."""

    def __init__(self, n_words, n_threads):
        self.first = n_threads * BATCH_SECONDS / itemset_seconds(1, n_words)
        self.least = n_threads * task_itemsets(n_words)
        self.itemsets = self.first

    def update(self, itemsets, seconds):
        """Record that a batch of ``itemsets`` candidate itemsets took ``seconds``."""
        if seconds > 1e-3 and itemsets > 0:
            self.itemsets = min(MAX_BATCH_GROWTH * self.first,
                                max(self.least, itemsets / seconds * BATCH_SECONDS))


class TaskPlan:
    """How a call's documents split into tasks, and which tasks a batch launches.

    A task is a document and a range ``[r0, r1)`` of its pair ranks with every superset of
    those pairs (the singletons go with the task at rank 0). A document is split into
    ``max(per_doc, ceil(itemsets / task_itemsets))`` ranges heading near equal numbers of
    itemsets (``skltr._cpu.combinadic.pair_rank_bound``), at most one a pair: ``per_doc``
    is 1 with at least ``TASKS_PER_THREAD * n_threads`` documents, else enough for every
    thread to get work. Tasks are numbered globally, a document's consecutive in rank order,
    and are made a batch at a time (:meth:`tasks`), so a heavy call never holds them all.
    """

    def __init__(self, n_items, max_rule_size, n_threads, task_itemsets=np.inf, binom_f=None):
        m = np.asarray(n_items, dtype=np.int64)
        self.m, self.K = m, int(max_rule_size)
        n_docs = m.size
        self.pairs = m * (m - 1) // 2 if self.K >= 2 else np.zeros(n_docs, np.int64)
        k = max(2, min(self.K, int(m.max()) if n_docs else 0))
        if binom_f is None or binom_f.shape[0] <= (int(m.max()) if n_docs else 0) or \
                binom_f.shape[1] <= k:
            binom_f = binomials_float(max(int(m.max()) if n_docs else 0, 2), k)
        self.binom_f, self.k = binom_f, k
        # itemsets of 2..K items (headed by pairs) of each document, and with its singletons
        heads = np.zeros(n_docs) if self.K < 2 else binom_f[m, 2:k + 1].sum(axis=1)
        self.weight = heads + m
        want = TASKS_PER_THREAD * n_threads
        per_doc = 1 if n_docs >= want else -(-want // max(n_docs, 1))
        by_weight = np.ceil(self.weight / task_itemsets) if np.isfinite(task_itemsets) else 1
        chunks = np.maximum(per_doc, by_weight)
        self.chunks = np.clip(np.minimum(chunks, self.pairs), 1, None).astype(np.int64)
        self.chunk_ptr = np.zeros(n_docs + 1, np.int64)
        np.cumsum(self.chunks, out=self.chunk_ptr[1:])
        self.cum_weight = np.zeros(n_docs + 1)
        np.cumsum(self.weight, out=self.cum_weight[1:])
        self.task_weight = self.weight / self.chunks

    @property
    def n_tasks(self) -> int:
        return int(self.chunk_ptr[-1])

    @property
    def pair_itemsets(self) -> float:
        """Itemsets of two or more items of the call's documents (what a cache could hold)."""
        return float((self.weight - self.m).sum())

    def weight_before(self, g) -> float:
        """Itemsets of the tasks before global task ``g``."""
        if g >= self.n_tasks:
            return float(self.cum_weight[-1])
        d = int(np.searchsorted(self.chunk_ptr, g, side="right")) - 1
        return float(self.cum_weight[d] + (g - self.chunk_ptr[d]) * self.task_weight[d])

    def batch_end(self, g0, itemsets, least=1) -> int:
        """The end of a batch from task ``g0`` heading about ``itemsets`` itemsets, with at
        least ``least`` tasks (as many as remain)."""
        n = self.n_tasks
        target = self.weight_before(g0) + itemsets
        d = int(np.searchsorted(self.cum_weight[1:], target, side="right"))
        if d >= self.m.size:
            g1 = n
        else:
            k = int((target - self.cum_weight[d]) // self.task_weight[d])
            g1 = int(self.chunk_ptr[d]) + min(k, int(self.chunks[d]))
        return min(n, max(g1, g0 + least))

    def tasks(self, g0, g1):
        """``(task_doc, r0, r1)`` (int64) of the global tasks ``g0:g1``."""
        g = np.arange(g0, g1, dtype=np.int64)
        doc = np.searchsorted(self.chunk_ptr, g, side="right") - 1
        j = g - self.chunk_ptr[doc]
        if self.K < 2:
            zero = np.zeros(g.size, np.int64)
            return doc, zero, zero.copy()
        m, parts = self.m[doc], self.chunks[doc]
        r0, r1 = np.empty(g.size, np.int64), np.empty(g.size, np.int64)
        pair_rank_bounds(m, self.k, j, parts, self.binom_f, r0)
        pair_rank_bounds(m, self.k, j + 1, parts, self.binom_f, r1)
        return doc, r0, r1


def doc_tasks(n_items, max_rule_size, n_threads, task_itemsets=np.inf):
    """Every task of a :class:`TaskPlan`: ``(task_doc, r0, r1)`` (int64), tasks of one
    document consecutive and in rank order."""
    plan = TaskPlan(n_items, max_rule_size, n_threads, task_itemsets)
    return plan.tasks(0, plan.n_tasks)


def cache_bytes(model: RuleModel, max_rule_size, cache_size, n_threads) -> int:
    """Bytes of the CPU kernel's itemset caches: ``n_threads`` tables of
    ``cache_slots(cache_size)`` slots, a slot holding its size (1 byte), key (8), items
    (8 a rule item) and level counts (4 a level)."""
    slots = cache_slots(int(cache_size))
    if slots <= 1:
        return 0
    per_slot = 1 + 8 + 8 * int(max_rule_size) + 4 * model.n_levels
    return slots * per_slot * int(n_threads)


def physical_memory():
    """Bytes of physical memory of this machine, or None where the OS does not say."""
    try:
        pages, page = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or no such name
        return None
    return pages * page if pages > 0 and page > 0 else None


class CPURuleKernels:
    """The rule kernels on the CPU (numba); the GPU's (``skltr._gpu.rules.GPURuleKernels``)
    have the same constructor and methods (``default_cache_size``, ``rule_stats``).

    Parameters
    ----------
    model : RuleModel
    params : RuleParams
    n_jobs : int or None
        Threads (``skltr.utils._threads.numba_threads`` semantics).
    device : Device or None
        The resolved device (``skltr._device.resolve_device``; the GPU's kernels read its
        index, or ``all_gpus``); the CPU's must be the CPU.
    """

    def __init__(self, model: RuleModel, params: RuleParams, *, n_jobs=None, device=None):
        if device is not None and device.is_gpu:
            raise ValueError(f"CPURuleKernels run on the CPU, not on {device}.")
        self.model = model
        self.params = params
        self.n_jobs = n_jobs
        n_cols = model.train_codes.shape[1]
        self.binom = binomials(max(n_cols, 2), 2)
        self.binom_f = binomials_float(max(n_cols, 2),
                                       max(2, min(int(params.max_rule_size), n_cols)))
        self.min_count = min_counts(model.n_train, params.min_support, params.min_confidence)

    @staticmethod
    def default_cache_size(model: RuleModel) -> int:
        """Cache entries (``make_params``' ``cache_size``) when the estimator's is None: on
        for wide bitmaps only (``CPU_CACHE_MIN_WORDS``)."""
        return CPU_CACHE_ENTRIES if model.n_words >= CPU_CACHE_MIN_WORDS else 0

    def rule_stats(self, codes) -> RuleStats:
        """The :class:`RuleStats` of the documents whose item codes are ``codes`` (uint8,
        ``(n_docs, n_cols)``, ``skltr._rules.intervals.transform``).

        The tasks (:class:`TaskPlan`) are launched in batches of about ``BATCH_SECONDS``, so
        that a KeyboardInterrupt stops the call between two of them."""
        model, p = self.model, self.params
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        n_docs, n_levels = codes.shape[0], model.n_levels
        out = RuleStats(np.zeros((n_docs, n_levels), np.int64),
                        np.zeros((n_docs, n_levels), np.int64),
                        np.zeros((n_docs, n_levels), np.uint64),
                        np.zeros((n_docs, N_WORK), np.int64))
        with numba_threads(self.n_jobs):
            n_threads = numba.get_num_threads()
            m = n_items_per_doc(model, codes, p.min_support)
            per_task = task_itemsets(model.n_words)
            plan = TaskPlan(m, p.max_rule_size, n_threads, per_task, self.binom_f)
            # no more slots than the call has itemsets to put in them (at half load)
            slots = min(p.cache_slots, cache_slots(int(min(2 * plan.pair_itemsets, 2**62))))
            if slots < p.cache_slots:
                p = p._replace(cache_slots=slots, cache_shift=64 - int(math.log2(slots))
                               if slots > 1 else 63)
            work = rule_work(model, p, n_threads)
            sizer, g0 = BatchSizer(model.n_words, n_threads), 0
            while g0 < plan.n_tasks:
                g1 = plan.batch_end(g0, sizer.itemsets, least=n_threads)
                task_doc, r0, r1 = plan.tasks(g0, g1)
                part = tuple(np.zeros((g1 - g0,) + a.shape[1:], a.dtype) for a in out)
                t = time.perf_counter()
                rule_stats(model, p, self.min_count, codes, task_doc, r0, r1, self.binom, work,
                           *part)
                sizer.update(plan.weight_before(g1) - plan.weight_before(g0),
                             time.perf_counter() - t)
                for total, a in zip(out, part):
                    _add_by_doc(total, task_doc, a)
                g0 = g1
        return out


def _add_by_doc(total, task_doc, per_task):
    """Add the rows of ``per_task`` to their documents' rows of ``total`` (uint64 sums wrap,
    as the digests do)."""
    if task_doc.size and (task_doc.size == 1 or (np.diff(task_doc) > 0).all()):
        total[task_doc] += per_task  # one task a document
    else:
        np.add.at(total, task_doc, per_task)


def predict_scores(model: RuleModel, codes, params: RuleParams, kernels):
    """Scores (float64, one per row of ``codes``) and the :class:`RuleStats` behind them.

    ``kernels``: a kernels object (``CPURuleKernels`` or the GPU's) made for ``model`` and
    ``params``.
    """
    stats = kernels.rule_stats(codes)
    prior = prior_score(model.level_doc_ptr, model.levels)
    return scores(stats.n_rules, stats.conf_sum, params.shift, model.levels, prior), stats
