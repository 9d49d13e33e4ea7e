"""RankBoost's round kernels on the CPU: the numba back-end of the loop in
:mod:`skltr._rankboost.boosting`.

:class:`CPURoundKernels` holds a fit's binned data and per-row state and runs each stage of a
round with the numba kernels of :mod:`skltr._cpu.rankboost` (potentials, best stump) and
:mod:`skltr._cpu.histogram` (the histogram of the potentials). Its CUDA twin,
:class:`skltr._rankboost.kernels_cuda.GPURoundKernels`, has the same methods; the loop calls
them and never asks which device it is on. The two back-ends sit side by side in this package,
apart from the loop, so that the loop holds no device code and the CUDA back-end (which
imports CuPy) is imported only when a GPU is asked for.
"""

from __future__ import annotations

import contextlib
import time

import numba
import numpy as np

from .._cpu.histogram import build_histogram
from .._cpu.rankboost import best_stump, pair_log_sums, potentials
from .._engine.binning import BinMapper
from .._engine.histogram import HIST_PAD_BINS, WEIGHT, histogram_tasks
from .._engine.rounds import binning_seed

__all__ = ["CPURoundKernels"]


class _HostClock:
    """Seconds per stage from the host clock (the CPU kernels return when done)."""

    def __init__(self):
        self.seconds = {}

    @contextlib.contextmanager
    def stage(self, name):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t


class CPURoundKernels:
    """The round kernels of :func:`~skltr._rankboost.boosting.boost` on the CPU (numba); the
    GPU's (:class:`skltr._rankboost.kernels_cuda.GPURoundKernels`) have the same methods.

    Made from ``X``, the eval sets' ``X`` and the
    :class:`~skltr._rankboost.boosting.RankBoostParams` (bins them with ``mapper``);
    :meth:`start` takes the fixed per-query arrays; then each round :meth:`potentials`,
    :meth:`histogram`, :meth:`best_stump`, :meth:`add_stump` (and :meth:`eval_scores`), each
    under ``with self.stage(name)``.
    """

    def __init__(self, X, eval_Xs, params):
        self.mapper = BinMapper(max_bins=params.n_thresholds,
                                random_state=binning_seed(params.seed), n_threads=params.n_jobs)
        self.Xb = self.mapper.fit_transform(X)
        self.evals = [self.mapper.transform(Xe) for Xe in eval_Xs]
        self._clock = _HostClock()
        self.stage = self._clock.stage

    def start(self, y, group_ptr, log_c, order):
        """Fixed arrays: labels, query bounds, ``log c_q``, rows in label order per query."""
        n, n_features = self.Xb.shape
        self.y, self.group_ptr, self.log_c, self.order = y, group_ptr, log_c, order
        self.row_log_c = np.repeat(log_c, np.diff(group_ptr))
        self.H = np.zeros(n)
        self.log_a, self.log_b = np.empty(n), np.empty(n)
        self.log_pairs = np.empty(group_ptr.size - 1)
        self.pi = np.empty(n, dtype=np.int64)  # fixed point (skltr._cpu.rankboost.PI_SHIFT)
        self.hist = np.zeros((n_features, self.mapper.missing_bin + 1 + HIST_PAD_BINS,
                              WEIGHT.n_channels), WEIGHT.dtype)
        self.all_features = np.ones(n_features, dtype=np.bool_)
        self.f_work = [np.empty(n_features, np.int64) for _ in range(4)]  # |r|, r, bin, q_def
        self.tasks = histogram_tasks(numba.get_num_threads(), n_features)
        self.scratch = np.empty((max(self.tasks[0] - 1, 1), self.hist.size), WEIGHT.dtype)
        self.eval_scores_ = [np.zeros(Xe.shape[0]) for Xe in self.evals]

    def potentials(self):
        """``pi`` (fixed point) from the current scores ``H``."""
        pair_log_sums(self.H, self.y, self.order, self.group_ptr, self.log_a, self.log_b,
                      self.log_pairs)
        terms = self.log_c + self.log_pairs
        finite = terms[np.isfinite(terms)]
        log_z = np.logaddexp.reduce(finite) if finite.size else 0.0
        potentials(self.H, self.log_a, self.log_b, self.row_log_c, log_z, self.pi)

    def histogram(self):
        """``hist[f, b]``: the fixed-point sum of ``pi`` over the rows in bin ``b``."""
        n = self.Xb.shape[0]
        # ``reduce`` passed, not left to its default: the grower passes it, and an omitted
        # argument is another numba signature to compile (~1.3 s on a first run)
        build_histogram(self.Xb, self.pi, self.pi, np.empty(0, np.uint32), 0, n, False,
                        self.hist, self.scratch, *self.tasks, True)

    def best_stump(self):
        """``(feature, bin, q_def, r)`` of largest ``|r|`` (``feature`` -1: none)."""
        return best_stump(self.hist, self.mapper.n_bins, self.all_features,
                          self.mapper.missing_bin, *self.f_work)

    def _add(self, Xb, scores, f, b, q_def, alpha):
        col = Xb[:, f]
        h = np.where(col == self.mapper.missing_bin, bool(q_def), col > b)
        scores += np.where(h, alpha, 0.0)  # "+ 0.0" where h = 0, as the GPU

    def add_stump(self, f, b, q_def, alpha):
        """Training scores ``H += alpha * h``."""
        self._add(self.Xb, self.H, f, b, q_def, alpha)

    def eval_scores(self, f, b, q_def, alpha):
        """Add the stump to every eval set's scores; returns them."""
        for Xe, s in zip(self.evals, self.eval_scores_):
            self._add(Xe, s, f, b, q_def, alpha)
        return self.eval_scores_

    def stage_seconds(self):
        """Seconds per stage, summed over the rounds."""
        return dict(self._clock.seconds)
