"""Ranking with on-demand rules: documents -> item codes -> rule statistics -> scores.

The engine is written once for both devices. The device-specific step, counting the rules of
every document, is a method of a kernels class::

    kernels = cls(model, params, n_jobs=..., device=device)   # CPURuleKernels or the GPU's
                                      # (the estimator's kernels_for: the one place devices branch)
    stats = kernels.rule_stats(codes)                 # RuleStats: host int64 arrays
    scores(stats.n_rules, stats.conf_sum, ...)        # equations 1 and 2 (scoring.py)

This module holds what both devices share: the call's :class:`RuleParams`, the
:class:`RuleStats` the kernels return, the itemset counts and rough costs the estimator's
limits read, and :func:`predict_scores` (and :class:`RuleWork`, the CPU kernel's buffers,
which stays here for numba's cache: see its note). The back-ends sit beside it:
:class:`skltr._rules.kernels_cpu.CPURuleKernels` runs ``skltr._cpu.rules.rule_stats`` (numba,
parallel over tasks: a document and a range of its pair ranks);
:class:`skltr._rules.kernels_cuda.GPURuleKernels` (CuPy, imported only when a GPU is asked
for) takes the same :class:`~skltr._rules.model.RuleModel` and :class:`RuleParams` and returns
the same :class:`RuleStats`. Counts and fixed-point sums are integers, so both devices give
the same scores bit for bit.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

import numpy as np

from .._cpu.rules import HASH_PRIME, HASH_SPLITMIX, NO_ITEM
from .model import RuleModel
from .scoring import confidence_shift, prior_score, scores

__all__ = ["RuleParams", "RuleStats", "RuleWork", "HASH_KINDS", "cache_bytes", "cache_slots",
           "candidate_itemsets", "itemset_seconds", "make_params", "n_items_per_doc",
           "physical_memory", "predict_scores"]

#: Cache key functions by name (``make_params(hash=...)``); see ``docs/user_guide/
#: rule_ranker.rst`` for the measurement behind the default.
HASH_KINDS = {"splitmix": HASH_SPLITMIX, "prime": HASH_PRIME}

#: A node keeps its documents as a list once its support is below this many times the
#: bitmap's words (measured: ``docs/user_guide/rule_ranker.rst``).
LIST_THRESHOLD_PER_WORD = 1
#: Slots inspected by a cache look-up before it gives up (and evicts the home slot).
MAX_PROBE = 8
#: A rough cost of a counted itemset on one core, ``ITEMSET_NS + WORD_NS * n_words``
#: nanoseconds, from the development machine (2-core Xeon, docs/user_guide/rule_ranker.rst):
#: 31-80 ns at 3-116 words, about 520 ns at 1,235 words (the wide cache study). It sizes the
#: CPU kernel's tasks and batches (``skltr._rules.kernels_cpu``), and words the estimates of
#: the itemset limit's messages.
ITEMSET_NS = 40.0
WORD_NS = 0.4


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
    """Per-thread buffers of the CPU kernel (first axis: thread), and its itemset cache
    (allocated by ``skltr._rules.kernels_cpu.rule_work``).

    It stays here, with :class:`RuleParams`, though only the CPU back-end uses it: both are
    types of the numba kernel's signature, and numba's cache index pickles them by module
    path, so moving one breaks every kernel cache of this skltr version (``AttributeError``
    on load).

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


def predict_scores(model: RuleModel, codes, params: RuleParams, kernels):
    """Scores (float64, one per row of ``codes``) and the :class:`RuleStats` behind them.

    ``kernels``: a kernels object (``kernels_cpu.CPURuleKernels`` or
    ``kernels_cuda.GPURuleKernels``) made for ``model`` and ``params``.
    """
    stats = kernels.rule_stats(codes)
    prior = prior_score(model.level_doc_ptr, model.levels)
    return scores(stats.n_rules, stats.conf_sum, params.shift, model.levels, prior), stats
