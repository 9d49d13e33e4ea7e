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
from typing import NamedTuple

import numba
import numpy as np

from .._cpu.combinadic import binomials
from .._device import Device, resolve_device
from .._cpu.rules import HASH_PRIME, HASH_SPLITMIX, N_WORK, NO_ITEM, min_counts, rule_stats
from ..utils._threads import numba_threads
from .model import RuleModel
from .scoring import confidence_shift, prior_score, scores

__all__ = ["CPURuleKernels", "RuleDevice", "RuleParams", "RuleStats", "RuleWork",
           "HASH_KINDS", "doc_tasks", "make_params", "predict_scores",
           "resolve_rule_device"]

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


def doc_tasks(n_items, max_rule_size, n_threads):
    """Split every document's pair ranks ``[0, C(m, 2))`` into tasks.

    Returns ``(task_doc, r0, r1)`` (int64), tasks of one document consecutive and in rank
    order. With at least ``TASKS_PER_THREAD * n_threads`` documents a task is a whole
    document; with fewer, a document is split into about that many rank ranges so that
    every thread gets work (one task per document when ``max_rule_size`` is 1).
    """
    m = np.asarray(n_items, dtype=np.int64)
    n_docs = m.size
    pairs = m * (m - 1) // 2 if max_rule_size >= 2 else np.zeros(n_docs, np.int64)
    want = TASKS_PER_THREAD * n_threads
    per_doc = 1 if n_docs >= want else -(-want // max(n_docs, 1))
    chunks = np.clip(np.minimum(per_doc, pairs), 1, None)
    task_doc = np.repeat(np.arange(n_docs, dtype=np.int64), chunks)
    first = np.repeat(np.cumsum(chunks) - chunks, chunks)
    j = np.arange(task_doc.size, dtype=np.int64) - first  # task index within its document
    n = chunks[task_doc]
    total = pairs[task_doc]
    return task_doc, total * j // n, total * (j + 1) // n


class CPURuleKernels:
    """The rule kernels on the CPU (numba); the GPU's (``skltr._gpu.rules.GPURuleKernels``)
    have the same constructor and methods (``default_cache_size``, ``rule_stats``).

    Parameters
    ----------
    model : RuleModel
    params : RuleParams
    n_jobs : int or None
        Threads (``skltr.utils._threads.numba_threads`` semantics).
    device : RuleDevice or None
        The resolved device (the GPU's kernels read its index, or ``all_gpus``); the CPU's
        must be the CPU.
    """

    def __init__(self, model: RuleModel, params: RuleParams, *, n_jobs=None, device=None):
        if device is not None and device.is_gpu:
            raise ValueError(f"CPURuleKernels run on the CPU, not on {device}.")
        self.model = model
        self.params = params
        self.n_jobs = n_jobs
        n_cols = model.train_codes.shape[1]
        self.binom = binomials(max(n_cols, 2), 2)
        self.min_count = min_counts(model.n_train, params.min_support, params.min_confidence)

    @staticmethod
    def default_cache_size(model: RuleModel) -> int:
        """Cache entries (``make_params``' ``cache_size``) when the estimator's is None: on
        for wide bitmaps only (``CPU_CACHE_MIN_WORDS``)."""
        return CPU_CACHE_ENTRIES if model.n_words >= CPU_CACHE_MIN_WORDS else 0

    def rule_stats(self, codes) -> RuleStats:
        """The :class:`RuleStats` of the documents whose item codes are ``codes`` (uint8,
        ``(n_docs, n_cols)``, ``skltr._rules.intervals.transform``)."""
        model, p = self.model, self.params
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        n_docs, n_levels = codes.shape[0], model.n_levels
        with numba_threads(self.n_jobs):
            n_threads = numba.get_num_threads()
            m = n_items_per_doc(model, codes, p.min_support)
            task_doc, r0, r1 = doc_tasks(m, p.max_rule_size, n_threads)
            n_tasks = task_doc.size
            out = (np.zeros((n_tasks, n_levels), np.int64),
                   np.zeros((n_tasks, n_levels), np.int64),
                   np.zeros((n_tasks, n_levels), np.uint64),
                   np.zeros((n_tasks, N_WORK), np.int64))
            work = rule_work(model, p, n_threads)
            if n_tasks:
                rule_stats(model, p, self.min_count, codes, task_doc, r0, r1, self.binom, work,
                           *out)
        return RuleStats(*(_sum_by_doc(a, task_doc, n_docs) for a in out))


def _sum_by_doc(per_task, task_doc, n_docs):
    """Rows of ``per_task`` summed per document (tasks of a document are consecutive;
    uint64 sums wrap, as the digests do)."""
    if per_task.shape[0] == n_docs:
        return per_task
    out = np.zeros((n_docs,) + per_task.shape[1:], per_task.dtype)
    np.add.at(out, task_doc, per_task)
    return out


class RuleDevice(NamedTuple):
    """A resolved ``device`` of the rule ranker: one :class:`~skltr._device.Device`, or
    every visible GPU (``"cuda:all"``: documents split across them)."""

    device: Device
    all_gpus: bool = False

    @property
    def is_gpu(self) -> bool:
        return self.device.is_gpu

    def __str__(self) -> str:
        return "cuda:all" if self.all_gpus else str(self.device)


def resolve_rule_device(device) -> RuleDevice:
    """``resolve_device`` plus ``"cuda:all"`` (which needs CuPy and a GPU as ``"cuda"``)."""
    if isinstance(device, str) and device.strip().lower() == "cuda:all":
        return RuleDevice(resolve_device("cuda"), True)
    return RuleDevice(resolve_device(device), False)


def predict_scores(model: RuleModel, codes, params: RuleParams, kernels):
    """Scores (float64, one per row of ``codes``) and the :class:`RuleStats` behind them.

    ``kernels``: a kernels object (``CPURuleKernels`` or the GPU's) made for ``model`` and
    ``params``.
    """
    stats = kernels.rule_stats(codes)
    prior = prior_score(model.level_doc_ptr, model.levels)
    return scores(stats.n_rules, stats.conf_sum, params.shift, model.levels, prior), stats
