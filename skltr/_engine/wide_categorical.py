"""Wide categorical features: more categories than a byte of bins holds.

LightGBM keeps every category of a feature that covers the first 99% of the sample
(``skltr._engine.binning.kept_categories``), which on real data with ids or long-tailed
categories is thousands. skltr's byte matrix holds ``max_bins`` (at most 255) bins a feature,
so such a feature (``BinMapper.wide``) gets ``uint16`` codes in a second matrix
(``BinMapper.transform_wide``) and its byte column is left all missing. Its histogram takes
extra rows of each node's histogram array, after the features' rows, code ``c`` of wide
feature ``w`` at row ``row0[w] + c // B``, bin ``c % B`` (``B`` the array's bins a row, pad
bins included), its missing code last::

    hist   | feature 0 | ... | feature F-1 | wide 0 (rows row0[0] ..) | wide 1 | ...

so that everything which treats a node's histogram as one array -- the pool, the subtraction
trick, the distributed all-reduce -- carries them unchanged; the numeric kernels are given the
features' rows alone (``hist[:n_features]``), the categorical split search a wide feature's
rows as one long row (:meth:`WideCategorical.view`). Its splits' left sets are bitsets of
``words(n_bins)`` uint64 words, read by the partition and the binned scoring with its column.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._dtypes import WIDE_CODE_DTYPE

__all__ = ["WideCategorical", "NARROW_WORDS", "words"]

#: uint64 words of a byte feature's categorical left set (256 bins)
NARROW_WORDS = 4


def words(n_bins) -> int:
    """uint64 words of a left set over ``n_bins`` codes and the missing code."""
    return max(NARROW_WORDS, (int(n_bins) + 64) // 64)


class WideCategorical(NamedTuple):
    """A fit's wide categorical features and their place in the node histograms.

    Attributes
    ----------
    features : ndarray of int64, shape (n_wide,)
        Their feature numbers, increasing (``BinMapper.wide``).
    n_bins : ndarray of int32, shape (n_wide,)
        Their codes (categories); code ``n_bins[w]`` is missing.
    X : ndarray of uint16, shape (n_samples, n_wide), C order, or None
        The codes (``BinMapper.transform_wide``); None in a layout alone (the GPU's codes
        are on the device: ``DeviceBinned.X_wide``).
    X_T : ndarray of uint16, shape (n_wide, n_samples), C order, or None
        Their columns, read by the partition.
    row0 : ndarray of int64, shape (n_wide,)
        Histogram row of each one's code 0 (``>= n_features``).
    n_rows : ndarray of int64, shape (n_wide,)
        Histogram rows of each.
    offsets : ndarray of int64, shape (n_wide,)
        Record (bin) index of each one's code 0 in ``hist[n_features:]``, counting
        records across its rows.
    """

    features: np.ndarray
    n_bins: np.ndarray
    X: np.ndarray
    X_T: np.ndarray
    row0: np.ndarray
    n_rows: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, mapper, X, n_bins_total):
        """The record of a fitted ``BinMapper``'s wide features and their codes in ``X``
        (the rows to grow on), for histograms of ``n_bins_total`` bins a row; None without
        wide features."""
        if mapper.wide.size == 0:
            return None
        X = np.ascontiguousarray(mapper.transform_wide(X), dtype=WIDE_CODE_DTYPE)
        layout = cls.layout(mapper.n_features_in_, mapper.wide, mapper.wide_n_bins,
                            n_bins_total)
        return layout._replace(X=X, X_T=np.ascontiguousarray(X.T))

    @classmethod
    def layout(cls, n_features, features, n_bins, n_bins_total):
        """The record without codes: where the wide ``features`` (of ``n_bins`` codes
        each) go in histograms of ``n_features`` features and ``n_bins_total`` bins a row;
        None without any."""
        if len(features) == 0:
            return None
        n_bins = np.asarray(n_bins, np.int32)
        n_rows = -(-(n_bins.astype(np.int64) + 1) // int(n_bins_total))
        row0 = int(n_features) + np.concatenate([[0], np.cumsum(n_rows)[:-1]])
        offsets = (row0 - int(n_features)) * int(n_bins_total)
        return cls(np.asarray(features, np.int64), n_bins, None, None,
                   row0.astype(np.int64), n_rows.astype(np.int64), offsets.astype(np.int64))

    @property
    def hist_rows(self) -> int:
        """Histogram rows of all of them."""
        return int(self.n_rows.sum())

    def view(self, hist, w, first_row=0):
        """Wide feature ``w``'s histogram rows as one row: shape (1, codes + padding, k);
        ``hist`` holds the histogram's rows from ``first_row`` on."""
        r0, r = int(self.row0[w]) - first_row, int(self.n_rows[w])
        return hist[r0:r0 + r].reshape(1, r * hist.shape[1], hist.shape[2])

    def index(self, feature) -> int:
        """Position of ``feature`` among them, or -1 (a scan of the few wide features: the
        growers ask this at every split, where ``np.flatnonzero`` cost ~5 us)."""
        feature = int(feature)
        for w, f in enumerate(self.features.tolist()):
            if f == feature:
                return w
        return -1
