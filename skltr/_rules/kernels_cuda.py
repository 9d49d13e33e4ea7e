"""The rule kernels on the GPU: the CUDA back-end of :mod:`skltr._rules.ranking`.

:class:`GPURuleKernels` has the constructor and methods of the CPU back-end
(:class:`skltr._rules.kernels_cpu.CPURuleKernels`) and returns the same
:class:`~skltr._rules.ranking.RuleStats`. It copies the model's bitmaps to each GPU once,
splits a call's documents into rounds (:data:`BATCH_ITEMSETS`, so that Ctrl-C lands between
two) and, for ``device="cuda:all"``, each round over every visible GPU; the counting itself is
:func:`skltr._gpu.rules.count_itemsets` (the CUDA source and its launch). Imported only when a
GPU is asked for: it imports CuPy.
"""

from __future__ import annotations

import cupy
import numpy as np

from .._cpu.combinadic import binomials
from .._cpu.rules import (CONFIDENCE_TABLE_MAX_TRAIN, NO_ITEM, N_WORK, confidence_table,
                          min_counts)
from .._gpu import rules as cuda
from .ranking import RuleStats, candidate_itemsets, n_items_per_doc

__all__ = ["GPURuleKernels", "BATCH_ITEMSETS"]

#: Candidate itemsets a GPU counts in one round of launches: a call's documents go in rounds
#: of about this many per GPU, each read back before the next is launched, so that Ctrl-C
#: (which the host sees only between CUDA calls) stops a long call within a round: about
#: 0.2 s on an H100 (PROFL's shape, rules of 4 items: 1.66e9 itemsets in 184 ms). A document
#: is never split: one with more itemsets is a round of its own.
BATCH_ITEMSETS = 2e9


