"""BinMapper and the map_to_bins kernel against tests/naive_gbdt.py."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_gbdt import naive_feature_cuts, naive_transform
from skltr._engine.binning import BinMapper


def check_against_naive(bm, X):
    got = bm.transform(X)
    assert got.dtype == np.uint8 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, naive_transform(X, bm.cut_ptr, bm.cut_values,
                                                       bm.missing_bin))
    return got


def test_low_cardinality_midpoints():
    X = np.array([[3.0, 1.0], [1.0, 1.0], [2.0, 1.0], [1.0, 1.0], [np.nan, 1.0]])
    bm = BinMapper(max_bins=3).fit(X)
    np.testing.assert_array_equal(bm.cut_ptr, [0, 2, 2])
    np.testing.assert_array_equal(bm.cut_values, [1.5, 2.5])
    np.testing.assert_array_equal(bm.n_bins, [3, 1])
    np.testing.assert_array_equal(bm.has_missing, [True, False])
    assert bm.missing_bin == 3
    Xb = check_against_naive(bm, X)
    np.testing.assert_array_equal(Xb[:, 0], [2, 0, 1, 0, 3])
    np.testing.assert_array_equal(Xb[:, 1], 0)  # constant column: one bin


def test_values_on_cuts_go_to_lower_bin_and_inf_to_the_ends():
    bm = BinMapper(max_bins=4).fit(np.array([[0.0], [1.0], [2.0]]))
    X = np.array([[0.5], [1.5], [-np.inf], [np.inf], [np.nextafter(0.5, 1)], [np.nan]])
    np.testing.assert_array_equal(check_against_naive(bm, X).ravel(), [0, 1, 0, 2, 1, 4])


def test_adjacent_doubles_keep_distinct_bins():
    a = 1.0
    b = np.nextafter(a, 2.0)
    bm = BinMapper(max_bins=4).fit(np.array([[a], [b]]))
    np.testing.assert_array_equal(bm.transform(np.array([[a], [b]])).ravel(), [0, 1])


def test_all_nan_and_constant_columns_get_one_bin():
    X = np.column_stack([np.full(10, np.nan), np.full(10, 7.0), np.arange(10.0)])
    bm = BinMapper(max_bins=4).fit(X)
    np.testing.assert_array_equal(bm.n_bins, [1, 1, 4])
    Xb = check_against_naive(bm, X)
    np.testing.assert_array_equal(Xb[:, 0], 4)
    np.testing.assert_array_equal(Xb[:, 1], 0)


def test_count_balanced_bins_are_balanced_and_capped():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 2))
    X[:, 1] = np.round(X[:, 1] * 3)  # ~20 distinct values: one bin each at max_bins=32
    bm = BinMapper(max_bins=32, random_state=0).fit(X)
    assert bm.n_bins[0] == 32
    assert bm.n_bins[1] == np.unique(X[:, 1]).size
    Xb = check_against_naive(bm, X)
    counts = np.bincount(Xb[:, 0], minlength=32)
    assert counts.min() > 5000 / 32 * 0.5 and counts.max() < 5000 / 32 * 1.5
    assert np.all(np.diff(bm.cut_values[bm.cut_ptr[0]:bm.cut_ptr[1]]) > 0)


def test_a_heavy_value_gets_its_own_bin_and_the_rest_share_the_others():
    # A sparse feature (80% zeros) and one with a 10% spike inside its range: the heavy
    # value sits alone in its bin and the light values still get (about) every other bin,
    # balanced; equal-step quantiles would give the zeros 80% of the steps (~13 of 64 bins).
    rng = np.random.default_rng(3)
    n, max_bins = 20000, 64
    sparse = np.where(rng.random(n) < 0.8, 0.0, rng.exponential(size=n))
    spike = np.where(rng.random(n) < 0.1, 0.25, rng.normal(size=n))
    X = np.column_stack([sparse, spike])
    bm = BinMapper(max_bins=max_bins, subsample=None).fit(X)
    _assert_cuts_equal_naive(bm, X)
    Xb = bm.transform(X)
    for f, heavy in ((0, 0.0), (1, 0.25)):
        assert bm.n_bins[f] >= max_bins - 2
        b = Xb[X[:, f] == heavy, f]
        assert np.all(b == b[0])  # the heavy value is one bin, which holds at most the
        counts = np.bincount(Xb[:, f], minlength=bm.n_bins[f])  # less than half a bin of
        target = (n - b.size) / (bm.n_bins[f] - 1)  # light values before it
        assert 0 <= counts[b[0]] - b.size < 0.5 * target + 1
        light = np.delete(counts, b[0])
        assert light.min() > 0.5 * target and light.max() < 1.6 * target


def test_subsample_is_deterministic_for_a_seed():
    X = np.random.default_rng(1).exponential(size=(3000, 3))
    a = BinMapper(max_bins=16, subsample=500, random_state=3).fit(X)
    b = BinMapper(max_bins=16, subsample=500, random_state=3).fit(X)
    np.testing.assert_array_equal(a.cut_values, b.cut_values)
    c = BinMapper(max_bins=16, subsample=500, random_state=4).fit(X)
    assert not np.array_equal(a.cut_values, c.cut_values)


def test_float32_input_and_thread_count_do_not_matter():
    X = np.random.default_rng(2).normal(size=(2000, 5)).astype(np.float32)
    X[::7, 2] = np.nan
    bm = BinMapper(max_bins=63, n_threads=1).fit(X)
    one = bm.transform(X)
    bm.n_threads = 2
    np.testing.assert_array_equal(one, bm.transform(X))
    np.testing.assert_array_equal(one, bm.transform(X.astype(np.float64)))
    np.testing.assert_array_equal(one, bm.transform(np.asfortranarray(X)))


@pytest.mark.parametrize("max_bins", [1, 256, 0, 2.5, True])
def test_max_bins_out_of_range_raises(max_bins):
    with pytest.raises(ValueError, match="max_bins"):
        BinMapper(max_bins=max_bins).fit(np.zeros((3, 1)))


def test_errors():
    with pytest.raises(ValueError, match="not fitted"):
        BinMapper().transform(np.zeros((2, 2)))
    bm = BinMapper().fit(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="3 features"):
        bm.transform(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="2-D"):
        BinMapper().fit(np.zeros(3))


@settings(max_examples=40)
@given(data=st.data())
def test_random_matrices_match_naive(data):
    n = data.draw(st.integers(1, 40))
    n_features = data.draw(st.integers(1, 3))
    max_bins = data.draw(st.integers(2, 12))
    values = st.one_of(st.floats(-5, 5, allow_nan=False), st.sampled_from([0.0, 1.0, np.nan]))
    X = np.array(data.draw(st.lists(values, min_size=n * n_features, max_size=n * n_features)),
                 dtype=np.float64).reshape(n, n_features)
    bm = BinMapper(max_bins=max_bins).fit(X)
    assert np.all(bm.n_bins <= max_bins) and np.all(bm.n_bins >= 1)
    Xb = check_against_naive(bm, X)
    for f in range(n_features):
        finite = ~np.isnan(X[:, f])
        # bins follow the order of values and every distinct value <= max_bins keeps its own
        order = np.argsort(X[finite, f], kind="stable")
        assert np.all(np.diff(Xb[finite, f][order].astype(int)) >= 0)
        k = np.unique(X[finite, f]).size
        if 0 < k <= max_bins:
            assert bm.n_bins[f] == k
    np.testing.assert_array_equal(bm.has_missing, np.isnan(X).any(axis=0))


def _assert_cuts_equal_naive(bm, X):
    for f in range(X.shape[1]):
        want = naive_feature_cuts(X[:, f], bm.max_bins)
        got = bm.cut_values[bm.cut_ptr[f]:bm.cut_ptr[f + 1]]
        np.testing.assert_array_equal(got, want, err_msg=f"feature {f}")
        assert got.tobytes() == want.tobytes()  # bit for bit, -0.0 included


@pytest.mark.parametrize("max_bins", [2, 3, 17, 255])
def test_parallel_cut_kernel_equals_the_numpy_reference(max_bins):
    # The numba kernel (sort, distinct values, midpoints or the count-balanced sweep) against
    # the numpy reference: continuous, heavy ties, few values, adjacent doubles, zeros of
    # both signs, huge magnitudes, NaN/inf, constant and all-NaN columns, float32 input.
    rng = np.random.default_rng(max_bins)
    n = 3000
    a = 1.0
    cols = [
        rng.normal(size=n),
        np.round(rng.normal(size=n) * 40),
        rng.integers(0, 5, n).astype(float),
        np.where(rng.random(n) < 0.8, 0.0, rng.random(n)),  # sparse LETOR-like
        np.where(rng.random(n) < 0.05, 0.5, rng.normal(size=n)),  # a heavy value inside
        np.where(rng.random(n) < 0.3, 1.0, rng.random(n)),  # a heavy largest value
        rng.geometric(0.05, n).astype(float),  # counts: heavy small values, a light tail
        np.where(rng.random(n) < 0.5, -0.0, 0.0) + (rng.random(n) < 0.3),
        rng.choice([a, np.nextafter(a, 2.0), np.nextafter(np.nextafter(a, 2.0), 2.0)], n),
        rng.normal(size=n) * 1e300,
        np.where(rng.random(n) < 0.1, np.nan, rng.exponential(size=n)),
        np.where(rng.random(n) < 0.01, np.inf, rng.random(n)),
        np.full(n, 7.0),
        np.full(n, np.nan),
    ]
    X = np.column_stack(cols)
    _assert_cuts_equal_naive(BinMapper(max_bins=max_bins, subsample=None).fit(X), X)
    with np.errstate(over="ignore"):  # the 1e300 column becomes +-inf in float32: fine
        X32 = X.astype(np.float32)
    _assert_cuts_equal_naive(BinMapper(max_bins=max_bins, subsample=None).fit(X32), X32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_take_rows_equals_fancy_indexing(dtype):
    from skltr._cpu.binning import take_rows

    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 9)).astype(dtype)
    X[rng.random(X.shape) < 0.1] = np.nan
    rows = np.sort(rng.choice(500, 123, replace=False)).astype(np.int64)
    for src in (X, np.asfortranarray(X)):
        out = np.empty((rows.size, 9), dtype)
        take_rows(src, rows, out)
        np.testing.assert_array_equal(out, X[rows])


# ----------------------------------------------------------------------------- sparse X
def _stored(X, frac, seed):
    """CSR of X storing its non-zeros, -0.0 and a fraction ``frac`` of its other zeros."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    keep = (X != 0) | np.isnan(X) | np.signbit(X) | (rng.random(X.shape) < frac)
    rows, cols = np.nonzero(keep)
    return sp.csr_matrix((X[rows, cols], (rows, cols)), shape=X.shape)


