"""``BinMapper``: count-balanced cut points per feature and the uint8 bin codes of a matrix.

Cut points come from a row sample (deterministic for a seed). A feature with ``k <= max_bins``
distinct finite values gets ``k`` bins cut at the midpoints of consecutive values (as
LightGBM and scikit-learn do). Otherwise the bins balance sample counts over the runs of
equal values, as LightGBM's greedy binning does: a value holding at least ``1 / max_bins`` of
the sample (the zero of a sparse feature, say) gets a bin of its own, and the other values
share the remaining bins about equally (each bin closes once it holds the remaining light
samples over the remaining bins, or half that before a heavy value). Equal-step quantiles,
which this module used before, collapse on such ties: a feature that is 78% zeros got 59 of
its 255 bins, one that is 98% zeros 6 (make_ranking's sparse features; a quarter of its
136). A constant (or all-NaN) column has one bin and is never split. NaN goes to the bin
``missing_bin == max_bins``.

Cuts are found by ``np.sort`` of the transposed sample (one row per feature) and a numba
kernel parallel over features (``skltr._cpu.binning.find_cuts``: distinct values, then
midpoints or the count-balanced sweep, integer tests only), identical to the numpy reference
``tests/naive_gbdt.naive_feature_cuts``. ``fit`` on 494k x 136 make_ranking float32 rows
(200k-row sample, 255 bins), 2 shared cores under load, interleaved runs: 6.8-7.1 s with a
per-feature numpy loop, 2.0-2.9 s with the kernel.

The cut values double as split thresholds: "bin <= b goes left" is exactly the raw test
``x <= cut_values[cut_ptr[f] + b]`` (``docs/gbdt_internals.rst``).

``fit`` is also public in steps, for fits whose rows are not one host array and that must
still get its cuts bit for bit: :meth:`BinMapper.sample_rows` (which rows to gather for a
seed), :meth:`BinMapper.fit_sample` (cuts from the gathered rows: the Dask driver), or
:meth:`BinMapper.set_cuts` (cuts found elsewhere by the same rule: the GPU), then
:meth:`BinMapper.set_has_missing` (NaN flags found elsewhere: the GPU's binning kernel, an
all-reduce over Dask workers).

A scipy CSR or CSC matrix is binned as the dense matrix with 0.0 in every absent entry, bin
for bin, without a dense copy: the cut sample's rows are taken as a sparse matrix, and each
feature's sorted column is its stored values sorted with the absent zeros put in
(``find_cuts_csc``); ``transform`` starts every row at the bins of 0.0 and bins the stored
entries (``map_to_bins_csr``). CSC input is converted to CSR once for ``transform``.

Categorical features (``categorical``: their indices) are binned by category, not by value:
their bins are the categories of the cut sample by decreasing count (ties: the smaller code
first), at most ``max_bins`` of them; NaN, the rarer categories and every category not in the
sample share the missing bin (LightGBM's "other" bin), which a categorical split always sends
right (``skltr._cpu.split_categorical``). Their values must be whole numbers in
``[0, 2**31 - 1)`` or NaN (:func:`check_categorical_values`; LightGBM's range). Feature ``f``'s
categories are ``cat_values[cat_ptr[j]:cat_ptr[j + 1]]`` in bin order (``j`` its position
among the categorical features); it has no cuts.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._dtypes import WIDE_CODE_DTYPE, X_BINNED_DTYPE
from .._cpu.binning import (find_cuts, find_cuts_csc, map_to_bins, map_to_bins_csr,
                            nan_columns, transpose)
from ..trees._sparse_input import as_csr, check_sparse, is_sparse
from ..utils._threads import numba_threads, resolve_n_jobs

__all__ = ["BinMapper", "check_categorical_values", "has_nan_columns", "sorted_sample_cuts",
           "transposed"]

#: Categorical values are below this (LightGBM reads them as int32).
MAX_CATEGORY = 2 ** 31 - 1
#: A category seen in fewer sample rows than this ends a feature's codes (LightGBM's
#: ``min_data_in_bin`` default), after its two most frequent categories.
MIN_CATEGORY_ROWS = 3
#: Most categories a feature keeps: codes and the missing code fit uint16.
MAX_WIDE_CATEGORIES = 2 ** 16 - 2

#: Matrices of fewer values than this are transposed and searched for NaN columns by NumPy on
#: one thread, in blocks of rows (a few milliseconds: 80k x 136 float32 rows take 3-10 ms),
#: instead of by the parallel kernels ``transpose`` and ``nan_columns``: a first run would
#: spend 0.4-0.6 s of CPU compiling each of them (issue #28, ``benchmarks/cold_start.py``),
#: far more than they save on such a matrix. The results are the same either way.
SMALL_PASS_VALUES = 1 << 24

#: Rows per block of those NumPy passes (the transposed block stays in cache).
_BLOCK_ROWS = 256


def transposed(a, n_threads=None):
    """``np.ascontiguousarray(a.T)`` of a C-contiguous 2-D ``a``: in numba threads
    (``transpose``) from ``SMALL_PASS_VALUES`` values, below in NumPy blocks of rows."""
    out = np.empty(a.shape[::-1], a.dtype)
    if a.size >= SMALL_PASS_VALUES:
        with numba_threads(n_threads):
            transpose(a, out)
    else:
        for r in range(0, a.shape[0], _BLOCK_ROWS):
            out[:, r:r + _BLOCK_ROWS] = a[r:r + _BLOCK_ROWS].T
    return out


def has_nan_columns(X, n_threads=None):
    """``np.isnan(X).any(axis=0)`` of a dense 2-D float ``X``, without an ``X``-sized mask:
    in numba threads (``nan_columns``) from ``SMALL_PASS_VALUES`` values, below in NumPy
    blocks of rows."""
    out = np.zeros(X.shape[1], dtype=bool)
    if X.size >= SMALL_PASS_VALUES:
        with numba_threads(n_threads):  # a serial pass idled the other cores
            nan_columns(X, out)
    else:
        for r in range(0, X.shape[0], 16 * _BLOCK_ROWS):
            out |= np.isnan(X[r:r + 16 * _BLOCK_ROWS]).any(axis=0)
    return out


class BinMapper:
    """Count-balanced binning of features into uint8 codes, NaN in a separate missing bin.

    Parameters
    ----------
    max_bins : int, default=255
        Non-missing bins per feature, 2..255. Bin ``max_bins`` holds NaN, so codes fit uint8.
    subsample : int or None, default=200_000
        Rows sampled (without replacement) to find the cuts; None uses every row.
    random_state : int, numpy Generator or None
        Seed of the row sample.
    n_threads : int or None
        Threads of :meth:`transform` (``n_jobs`` semantics); None uses all numba threads.
    categorical : sequence of int or None
        Indices of the categorical features (binned by category; see the module docstring).

    Attributes
    ----------
    cut_ptr : ndarray of int64, shape (n_features + 1,)
        Feature ``f``'s cuts are ``cut_values[cut_ptr[f]:cut_ptr[f+1]]``.
    cut_values : ndarray of float64
        Upper edges of every bin but the last of each feature (increasing, finite).
    n_bins : ndarray of int32, shape (n_features,)
        Non-missing bins of each feature (``len(cuts) + 1``); 1 means never split.
    missing_bin : int
        Code of NaN (``max_bins``).
    has_missing : ndarray of bool, shape (n_features,)
        Whether the feature had NaN in the data given to :meth:`fit` (or as set by
        :meth:`set_has_missing`).
    cat_ptr : ndarray of int64, shape (n_categorical + 1,)
    cat_values : ndarray of float64
        The categories of each categorical feature, in bin order (set with the cuts).

    Examples
    --------
    >>> import numpy as np
    >>> from skltr._engine.binning import BinMapper
    >>> X = np.array([[0.0], [1.0], [1.0], [np.nan], [3.0]])
    >>> bm = BinMapper(max_bins=4).fit(X)
    >>> bm.cut_values
    array([0.5, 2. ])
    >>> bm.transform(X).ravel()
    array([0, 1, 1, 4, 2], dtype=uint8)
    """

    def __init__(self, max_bins=255, subsample=200_000, random_state=None, n_threads=None,
                 categorical=None):
        self.max_bins = max_bins
        self.subsample = subsample
        self.random_state = random_state
        self.n_threads = n_threads
        self.categorical = categorical

    def categorical_indices(self):
        """The categorical features' indices (int64; empty for none)."""
        return np.zeros(0, np.int64) if self.categorical is None else np.asarray(
            self.categorical, dtype=np.int64)

    def _check_X(self, X):
        # float32 and float64 values are read as they are, others as float64; a CSR / CSC
        # matrix stays sparse (its stored values converted the same way)
        if is_sparse(X):
            X = check_sparse(X)
        else:
            X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}.")
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        return X

    def fit(self, X):
        """Find the cut values of every feature from (a row sample of) ``X``.

        ``X`` is a dense array or a scipy CSR / CSC matrix (absent entries are 0.0).
        """
        X = self._fit_cuts(X)
        if is_sparse(X):  # a stored NaN is the only missing value of a sparse matrix
            csr = as_csr(X)
            nan = np.isnan(csr.data)
            self.has_missing = np.bincount(csr.indices[nan], minlength=X.shape[1]) > 0
        else:
            self.has_missing = has_nan_columns(X, self.n_threads)
        return self

    def _fit_cuts(self, X):
        # fit without has_missing; returns the checked X
        self._check_max_bins()
        X = self._check_X(X)
        idx = self.sample_rows(X.shape[0])
        self._cuts_from_sample(X if idx is None else X[idx])
        return X

    # ---- the fit in steps, for rows that are not in one host array ------------------------
    # fit(X) is sample_rows -> gather -> fit_sample -> has_missing. A fit whose rows live
    # elsewhere takes the same steps and gets the same cuts: the Dask driver gathers the
    # sample rows from the workers and calls fit_sample, and each worker sets has_missing
    # from an all-reduce; the GPU fit (skltr._gpu.binning.fit_bin_mapper) gathers and sorts
    # the sample on the device, runs find_cuts' rule there and calls set_cuts.
    def sample_rows(self, n_rows):
        """Row indices of the cut sample of a matrix of ``n_rows`` rows (what :meth:`fit` draws).

        Parameters
        ----------
        n_rows : int
            Rows of the whole training matrix.

        Returns
        -------
        ndarray of int64 or None
            Sorted row positions, ``subsample`` of them drawn without replacement, the same
            for the same ``random_state``; None when every row is in the sample (``n_rows <=
            subsample``, or ``subsample=None``). Gather them (``X[rows]``, or all of ``X``)
            and pass them to :meth:`fit_sample`.

        Raises
        ------
        ValueError
            ``max_bins`` outside [2, 255], or ``n_rows`` is 0.
        """
        self._check_max_bins()
        n = self._check_n_rows(n_rows)
        if self.subsample is not None and n > self.subsample:
            rng = np.random.default_rng(self.random_state)
            return np.sort(rng.choice(n, size=int(self.subsample), replace=False))
        return None

    def fit_sample(self, sample):
        """Find the cuts from the rows :meth:`sample_rows` picked, already gathered.

        Parameters
        ----------
        sample : ndarray or scipy CSR / CSC matrix, shape (n_sample_rows, n_features)
            ``X[sample_rows(len(X))]`` (or ``X`` itself when that is None), in the row order
            of the indices: the cuts are then those of :meth:`fit` on ``X``, bit for bit.

        Returns
        -------
        self
            With the cut attributes set; ``has_missing`` is not (the sample does not see
            every NaN): set it with :meth:`set_has_missing`.
        """
        self._check_max_bins()
        self._cuts_from_sample(self._check_X(sample))
        return self

    def set_cuts(self, cuts, n_cuts):
        """Set cuts found elsewhere with this mapper's rule (the GPU's ``column_cuts``).

        Parameters
        ----------
        cuts : ndarray of float64, shape (n_features, max_bins - 1)
            Feature ``f``'s cuts are ``cuts[f, :n_cuts[f]]``, increasing and finite (the rest
            of the row is ignored): the layout ``skltr._cpu.binning.find_cuts`` fills.
        n_cuts : ndarray of int, shape (n_features,)
            Each in ``[0, max_bins - 1]``.

        Returns
        -------
        self
            With the cut attributes set; ``has_missing`` is not: :meth:`set_has_missing`.
        """
        self._check_max_bins()
        cuts = np.asarray(cuts)
        n_cuts = np.asarray(n_cuts)
        mb = int(self.max_bins)
        if (cuts.ndim != 2 or cuts.shape[1] != mb - 1 or n_cuts.shape != cuts.shape[:1]
                or (n_cuts.size and not 0 <= n_cuts.min() <= n_cuts.max() <= mb - 1)):
            raise ValueError(
                f"cuts must have shape (n_features, max_bins - 1 = {mb - 1}) and n_cuts shape "
                f"(n_features,) with values in [0, {mb - 1}]; got cuts of shape {cuts.shape} "
                f"and n_cuts of shape {n_cuts.shape}.")
        self._store_cuts(cuts, n_cuts)
        return self

    def set_has_missing(self, has_missing):
        """Set which features have NaN in the training rows (after the cuts).

        A fit that saw only a sample, or only some of the rows (a Dask worker: the
        all-reduced maximum of every worker's flags), sets it here; :meth:`fit` finds it.

        Parameters
        ----------
        has_missing : array-like of bool, shape (n_features,)

        Returns
        -------
        self
        """
        if not hasattr(self, "cut_ptr"):
            raise ValueError("This BinMapper has no cuts yet; set them first.")
        has_missing = np.asarray(has_missing, dtype=bool)
        if has_missing.shape != (self.n_features_in_,):
            raise ValueError(f"has_missing must have shape ({self.n_features_in_},); got "
                             f"{has_missing.shape}.")
        self.has_missing = has_missing
        return self

    # ---- the steps' kernels ---------------------------------------------------------------
    def _cuts_from_sample(self, sample):
        # sample: checked by _check_X
        if is_sparse(sample):
            self._set_cuts_sparse(sample)
        else:
            self._store_cuts(*sorted_sample_cuts(self._sorted_columns(sample), self.max_bins,
                                                 self.n_threads))
        self.fit_categories(sample)

    def fit_categories(self, sample):
        """Find the categorical features' categories from the cut sample (after the cuts).

        :meth:`fit` and :meth:`fit_sample` call it; a fit that set its cuts with
        :meth:`set_cuts` (the GPU's) calls it with the gathered sample rows (only the
        categorical columns are read).

        Parameters
        ----------
        sample : ndarray or scipy CSR / CSC matrix, shape (n_sample_rows, n_features)

        Returns
        -------
        self

        Raises
        ------
        ValueError
            A categorical value that is negative, not a whole number or too large.
        """
        return self.fit_category_columns([_column(sample, f)
                                          for f in self.categorical_indices()])

    def fit_category_columns(self, columns):
        """:meth:`fit_categories` from the sample's categorical columns alone (1-D arrays,
        in the order of ``categorical``): what a fit that holds X elsewhere gathers."""
        cat = self.categorical_indices()
        values, ptr = [], [0]
        for f, col in zip(cat, columns):
            col = np.asarray(col, dtype=np.float64)
            check_categorical_values(col, f)
            nan = np.isnan(col)
            codes, counts = np.unique(col[~nan], return_counts=True)
            _warn_if_sparse_codes(codes, f)
            keep = kept_categories(counts, bool(nan.any()), int(self.max_bins))
            values.append(codes[keep].astype(np.float64))
            ptr.append(ptr[-1] + keep.size)
        self.cat_values = (np.concatenate(values) if values else np.zeros(0, np.float64))
        self.cat_ptr = np.asarray(ptr, dtype=np.int64)
        n_cats = np.diff(self.cat_ptr)
        wide = n_cats > int(self.max_bins)
        self.wide = cat[wide]
        self.wide_n_bins = n_cats[wide].astype(np.int32)
        if cat.size:
            # a wide feature's byte column is all missing (its codes: transform_wide)
            self.n_bins[cat] = np.where(wide, 1, np.maximum(n_cats, 1)).astype(np.int32)
        return self

    def _sorted_columns(self, sample):
        """One sorted row per feature of the dense ``sample``, NaN last.

        NumPy's SIMD sort of the transposed sample in its own dtype (float32 -> float64 keeps
        the order), blocks of features sorted in ``n_threads`` threads (the sort releases
        the GIL): the same array as one ``np.sort(..., axis=1)``. The transpose too runs in
        threads (``transpose``) when the sample is in C order and large
        (:func:`transposed`).
        """
        if sample.flags.c_contiguous:  # (a row gather always is)
            columns = transposed(sample, self.n_threads)
        else:
            columns = np.ascontiguousarray(sample.T)
            if np.may_share_memory(columns, sample):  # F order: a view; sorted in place
                columns = columns.copy()              # below, so never the caller's
        n_threads = min(resolve_n_jobs(self.n_threads), columns.shape[0])
        if n_threads <= 1:
            columns.sort(axis=1)
            return columns
        bounds = np.linspace(0, columns.shape[0], n_threads + 1).astype(np.int64)
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(lambda ab: columns[ab[0]:ab[1]].sort(axis=1),
                          zip(bounds[:-1], bounds[1:])))
        return columns

    def _set_cuts_sparse(self, sample):
        """The cuts of a sparse sample (absent entries 0.0), column by column."""
        csc = sample.tocsc()
        mb = int(self.max_bins)
        n_features = csc.shape[1]
        cuts = np.empty((n_features, mb - 1), dtype=np.float64)
        n_cuts = np.zeros(n_features, dtype=np.int64)
        with numba_threads(self.n_threads):
            find_cuts_csc(csc.indptr, csc.data, csc.shape[0], mb, cuts, n_cuts)
        self._store_cuts(cuts, n_cuts)

    def _check_max_bins(self):
        mb = self.max_bins
        if isinstance(mb, bool) or not isinstance(mb, (int, np.integer)) or not 2 <= mb <= 255:
            raise ValueError(
                f"max_bins must be an integer in [2, 255]; got {mb!r}. Bin codes are uint8 "
                f"and code max_bins holds missing values, so 255 is the largest."
            )

    @staticmethod
    def _check_n_rows(n):
        if n == 0:
            raise ValueError("X has 0 rows; BinMapper needs at least one row to fit.")
        return n

    def _store_cuts(self, cuts, n_cuts):
        """Set the fitted attributes from ``find_cuts``' output (``cuts[f, :n_cuts[f]]``)."""
        mb = int(self.max_bins)
        n_features = cuts.shape[0]
        cat = self.categorical_indices()
        if cat.size:
            if cat.min() < 0 or cat.max() >= n_features:
                raise ValueError(f"categorical feature index out of range for {n_features} "
                                 f"features: {cat.tolist()}.")
            n_cuts = np.array(n_cuts, copy=True)
            n_cuts[cat] = 0  # binned by category
        self.cut_ptr = np.zeros(n_features + 1, dtype=np.int64)
        self.cut_ptr[1:] = np.cumsum(n_cuts)
        self.cut_values = np.ascontiguousarray(cuts[np.arange(mb - 1) < n_cuts[:, None]],
                                               dtype=np.float64)
        self.n_bins = (np.diff(self.cut_ptr) + 1).astype(np.int32)
        self.missing_bin = mb
        self.n_features_in_ = n_features
        self.wide = np.zeros(0, np.int64)  # fit_categories sets them
        self.wide_n_bins = np.zeros(0, np.int32)

    def transform(self, X):
        """Bin codes of ``X``: C-contiguous uint8 of shape (n_samples, n_features).

        A CSR / CSC ``X`` gets the codes of its dense form (absent entries 0.0).
        """
        if not hasattr(self, "cut_ptr"):
            raise ValueError("This BinMapper is not fitted yet; call fit(X) first.")
        X = self._check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features but the BinMapper was fitted with "
                f"{self.n_features_in_}."
            )
        out = np.empty(X.shape, dtype=X_BINNED_DTYPE)
        with numba_threads(self.n_threads):
            if is_sparse(X):
                X = as_csr(X)
                map_to_bins_csr(X.indptr, X.indices, X.data, self.cut_ptr, self.cut_values,
                                self.missing_bin, out)
            else:
                map_to_bins(X, self.cut_ptr, self.cut_values, self.missing_bin, out)
        for j, f in enumerate(self.categorical_indices()):
            out[:, f] = self.category_bins(_column(X, f), j, f)
        return out

    def transform_wide(self, X):
        """The codes of the wide categorical features (more categories than ``max_bins``):
        C-contiguous uint16 of shape (n_samples, len(wide)); a category's code is its place
        in ``cat_values`` and code ``wide_n_bins[w]`` is feature ``wide[w]``'s missing code
        (NaN, categories without a code). Shape (n_samples, 0) without wide features."""
        if not hasattr(self, "cut_ptr"):
            raise ValueError("This BinMapper is not fitted yet; call fit(X) first.")
        X = self._check_X(X)
        out = np.empty((X.shape[0], self.wide.size), dtype=WIDE_CODE_DTYPE)
        position = {int(f): j for j, f in enumerate(self.categorical_indices())}
        for w, f in enumerate(self.wide):
            out[:, w] = self.category_bins(_column(X, f), position[int(f)], int(f),
                                           missing=int(self.wide_n_bins[w]))
        return out

    def category_bins(self, col, j, f, missing=None):
        """The bins of the values ``col`` of categorical feature ``f`` (the ``j``-th): a
        category's bin, or ``missing`` (None: the missing bin; uint16 codes otherwise) for
        NaN and categories without one. A wide feature's byte bins (``missing`` None) are
        all the missing bin: its codes are :meth:`transform_wide`'s."""
        col = np.asarray(col, dtype=np.float64)
        check_categorical_values(col, f)
        if missing is None and f in self.wide:
            return np.full(col.shape, self.missing_bin, X_BINNED_DTYPE)
        dtype = X_BINNED_DTYPE if missing is None else WIDE_CODE_DTYPE
        missing = self.missing_bin if missing is None else missing
        cats = self.cat_values[self.cat_ptr[j]:self.cat_ptr[j + 1]]
        if cats.size == 0:
            return np.full(col.shape, missing, dtype)
        by_code = np.argsort(cats)
        sorted_cats = cats[by_code]
        pos = np.minimum(np.searchsorted(sorted_cats, col), cats.size - 1)
        return np.where(sorted_cats[pos] == col, by_code[pos], missing).astype(dtype)

    def fit_transform(self, X):
        """``fit(X).transform(X)``."""
        return self.fit(X).transform(X)


