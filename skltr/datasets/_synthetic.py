"""Synthetic learning-to-rank data shaped like web-search sets (MSLR-WEB30K, Yahoo! LTR).

How one call builds its data
----------------------------
Every document gets a standard-normal *latent* value ``u`` per feature. Relevance is a
non-linear function of the latent values of the informative features only; the features the
caller sees are monotone-but-lossy transforms of the latent values, some of them shifted by a
per-query offset first::

    u (n_docs, n_features) ~ N(0, 1)            [independent columns]
      |                         \\
      | + query offset a[q, j]   \\  g = smooth(u_inf) + trees(u_inf)   [non-linear, interactions]
      |   (some columns only)     \\ s = g + noise + d[q]               [d[q]: per-query threshold]
      v                            v
    x = T_j(u + a)               y = grade of s against global cut points (skewed to 0);
      |                              3 % of queries get no relevant document at all
      |
      + NaN at random (nan_fraction), after y is fixed

The transforms ``T_j`` give the columns the mixed character of real features: continuous
(affine), bounded in (0, 1) (sigmoid, like normalised LETOR features), log-normal, integer
counts (floor of a log-normal: many 0/1/2, a heavy tail), low-cardinality (binary flags and
small integers) and sparse (exactly zero below a high per-column quantile, heavy-tailed
positive above it). Because of the query offsets, raw values of those columns are comparable
only within a query -- as with term-frequency features of real queries.

Generation runs over fixed blocks of rows, each with its own random stream derived from the
seed, so no float64 temporary of the full matrix is ever made and the result does not depend
on the number of threads.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numpy as np
from scipy.special import ndtri
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_params
from threadpoolctl import threadpool_limits

from .._dtypes import Y_DTYPE
from ..utils._qid import group_sizes_to_qid
from ..utils._threads import resolve_n_jobs

__all__ = ["make_ranking"]

# Rows per generation block. Part of the definition of the output for a seed: changing it
# changes the arrays a seed produces, so it is a constant, not a parameter. 8192 x 136 float32
# is 4.5 MB, which keeps the block's temporaries cache-friendly.
_BLOCK_ROWS = 8192

# Column kinds.
_CONTINUOUS, _BOUNDED, _LOGNORMAL, _COUNT, _LOWCARD, _SPARSE = range(6)
# Share of each kind among the non-sparse columns.
_DENSE_KIND_P = {
    _CONTINUOUS: 0.25,
    _BOUNDED: 0.20,
    _LOGNORMAL: 0.20,
    _COUNT: 0.20,
    _LOWCARD: 0.15,
}
# Share of columns carrying a per-query offset, and the offsets' spread (latent units).
_SHIFTED_FRACTION = 0.4
_SHIFT_STD = (0.3, 1.0)
# Label model: unit-variance signal g, plus noise, plus the per-query threshold offset.
_LABEL_NOISE_STD = 0.5
_QUERY_OFFSET_STD = 0.6
# Share of queries with no relevant document at all ("no good result exists"); in real
# web-search sets a few percent of queries are all-zero.
_DEAD_QUERY_RATE = 0.03
# Grade k has probability proportional to _GRADE_DECAY**k (5 grades: 52/26/13/6/3 %;
# MSLR-WEB30K has about 51/32/13/2/1 %).
_GRADE_DECAY = 0.5
# Spread of query sizes around docs_per_query (sigma of a log-normal with that mean).
_QUERY_SIZE_SIGMA = 0.5


#: weight of the categorical columns' effects in the relevance signal (when there are any)
_CATEGORICAL_WEIGHT = 0.6


def _categorical_columns(X, n_features, levels, entropy):
    """Fill ``X``'s columns after ``n_features`` with category codes (one stream a column,
    so the numeric columns are untouched); returns the sum of their effects per row."""
    effect = np.zeros(X.shape[0])
    for j, n_levels in enumerate(levels):
        rng = _block_rng(entropy, 3, j)
        freq = 1.0 / np.arange(1, n_levels + 1) ** 1.1
        code_of_rank = rng.permutation(n_levels)
        codes = code_of_rank[rng.choice(n_levels, size=X.shape[0], p=freq / freq.sum())]
        X[:, n_features + j] = codes
        effect += rng.standard_normal(n_levels)[codes]
    return effect


def _block_rng(entropy, *key):
    """Independent stream for one purpose/block, identified by ``key`` (SeedSequence spawn key)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=key)))