def _assert_same_mapper(got, ref):
    np.testing.assert_array_equal(got.cut_ptr, ref.cut_ptr)
    assert got.cut_values.tobytes() == ref.cut_values.tobytes()  # bit for bit
    np.testing.assert_array_equal(got.n_bins, ref.n_bins)
    np.testing.assert_array_equal(got.has_missing, ref.has_missing)


@pytest.mark.parametrize("subsample", [None, 700])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("max_bins", [3, 31, 255])
def test_sparse_input_bins_as_its_dense_form(subsample, dtype, max_bins):
    # A CSR / CSC matrix (absent entries 0.0, some zeros stored, -0.0, NaN, +-inf, an
    # all-absent column, empty rows) gets the dense matrix's cuts and codes, also through the
    # row sample (subsample < rows) and with stored float32 values.
    import scipy.sparse as sp

    rng = np.random.default_rng(max_bins)
    n = 2000
    cols = [
        np.where(rng.random(n) < 0.8, 0.0, rng.normal(size=n)),
        np.where(rng.random(n) < 0.3, 0.0, np.round(rng.normal(size=n) * 3)),
        np.where(rng.random(n) < 0.98, 0.0, rng.random(n)),  # nearly all zero
        np.zeros(n),  # all absent
        np.where(rng.random(n) < 0.5, -0.0, 0.0) + (rng.random(n) < 0.3),
        np.where(rng.random(n) < 0.1, np.nan, np.where(rng.random(n) < 0.6, 0.0,
                                                       -rng.exponential(size=n))),
        np.where(rng.random(n) < 0.01, np.inf, np.where(rng.random(n) < 0.01, -np.inf,
                                                        rng.normal(size=n))),
        rng.normal(size=n),  # dense
    ]
    X = np.column_stack(cols).astype(dtype)
    X[5:9] = 0.0  # empty rows
    ref = BinMapper(max_bins=max_bins, subsample=subsample, random_state=1).fit(X)
    codes = ref.transform(X)
    for M in (sp.csr_matrix(X), _stored(X, 0.3, 0), _stored(X, 0.3, 0).tocsc(),
              sp.csr_array(X), sp.csc_array(_stored(X, 1.0, 1))):
        assert M.dtype == dtype
        got = BinMapper(max_bins=max_bins, subsample=subsample, random_state=1).fit(M)
        _assert_same_mapper(got, ref)
        np.testing.assert_array_equal(got.transform(M), codes)
        np.testing.assert_array_equal(ref.transform(M), codes)  # cuts fitted on dense X


