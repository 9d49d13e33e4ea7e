"""The rule kernels on the CPU: the numba back-end of :mod:`skltr._rules.ranking`.

:class:`CPURuleKernels` counts the rules of every document with ``skltr._cpu.rules.rule_stats``
(numba, parallel over tasks: a document and a range of its pair ranks, :class:`TaskPlan`),
launched in batches (:class:`BatchSizer`) so that Ctrl-C lands between two of them, with
per-thread buffers and itemset caches (:func:`rule_work`). Its CUDA twin,
:class:`skltr._rules.kernels_cuda.GPURuleKernels`, has the same constructor and methods and
returns the same :class:`~skltr._rules.ranking.RuleStats`; the estimator picks one
(``kernels_for``) and the rest of the engine never asks which. The task plan, batches and
caches are the CPU's alone, so they live here with its kernels, not in the shared engine.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from .._cpu.combinadic import binomials, binomials_float, pair_rank_bounds
from .._cpu.rules import N_WORK, min_counts, rule_stats
from ..utils._threads import numba_threads
from .model import RuleModel
from .ranking import (RuleParams, RuleStats, RuleWork, cache_slots, itemset_seconds,
                      n_items_per_doc)

__all__ = ["CPURuleKernels", "BatchSizer", "TaskPlan", "doc_tasks", "rule_work", "task_itemsets"]

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
#: Seconds of one thread a task is sized for (at the rough cost of an itemset,
#: ``skltr._rules.ranking.ITEMSET_NS``): a document with more itemsets than that is split
#: into tasks of about that many.
TASK_SECONDS = 0.01
#: Seconds a launch of the kernel is sized for: tasks are launched in batches from Python
#: so that Ctrl-C (KeyboardInterrupt, which a numba kernel cannot see) lands between two
#: batches. The first batch takes the rough cost above; later ones the rate measured, at
#: most ``MAX_BATCH_GROWTH`` times the first. Many tasks a thread in a batch keep the
#: threads' shares even (static scheduling: a batch lasts as long as its slowest thread).
BATCH_SECONDS = 0.2
MAX_BATCH_GROWTH = 2.5


#: Bytes of a cache line: per-thread buffers are kept at least this far apart.
CACHE_LINE = 64


def per_thread(n_threads, shape, dtype):
    """Zeroed buffers of ``shape`` for each of ``n_threads`` threads (first axis: thread),
    the first axis of ``shape`` lengthened so that two threads' used parts never share a
    cache line.

    Without it the small buffers (a node stack of 4 entries, 5 level counts) of both
    threads sat in one line, written at every itemset: false sharing made two threads
    spend about twice the CPU time of one (measured: ``benchmarks/ondemand_rules.py``).
    The kernel indexes the extra entries never, nor reads these shapes (but the first
    axis of ``tmp``, whose extra levels stay zero).
    """
    itemsize = np.dtype(dtype).itemsize * math.prod(shape[1:])
    pad = -(-CACHE_LINE // itemsize) if itemsize else 0
    return np.zeros((int(n_threads), shape[0] + pad) + tuple(shape[1:]), dtype)


def rule_work(model: RuleModel, params: RuleParams, n_threads) -> RuleWork:
    """Per-thread buffers for ``n_threads`` threads (:func:`per_thread`) and empty caches."""
    T, K = int(n_threads), params.max_rule_size
    n_cols = model.train_codes.shape[1]
    n_words, n_levels, n_train = model.n_words, model.n_levels, model.n_train
    depth = K + 1
    slots = params.cache_slots
    return RuleWork(
        cols=per_thread(T, (n_cols,), np.int64), items=per_thread(T, (n_cols,), np.int64),
        kind=per_thread(T, (depth,), np.int8), bm=per_thread(T, (depth, n_words), np.uint64),
        nzw=per_thread(T, (depth, n_words), np.int64), nnz=per_thread(T, (depth,), np.int64),
        nz_lofs=per_thread(T, (depth, n_levels + 1), np.int64),
        lst=per_thread(T, (depth, n_train), np.int64),
        lofs=per_thread(T, (depth, n_levels + 1), np.int64),
        cc=per_thread(T, (depth, n_levels, n_cols), np.int32),
        csup=per_thread(T, (depth, n_cols), np.int64),
        s_item=per_thread(T, (depth,), np.int64), s_key=per_thread(T, (depth,), np.uint64),
        s_fp=per_thread(T, (depth,), np.float64), s_next=per_thread(T, (depth,), np.int64),
        s_lo=per_thread(T, (depth,), np.int64), s_hi=per_thread(T, (depth,), np.int64),
        c_size=np.zeros((T, slots), np.int8), c_keys=np.zeros((T, slots), np.uint64),
        c_items=np.zeros((T, slots, K), np.int64),
        c_counts=np.zeros((T, slots, n_levels), np.int32),
        tmp=per_thread(T, (n_levels,), np.int64))


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


class CPURuleKernels:
    """The rule kernels on the CPU (numba); the GPU's
    (:class:`skltr._rules.kernels_cuda.GPURuleKernels`) have the same constructor and methods
    (``default_cache_size``, ``rule_stats``).

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