def _query_sizes(docs_per_query, n_queries, rng):
    if isinstance(docs_per_query, tuple):
        low, high = docs_per_query
        return rng.integers(low, high + 1, size=n_queries).astype(np.int64)
    z = rng.standard_normal(n_queries)
    sizes = np.rint(
        docs_per_query * np.exp(_QUERY_SIZE_SIGMA * z - 0.5 * _QUERY_SIZE_SIGMA**2)
    )
    return np.maximum(sizes, 1).astype(np.int64)


class _Spec:
    """Everything drawn once per call: column kinds and parameters, the label function."""

    def __init__(self, n_features, n_informative, n_queries, sparse_fraction, rng):
        f32 = np.float32
        n_sparse = int(round(sparse_fraction * n_features))
        kinds_dense = rng.choice(
            list(_DENSE_KIND_P), size=n_features - n_sparse, p=list(_DENSE_KIND_P.values())
        )
        kinds = rng.permutation(np.concatenate([kinds_dense, np.full(n_sparse, _SPARSE)]))
        # Internal column order groups kinds so each kind is one slice of a block;
        # `position[j]` is where output column j lives internally.
        internal_to_output = np.argsort(kinds, kind="stable")
        self.position = np.empty(n_features, dtype=np.intp)
        self.position[internal_to_output] = np.arange(n_features)
        k_sorted = kinds[internal_to_output]
        self.slices = {
            k: slice(int(np.searchsorted(k_sorted, k, "left")),
                     int(np.searchsorted(k_sorted, k, "right")))
            for k in range(6)
        }
        n_of = {k: s.stop - s.start for k, s in self.slices.items()}

        def u(lo, hi, k):
            return rng.uniform(lo, hi, n_of[k]).astype(f32)

        self.cont = (
            np.exp(u(-1.0, 3.0, _CONTINUOUS)), rng.normal(0, 5, n_of[_CONTINUOUS]).astype(f32)
        )
        self.bounded = (u(0.5, 2.0, _BOUNDED), u(-2.0, 2.0, _BOUNDED))
        self.logn = (u(0.5, 2.0, _LOGNORMAL), u(-2.0, 4.0, _LOGNORMAL))
        self.count = (u(0.8, 2.0, _COUNT), u(-0.5, 2.5, _COUNT))
        # Low cardinality: 2..5 levels; cut points at random latent quantiles, +inf if unused.
        n_lc = n_of[_LOWCARD]
        levels = rng.integers(2, 6, size=n_lc)
        cuts = np.sort(rng.normal(0.0, 0.8, size=(4, n_lc)), axis=0)
        cuts[np.arange(4)[:, None] >= (levels - 1)[None, :]] = np.inf
        self.lowcard_cuts = cuts.astype(f32)
        # Sparse: zero below the zero_rate quantile of the latent value.
        zero_rate = rng.uniform(0.75, 0.99, n_of[_SPARSE])
        self.sparse = (
            ndtri(zero_rate).astype(f32), u(0.3, 1.5, _SPARSE), np.exp(u(-2.0, 2.0, _SPARSE))
        )

        # Per-query offsets on a subset of columns (internal order; zero where unshifted).
        shifted = rng.random(n_features) < _SHIFTED_FRACTION
        std = np.where(shifted, rng.uniform(*_SHIFT_STD, n_features), 0.0)
        # Stored feature-major, (n_features, n_queries), to match the blocks.
        offsets = rng.standard_normal((n_queries, n_features)) * std
        self.query_offset = np.ascontiguousarray(offsets.T, dtype=f32)
        self.any_shift = bool(shifted.any())

        # Label function on the informative columns (internal positions).
        self.n_informative = n_informative
        informative = np.sort(rng.choice(n_features, n_informative, replace=False))
        self.inf_pos = self.position[informative]
        m = n_informative
        if m:
            # (a) one sigmoid per informative feature: every one of them matters.
            uni = (rng.uniform(0.5, 2.0, m), rng.normal(0, 0.5, m), rng.normal(0, 1, m))
            self.uni = tuple(p.astype(f32) for p in uni)
            # (b) sigmoids of random projections on 2-3 features: smooth interactions.
            n_proj = m
            proj = np.zeros((m, n_proj))
            for p in range(n_proj):
                members = rng.choice(m, size=min(m, int(rng.integers(2, 4))), replace=False)
                proj[members, p] = rng.normal(0, 1, members.size)
            self.proj = tuple(
                p.astype(f32) for p in (proj, rng.normal(0, 0.5, n_proj), rng.normal(0, 1, n_proj))
            )
            # (c) random oblivious trees: thresholds and AND-interactions.
            n_trees, depth = max(1, m // 2), min(3, m)
            self.tree_feat = np.array(
                [rng.choice(m, depth, replace=False) for _ in range(n_trees)]
            )
            self.tree_thr = rng.normal(0, 0.7, (n_trees, depth)).astype(f32)
            self.tree_leaf = rng.normal(0, 1, (n_trees, 2**depth))

    def latent_parts(self, u_inf):
        """Smooth part and tree part of the relevance signal for a block of rows.

        ``u_inf`` is (n_rows, n_informative) float32; float32 tanh is several times faster
        than float64 and the parts are summed into float64 arrays by the caller.
        """
        a, b, w = self.uni
        smooth = np.tanh(a * (u_inf - b)) @ w
        proj, c, w2 = self.proj
        smooth += np.tanh(u_inf @ proj + c) @ w2
        tree = np.zeros(u_inf.shape[0])
        for feat, thr, leaf in zip(self.tree_feat, self.tree_thr, self.tree_leaf):
            idx = np.zeros(u_inf.shape[0], dtype=np.intp)
            for level in range(feat.size):
                idx |= (u_inf[:, feat[level]] > thr[level]).astype(np.intp) << level
            tree += leaf[idx]
        return smooth, tree

    def transform(self, v):
        """Turn latent values into features, in place.

        ``v`` is one block in *feature-major* internal order, shape (n_features, n_rows): each
        kind is a contiguous run of rows of ``v``, so every ufunc below runs over contiguous
        memory with a per-feature parameter broadcast down the rows.
        """
        s = self.slices
        scale, loc = self.cont
        x = v[s[_CONTINUOUS]]
        x *= scale[:, None]
        x += loc[:, None]
        a, b = self.bounded
        x = v[s[_BOUNDED]]
        x *= -a[:, None]
        x -= b[:, None]
        np.exp(x, out=x)
        x += 1
        np.reciprocal(x, out=x)
        sig, mu = self.logn
        x = v[s[_LOGNORMAL]]
        x *= sig[:, None]
        x += mu[:, None]
        np.exp(x, out=x)
        sig, mu = self.count
        x = v[s[_COUNT]]
        x *= sig[:, None]
        x += mu[:, None]
        np.exp(x, out=x)
        np.floor(x, out=x)
        x = v[s[_LOWCARD]]
        if x.shape[0]:
            cuts = self.lowcard_cuts[:, :, None]
            level = (x > cuts[0]).astype(np.float32)
            for cut in cuts[1:]:
                level += x > cut
            x[...] = level
        cut, sig, scale = self.sparse
        x = v[s[_SPARSE]]
        if x.shape[0]:
            x -= cut[:, None]
            nonzero = x > 0
            x *= sig[:, None]
            np.exp(x, out=x)
            x *= scale[:, None]
            x *= nonzero


@validate_params(
    {
        "n_queries": [Interval(Integral, 1, None, closed="left")],
        "docs_per_query": [Interval(Integral, 1, None, closed="left"), tuple],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_informative": [Interval(Integral, 0, None, closed="left")],
        "label_levels": [Interval(Integral, 2, None, closed="left")],
        "nan_fraction": [Interval(Real, 0, 1, closed="left")],
        "sparse_fraction": [Interval(Real, 0, 1, closed="both")],
        "dtype": "no_validation",
        "random_state": ["random_state"],
        "return_query_sizes": ["boolean"],
        "n_jobs": [Integral, None],
        "categorical_levels": [tuple, list],
    },
    prefer_skip_nested_validation=True,
)
def make_ranking(
    n_queries=1000,
    docs_per_query=100,
    n_features=136,
    n_informative=20,
    *,
    label_levels=5,
    nan_fraction=0.0,
    sparse_fraction=0.3,
    dtype=np.float32,
    random_state=None,
    return_query_sizes=False,
    n_jobs=None,
    categorical_levels=(),
):
    """Generate a synthetic learning-to-rank problem shaped like web-search data.

    Documents come in queries of varying size. Features have the mixed character of real
    LETOR features (continuous, bounded, heavy-tailed, integer counts, low-cardinality flags,
    mostly-zero sparse columns), some of them shifted per query so that their raw values are
    comparable only within a query. Relevance grades are skewed towards 0 and depend
    non-linearly (sigmoids of random projections and random shallow trees, i.e. thresholds
    and interactions) on ``n_informative`` of the features, plus noise; grades are cut per
    query against a per-query latent threshold, so the share of relevant documents varies
    from query to query, and about 3 % of the queries have no relevant document at all.

    Parameters
    ----------
    n_queries : int, default=1000
        Number of queries.
    docs_per_query : int or tuple of (int, int), default=100
        An int is the mean query size: sizes are drawn from a log-normal around it (sigma
        0.5) and rounded, at least 1. A tuple ``(low, high)`` draws sizes uniformly from
        ``low..high`` inclusive; ``(k, k)`` makes every query exactly ``k`` documents.
    n_features : int, default=136
        Number of features (MSLR-WEB30K has 136).
    n_informative : int, default=20
        Number of features the relevance depends on (chosen at random). The others are
        noise with the same mix of marginal distributions. 0 gives pure-noise labels.
    label_levels : int, default=5
        Number of relevance grades; ``y`` takes values ``0 .. label_levels - 1``. Grade
        ``k`` has overall probability proportional to ``0.5 ** k``.
    nan_fraction : float in [0, 1), default=0.0
        Fraction of the values of ``X`` replaced by NaN, completely at random, after the
        labels are computed.
    sparse_fraction : float in [0, 1], default=0.3
        Fraction of the columns that are sparse: each is exactly zero for most documents (a
        per-column rate drawn from 75-99 %, which varies between queries where the column
        also carries a query offset) and heavy-tailed positive otherwise.
    dtype : {np.float32, np.float64}, default=np.float32
        dtype of ``X``. float32 halves memory (10M x 136 is 5.4 GB instead of 10.9 GB) and is
        what GBDT libraries bin from anyway. Values are always computed in float32, so
        ``dtype=np.float64`` returns the same numbers widened, with the same ``y``.
    random_state : int, RandomState instance or None, default=None
        Seed. It goes through :func:`sklearn.utils.check_random_state`; four 32-bit words
        drawn from that ``RandomState`` seed a :class:`numpy.random.SeedSequence`, from which
        every block of rows gets its own PCG64 :class:`numpy.random.Generator` stream. An int
        therefore gives identical arrays on every call, for any ``n_jobs``.
    categorical_levels : sequence of int, default=()
        One categorical column per entry, appended after the ``n_features`` numeric ones:
        integer codes ``0 .. L - 1`` (as floats) of ``L`` categories drawn with Zipf-like
        frequencies (1 / rank**1.1; the codes are not in frequency order), each category with
        a random effect on relevance, so the column matters but not in code order (an
        ordinal reading of it is a poor one). The numeric columns are the same as without
        them; the labels then also depend on the categories.
    return_query_sizes : bool, default=False
        Also return the number of documents of each query.
    n_jobs : int or None, default=None
        Threads that generate blocks of rows (NumPy releases the GIL in its random generators
        and ufuncs). None means all of numba's threads (normally all cores), -1 all cores,
        as everywhere in skltr. It never changes the result.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features + len(categorical_levels)), dtype ``dtype``
        Features; rows are grouped by query.
    y : ndarray of float64, shape (n_samples,)
        Integral relevance grades in ``0 .. label_levels - 1``.
    qid : ndarray of int64, shape (n_samples,)
        Query id of each row: ``0 .. n_queries - 1``, sorted and contiguous.
    query_sizes : ndarray of int64, shape (n_queries,)
        Only when ``return_query_sizes=True``: documents per query (``np.bincount(qid)``).

    Notes
    -----
    Generation works on blocks of 8192 rows with per-block temporaries only, so memory is the
    output plus a few 1-D float64 arrays of length ``n_samples`` (10M x 136 float32: 5.4 GB
    for ``X``, 6.1 GB peak). Cost is about 3.2 s of CPU per million rows of 136 features
    (a 2.4 GHz EPYC core; 45 % of it is NumPy's normal generator), split over ``n_jobs``
    threads: 10M rows took 31 s on one free core.

    Examples
    --------
    >>> from skltr.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=20, docs_per_query=30, n_features=10,
    ...                          n_informative=4, random_state=0)
    >>> X.shape[1], X.dtype, y.dtype, qid.dtype
    (10, dtype('float32'), dtype('float64'), dtype('int64'))
    >>> X.shape[0] == y.shape[0] == qid.shape[0]
    True
    >>> sorted(set(y.tolist())) <= [0.0, 1.0, 2.0, 3.0, 4.0]
    True
    >>> bool((qid[1:] >= qid[:-1]).all()), int(qid.max())
    (True, 19)
    """
    if isinstance(docs_per_query, tuple):
        ok = (
            len(docs_per_query) == 2
            and all(isinstance(v, Integral) and not isinstance(v, bool) for v in docs_per_query)
            and 1 <= docs_per_query[0] <= docs_per_query[1]
        )
        if not ok:
            raise ValueError(
                f"docs_per_query as a tuple must be (low, high) integers with "
                f"1 <= low <= high; got {docs_per_query!r}."
            )
        docs_per_query = (int(docs_per_query[0]), int(docs_per_query[1]))
    if n_informative > n_features:
        raise ValueError(
            f"n_informative={n_informative} is larger than n_features={n_features}; "
            f"the informative features are a subset of the features."
        )
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        dtype = None
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be np.float32 or np.float64; got {dtype!r}.")
    levels = [int(v) for v in categorical_levels if isinstance(v, Integral)
              and not isinstance(v, bool) and 2 <= v <= 1 << 24]
    if len(levels) != len(categorical_levels):
        raise ValueError(f"categorical_levels holds the number of categories of each "
                         f"categorical column: integers from 2 to 2**24; got "
                         f"{categorical_levels!r}.")
    n_jobs = resolve_n_jobs(n_jobs)

    rs = check_random_state(random_state)
    entropy = [int(w) for w in rs.randint(0, 2**32, size=4, dtype=np.uint64)]
    setup_rng = _block_rng(entropy, 0)

    sizes = _query_sizes(docs_per_query, n_queries, setup_rng)
    qid = group_sizes_to_qid(sizes)
    n_samples = int(qid.shape[0])
    spec = _Spec(n_features, n_informative, n_queries, sparse_fraction, setup_rng)

    X = np.empty((n_samples, n_features + len(levels)), dtype=dtype)
    smooth = np.zeros(n_samples)
    tree = np.zeros(n_samples)
    noise = np.empty(n_samples)
    nan_fraction32 = np.float32(nan_fraction)

    def block(b):
        r0 = b * _BLOCK_ROWS
        r1 = min(n_samples, r0 + _BLOCK_ROWS)
        rng = _block_rng(entropy, 1, b)
        # Feature-major block (n_features, rows), internal column order.
        v = rng.standard_normal((n_features, r1 - r0), dtype=np.float32)
        noise[r0:r1] = rng.standard_normal(r1 - r0)
        if spec.n_informative:
            smooth[r0:r1], tree[r0:r1] = spec.latent_parts(
                np.ascontiguousarray(v[spec.inf_pos].T)
            )
        if spec.any_shift:
            q, start = np.unique(qid[r0:r1], return_index=True)
            runs = np.diff(np.append(start, r1 - r0))
            v += np.repeat(spec.query_offset[:, q], runs, axis=1)
        spec.transform(v)
        if nan_fraction > 0:
            np.putmask(v, rng.random(v.shape, dtype=np.float32) < nan_fraction32, np.nan)
        # Back to row-major output order, 8 features at a time: a cache-friendly transpose
        # (3x faster than one whole-block transposed copy).
        out = X[r0:r1, :n_features]
        for j in range(0, n_features, 8):
            out[:, j:j + 8] = v[spec.position[j:j + 8]].T

    n_blocks = -(-n_samples // _BLOCK_ROWS)
    # The per-block matrix products are tiny; threaded BLAS only spins (it doubled CPU time
    # and halved throughput in measurements), so blocks are the unit of parallelism.
    with threadpool_limits(limits=1, user_api="blas"):
        if n_jobs == 1 or n_blocks == 1:
            for b in range(n_blocks):
                block(b)
        else:
            with ThreadPoolExecutor(max_workers=n_jobs) as pool:
                for _ in pool.map(block, range(n_blocks)):
                    pass

    categorical = _categorical_columns(X, n_features, levels, entropy)

    # Relevance: standardised signal + noise + per-query threshold offset, cut at global
    # quantiles so the grades follow the skewed target distribution.
    signal = np.zeros(n_samples)
    if n_informative or levels:
        parts = ((smooth, 0.6), (tree, 0.4)) if n_informative else ()
        for part, weight in parts + ((categorical, _CATEGORICAL_WEIGHT),):
            sd = part.std()
            if sd > 0:
                signal += weight * (part - part.mean()) / sd
        sd = signal.std()
        if sd > 0:
            signal /= sd
    label_rng = _block_rng(entropy, 2)
    query_offset = label_rng.normal(0, _QUERY_OFFSET_STD, n_queries)
    dead = label_rng.random(n_queries) < _DEAD_QUERY_RATE
    latent = signal
    latent += _LABEL_NOISE_STD * noise
    latent += query_offset[qid]
    p = _GRADE_DECAY ** np.arange(label_levels)
    cum = np.cumsum(p / p.sum())[:-1]
    cuts = np.quantile(latent, cum) if n_samples else np.zeros(label_levels - 1)
    latent[dead[qid]] = -np.inf
    y = np.searchsorted(cuts, latent, side="left").astype(Y_DTYPE)

    if return_query_sizes:
        return X, y, qid, sizes
    return X, y, qid
