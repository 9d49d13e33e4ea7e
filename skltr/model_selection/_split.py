"""Query-aware splitters: every query lands whole in one fold.

``QueryKFold`` requests ``qid`` as metadata for ``split``, so under scikit-learn's metadata
routing ``GridSearchCV(..., cv=QueryKFold()).fit(X, y, qid=qid)`` splits by query with no
``groups=`` argument. Without routing, pass the same ids as ``groups=``.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import BaseCrossValidator
from sklearn.utils import check_random_state
from sklearn.utils.validation import indexable

from ..utils._qid import group_by_qid

__all__ = ["QueryKFold", "train_test_split_by_query"]


def _resolve_qid(X, qid, groups):
    if qid is None and groups is None:
        raise ValueError(
            "QueryKFold needs the query id of every row: pass qid=... (routed automatically "
            "with sklearn.set_config(enable_metadata_routing=True)) or groups=qid."
        )
    if qid is not None and groups is not None:
        if not np.array_equal(np.asarray(qid), np.asarray(groups)):
            raise ValueError("qid and groups were both given and differ; pass only one.")
    return group_by_qid(qid if qid is not None else groups, len(X))


class QueryKFold(BaseCrossValidator):
    """K-fold cross-validation that keeps each query's rows together.

    Queries (not rows) are dealt to folds; with ``shuffle=False`` in sorted-qid order,
    balancing the number of rows per fold greedily like :class:`sklearn.model_selection.GroupKFold`.
    Test indices of each fold come back in ascending row order.

    Parameters
    ----------
    n_splits : int, default=5
    shuffle : bool, default=False
        Shuffle queries before dealing them to folds (then folds hold about the same number
        of queries).
    random_state : int, RandomState instance or None
        Seed of the shuffle; only used when ``shuffle=True``.

    Examples
    --------
    >>> import numpy as np
    >>> qid = np.array([0, 0, 1, 1, 1, 2, 3, 3])
    >>> X = np.zeros((8, 1))
    >>> [test.tolist() for _, test in QueryKFold(2).split(X, qid=qid)]
    [[2, 3, 4, 5], [0, 1, 6, 7]]
    """

    __metadata_request__split = {"qid": True}

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None):
        if not isinstance(n_splits, numbers.Integral) or n_splits < 2:
            raise ValueError(f"n_splits must be an integer >= 2; got {n_splits!r}.")
        if not isinstance(shuffle, bool):
            raise TypeError(f"shuffle must be True or False; got {shuffle!r}.")
        if not shuffle and random_state is not None:
            raise ValueError(
                "random_state only has an effect with shuffle=True; set shuffle=True or leave "
                "random_state=None."
            )
        self.n_splits = int(n_splits)
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None, qid=None):
        return self.n_splits

    def split(self, X, y=None, groups=None, qid=None):
        """Yield ``(train_index, test_index)`` with whole queries in each test fold."""
        X, y = indexable(X, y)
        grouping = _resolve_qid(X, qid, groups)
        n_queries = grouping.n_queries
        if n_queries < self.n_splits:
            raise ValueError(
                f"Cannot make {self.n_splits} folds from {n_queries} queries; use "
                f"n_splits <= {n_queries}."
            )
        sizes = grouping.sizes
        if self.shuffle:
            perm = check_random_state(self.random_state).permutation(n_queries)
            fold_of_query = np.empty(n_queries, dtype=np.int64)
            fold_of_query[perm] = np.arange(n_queries) % self.n_splits
        else:
            # Largest queries first, each to the currently lightest fold (as GroupKFold).
            fold_rows = np.zeros(self.n_splits, dtype=np.int64)
            fold_of_query = np.empty(n_queries, dtype=np.int64)
            for q in np.argsort(-sizes, kind="stable"):
                f = int(np.argmin(fold_rows))
                fold_of_query[q] = f
                fold_rows[f] += sizes[q]
        fold_of_row = fold_of_query[grouping.codes]
        for f in range(self.n_splits):
            test = np.flatnonzero(fold_of_row == f)
            train = np.flatnonzero(fold_of_row != f)
            yield train, test

    def _iter_test_masks(self, X=None, y=None, groups=None):  # pragma: no cover - split overrides
        raise NotImplementedError


def train_test_split_by_query(*arrays, qid, test_size=0.25, random_state=None, shuffle=True):
    """Split arrays into train and test parts with whole queries on each side.

    Parameters
    ----------
    *arrays : sequence of indexables with the same length
        X, y, sample weights, ... (qid itself is split and returned last in each pair).
    qid : array-like of shape (n_samples,)
    test_size : float in (0, 1) or int, default=0.25
        Fraction or number of *queries* in the test part.
    random_state : int, RandomState instance or None
    shuffle : bool, default=True
        With ``shuffle=False`` the last queries in sorted-qid order form the test part.

    Returns
    -------
    list
        ``[a_train, a_test for a in arrays] + [qid_train, qid_test]``, rows in their original
        relative order.

    Examples
    --------
    >>> import numpy as np
    >>> X, qid = np.arange(6).reshape(6, 1), np.array([0, 0, 1, 1, 2, 2])
    >>> X_tr, X_te, q_tr, q_te = train_test_split_by_query(X, qid=qid, test_size=1,
    ...                                                    shuffle=False)
    >>> q_te.tolist()
    [2, 2]
    """
    from sklearn.utils import _safe_indexing  # noqa: PLC0415

    qid_arr = np.asarray(qid)
    if arrays:
        arrays = indexable(*arrays)
    grouping = group_by_qid(qid_arr, len(arrays[0]) if arrays else len(qid_arr))
    n_queries = grouping.n_queries
    if isinstance(test_size, numbers.Integral):
        n_test = int(test_size)
    elif isinstance(test_size, numbers.Real) and 0 < test_size < 1:
        n_test = int(np.ceil(test_size * n_queries))
    else:
        raise ValueError(f"test_size must be a float in (0, 1) or an int; got {test_size!r}.")
    if not 1 <= n_test < n_queries:
        raise ValueError(
            f"test_size={test_size!r} gives {n_test} test queries out of {n_queries}; both "
            f"parts need at least one query."
        )
    if shuffle:
        test_queries = check_random_state(random_state).permutation(n_queries)[:n_test]
    else:
        test_queries = np.arange(n_queries - n_test, n_queries)
    is_test_query = np.zeros(n_queries, dtype=bool)
    is_test_query[test_queries] = True
    test_mask = is_test_query[grouping.codes]
    train_idx, test_idx = np.flatnonzero(~test_mask), np.flatnonzero(test_mask)
    out = []
    for a in (*arrays, qid_arr):
        out.extend((_safe_indexing(a, train_idx), _safe_indexing(a, test_idx)))
    return out