def kept_categories(counts, has_nan, max_bins):
    """Which categories of a feature get a code: indices into ``counts`` (the sample
    counts of its categories in increasing code order), in bin order (decreasing count).

    LightGBM's rule (``BinMapper::FindBin``, ``bin.cpp``, its ``max_bin`` being
    ``max_bins``): categories by decreasing count (ties: the smaller category first) while
    they cover less than 99% of the non-missing sample or fewer than ``min(max_bins,
    n_categories + has_nan) - 1`` are kept, stopping at the first category of fewer than
    :data:`MIN_CATEGORY_ROWS` sample rows after the second; at most
    :data:`MAX_WIDE_CATEGORIES`. More than ``max_bins`` make a wide feature (uint16 codes).
    """
    order = np.argsort(-counts, kind="stable")
    total = int(counts.sum())
    if total == 0:
        return order[:0]
    cut = int(np.float32(total) * np.float32(0.99) + np.float32(0.5))
    unconditional = min(max_bins, counts.size + int(has_nan)) - 1
    used = np.concatenate([[0], np.cumsum(counts[order])[:-1]])
    i = np.arange(order.size)
    go_on = (used < cut) | (i < unconditional)
    rare = (counts[order] < MIN_CATEGORY_ROWS) & (i > 1)
    stop = np.flatnonzero(~go_on | rare)
    n = int(stop[0]) if stop.size else order.size
    return order[:min(n, MAX_WIDE_CATEGORIES)]


