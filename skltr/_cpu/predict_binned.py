"""numba kernel: add one grown tree's leaf values to scores, routing rows of a binned matrix.

Used by the boosting loop for rows the tree was not grown on (a query subsample) and for
eval sets binned with the training ``BinMapper``. Node ``n`` sends a row left when its bin
``b`` of ``feature[n]`` satisfies ``b <= bin_threshold[n]``, or, for the missing bin, when
``default_left[n]``; ``left[n] < 0`` marks a leaf. A categorical node (``cat_bits`` given and
``bin_threshold[n] < 0``) sends the bins whose bit is set in ``cat_bits[n]`` left.
"""

from numba import njit, prange


@njit(parallel=True, cache=True)
def add_tree_binned(X_binned, feature, bin_threshold, default_left, left, right, value,
                    missing_bin, cat_bits, scores):
    """``scores[i] += value[leaf(i)]`` for every row ``i`` of ``X_binned``.

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_samples, n_features)
    feature, bin_threshold, left, right : ndarray of int32, shape (n_nodes,)
    default_left : ndarray of bool, shape (n_nodes,)
    value : ndarray of float64, shape (n_nodes,)
    missing_bin : int
    cat_bits : ndarray of uint64, shape (n_nodes, 4), or None
        Left bins of categorical nodes; None when the tree has none.
    scores : ndarray of float64, shape (n_samples,)
    """
    for i in prange(X_binned.shape[0]):
        n = 0
        while left[n] >= 0:
            b = X_binned[i, feature[n]]
            if cat_bits is not None and bin_threshold[n] < 0:
                go_left = (cat_bits[n, b >> 6] >> (b & 63)) & 1 == 1
            elif b == missing_bin:
                go_left = default_left[n]
            else:
                go_left = b <= bin_threshold[n]
            n = left[n] if go_left else right[n]
        scores[i] += value[n]