class GPURuleKernels:
    """The rule kernels on the GPU, with :class:`~skltr._rules.kernels_cpu.CPURuleKernels`'
    constructor and methods. ``n_jobs`` and the cache (``params.cache_slots``) concern the
    CPU and are not used; the work counters come back as zeros. ``device``: a resolved
    :class:`~skltr._device.Device` (None: GPU 0); ``"cuda:all"`` (``all_gpus``) splits the
    documents into one contiguous share per visible GPU, each with its own copy of the
    bitmaps (PROFL's multi-GPU scheme), launched from one host thread."""

    #: A ranker may keep one for its next calls (``OnDemandRuleRanker._kernels``): its
    #: state is the model's tables on the GPUs, copied once.
    reusable = True

    def __init__(self, model, params, *, n_jobs=None, device=None):
        self.model, self.params = model, params
        n_cols = model.train_codes.shape[1]
        self.binom = binomials(max(n_cols, 1), max(1, int(params.max_rule_size)))
        self.min_count = min_counts(model.n_train, params.min_support, params.min_confidence)
        # (beyond its limit size 3 goes to the itemsets kernel, which does not read it)
        self.rule_table = (cuda.triples_rule_table(
            confidence_table(model.n_train, params.shift), self.min_count)
            if model.n_train < CONFIDENCE_TABLE_MAX_TRAIN else np.zeros((1, 2), np.int64))
        if cuda.prefix_batch(model.n_words, n_cols) == 0:
            raise ValueError(cuda.too_many_words_message(model.n_words, n_cols))
        if device is None or not device.all_gpus:
            self.indices = [0 if device is None else int(device.index)]
        else:
            self.indices = list(range(cupy.cuda.runtime.getDeviceCount()))
        self._tables = {}
        # usable[c, code]: the item of code ``code`` of column c where it can be in a rule
        # (support >= min_support), else -1 (absent, NO_ITEM, too rare)
        ptr = np.asarray(model.col_item_ptr, np.int64)
        code = np.arange(256)
        item = ptr[:-1, None] + code[None, :]
        ok = code[None, :] < np.diff(ptr)[:, None]
        ok[ok] &= np.asarray(model.item_support)[item[ok]] >= params.min_support
        self._usable = np.where(ok, item, -1).astype(np.int32)
        self._level_words = tuple(int(w) for w in model.level_word_ptr)
        #: the most candidate itemsets a document can have (all its columns' items usable)
        self._doc_most = int(candidate_itemsets(np.array([n_cols]), params.max_rule_size)[0])

    @staticmethod
    def default_cache_size(model) -> int:
        """0: the GPU kernels keep no itemset cache (a prefix's bitmap is shared in shared
        memory by all its extensions instead)."""
        return 0

    def _on(self, index):
        """The model's arrays on GPU ``index`` (copied once)."""
        if index not in self._tables:
            m = self.model
            with cupy.cuda.Device(index):
                self._tables[index] = (
                    cupy.asarray(np.ascontiguousarray(m.item_bits)),
                    cupy.asarray(np.bitwise_or.reduce(m.level_bits, axis=0)
                                 if m.n_levels else np.zeros(1, np.uint64)),
                    cupy.asarray(np.asarray(m.level_word_ptr, np.int64)),
                    cupy.asarray(np.asarray(m.item_key, np.uint64)),
                    cupy.asarray(self.binom), cupy.asarray(self.min_count),
                    cupy.asarray(self.rule_table), cupy.asarray(self._usable))
        return self._tables[index]

    def rule_stats(self, codes) -> RuleStats:
        """The :class:`~skltr._rules.ranking.RuleStats` of the documents whose item codes
        are ``codes`` (uint8, ``(n_docs, n_cols)``)."""
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        n = codes.shape[0]
        parts = []
        for lo, hi in self._rounds(codes):
            # Every GPU's kernels are launched before any result is read: launches return at
            # once, so the GPUs count their shares at the same time from one host thread.
            # (One host thread per GPU, each launching and then reading, measured no faster
            # than one GPU on two H100s: the reads serialised the launches.)
            cuts = np.linspace(lo, hi, len(self.indices) + 1).astype(np.int64)
            launched = [self._launch(i, codes[a:b])
                        for i, a, b in zip(self.indices, cuts[:-1], cuts[1:])]
            parts += [out.get() for out in launched]
        n_rules, conf_sum, dig = np.concatenate(parts, axis=1)
        return RuleStats(n_rules, conf_sum, dig.view(np.uint64),
                         np.zeros((n, N_WORK), np.int64))

    def _rounds(self, codes):
        """``(lo, hi)`` row ranges of ``codes`` of about ``BATCH_ITEMSETS`` candidate itemsets
        a GPU each (at least one row; one empty range for no rows)."""
        n = codes.shape[0]
        if n == 0:
            return [(0, 0)]
        p = self.params
        per_round = BATCH_ITEMSETS * len(self.indices)
        if n * float(self._doc_most) <= per_round:       # one round, however many are usable
            return [(0, n)]
        m = n_items_per_doc(self.model, codes, p.min_support)
        cum = np.cumsum(candidate_itemsets(m, p.max_rule_size).astype(np.float64))
        bounds = [0]
        while bounds[-1] < n:
            lo = bounds[-1]
            hi = int(np.searchsorted(cum, (cum[lo - 1] if lo else 0.0) + per_round, "right"))
            bounds.append(min(n, max(hi, lo + 1)))
        return list(zip(bounds[:-1], bounds[1:]))

    def _launch(self, index, codes):
        """The device array ``(3, n_docs, n_levels)`` int64 of ``codes`` on GPU ``index``:
        ``n_rules``, ``conf_sum`` and the digests' bits, its kernels launched (not waited
        for; one read brings the three back)."""
        model, p = self.model, self.params
        n_docs, n_cols = codes.shape
        L = model.n_levels
        K = int(p.max_rule_size)
        with cupy.cuda.Device(index):
            stats = cupy.zeros((3, n_docs, L), cupy.int64)
            out = [stats[0], stats[1], stats[2].view(cupy.uint64)]
            if n_docs and L and K and n_cols:
                (item_bits, all_bits, lwp, item_key, binom, min_count, rule_table,
                 usable) = self._on(index)
                # the most items a document has: the grids' size (the GPU finds which are
                # usable, and puts them first)
                m_most = int((codes != NO_ITEM).sum(axis=1).max())
                cuda.count_itemsets(
                    cupy.asarray(codes), usable, m_most, self.binom, out,
                    item_bits=item_bits, all_bits=all_bits, level_word_ptr=lwp,
                    level_words=self._level_words, item_key=item_key, binom=binom,
                    min_count=min_count, rule_table=rule_table, n_words=model.n_words,
                    max_rule_size=K, min_support=p.min_support, shift=p.shift,
                    digest=p.digest)
            return stats