def check_categorical_values(col, feature):
    """Raise ValueError unless every value of the categorical column ``col`` (feature number
    ``feature``) is NaN or a whole number in ``[0, 2**31 - 1)``."""
    col = np.asarray(col)
    if col.dtype.kind in "iu":
        bad = (col < 0) | (col >= MAX_CATEGORY)
    else:
        with np.errstate(invalid="ignore"):
            bad = ~np.isnan(col) & ((col < 0) | (col >= MAX_CATEGORY) | (col != np.floor(col)))
    if np.any(bad):
        value = col[np.flatnonzero(bad)[0]].item()
        raise ValueError(
            f"categorical feature {feature} has the value {value!r}; categories must be whole "
            f"numbers in [0, {MAX_CATEGORY}) (NaN for missing). Encode the column's "
            f"categories as 0, 1, 2, ... (e.g. pandas' category dtype, or "
            f"sklearn.preprocessing.OrdinalEncoder), or leave it out of categorical_features.")


#: LightGBM's SPARSE_RATIO: codes this many times beyond their count are called sparse
_SPARSE_CODES_RATIO = 100


def _warn_if_sparse_codes(codes, f):
    """Warn, as LightGBM does, when a categorical feature's codes are far larger than their
    count (ids rather than codes): every categorical split of it stores a bitset as long as
    its largest left code (a code near 2**31 takes 256 MB a node)."""
    if codes.size and codes[-1] / _SPARSE_CODES_RATIO > codes.size:
        warnings.warn(
            f"categorical feature {f} has {codes.size} categories with codes up to "
            f"{int(codes[-1])}: each of its categorical splits stores a bitset up to its "
            f"largest code ({int(codes[-1]) // 8 + 1} bytes at most). Renumber the categories "
            f"0, 1, 2, ... (e.g. pandas' category dtype, or "
            f"sklearn.preprocessing.OrdinalEncoder).", UserWarning, stacklevel=2)


def _column(X, f):
    """Column ``f`` of a dense or sparse ``X`` as a dense 1-D array (absent entries 0.0)."""
    if is_sparse(X):
        return np.asarray(X[:, [int(f)]].toarray()).ravel()
    return X[:, f]


def sorted_sample_cuts(sorted_columns, max_bins, n_threads=None):
    """The cut rule on a dense sample sorted per feature (``find_cuts``, in numba threads).

    Parameters
    ----------
    sorted_columns : ndarray of float32 or float64, shape (n_features, n_sample_rows)
        One row per feature, ascending, NaN last.
    max_bins : int
    n_threads : int or None
        ``n_jobs`` semantics.

    Returns
    -------
    cuts : ndarray of float64, shape (n_features, max_bins - 1)
    n_cuts : ndarray of int64, shape (n_features,)
        What :meth:`BinMapper.set_cuts` takes.
    """
    mb = int(max_bins)
    n_features = sorted_columns.shape[0]
    cuts = np.empty((n_features, mb - 1), dtype=np.float64)
    n_cuts = np.zeros(n_features, dtype=np.int64)
    with numba_threads(n_threads):
        find_cuts(sorted_columns, mb, cuts, n_cuts)
    return cuts, n_cuts