@settings(max_examples=40)
@given(data=st.data())
def test_random_sparse_matrices_bin_as_their_dense_form(data):

    n = data.draw(st.integers(1, 30))
    n_features = data.draw(st.integers(1, 4))
    max_bins = data.draw(st.integers(2, 8))
    values = st.one_of(st.sampled_from([0.0, 0.0, 0.0, -0.0, 1.0, -1.0, np.nan]),
                       st.floats(-3, 3, allow_nan=False))
    X = np.array(data.draw(st.lists(values, min_size=n * n_features, max_size=n * n_features)),
                 dtype=np.float64).reshape(n, n_features)
    M = _stored(X, data.draw(st.floats(0, 1)), data.draw(st.integers(0, 5)))
    if data.draw(st.booleans()):
        M = M.tocsc()
    ref = BinMapper(max_bins=max_bins).fit(X)
    got = BinMapper(max_bins=max_bins).fit(M)
    _assert_same_mapper(got, ref)
    np.testing.assert_array_equal(got.transform(M), check_against_naive(ref, X))


def test_sparse_input_errors():
    import scipy.sparse as sp

    X = np.eye(4)
    with pytest.raises(TypeError, match="only CSR and CSC"):
        BinMapper().fit(sp.coo_matrix(X))
    dup = sp.csr_matrix((np.ones(2), np.zeros(2, int), np.array([0, 2, 2, 2, 2])),
                        shape=(4, 4))
    with pytest.raises(ValueError, match="duplicate entries"):
        BinMapper().fit(dup)
    bm = BinMapper().fit(X)
    with pytest.raises(ValueError, match="duplicate entries"):
        bm.transform(dup)
    with pytest.raises(ValueError, match="3 features"):
        bm.transform(sp.csr_matrix(np.eye(3)))


