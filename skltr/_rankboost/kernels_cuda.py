"""RankBoost's round kernels on the GPU: the CUDA back-end of the loop in
:mod:`skltr._rankboost.boosting`, and its entry :func:`boost` (the loop on one GPU).

:class:`GPURoundKernels` has the methods of the CPU back-end
(:class:`skltr._rankboost.kernels_cpu.CPURoundKernels`) and keeps a fit's state on the device:
the binned matrices, scores, potentials and histogram are CuPy arrays, and each stage is a few
launches of :mod:`skltr._gpu.rankboost` (the CUDA source and its launch functions). The host
reads one ``(feature, bin, q_def, r)`` a round. Imported only when a GPU is asked for: it
imports CuPy.
"""

from __future__ import annotations

import cupy
import numpy as np

from .._cpu.rankboost import PI_SHIFT
from .._engine.rounds import binning_seed
from .._gpu import rankboost as cuda
from .._gpu._profile import StageTimer
from .._gpu.binning import fit_bin_mapper
from .._gpu.binned import DeviceBinned
from . import boosting

__all__ = ["GPURoundKernels", "boost"]


class GPURoundKernels:
    """The round kernels of :func:`skltr._rankboost.boosting.boost` on the current GPU.

    The methods and their meaning are those of
    :class:`skltr._rankboost.kernels_cpu.CPURoundKernels`; the binned matrices, scores,
    potentials and histogram stay on the device. The training rows' bins are kept
    feature-major (``XT``, 4 features a 32-bit word: coalesced reads in the histogram and
    the update); eval sets stay row-major. Stage times are CUDA event times (no
    synchronisation added to the loop).
    """

    def __init__(self, X, eval_Xs, params):
        self.mapper = fit_bin_mapper(X, params.n_thresholds, binning_seed(params.seed),
                                     params.n_jobs)
        data = DeviceBinned.from_mapper(X, self.mapper)
        self.mapper.set_has_missing(data.has_missing)
        self.n, self.n_features = data.n_samples, data.n_features
        self.n_bins, self.missing_bin = data.n_bins, data.missing_bin
        self.n_bins_total = data.n_bins_total
        n_words = -(-self.n_features // 4)
        # one transposed copy, then the row-major matrix is freed (one byte a value kept)
        self.XT = cupy.ascontiguousarray(data.X_words[:, :n_words].T)
        del data
        self.evals = [DeviceBinned.from_mapper(Xe, self.mapper).X_bytes for Xe in eval_Xs]
        self.fpb = cuda.features_per_block(self.n_bins_total, self.n_features)
        self._timer = StageTimer()
        self.stage = self._timer.stage

    def start(self, y, group_ptr, log_c, order):
        """Send the fixed per-row and per-query arrays; zero the scores; find each feature's
        most frequent bin (the histogram's skipped bin)."""
        n, F = self.n, self.n_features
        self.y = cupy.asarray(y, cupy.float64)
        self.group_ptr = cupy.asarray(group_ptr, cupy.int64)
        self.n_queries = int(group_ptr.size - 1)
        self.log_c = cupy.asarray(log_c, cupy.float64)
        self.row_log_c = cupy.asarray(np.repeat(log_c, np.diff(group_ptr)), cupy.float64)
        self.order = cupy.asarray(order, cupy.int64)
        self.H = cupy.zeros(n, cupy.float64)
        self.log_a, self.log_b = cupy.empty(n), cupy.empty(n)
        self.log_pairs = cupy.empty(max(self.n_queries, 1))
        self.log_z = cupy.zeros(1)
        self.total = cupy.zeros(1, cupy.uint64)  # sum of pi, for the skipped bins
        self.hist = cupy.zeros((F, self.n_bins_total), cupy.int64)
        m = max(F, 1)  # per feature: |r|, r, bin, q_def of its best threshold
        self.f_abs, self.f_r = cupy.empty(m, cupy.int64), cupy.empty(m, cupy.int64)
        self.f_b, self.f_q = cupy.empty(m, cupy.int32), cupy.empty(m, cupy.int32)
        self.best = cupy.empty(4, cupy.int64)
        self.eval_scores_ = [cupy.zeros(Xe.shape[0]) for Xe in self.evals]
        # row counts per bin: the histogram of pi = 1 with nothing skipped
        self.skip_bin = cupy.full(m, -1, cupy.int32)
        self.pi = cupy.ones(n, cupy.int64)
        self._build_histogram()
        if F:
            self.skip_bin = cupy.argmax(self.hist, axis=1).astype(cupy.int32)

    def potentials(self):
        """``pi`` (fixed point) from the current scores, and their sum."""
        cuda.pair_log_sums(self.fpb, self.H, self.y, self.order, self.group_ptr,
                           self.n_queries, self.log_a, self.log_b, self.log_pairs)
        cuda.potentials(self.fpb, self.H, self.log_a, self.log_b, self.log_c, self.log_pairs,
                        self.row_log_c, self.n_queries, self.log_z, self.pi, self.total)

    def _build_histogram(self):
        self.hist.fill(0)
        if self.n == 0 or self.n_features == 0:
            return
        cuda.build_histogram(self.fpb, self.XT, self.n, self.n_features, self.n_bins_total,
                             self.pi, self.skip_bin, self.hist)

    def histogram(self):
        """``hist[f, b]``: the fixed-point sum of ``pi`` over the rows in bin ``b``."""
        self._build_histogram()
        if self.n and self.n_features:
            cuda.fill_skipped_bins(self.fpb, self.hist, self.skip_bin, self.n_features,
                                   self.n_bins_total, self.total)

    def best_stump(self):
        """``(feature, bin, q_def, r)`` of largest ``|r|`` (one 32-byte read)."""
        cuda.best_stump(self.fpb, self.hist, self.n_bins, self.n_features, self.n_bins_total,
                        self.missing_bin, self.f_abs, self.f_r, self.f_b, self.f_q, self.best)
        f, b, q_def, r = (int(v) for v in self.best.get())
        return f, b, q_def, r / 2.0 ** PI_SHIFT

    def _add(self, X, n, row_stride, word_stride, scores, f, b, q_def, alpha):
        if n:
            cuda.add_stump(self.fpb, X, n, row_stride, word_stride, f, b, q_def,
                           self.missing_bin, alpha, scores)

    def add_stump(self, f, b, q_def, alpha):
        """Training scores ``H += alpha * h``."""
        self._add(self.XT, self.n, 4, 4 * self.n, self.H, f, b, q_def, alpha)

    def eval_scores(self, f, b, q_def, alpha):
        """Add the stump to every eval set's scores; their host copies."""
        out = []
        for Xe, s in zip(self.evals, self.eval_scores_):
            self._add(Xe, Xe.shape[0], Xe.shape[1], 4, s, f, b, q_def, alpha)
            out.append(s.get())
        return out

    def stage_seconds(self):
        """Seconds of GPU time per stage, summed over the rounds (synchronises once)."""
        return self._timer.summary()


def boost(X, y, group_ptr, sample_weight, params, eval_sets=(), device_index=0):
    """:func:`skltr._rankboost.boosting.boost` on GPU ``device_index`` (same parameters)."""
    with cupy.cuda.Device(int(device_index)):
        return boosting.boost(X, y, group_ptr, sample_weight, params, eval_sets,
                              kernels=GPURoundKernels)
