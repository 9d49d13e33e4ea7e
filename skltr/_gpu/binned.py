"""A binned matrix on the GPU and its bin layout (made once per data set, read by every
GPU learner: the GBDT grower and score updates, RankBoost's rounds)."""

from __future__ import annotations

import cupy
import numpy as np

from .binning import category_columns_to_device, map_to_bins, wide_columns_to_device

__all__ = ["DeviceBinned"]


class DeviceBinned:
    """A binned matrix on the GPU and its bin layout (made once per data set).

    ``X_wide`` (uint16, shape (n_samples, n_wide)) holds the codes of the wide categorical
    features and ``wide_of`` (int32 per feature) each one's column of it, or -1
    (:mod:`skltr._engine.wide_categorical`).

    Parameters
    ----------
    X_bytes : cupy.ndarray of uint8, shape (n_samples, stride)
        From :func:`skltr._gpu.binning.map_to_bins` (rows padded to whole 32-bit words).
    n_features : int
    n_bins : ndarray of int32, shape (n_features,)
    missing_bin : int
    """

    def __init__(self, X_bytes, n_features, n_bins, missing_bin):
        self.X_bytes = X_bytes
        self.X_words = X_bytes.view(cupy.uint32)
        self.n_samples = X_bytes.shape[0]
        self.n_features = int(n_features)
        self.n_bins_host = np.ascontiguousarray(n_bins, np.int32)
        self.n_bins = cupy.asarray(self.n_bins_host)
        self.missing_bin = int(missing_bin)
        self.n_bins_total = self.missing_bin + 1
        # no wide categorical features (from_mapper sets them): codes of no columns
        self.X_wide = cupy.zeros((self.n_samples, 0), cupy.uint16)
        self.wide_of = cupy.full(self.n_features, -1, cupy.int32)
        self.wide_features, self.wide_n_bins = np.zeros(0, np.int64), np.zeros(0, np.int32)

    @classmethod
    def from_mapper(cls, X, mapper):
        """Bin ``X`` (host or CuPy) on the GPU with a fitted ``BinMapper``'s cuts.

        ``self.has_missing`` (host bool per feature) says which features had a NaN,
        ``self.has_inf`` whether some value was +inf or -inf (one read of both).
        """
        n_features = X.shape[1]
        flags = cupy.zeros(n_features + 1, cupy.int32)  # NaN per feature, then inf
        out = cls(map_to_bins(X, mapper.cut_ptr, mapper.cut_values, mapper.missing_bin,
                              flags[:max(n_features, 1)], flags[n_features:]),
                  n_features, mapper.n_bins, mapper.missing_bin)
        category_columns_to_device(X, mapper, out.X_bytes)
        if mapper.wide.size:  # their codes, and each feature's column of them or -1
            out.X_wide = wide_columns_to_device(X, mapper)
            wide_of = np.full(n_features, -1, np.int32)
            wide_of[mapper.wide] = np.arange(mapper.wide.size)
            out.wide_of = cupy.asarray(wide_of)
        out.wide_features, out.wide_n_bins = mapper.wide, mapper.wide_n_bins
        host = flags.get()
        out.has_missing = host[:n_features].astype(bool)
        out.has_inf = bool(host[n_features])
        return out
