"""The CPU back-end of the boosting loop: host arrays, numba kernels, the CPU grower.

What :func:`skltr._gbdt.boosting.boost` asks of a device (the CUDA twin is
:mod:`skltr._gbdt.backend_cuda`, with the same methods): bin the data once, bind the objective
to the training set, grow a tree, add a tree to the training and eval scores, hand scores to
the host. The round logic itself is the loop's alone.
"""

from __future__ import annotations

import contextlib

import numba
import numpy as np

from .._dtypes import G_H_DTYPE, Y_DTYPE
from .._engine.binning import transposed
from .._engine.histogram import HIST_PAD_BINS
from .._engine.wide_categorical import WideCategorical
from .._engine.rounds import inf_error
from ..utils._profile import stage
from . import precompile
from .grower_cpu import TreeGrower

__all__ = ["CPUBackend"]


class CPUBackend:
    """Host arrays and numba kernels (``n_jobs`` threads).

    Parameters
    ----------
    params : BoostParams
    communicator : object
        ``allreduce_sum`` / ``allreduce_max`` of a distributed fit (or a local one).
    """

    label = "boosting"

    def __init__(self, params, communicator):
        self.params, self.communicator = params, communicator
        self.n_jobs = params.n_jobs
        self.pool = None
        self.search = None  # the categorical split search, kept across trees like the pool

    def activate(self):
        """The context the loop runs in (nothing to select on the CPU)."""
        return contextlib.nullcontext()

    def bin(self, X, eval_sets, shard):
        """Bin the training and eval rows once; returns the fitted ``BinMapper``."""
        p = self.params
        if p.reject_inf and any(np.isinf(a).any() for a in [X] + [e.X for e in eval_sets]):
            raise inf_error()
        if shard is None and getattr(self.communicator, "world", 1) == 1:
            # on a cold kernel cache the grower's and predict's kernels compile in a second
            # process meanwhile (skltr._gbdt.precompile)
            precompile.start(X, p, numba.get_num_threads())
        if shard is None:
            mapper = p.bin_mapper()
            self.X_binned = mapper.fit_transform(X)
        else:
            mapper = shard.mapper
            self.X_binned = mapper.transform(X)
        self.evals = [mapper.transform(e.X) for e in eval_sets]
        self.mapper = mapper
        # made once per fit: the grower's partition kernel reads the transpose (in threads
        # when large)
        self.X_binned_T = transposed(self.X_binned, self.n_jobs)
        # wide categorical features: their codes (and rows of the histograms), and per
        # matrix what the binned scoring reads of them; None without any
        self.wide = WideCategorical.of(mapper, X, mapper.missing_bin + 1 + HIST_PAD_BINS)
        self.wide_codes, self.evals_wide = None, [None] * len(eval_sets)
        if self.wide is not None:
            wide_of = np.full(X.shape[1], -1, np.int64)
            wide_of[self.wide.features] = np.arange(self.wide.features.size)
            self.wide_codes = (self.wide.X, wide_of)
            self.evals_wide = [(mapper.transform_wide(e.X), wide_of) for e in eval_sets]
        return mapper

    def gradients(self, objective, y, group_ptr, sample_weight, query_index):
        """The objective bound to the training rows: ``f(scores, grad, hess, iteration)``."""
        bound = objective.bind(y, group_ptr, sample_weight, query_index)
        # scores and labels read (float64), gradients and hessians written (float32)
        nbytes = 24 * len(y)

        def gradients(scores, grad, hess, iteration):
            with stage("gradients", nbytes):
                bound.gradients(scores, grad, hess, iteration)
        return gradients

    def full(self, n, value):
        """A float64 score array."""
        return np.full(n, value, dtype=Y_DTYPE)

    def from_host(self, scores):
        """A float64 score array holding ``scores`` (a host array; copied)."""
        return np.array(scores, dtype=Y_DTYPE)

    def empty_gh(self, n):
        """Gradient or hessian storage (float32)."""
        return np.empty(n, dtype=G_H_DTYPE)

    def grow(self, grad, hess, rows, feature_mask, round_=0):
        """One tree (histogram pages stay warm across trees: ``docs/gbdt_internals.rst``);
        ``round_``: the round's number in the whole model (the split noise's draws)."""
        precompile.enter("grow")  # waits for the pre-compiler's grower kernels, if any
        m = self.mapper
        grower = TreeGrower(self.X_binned, grad, hess, n_bins=m.n_bins,
                            missing_bin=m.missing_bin, has_missing=m.has_missing, rows=rows,
                            feature_mask=feature_mask, communicator=self.communicator,
                            pool=self.pool, X_binned_T=self.X_binned_T, wide=self.wide,
                            n_threads=self.n_jobs, tree_params=self.params.tree,
                            seed=self.params.seed, round_=round_, search=self.search,
                            compiled=precompile.compiled_growth())
        tree = grower.grow()
        self.pool, self.search = grower.pool, grower.search
        return tree

    def add_to_training_scores(self, tree, rows, scores):
        with stage("scores", 20 * scores.size):  # score read + written, leaf of row read
            if rows is None:  # the grower's row -> leaf map: no traversal
                tree.add_to_training_scores(scores, self.n_jobs)
            else:  # the tree saw only the sampled queries; every row's score moves
                tree.add_to_scores(self.X_binned, scores, self.n_jobs, self.wide_codes)
        # The row -> leaf map is a full column of int32 per tree: drop it once used, or
        # 200 trees on 500k rows would hold 400 MB until the end of the fit.
        tree.leaf_of_row = tree.rows = None

    def add_to_eval_scores(self, k, tree, scores):
        """Add ``tree`` to eval set ``k``'s scores; returns them on the host."""
        with stage("eval"):
            tree.add_to_scores(self.evals[k], scores, self.n_jobs, self.evals_wide[k])
        return scores

    def synchronize(self):
        """Nothing is in flight on the CPU."""
