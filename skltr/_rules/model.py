"""The training set as bitmap inverted lists: the :class:`RuleModel` record both devices read.

Training documents are put in order of relevance level (stable within a level), and each
level is padded to whole 64-bit words, so that a level is a range of words::

    level_doc_ptr   [0, n_0, n_0 + n_1, ...]            documents of level l
    level_word_ptr  [0, ceil(n_0/64), ...]               its words in every bitmap
    item_bits[i]    bit (w, b) set: document level_doc_ptr[l] + (w - level_word_ptr[l])*64 + b
                    of level l holds item i (padding bits are 0)
    level_bits[l]   the relevance bitmap of level l: its own documents' bits

One AND + popcount pass over two bitmaps then gives an itemset's support in every level at
once. ``train_codes`` holds the same documents as rows of item codes (one byte per used
feature), which the kernels read once an itemset's support is small (``skltr._cpu.rules``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._cpu.rules import build_item_bits, splitmix64_range
from ..utils._threads import numba_threads
from .intervals import fit_intervals, n_items

__all__ = ["RuleModel", "TrainingSet", "build_model", "fit_rules", "training_set", "item_keys",
           "prime_reciprocals"]

#: Bitmap words (bit i of word w is document 64 w + i of a level).
WORD_DTYPE = np.uint64


class TrainingSet(NamedTuple):
    """What ``fit`` keeps of the training set (the model is rebuilt from it)."""

    codes: np.ndarray          # uint8 (n_train, n_cols): item codes, documents in level order
    level_doc_ptr: np.ndarray  # int64 (n_levels + 1,)
    levels: np.ndarray         # float64 (n_levels,): the relevance value of each level


class RuleModel(NamedTuple):
    """The arrays the rule kernels read (host NumPy here; the GPU kernels copy them).

    ``col_item_ptr[c] + code`` is the item of code ``code`` of used column ``c``;
    ``item_counts[i, l]``: training documents of level ``l`` holding item ``i`` (the
    supports of the one-item rules), ``item_support[i]`` their sum; ``item_key[i] =
    splitmix64(i)``, an itemset's key being the sum of its items' (mod 2**64);
    ``item_recip[i]``: the reciprocal of the ``i``-th prime (PROFL's fingerprint).
    """

    item_bits: np.ndarray       # uint64 (n_items, n_words)
    level_bits: np.ndarray      # uint64 (n_levels, n_words)
    train_codes: np.ndarray     # uint8 (n_train, n_cols)
    col_item_ptr: np.ndarray    # int64 (n_cols + 1,)
    item_counts: np.ndarray     # int32 (n_items, n_levels)
    item_support: np.ndarray    # int32 (n_items,)
    level_doc_ptr: np.ndarray   # int64 (n_levels + 1,)
    level_word_ptr: np.ndarray  # int64 (n_levels + 1,)
    item_key: np.ndarray        # uint64 (n_items,)
    item_recip: np.ndarray      # float64 (n_items,)
    levels: np.ndarray          # float64 (n_levels,)

    @property
    def n_train(self) -> int:
        return int(self.level_doc_ptr[-1])

    @property
    def n_words(self) -> int:
        return int(self.item_bits.shape[1])

    @property
    def n_levels(self) -> int:
        return int(self.levels.shape[0])


def training_set(codes, y):
    """Sort the training rows by relevance level: a :class:`TrainingSet`.

    ``codes``: item codes in row order; ``y``: labels. Rows of one level keep their order.
    """
    levels, level_idx = np.unique(np.asarray(y, dtype=np.float64), return_inverse=True)
    order = np.argsort(level_idx, kind="stable")
    ptr = np.zeros(levels.size + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(np.bincount(level_idx, minlength=levels.size))
    return TrainingSet(np.ascontiguousarray(codes[order]), ptr, levels)


def item_keys(n):
    """``splitmix64(i)`` for ``i = 0 .. n-1`` (uint64)."""
    return splitmix64_range(n)


def prime_reciprocals(n):
    """``1 / p_i`` for the first ``n`` primes (``p_0 = 2``)."""
    if n == 0:
        return np.empty(0)
    limit = max(16, int(n * (np.log(n + 1) + np.log(np.log(n + 2)) + 3)))
    while True:
        sieve = np.ones(limit + 1, dtype=bool)
        sieve[:2] = False
        for p in range(2, int(limit ** 0.5) + 1):
            if sieve[p]:
                sieve[p * p::p] = False
        primes = np.flatnonzero(sieve)
        if primes.size >= n:
            return 1.0 / primes[:n].astype(np.float64)
        limit *= 2


def build_model(train: TrainingSet, intervals) -> RuleModel:
    """The :class:`RuleModel` of a training set (deterministic: the same arrays each time)."""
    codes, ldp, levels = train
    n, n_cols = codes.shape
    n_levels = levels.size
    col_item_ptr = np.zeros(n_cols + 1, dtype=np.int64)
    col_item_ptr[1:] = np.cumsum(n_items(intervals))
    total_items = int(col_item_ptr[-1])
    sizes = np.diff(ldp)
    lwp = np.zeros(n_levels + 1, dtype=np.int64)
    lwp[1:] = np.cumsum((sizes + 63) // 64)
    n_words = int(lwp[-1])
    level_of_doc = np.repeat(np.arange(n_levels, dtype=np.int64), sizes)
    item_bits = np.zeros((total_items, n_words), dtype=WORD_DTYPE)
    if n_cols:
        build_item_bits(codes, col_item_ptr, level_of_doc, ldp, lwp, item_bits)
    level_bits = np.zeros((n_levels, n_words), dtype=WORD_DTYPE)
    for lv in range(n_levels):
        full, rest = divmod(int(sizes[lv]), 64)
        level_bits[lv, lwp[lv]:lwp[lv] + full] = np.uint64(2**64 - 1)
        if rest:
            level_bits[lv, lwp[lv] + full] = np.uint64((1 << rest) - 1)
    cell = (codes.astype(np.int64) + col_item_ptr[:-1]) * n_levels + level_of_doc[:, None]
    counts = np.bincount(cell.ravel(), minlength=total_items * n_levels).reshape(
        total_items, n_levels)
    return RuleModel(
        item_bits=item_bits, level_bits=level_bits, train_codes=codes,
        col_item_ptr=col_item_ptr, item_counts=counts.astype(np.int32),
        item_support=counts.sum(axis=1).astype(np.int32), level_doc_ptr=ldp,
        level_word_ptr=lwp, item_key=item_keys(total_items),
        item_recip=prime_reciprocals(total_items), levels=levels)


def fit_rules(X, y, *, discretization, n_bins, seed, n_jobs=None):
    """Discretise the training rows ``X`` (float64 or float32) with labels ``y`` and store
    them.

    Returns ``(Intervals, TrainingSet, RuleModel)``.
    """
    levels, level_idx = np.unique(np.asarray(y, dtype=np.float64), return_inverse=True)
    with numba_threads(n_jobs):
        intervals, codes = fit_intervals(X, level_idx, levels.size,
                                         discretization=discretization, n_bins=n_bins,
                                         seed=seed, n_jobs=n_jobs)
        train = training_set(codes, y)
        model = build_model(train, intervals)
    return intervals, train, model