# ---------------------------------------------------------------------- fit in steps
@pytest.mark.parametrize("subsample", [None, 500, 5000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sparse", [False, True])
def test_fit_in_steps_equals_fit(subsample, dtype, sparse):
    # what the Dask driver (sample_rows, gather, fit_sample, then has_missing from its
    # workers) and the GPU (sample_rows, cuts found on the device, set_cuts) do: fit's cuts
    import scipy.sparse as sp

    rng = np.random.default_rng(5)
    X = np.where(rng.random((3000, 6)) < 0.4, 0.0, rng.normal(size=(3000, 6))).astype(dtype)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 4] = 1.0  # constant
    M = sp.csr_matrix(X) if sparse else X
    ref = BinMapper(max_bins=31, subsample=subsample, random_state=9).fit(M)
    steps = BinMapper(max_bins=31, subsample=subsample, random_state=9)
    rows = steps.sample_rows(X.shape[0])
    assert (rows is None) == (subsample is None or subsample >= X.shape[0])
    if rows is not None:
        assert rows.size == subsample and np.all(np.diff(rows) > 0)
    assert steps.fit_sample(M if rows is None else M[rows]) is steps
    assert not hasattr(steps, "has_missing")  # a sample does not see every NaN
    steps.set_has_missing(np.isnan(X).any(axis=0))
    _assert_same_mapper(steps, ref)
    np.testing.assert_array_equal(steps.transform(M), ref.transform(M))

    found = np.full((6, 30), np.nan)  # cuts found elsewhere, in find_cuts' layout
    n_cuts = np.diff(ref.cut_ptr)
    for f in range(6):
        found[f, :n_cuts[f]] = ref.cut_values[ref.cut_ptr[f]:ref.cut_ptr[f + 1]]
    elsewhere = BinMapper(max_bins=31).set_cuts(found, n_cuts)
    elsewhere.set_has_missing(ref.has_missing)
    _assert_same_mapper(elsewhere, ref)


def test_sorted_sample_cuts_are_fit_samples():
    from skltr._engine.binning import sorted_sample_cuts

    X = np.random.default_rng(3).exponential(size=(800, 4))
    X[::9, 1] = np.nan
    ref = BinMapper(max_bins=20).fit(X)
    got = BinMapper(max_bins=20).set_cuts(*sorted_sample_cuts(np.sort(X.T, axis=1), 20))
    np.testing.assert_array_equal(got.cut_ptr, ref.cut_ptr)
    assert got.cut_values.tobytes() == ref.cut_values.tobytes()


def test_fit_in_steps_errors():
    with pytest.raises(ValueError, match="0 rows"):
        BinMapper().sample_rows(0)
    with pytest.raises(ValueError, match="max_bins"):
        BinMapper(max_bins=300).sample_rows(10)
    with pytest.raises(ValueError, match="max_bins"):
        BinMapper(max_bins=1).fit_sample(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="2-D"):
        BinMapper().fit_sample(np.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        BinMapper(max_bins=4).set_cuts(np.zeros((2, 4)), np.zeros(2, int))
    with pytest.raises(ValueError, match="shape"):
        BinMapper(max_bins=4).set_cuts(np.zeros((2, 3)), np.array([1, 4]))
    with pytest.raises(ValueError, match="no cuts"):
        BinMapper().set_has_missing([True])
    bm = BinMapper(max_bins=4).fit_sample(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        bm.set_has_missing([True])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (1, 5), (7, 1), (130, 67), (200, 136)])
def test_transpose_kernel(shape, dtype):
    from skltr._cpu.binning import transpose

    a = (np.random.default_rng(0).random(shape) * 200).astype(dtype)
    out = np.empty(shape[::-1], dtype)
    transpose(a, out)
    np.testing.assert_array_equal(out, a.T)


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (5, 4), (200, 9), (1000, 3)])
def test_nan_columns_kernel(shape):
    from skltr._cpu.binning import nan_columns

    rng = np.random.default_rng(1)
    X = rng.random(shape)
    if X.size:
        X[rng.random(shape) < 0.01] = np.nan
        X[-1, 0] = np.nan  # the last row of the last chunk
    out = np.empty(shape[1], bool)
    nan_columns(X, out)
    np.testing.assert_array_equal(out, np.isnan(X).any(axis=0))


@pytest.mark.parametrize("small", [True, False])
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (7, 1), (300, 9), (5000, 3)])
def test_host_passes_equal_the_kernels(monkeypatch, shape, small):
    # transposed / has_nan_columns: NumPy blocks below SMALL_PASS_VALUES, the parallel
    # kernels from there (every matrix here takes the kernel when the limit is 0)
    from skltr._engine import binning

    if not small:
        monkeypatch.setattr(binning, "SMALL_PASS_VALUES", 0)
    rng = np.random.default_rng(2)
    X = rng.random(shape).astype(np.float32)
    if X.size:
        X[rng.random(shape) < 0.002] = np.nan
        X[-1, -1] = np.nan
    np.testing.assert_array_equal(binning.transposed(X), X.T)
    Xb = (rng.random(shape) * 255).astype(np.uint8)
    np.testing.assert_array_equal(binning.transposed(Xb), Xb.T)
    assert binning.transposed(Xb).flags.c_contiguous
    np.testing.assert_array_equal(binning.has_nan_columns(X), np.isnan(X).any(axis=0))
