"""GPU training path (``skltr._gpu``) against the CPU kernels and the naive references.

Skipped without CuPy and a CUDA GPU (the ``gpu`` marker, see ``conftest.py``). Tolerances:

* binning, histograms (quantised integers), split search, partition, whole trees grown from
  the same gradients, score updates: **exact** (the GPU kernels are compiled without fused
  multiply-adds and add integers, so they must equal the CPU quantised engine bit for bit);
* lambdarank / RankNet gradients: ``rtol=2e-6`` of float32 (float64 partner sums are added
  in another order, and ``exp`` is CUDA's);
* whole fits: same trees for ``regression`` in quantised mode (gradients are then exact on
  both devices); test NDCG@10 within 0.002 of the CPU fit for ``lambdarank``.
"""

import pickle

import numpy as np
import pytest

from naive_gbdt import naive_partition

cupy = pytest.importorskip("cupy")

pytestmark = pytest.mark.gpu

from skltr import GPUHistGBDTRanker  # noqa: E402
from skltr._cpu.binning import map_to_bins as cpu_map_to_bins  # noqa: E402
from skltr._cpu.split import find_best_splits_serial  # noqa: E402
from skltr._engine.binning import BinMapper  # noqa: E402
from skltr._gbdt.params import BoostParams, TreeParams  # noqa: E402
from skltr._gbdt.grower_cpu import TreeGrower  # noqa: E402
from skltr._gbdt.grower_cuda import GPUTreeGrower  # noqa: E402
from skltr._gbdt.quantisation import quantisation_exponent  # noqa: E402
from skltr._gbdt.objectives import make_objective  # noqa: E402
from skltr._gpu import _config  # noqa: E402
from skltr._gpu.binning import map_to_bins, padded_features  # noqa: E402
from skltr._gpu.binned import DeviceBinned  # noqa: E402
from skltr._gpu.histogram import (build_histograms, features_per_block,  # noqa: E402
                                  row_chunk_tasks)
from skltr._gbdt.objectives_cuda import make_cuda_gradients  # noqa: E402
from skltr._gpu.partition import partition_info, partition_level  # noqa: E402
from skltr._gpu.split import feature_groups, find_best_splits, split_records  # noqa: E402
from skltr._records import SplitInfo, split_constants, split_work  # noqa: E402
from skltr.trees import NodeFlags  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402
from skltr.metrics import ndcg_score  # noqa: E402
from skltr.model_selection import train_test_split_by_query  # noqa: E402


def _binned_problem(rng, n, n_features, max_bins, nan_frac=0.1):
    """Binned rows (uint8), per-feature bin counts, gradients on a 1/8 grid."""
    n_bins = rng.integers(1, max_bins + 1, size=n_features).astype(np.int32)
    X = np.empty((n, n_features), dtype=np.uint8)
    for f in range(n_features):
        X[:, f] = rng.integers(0, n_bins[f], size=n)
        X[rng.random(n) < nan_frac, f] = max_bins
    grad = (rng.integers(-16, 17, size=n) / 8).astype(np.float32)
    hess = (rng.integers(0, 9, size=n) / 8).astype(np.float32)
    return X, n_bins, grad, hess


def _device_binned(X, n_bins, missing_bin):
    stride = padded_features(X.shape[1])
    Xp = np.zeros((X.shape[0], stride), np.uint8)
    Xp[:, :X.shape[1]] = X
    return DeviceBinned(cupy.asarray(Xp), X.shape[1], n_bins, missing_bin)


def _quantise_host(grad, hess, n_rows):
    """The CPU engine's quantisation (TreeGrower._prepare_gradients) of all rows."""
    K = 63 - max(int(n_rows).bit_length(), 1)
    kg = quantisation_exponent(float(np.max(np.abs(grad))), n_rows)
    kh = quantisation_exponent(float(np.max(hess)), n_rows, total_bits=K - 1)
    qg = np.rint(grad.astype(np.float64) * 2.0 ** kg).astype(np.int32)
    qh = np.rint(hess.astype(np.float64) * 2.0 ** kh).astype(np.int64) + (np.int64(1) << K)
    return qg, qh, K, 2.0 ** -kg, 2.0 ** -kh


def _host_hist(X, qg, qh, rows, n_bins_total):
    hist = np.zeros((X.shape[1], n_bins_total, 2), np.int64)
    for f in range(X.shape[1]):
        np.add.at(hist[f, :, 0], X[rows, f], qg[rows].astype(np.int64))
        np.add.at(hist[f, :, 1], X[rows, f], qh[rows])
    return hist


# ------------------------------------------------------------------------------ binning
@pytest.mark.parametrize("n_features", [1, 5, 8, 13])
def test_map_to_bins_matches_cpu(n_features):
    rng = np.random.default_rng(n_features)
    X = rng.normal(size=(3000, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[0, 0], X[1, 0], X[2, -1] = np.inf, -np.inf, np.nan
    X[:, -1] = 7.0  # a constant feature (one bin)
    X[5, -1] = np.nan
    mapper = BinMapper(max_bins=63, random_state=0).fit(X)
    expected = np.empty(X.shape, np.uint8)
    cpu_map_to_bins(X, mapper.cut_ptr, mapper.cut_values, mapper.missing_bin, expected)
    with _config.override(BIN_CHUNK_ROWS=1000):  # several host->device chunks
        got = map_to_bins(X, mapper.cut_ptr, mapper.cut_values, mapper.missing_bin).get()
    assert got.shape == (3000, padded_features(n_features))
    np.testing.assert_array_equal(got[:, :n_features], expected)
    assert not got[:, n_features:].any()  # pad bytes are 0
    # CuPy input gives the same codes
    got2 = map_to_bins(cupy.asarray(X), mapper.cut_ptr, mapper.cut_values,
                       mapper.missing_bin).get()
    np.testing.assert_array_equal(got2, got)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_map_to_bins_reads_float32_as_it_is(dtype):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 6)).astype(dtype)
    # subnormals (CuPy compiles with -ftz=true: a plain float -> double conversion would
    # flush them to 0 and put them in 0's bin)
    X[:, 5] = rng.integers(-3, 4, 2000) * np.finfo(dtype).smallest_subnormal
    X[rng.random(X.shape) < 0.1] = np.nan
    mapper = BinMapper(max_bins=255, random_state=0).fit(X)
    assert mapper.n_bins[5] == 7
    expected = np.empty(X.shape, np.uint8)
    cpu_map_to_bins(X, mapper.cut_ptr, mapper.cut_values, mapper.missing_bin, expected)
    for src in (X, cupy.asarray(X)):
        got = map_to_bins(src, mapper.cut_ptr, mapper.cut_values, mapper.missing_bin).get()
        np.testing.assert_array_equal(got[:, :6], expected)


def _awkward_columns(rng, n, dtype):
    """Columns with NaN (both signs), +-inf, +-0.0, heavy ties and a constant."""
    X = rng.normal(size=(n, 7))
    X[:, 2] = np.round(X[:, 2])  # few distinct values: midpoint cuts
    X[:, 3] = rng.integers(0, 4, n)  # heavy ties, and -0.0 mixed with +0.0:
    X[(X[:, 3] == 0) & (rng.random(n) < 0.5), 3] = -0.0
    X[:, 4] = 2.5  # constant
    X[:, 5] = np.nan  # all missing
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(n) < 0.01, 0] = np.inf
    X[rng.random(n) < 0.01, 0] = -np.inf
    X = X.astype(dtype)
    neg_nan = np.copysign(np.array(np.nan, dtype), -1)  # a NaN with its sign bit set
    X[rng.random(n) < 0.02, 1] = neg_nan
    return X


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sorted_sample_columns_equal_numpy_sort(dtype):
    from skltr._gpu.binning import sorted_sample_columns

    rng = np.random.default_rng(9)
    X = _awkward_columns(rng, 20_000, dtype)
    rows = np.sort(rng.choice(X.shape[0], 5000, replace=False))
    ref = np.sort(np.ascontiguousarray(X[rows].T), axis=1)
    for src in (X, cupy.asarray(X)):  # host gather, device gather
        got = sorted_sample_columns(src, rows).get()
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, ref)  # NaN in the same (last) places
    np.testing.assert_array_equal(sorted_sample_columns(X).get(),
                                  np.sort(np.ascontiguousarray(X.T), axis=1))


def _sorted_columns(rng, m, dtype):
    """Sorted columns of every kind the cut rule branches on (distinct counts around
    max_bins, ties, +-inf at both ends, NaN, -0.0/+0.0, tiny and huge magnitudes)."""
    cols = []
    for distinct in (1, 2, 3, 14, 15, 16, 62, 63, 64, 254, 255, 256, 1000):
        scale = rng.choice([1.0, 0.1, 1e-30, 1e30, float(np.finfo(dtype).smallest_subnormal)])
        cols.append(rng.integers(0, distinct, m) * scale)
    cols.append(rng.normal(size=m))
    cols.append(rng.standard_cauchy(m))
    cols.append(np.where(rng.random(m) < 0.5, -0.0, 0.0))
    cols.append(np.where(rng.random(m) < 0.5, -0.0, rng.integers(0, 3, m).astype(float)))
    # heavy values (count * max_bins >= n) among light ones: first, in the middle, last
    cols.append(np.where(rng.random(m) < 0.8, 0.0, rng.normal(size=m)))
    cols.append(np.where(rng.random(m) < 0.05, 0.5, rng.normal(size=m)))
    cols.append(np.where(rng.random(m) < 0.3, 1.0, rng.random(m)))
    cols.append(rng.geometric(0.05, m).astype(float))
    cols.append(np.full(m, np.nan))
    cols.append(np.full(m, -np.inf))
    cols.append(np.full(m, np.inf))
    out = np.stack(cols).astype(dtype)
    for c in out:
        k = rng.integers(0, 4, size=3)
        c[:k[0]] = -np.inf
        c[m - k[1] - k[2]:m - k[2]] = np.inf
        c[m - k[2]:] = np.nan
    for c in out:  # np.sort's order, -0.0 next to +0.0 as it happens
        c[:] = np.sort(c)
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", [1, 2, 3, 7, 300, 5000])
def test_column_cuts_equal_find_cuts_bit_for_bit(dtype, m):
    from skltr._cpu.binning import find_cuts
    from skltr._gpu.binning import column_cuts

    rng = np.random.default_rng(m)
    cols = _sorted_columns(rng, m, dtype)
    for max_bins in (2, 3, 15, 63, 255):
        ref = np.empty((cols.shape[0], max_bins - 1))
        n_ref = np.zeros(cols.shape[0], np.int64)
        find_cuts(cols, max_bins, ref, n_ref)
        got, n_got = column_cuts(cupy.asarray(cols), max_bins)
        np.testing.assert_array_equal(n_got, n_ref, err_msg=f"max_bins={max_bins}")
        for f in range(cols.shape[0]):
            k = n_ref[f]
            np.testing.assert_array_equal(got[f, :k].view(np.int64), ref[f, :k].view(np.int64),
                                          err_msg=f"max_bins={max_bins} column {f}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_parallel_bin_mapper_fit_equals_host_bin_mapper(dtype):
    from skltr._gpu.binning import fit_bin_mapper

    rng = np.random.default_rng(1)
    for shape, max_bins in [((5000, 9), 255), ((5000, 9), 15), ((250_000, 3), 63)]:
        X = rng.normal(size=shape)  # 250,000 rows: the 200,000-row sample path
        X[:, 2] = np.round(X[:, 2])  # few distinct values: midpoint cuts
        X[rng.random(X.shape) < 0.05] = np.nan
        X = X.astype(dtype)
        ref = BinMapper(max_bins=max_bins, random_state=4).fit(X)
        for src in (X, cupy.asarray(X)):  # sample gathered on the host / on the device
            got = fit_bin_mapper(src, max_bins, 4)
            np.testing.assert_array_equal(got.cut_ptr, ref.cut_ptr)
            np.testing.assert_array_equal(got.cut_values, ref.cut_values)
            np.testing.assert_array_equal(got.n_bins, ref.n_bins)
            d = DeviceBinned.from_mapper(src, got)
            np.testing.assert_array_equal(d.has_missing, ref.has_missing)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bin_mapper_cuts_equal_on_awkward_values(dtype):
    from skltr._gpu.binning import fit_bin_mapper

    rng = np.random.default_rng(2)
    X = _awkward_columns(rng, 230_000, dtype)
    for max_bins in (255, 3):
        ref = BinMapper(max_bins=max_bins, random_state=7).fit(X)
        got = fit_bin_mapper(cupy.asarray(X), max_bins, 7)
        np.testing.assert_array_equal(got.cut_ptr, ref.cut_ptr)
        np.testing.assert_array_equal(got.cut_values, ref.cut_values)
        expected = ref.transform(X)
        codes = map_to_bins(cupy.asarray(X), got.cut_ptr, got.cut_values,
                            got.missing_bin).get()
        np.testing.assert_array_equal(codes[:, :X.shape[1]], expected)


# ---------------------------------------------------------------------------- histogram
@pytest.mark.parametrize("max_bins,n_features", [(255, 13), (63, 40), (7, 3), (255, 1)])
@pytest.mark.parametrize("rows_per_block", [64, 16384])
def test_histograms_match_naive(max_bins, n_features, rows_per_block):
    rng = np.random.default_rng(max_bins + n_features)
    n = 5000
    X, n_bins, grad, hess = _binned_problem(rng, n, n_features, max_bins)
    grad = (grad * rng.random(n) * 3).astype(np.float32)  # mixed signs and magnitudes
    d = _device_binned(X, n_bins, max_bins)
    qg, qh, *_ = _quantise_host(grad, hess, n)
    # three "nodes": a random subset, an empty range, a single row
    rows = rng.permutation(n)[:3001].astype(np.uint32)
    buf = np.concatenate([rows, rows[:1]])
    starts, ends, slots = [0, 3001, 3001], [3001, 3001, 3002], [2, 0, 1]
    fpb = features_per_block(max_bins + 1, n_features)
    hist = cupy.zeros((3, n_features, max_bins + 1, 2), cupy.int64)
    with _config.override(HIST_ROWS_PER_BLOCK=rows_per_block, HIST_MIN_ROWS_PER_BLOCK=64):
        tasks = row_chunk_tasks(starts, ends, slots, -(-n_features // fpb))
        K = 63 - max(n.bit_length(), 1)
        qh32 = (qh - (np.int64(1) << K)).astype(np.uint32)
        build_histograms(d.X_words, cupy.asarray(buf), cupy.asarray(qg), cupy.asarray(qh32),
                         tasks, hist, n_features, max_bins + 1, K)
    got = hist.get()
    np.testing.assert_array_equal(got[2], _host_hist(X, qg, qh, rows, max_bins + 1))
    assert not got[0].any()
    np.testing.assert_array_equal(got[1], _host_hist(X, qg, qh, rows[:1], max_bins + 1))


# -------------------------------------------------------------------------------- split
SPLIT_PARAMS = [
    dict(reg_lambda=0.0, reg_alpha=0.0, min_child_weight=1e-3, min_samples_leaf=1,
         min_split_gain=0.0),
    dict(reg_lambda=1.0, reg_alpha=0.5, min_child_weight=1.0, min_samples_leaf=20,
         min_split_gain=0.1),
    dict(reg_lambda=0.0, reg_alpha=0.0, min_child_weight=1e-3, min_samples_leaf=400,
         min_split_gain=0.0),
]


@pytest.mark.parametrize("p", SPLIT_PARAMS)
@pytest.mark.parametrize("max_bins", [255, 15, 3])
@pytest.mark.parametrize("counts", ["rows", "hessian"])
@pytest.mark.parametrize("target_blocks", [1, None])
def test_split_matches_cpu_kernel(p, max_bins, counts, target_blocks):
    """Also with every node's features in one block (``target_blocks=1``) and spread over
    5 groups (the default for 4 nodes of 37 features); features 10 and 30 copy feature 2
    (equal gains in other groups: the lowest feature must win, as on the CPU)."""
    rng = np.random.default_rng(max_bins)
    n, F = 2000, 37
    X, n_bins, grad, hess = _binned_problem(rng, n, F, max_bins)
    X[:, 3] = max_bins // 2  # one feature with a single occupied bin
    X[:, 4] = np.minimum(X[:, 4], 1)  # no missing values in feature 4
    n_bins[[2, 10, 30]] = max_bins  # feature 2 follows the gradients: the best split
    X[:, 2] = np.minimum((grad + 2.0) / 4.0 * max_bins, max_bins - 1).astype(np.uint8)
    X[:, 10] = X[:, 30] = X[:, 2]
    mask = rng.random(F) < 0.8
    mask[[2, 10, 30]] = True
    qg, qh, K, inv_g, inv_h = _quantise_host(grad, hess, n)
    node_rows = [np.arange(n), np.arange(0, n, 3), np.arange(7), np.arange(1)]
    hists, expect = [], []
    for rows in node_rows:
        h = _host_hist(X, qg, qh, rows, max_bins + 1)
        hists.append(h)
        sum_g = int(qg[rows].astype(np.int64).sum())
        sum_h = int(qh[rows].sum()) - (len(rows) << K)
        hp = np.zeros((F, max_bins + 1 + 3, 2), np.int64)
        hp[:, :max_bins + 1] = h
        c = _constants(max_bins, K, inv_g, inv_h, p["reg_lambda"], p["reg_alpha"],
                       p["min_child_weight"], p["min_samples_leaf"], p["min_split_gain"],
                       counts == "hessian")
        r = find_best_splits_serial(hp, n_bins, mask, np.zeros(F, np.int8), np.int64(sum_g),
                                    np.int64(sum_h), len(rows), -np.inf, np.inf, c,
                                    split_work(F, np.int64))
        expect.append(None if r[0] < 0 else
                      SplitInfo(int(r[0]), float(r[1]), int(r[2]), bool(r[3]), int(r[4]),
                                int(r[5]), int(r[6])))
        expect[-1] = (expect[-1], sum_g, sum_h, len(rows))
    hist_dev = cupy.asarray(np.stack(hists))
    override = {} if target_blocks is None else {"SPLIT_TARGET_BLOCKS": target_blocks}
    with _config.override(**override):
        assert feature_groups(4, F) == (5 if target_blocks is None else 1)
        got = find_best_splits(hist_dev, split_records([0, 1, 2, 3], [e[1] for e in expect],
                                                       [e[2] for e in expect],
                                                       [e[3] for e in expect]),
                               cupy.asarray(n_bins), cupy.asarray(mask.astype(np.uint8)), c)
    assert got == [e[0] for e in expect]
    assert any(g is not None for g in got) or p["min_samples_leaf"] >= 400


def _constants(mb, K, inv_g, inv_h, lam, alpha, mcw, msl, msg, hessian_counts):
    return split_constants(missing_bin=mb, inv_scale_g=inv_g, inv_scale_h=inv_h,
                           reg_lambda=lam, reg_alpha=alpha, min_child_weight=mcw,
                           min_samples_leaf=msl, min_split_gain=msg, count_shift=K,
                           hessian_counts=hessian_counts)


def _cpu_split(h, n_bins, mask, sum_g, sum_h, n, mb, inv_g, inv_h, K, min_samples_leaf,
               hessian_counts):
    F = h.shape[0]
    hp = np.zeros((F, h.shape[1] + 3, 2), np.int64)
    hp[:, :h.shape[1]] = h
    c = _constants(mb, K, inv_g, inv_h, 0.0, 0.0, 1e-3, min_samples_leaf, 0.0, hessian_counts)
    r = find_best_splits_serial(hp, n_bins, mask, np.zeros(F, np.int8), np.int64(sum_g),
                                np.int64(sum_h), n, -np.inf, np.inf, c,
                                split_work(F, np.int64))
    return None if r[0] < 0 else SplitInfo(int(r[0]), float(r[1]), int(r[2]), bool(r[3]),
                                           int(r[4]), int(r[5]), int(r[6]))


def _one_node_problem(X, grad, hess, n_bins, mb):
    n, F = X.shape
    qg, qh, K, inv_g, inv_h = _quantise_host(grad, hess, n)
    h = _host_hist(X, qg, qh, np.arange(n), mb + 1)
    sum_g = int(qg.astype(np.int64).sum())
    sum_h = int(qh.sum()) - (n << K)
    return h, sum_g, sum_h, K, inv_g, inv_h


@pytest.mark.parametrize("with_missing", [False, True])
def test_split_threshold_moves_over_empty_bins(with_missing):
    # occupied bins 0, 1, 2, 6, 7 of 10: the best split, after bin 2, moves up to bin 5
    # (LightGBM's threshold among equivalent ones), as on the CPU; same left sums and rows
    rng = np.random.default_rng(5)
    n, mb = 500, 15
    col = rng.choice(np.array([0, 1, 2, 6, 7], np.uint8), size=n)
    if with_missing:
        col[rng.random(n) < 0.1] = mb
    X = np.stack([col, rng.integers(0, 10, size=n).astype(np.uint8)], axis=1)
    n_bins = np.full(2, 10, np.int32)
    grad = np.where(col <= 2, -1.0, 1.0).astype(np.float32)
    grad[col == mb] = 0.25
    hess = (rng.integers(1, 9, size=n) / 8).astype(np.float32)
    h, sum_g, sum_h, K, inv_g, inv_h = _one_node_problem(X, grad, hess, n_bins, mb)
    mask = np.ones(2, bool)
    for counts in (False, True):
        ref = _cpu_split(h, n_bins, mask, sum_g, sum_h, n, mb, inv_g, inv_h, K, 1, counts)
        got = find_best_splits(cupy.asarray(h[None]), split_records([0], [sum_g], [sum_h], [n]),
                               cupy.asarray(n_bins), cupy.ones(2, cupy.uint8),
                               _constants(mb, K, inv_g, inv_h, 0.0, 0.0, 1e-3, 1, 0.0,
                                          counts))[0]
        assert ref[0] == 0 and ref[2] == 5, ref
        assert got == ref


def test_split_hessian_counts_bind_as_on_the_cpu():
    # bin 0 holds 10 rows of hessian 0.125, bins 1..9 10 rows of hessian 1 each: with
    # min_samples_leaf=10 "rows" splits after bin 0 (10 rows left), "hessian" estimates bin 0
    # at int(1.25 * 100 / 91.25 + 0.5) = 1 row and must split later
    n, mb = 100, 15
    col = np.repeat(np.arange(10, dtype=np.uint8), 10)
    X = col[:, None].copy()
    n_bins = np.full(1, 10, np.int32)
    grad = np.where(col == 0, -4.0, 0.5).astype(np.float32)
    grad[col == 1] = -1.0
    hess = np.where(col == 0, 0.125, 1.0).astype(np.float32)
    h, sum_g, sum_h, K, inv_g, inv_h = _one_node_problem(X, grad, hess, n_bins, mb)
    refs = {}
    for counts in (False, True):
        refs[counts] = _cpu_split(h, n_bins, np.ones(1, bool), sum_g, sum_h, n, mb, inv_g,
                                  inv_h, K, 10, counts)
        got = find_best_splits(cupy.asarray(h[None]), split_records([0], [sum_g], [sum_h], [n]),
                               cupy.asarray(n_bins), cupy.ones(1, cupy.uint8),
                               _constants(mb, K, inv_g, inv_h, 0.0, 0.0, 1e-3, 10, 0.0,
                                          counts))[0]
        assert got == refs[counts]
    assert refs[False][2] == 0 and refs[True][2] == 1, refs


def test_split_ties_pick_lowest_feature_then_bin():
    # features 0..5 identical: the lowest feature must win; within it the lowest bin
    rng = np.random.default_rng(3)
    n, F, mb = 600, 6, 15
    col = rng.integers(0, 4, size=n).astype(np.uint8)
    X = np.repeat(col[:, None], F, axis=1)
    n_bins = np.full(F, 4, np.int32)
    grad = np.where(col < 2, -1.0, 1.0).astype(np.float32)
    hess = np.ones(n, np.float32)
    qg, qh, K, inv_g, inv_h = _quantise_host(grad, hess, n)
    h = _host_hist(X, qg, qh, np.arange(n), mb + 1)
    sum_g = int(qg.astype(np.int64).sum())
    sum_h = int(qh.sum()) - (n << K)
    got = find_best_splits(cupy.asarray(h[None]), split_records([0], [sum_g], [sum_h], [n]),
                           cupy.asarray(n_bins), cupy.ones(F, cupy.uint8),
                           _constants(mb, K, inv_g, inv_h, 0.0, 0.0, 1e-3, 1, 0.0, False))[0]
    assert got[0] == 0 and got[2] == 1


# ---------------------------------------------------------------------------- partition
@pytest.mark.parametrize("default_left", [False, True])
def test_partition_level_is_stable_and_matches_naive(default_left):
    rng = np.random.default_rng(11)
    n, F, mb = 3000, 9, 31
    X, n_bins, _, _ = _binned_problem(rng, n, F, mb)
    d = _device_binned(X, n_bins, mb)
    buf = rng.permutation(n).astype(np.uint32)
    # nodes 0 = [0, 1000) split, 1 = [1000, 1001) leaf, 2 = [1001, 3000) split
    pos = np.concatenate([np.zeros(1000), [1], np.full(1999, 2)]).astype(np.int32)
    splits = [(0, 4, 10, default_left, 0, 1000, 3, 4),
              (2, 7, 0, not default_left, 1001, 3000, 5, 6)]
    ref = {}
    for nid, f, b, dl, s, e, _, _ in splits:
        ref[nid] = naive_partition(X, list(buf[s:e]), f, b, dl, mb)
    new_buf, new_pos, n_left = partition_level(cupy.asarray(buf), cupy.asarray(pos),
                                               d.X_bytes, mb, 7, partition_info(7, splits),
                                               left_counts=True)
    nb, npos = new_buf.get(), new_pos.get()
    ref0, ref2 = ref[0], ref[2]
    nl0, nl2 = len(ref0[0]), len(ref2[0])
    np.testing.assert_array_equal(n_left, [nl0, nl2])  # read off the scan
    np.testing.assert_array_equal(nb[:nl0], ref0[0])
    np.testing.assert_array_equal(nb[nl0:1000], ref0[1])
    assert nb[1000] == buf[1000] and npos[1000] == 1
    np.testing.assert_array_equal(nb[1001:1001 + nl2], ref2[0])
    np.testing.assert_array_equal(nb[1001 + nl2:], ref2[1])
    np.testing.assert_array_equal(npos[:nl0], 3)
    np.testing.assert_array_equal(npos[nl0:1000], 4)
    np.testing.assert_array_equal(npos[1001:1001 + nl2], 5)
    np.testing.assert_array_equal(npos[1001 + nl2:], 6)


def test_partition_level_scans_many_blocks():
    """A level of 600,001 positions (2,345 blocks of the flag scan: several a thread of the
    one-block scan of their counts) against NumPy's stable partition."""
    rng = np.random.default_rng(5)
    n, mb = 600_001, 63
    X = rng.integers(0, mb + 1, size=(n, 4)).astype(np.uint8)
    buf = rng.permutation(n).astype(np.uint32)
    # node 0 = [0, 5) a leaf, node 1 = [5, n) split on feature 1 at bin 20, missing right
    pos = np.r_[np.zeros(5), np.ones(n - 5)].astype(np.int32)
    info = partition_info(4, [(1, 1, 20, 0, 5, n, 2, 3)])
    new_buf, new_pos, n_left = partition_level(cupy.asarray(buf), cupy.asarray(pos),
                                               cupy.asarray(X), mb, 4, info, left_counts=True)
    rows = buf[5:]
    bins = X[rows, 1]
    left = (bins <= 20) & (bins != mb)
    expect = np.r_[buf[:5], rows[left], rows[~left]]
    np.testing.assert_array_equal(new_buf.get(), expect)
    np.testing.assert_array_equal(n_left, [left.sum()])
    np.testing.assert_array_equal(new_pos.get(),
                                  np.r_[np.zeros(5), np.full(left.sum(), 2),
                                        np.full((~left).sum(), 3)])


# ------------------------------------------------------------------------------- grower
TREE_FIELDS = ("feature", "bin_threshold", "default_left", "left", "right", "value", "gain",
               "count", "hess_sum")

GROW_CASES = [
    dict(max_depth=6, min_samples_leaf=1),
    dict(max_depth=4, max_leaves=9, min_samples_leaf=5, reg_lambda=1.0),
    dict(max_depth=8, min_samples_leaf=20, reg_alpha=0.25, min_child_weight=1.0,
         min_split_gain=0.05),
    dict(max_depth=1, min_samples_leaf=1, learning_rate=1.0),
    dict(max_depth=None, max_leaves=40, min_samples_leaf=10),
    dict(max_depth=6, min_samples_leaf=30, min_samples_leaf_counts="hessian"),
    dict(max_depth=8, min_samples_leaf=20, reg_lambda=1.0, min_child_weight=1.0,
         min_samples_leaf_counts="hessian"),
]


def _cpu_tree(X, n_bins, mb, grad, hess, rows=None, mask=None, growth="depthwise", **kw):
    # one quantisation rule (skltr._gbdt.quantisation): hessian counts take one-word scales
    # on both devices, row counts two-word scales
    return TreeGrower(X, grad, hess, n_bins=n_bins, missing_bin=mb,
                      has_missing=np.ones(X.shape[1], bool), rows=rows, feature_mask=mask,
                      growth=growth, hist_mode="quantised", **kw).grow()


def assert_same_tree(got, ref):
    for name in TREE_FIELDS:
        np.testing.assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=name)
    np.testing.assert_array_equal(got.leaf_of_row, ref.leaf_of_row)


@pytest.mark.parametrize("kw", GROW_CASES)
@pytest.mark.parametrize("max_bins", [255, 31])
def test_gpu_tree_equals_cpu_quantised_tree(kw, max_bins):
    rng = np.random.default_rng(max_bins)
    n, F = 4000, 21
    X, n_bins, grad, hess = _binned_problem(rng, n, F, max_bins)
    grad = (grad + rng.normal(scale=0.01, size=n)).astype(np.float32)  # not dyadic
    d = _device_binned(X, n_bins, max_bins)
    kw = {"max_leaves": 10**6, **kw}
    ref = _cpu_tree(X, n_bins, max_bins, grad, hess, **kw)
    with _config.override(HIST_ROWS_PER_BLOCK=256, HIST_MIN_ROWS_PER_BLOCK=64):
        got = GPUTreeGrower(d, **kw).grow(cupy.asarray(grad), cupy.asarray(hess),
                                          leaf_of_row=True)
    assert got.n_nodes > 1 or kw["max_depth"] is None
    assert_same_tree(got, ref)


@pytest.mark.parametrize("kw", [
    dict(max_depth=8, min_samples_leaf=5),
    dict(max_depth=3, min_samples_leaf=1, reg_lambda=1.0, min_split_gain=0.01),
    dict(max_depth=10, min_samples_leaf=2, min_samples_leaf_counts="hessian"),
    dict(max_depth=6, min_samples_leaf=400, min_child_weight=5.0),
])
@pytest.mark.parametrize("small_chunks", [False, True])
def test_levels_planned_on_the_device_grow_the_host_planned_tree(kw, small_chunks, monkeypatch):
    # skltr._gpu.levels: the plan kernel takes the driver's decisions (ids, slots, tasks,
    # searches); several trees of one grower (the slots' free stack is reset between them),
    # a row subset and a column sample
    import skltr._gbdt.grower_cuda as grower_cuda

    rng = np.random.default_rng(kw["max_depth"])
    n, F, mb = 20000, 13, 63
    X, n_bins, grad, hess = _binned_problem(rng, n, F, mb)
    hess = rng.uniform(0.2, 1.0, n).astype(np.float32)
    d = _device_binned(X, n_bins, mb)
    kw = {"max_leaves": 2 ** kw["max_depth"], **kw}
    planned = []
    plan = grower_cuda.plan_level
    monkeypatch.setattr(grower_cuda, "plan_level",
                        lambda *a, **k: planned.append(1) or plan(*a, **k))
    host, device = GPUTreeGrower(d, **kw), GPUTreeGrower(d, **kw)
    host.plan_on_device = False
    sizes = dict(HIST_ROWS_PER_BLOCK=256, HIST_MIN_ROWS_PER_BLOCK=64) if small_chunks else {}
    with _config.override(**sizes):
        for t in range(3):
            g = (grad * (1 + t) + rng.normal(scale=0.1, size=n)).astype(np.float32)
            rows = None if t == 0 else np.sort(rng.choice(n, n // 2 + 7 * t, replace=False))
            mask = None if t < 2 else rng.random(F) < 0.7
            ref = host.grow(cupy.asarray(g), cupy.asarray(hess), rows=rows, feature_mask=mask,
                            leaf_of_row=True)
            n_planned = len(planned)
            got = device.grow(cupy.asarray(g), cupy.asarray(hess), rows=rows,
                              feature_mask=mask, leaf_of_row=True)
            assert len(planned) > n_planned  # the device planned this tree
            assert_same_tree(got, ref)
            assert ref.n_nodes > 3
            scores = [cupy.zeros(n), cupy.zeros(n)]
            host.add_to_training_scores(scores[0])
            device.add_to_training_scores(scores[1])
            cupy.testing.assert_array_equal(scores[0], scores[1])


@pytest.mark.parametrize("max_bins", [255, 63])
def test_gpu_tree_from_lambdarank_gradients_both_count_rules(max_bins):
    # lambdarank hessians are unequal, so the hessian-estimated counts differ from the rows
    # and min_samples_leaf binds differently; many nodes hold empty bins (threshold moves)
    rng = np.random.default_rng(21)
    y, group_ptr, scores = _queries(rng, [60] * 100)
    n, F = y.size, 15
    g = np.empty(n, np.float32)
    hs = np.empty(n, np.float32)
    make_objective("lambdarank").gradients(scores, y, group_ptr, None, g, hs, 0)
    X, n_bins, _, _ = _binned_problem(rng, n, F, max_bins)
    d = _device_binned(X, n_bins, max_bins)
    trees = {}
    for counts in ("rows", "hessian"):
        kw = dict(max_depth=7, max_leaves=10**6, min_samples_leaf=40,
                  min_samples_leaf_counts=counts)
        ref = _cpu_tree(X, n_bins, max_bins, g, hs, **kw)
        got = GPUTreeGrower(d, **kw).grow(cupy.asarray(g), cupy.asarray(hs),
                                          leaf_of_row=True)
        assert_same_tree(got, ref)
        trees[counts] = ref
    a, b = trees["rows"], trees["hessian"]
    assert a.n_nodes != b.n_nodes or not np.array_equal(a.bin_threshold, b.bin_threshold)


def test_gpu_tree_rows_subset_and_feature_mask():
    rng = np.random.default_rng(2)
    n, F, mb = 3000, 12, 63
    X, n_bins, grad, hess = _binned_problem(rng, n, F, mb)
    rows = np.sort(rng.choice(n, 1700, replace=False))
    mask = rng.random(F) < 0.5
    kw = dict(max_depth=5, max_leaves=10**6, min_samples_leaf=3)
    ref = _cpu_tree(X, n_bins, mb, grad, hess, rows=rows, mask=mask, **kw)
    got = GPUTreeGrower(_device_binned(X, n_bins, mb), **kw).grow(
        cupy.asarray(grad), cupy.asarray(hess), rows=rows, feature_mask=mask,
        leaf_of_row=True)
    assert_same_tree(got, ref)
    assert set(got.feature[got.left >= 0]) <= set(np.flatnonzero(mask))


def test_gpu_tree_edge_cases():
    mb = 15
    kw = dict(max_depth=4, max_leaves=10**6, min_samples_leaf=1)
    # one row; constant features; zero gradients
    for X, grad in [(np.zeros((1, 3), np.uint8), np.ones(1, np.float32)),
                    (np.zeros((50, 5), np.uint8), np.linspace(-1, 1, 50, dtype=np.float32)),
                    (np.arange(50, dtype=np.uint8)[:, None] % 8, np.zeros(50, np.float32))]:
        n_bins = np.full(X.shape[1], 8, np.int32)
        hess = np.ones(X.shape[0], np.float32)
        ref = _cpu_tree(X, n_bins, mb, grad, hess, **kw)
        got = GPUTreeGrower(_device_binned(X, n_bins, mb), **kw).grow(
            cupy.asarray(grad), cupy.asarray(hess), leaf_of_row=True)
        assert_same_tree(got, ref)
        assert got.n_nodes == 1


@pytest.mark.parametrize("kw", [
    dict(max_leaves=31, min_samples_leaf=10),
    dict(max_leaves=63, max_depth=6, min_samples_leaf=20, min_samples_leaf_counts="hessian"),
    dict(max_leaves=15, min_samples_leaf=5, reg_lambda=1.0, reg_alpha=0.25),
])
def test_gpu_leafwise_tree_equals_cpu_leafwise_tree(kw):
    rng = np.random.default_rng(31)
    n, F, mb = 5000, 17, 63
    X, n_bins, grad, hess = _binned_problem(rng, n, F, mb)
    grad = (grad + rng.normal(scale=0.01, size=n)).astype(np.float32)  # not dyadic
    d = _device_binned(X, n_bins, mb)
    rows = np.sort(rng.choice(n, 4000, replace=False))
    mask = rng.random(F) < 0.8
    for r, m in ((None, None), (rows, mask)):
        ref = _cpu_tree(X, n_bins, mb, grad, hess, rows=r, mask=m, growth="leafwise", **kw)
        got = GPUTreeGrower(d, growth="leafwise", **kw).grow(
            cupy.asarray(grad), cupy.asarray(hess), rows=r, feature_mask=m, leaf_of_row=True)
        assert got.n_leaves > 2
        assert_same_tree(got, ref)


@pytest.mark.parametrize("batch", [1, 2, 5, 1000])
def test_gpu_leafwise_batches_grow_the_one_at_a_time_tree(batch):
    # speculative batches: the CPU's one-at-a-time tree whatever the batch size
    rng = np.random.default_rng(37)
    n, F, mb = 6000, 11, 31
    X, n_bins, grad, hess = _binned_problem(rng, n, F, mb)
    grad = (grad + rng.normal(scale=0.01, size=n)).astype(np.float32)
    d = _device_binned(X, n_bins, mb)
    kw = dict(max_leaves=40, min_samples_leaf=8)
    ref = _cpu_tree(X, n_bins, mb, grad, hess, growth="leafwise", **kw)
    grower = GPUTreeGrower(d, growth="leafwise", **kw)
    grower.leafwise_batch = batch
    for _ in range(2):  # the second tree reuses the histogram slots
        got = grower.grow(cupy.asarray(grad), cupy.asarray(hess), leaf_of_row=True)
        assert got.n_leaves == 40
        assert_same_tree(got, ref)
    scores = cupy.zeros(n, cupy.float64)
    grower.add_to_training_scores(scores)
    np.testing.assert_array_equal(scores.get(), got.value[got.leaf_of_row])


def test_histogram_slots_double_and_keep_their_contents():
    from skltr._gbdt.grower_cuda import HistogramSlots
    from skltr._gpu.histogram import zero_histograms

    slots = HistogramSlots(3, 5, 2)
    a, b = slots.acquire(2)
    slots.array[a] = 7
    slots.array[b] = 9
    c, d, e = slots.acquire(3)  # more than are free: the array doubles (2 -> 5)
    assert slots.array.shape == (5, 3, 5, 2) and {a, b, c, d, e} == set(range(5))
    assert (slots.array[a] == 7).all() and (slots.array[b] == 9).all()
    zero_histograms(slots.array, np.array([b, d], np.int64))
    assert (slots.array[b] == 0).all() and (slots.array[a] == 7).all()


def test_gpu_quantisation_statistics_and_rounding_equal_the_cpu():
    # the statistics behind the scales (skltr._gbdt.quantisation), exact on both devices:
    # subnormals, a negative zero, one hessian above 2**31 after scaling, a row subset
    from skltr._cpu.quantise import (N_ACCUMULATORS, N_FLOAT32_EXPONENTS, gh_accumulators,
                                     quantise_gradients_gh64)
    from skltr._gpu import quantise as gq

    rng = np.random.default_rng(40)
    n = 50_000
    grad = rng.standard_cauchy(n).astype(np.float32)
    hess = rng.uniform(0, 1, n).astype(np.float32)
    grad[:3] = [1e-40, -3e-42, -0.0]
    hess[3] = 0.0
    hess[4] = 40_000.0  # most of the hessian mass (q_h > 2**31 at the one-word scale)
    rows = np.sort(rng.choice(n, 30_000, replace=False)).astype(np.uint32)
    for r in (None, rows):
        n_used = n if r is None else r.size
        rd = None if r is None else cupy.asarray(r)
        acc, neg = gq.abs_sum_accumulators(cupy.asarray(grad), cupy.asarray(hess), rd, n_used)
        ref = np.zeros(N_ACCUMULATORS, np.int64)
        gh_accumulators(grad, hess, np.empty(0, np.uint32) if r is None else r, r is not None,
                        3, ref)
        assert ref[-1] == 0
        ref = ref[:-1].reshape(2, N_FLOAT32_EXPONENTS)
        np.testing.assert_array_equal(acc, ref)
        assert not neg
        if r is None:
            all_rows = ref
        sel = slice(None) if r is None else r
        gmax, hmax, neg = gq.gradient_maxima(cupy.asarray(grad), cupy.asarray(hess), rd,
                                             n_used)
        assert (gmax, hmax, neg) == (float(np.abs(grad[sel]).max()), float(hess[sel].max()),
                                     False)
    from skltr._gbdt.quantisation import one_word_scales

    s = one_word_scales(all_rows, n)
    qg, qh = cupy.zeros(n, cupy.int32), cupy.zeros(n, cupy.uint32)
    sums = gq.quantise(cupy.asarray(grad), cupy.asarray(hess), None, n, 2.0 ** s.kg,
                       2.0 ** s.kh, qg, qh)
    gh = np.empty(n, np.int64)
    quantise_gradients_gh64(grad, hess, 2.0 ** s.kg, 2.0 ** s.kh, gh, 2)
    assert qh.get().max() > 2**31  # the row with most of the hessian
    np.testing.assert_array_equal(qg.get().astype(np.int64), gh >> 32)
    np.testing.assert_array_equal(qh.get().astype(np.int64), gh & 0xFFFFFFFF)
    assert list(sums) == [int((gh >> 32).sum()), int((gh & 0xFFFFFFFF).sum())]
    hess[7] = -1e-3
    assert gq.abs_sum_accumulators(cupy.asarray(grad), cupy.asarray(hess), None, n)[1]
    hess[7] = -np.float32(np.nan)  # the CPU's rule too (gh_accumulators)
    assert gq.abs_sum_accumulators(cupy.asarray(grad), cupy.asarray(hess), None, n)[1]
    assert gq.gradient_maxima(cupy.asarray(grad), cupy.asarray(hess), None, n)[2]


def test_gpu_grower_asserts_its_invariants():
    # hyper-parameters are validated once, by the estimator; the engine asserts
    d = _device_binned(np.zeros((4, 2), np.uint8), np.full(2, 2, np.int32), 3)
    with pytest.raises(AssertionError):
        GPUTreeGrower(d, growth="breadth")
    with pytest.raises(AssertionError):
        GPUTreeGrower(d, min_samples_leaf_counts="weights")


# ---------------------------------------------------------------------------- objectives
def _queries(rng, sizes, levels=5):
    group_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(group_ptr[-1])
    y = rng.integers(0, levels, size=n).astype(np.float64)
    scores = rng.normal(size=n)
    scores[:50] = np.round(scores[:50])  # ties inside queries
    return y, group_ptr, scores


@pytest.mark.parametrize("name", ["lambdarank", "rank_pairwise"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shared_max", [1024, 8])
def test_pair_gradients_match_cpu(name, weighted, shared_max):
    rng = np.random.default_rng(7)
    # 1-document queries, an all-equal-labels query, small, medium and a 5,000-doc query
    sizes = [1, 2, 7, 120, 1, 300, 5000, 33, 1024, 1025]
    y, group_ptr, scores = _queries(rng, sizes)
    y[group_ptr[2]:group_ptr[3]] = 2.0
    w = rng.random(y.size) + 0.5 if weighted else None
    n = y.size
    obj = make_objective(name, truncation_level=None if name == "rank_pairwise" else 30)
    g_cpu, h_cpu = np.empty(n, np.float32), np.empty(n, np.float32)
    obj.gradients(scores, y, group_ptr, w, g_cpu, h_cpu, 0)
    with _config.override(QUERY_SHARED_MAX_DOCS=shared_max):
        gobj = make_cuda_gradients(obj, y, group_ptr, w)
    g, h = cupy.empty(n, cupy.float32), cupy.empty(n, cupy.float32)
    gobj.gradients(cupy.asarray(scores), g, h, 0)
    # the CPU's order of every sum, its exp and log2: the same bits (issue #27)
    np.testing.assert_array_equal(g.get(), g_cpu)
    np.testing.assert_array_equal(h.get(), h_cpu)
    for q in (0, 2, 4):  # 1 document, equal labels, 1 document
        assert not g.get()[group_ptr[q]:group_ptr[q + 1]].any()


def test_libm_exp_and_log2_are_the_same_bits_on_both_devices():
    # skltr._cpu.libm (numba) and skltr._gpu.libm (CUDA): one sequence of IEEE operations
    from numba import njit

    from skltr._cpu import libm
    from skltr._gpu._compile import module
    from skltr._gpu.libm import SOURCE

    @njit
    def host(x, e, lg):
        for i in range(x.size):
            e[i] = libm.exp(x[i])
            lg[i] = libm.log2(abs(x[i]) + 1.0)

    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-746, 710, 200_000), rng.uniform(-1, 1, 200_000),
                        rng.normal(scale=1e-6, size=1000),
                        [0.0, -0.0, 709.78, -745.1, 0.3465735902799726, -0.3465735902799727,
                         3.7e-9, -3.8e-9, 1e-300, np.nan]])
    e, lg = np.empty_like(x), np.empty_like(x)
    host(x, e, lg)
    kern = module(SOURCE + r"""
    extern "C" __global__ void run(const double* x, i64 n, double* e, double* lg) {
        const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { e[i] = det_exp(x[i]); lg[i] = det_log2(fabs(x[i]) + 1.0); }
    }""").get_function("run")
    xd = cupy.asarray(x)
    ed, lgd = cupy.empty_like(xd), cupy.empty_like(xd)
    kern((-(-x.size // 256),), (256,), (xd, np.int64(x.size), ed, lgd))
    np.testing.assert_array_equal(ed.get(), e)
    np.testing.assert_array_equal(lgd.get(), lg)
    ok = np.isfinite(x) & (np.abs(x) < 700)
    np.testing.assert_allclose(e[ok], np.exp(x[ok]), rtol=3e-16)


def test_pair_gradients_are_deterministic_and_regression_exact():
    rng = np.random.default_rng(8)
    y, group_ptr, scores = _queries(rng, [120] * 50 + [3000])
    obj = make_objective("lambdarank")
    gobj = make_cuda_gradients(obj, y, group_ptr)
    outs = []
    for _ in range(2):
        g, h = cupy.empty(y.size, cupy.float32), cupy.empty(y.size, cupy.float32)
        gobj.gradients(cupy.asarray(scores), g, h)
        outs.append((g.get(), h.get()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    reg = make_objective("regression")
    g_cpu, h_cpu = np.empty(y.size, np.float32), np.empty(y.size, np.float32)
    reg.gradients(scores, y, group_ptr, None, g_cpu, h_cpu, 0)
    g, h = cupy.empty(y.size, cupy.float32), cupy.empty(y.size, cupy.float32)
    make_cuda_gradients(reg, y, group_ptr).gradients(cupy.asarray(scores), g, h)
    np.testing.assert_array_equal(g.get(), g_cpu)
    np.testing.assert_array_equal(h.get(), h_cpu)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [0, 123456789])
def test_xendcg_gradients_match_cpu(weighted, seed):
    # the CPU kernel is checked against LightGBM's rank_xendcg (tests/test_objectives.py);
    # the GPU must give the same gammas (same jump-ahead) and the same series
    rng = np.random.default_rng(8)
    sizes = [1, 2, 7, 120, 1, 300, 5000, 33]
    y, group_ptr, scores = _queries(rng, sizes)
    y[group_ptr[2]:group_ptr[3]] = 2.0  # equal labels: still gradients under XE-NDCG
    scores[group_ptr[6]:group_ptr[6] + 3] += 40.0  # one document holds nearly all the mass
    w = rng.random(y.size) + 0.5 if weighted else None
    obj = make_objective("rank_xendcg", random_state=seed)
    gobj = make_cuda_gradients(obj, y, group_ptr, w)
    for it in (0, 1, 7):
        g_cpu, h_cpu = np.empty(y.size, np.float32), np.empty(y.size, np.float32)
        obj.gradients(scores, y, group_ptr, w, g_cpu, h_cpu, it)
        g, h = cupy.empty(y.size, cupy.float32), cupy.empty(y.size, cupy.float32)
        gobj.gradients(cupy.asarray(scores), g, h, it)
        np.testing.assert_array_equal(g.get(), g_cpu)
        np.testing.assert_array_equal(h.get(), h_cpu)
        assert np.any(g.get()[group_ptr[2]:group_ptr[3]])
        for q in (0, 4):  # single documents
            assert not g.get()[group_ptr[q]:group_ptr[q + 1]].any()


def test_xendcg_gpu_fit_matches_cpu_ndcg():
    X, y, qid = _data(6, n_queries=300)
    Xtr, Xte, ytr, yte, qtr, qte = train_test_split_by_query(X, y, qid=qid, test_size=0.25,
                                                             random_state=0)
    params = dict(objective="rank_xendcg", n_estimators=40, max_depth=5, max_leaves=None,
                  growth="depthwise", min_samples_leaf=5, learning_rate=0.2,
                  early_stopping=False, random_state=3)
    scores = {}
    for device in ("cpu", "cuda"):
        model = GPUHistGBDTRanker(**params, device=device).fit(Xtr, ytr, qid=qtr)
        scores[device] = ndcg_score(yte, model.predict(Xte), qid=qte, k=10)
    again = GPUHistGBDTRanker(**params, device="cuda").fit(Xtr, ytr, qid=qtr)
    assert ndcg_score(yte, again.predict(Xte), qid=qte, k=10) == scores["cuda"]
    assert abs(scores["cuda"] - scores["cpu"]) <= 0.002, scores


# --------------------------------------------------------------------- whole fits, shared
def _data(seed=0, n_queries=150, docs=40, n_features=12):
    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=docs, n_features=n_features,
                             n_informative=6, random_state=seed, dtype=np.float64,
                             nan_fraction=0.05)
    return X, y, qid


def boost(X, y, group_ptr, *, objective, device, eval_sets=(), **params):
    """The boosting loop of ``device`` (what the estimator picks), parameters as keywords."""
    # the GPU needs quantised histograms: the default of these tests on both devices
    tree = TreeParams(**{"hist_mode": "quantised", **params.pop("tree_params", {})})
    p = BoostParams(tree=tree, **params)
    from skltr._gbdt.boosting import boost as boost_on_device

    return boost_on_device(X, y, group_ptr, None, objective, p, eval_sets, device=device)


def run_boost(device, objective="regression", counts="rows", growth="depthwise"):
    """The boosting loop on one device with quantised histograms (shared body)."""
    from skltr._device import resolve_device

    X, y, qid = _data(1)
    order = np.argsort(qid, kind="stable")
    X, y, qid = X[order], y[order], qid[order]
    group_ptr = np.concatenate([[0], np.cumsum(np.unique(qid, return_counts=True)[1])])
    return boost(X, y, group_ptr, objective=make_objective(objective),
                 objective_name=objective, n_estimators=6, max_bins=63,
                 tree_params=dict(max_leaves=10**6 if growth == "depthwise" else 24,
                                  max_depth=5 if growth == "depthwise" else None,
                                  growth=growth,
                                  min_samples_leaf=5, learning_rate=0.3,
                                  min_samples_leaf_counts=counts, hist_mode="quantised"),
                 subsample=0.8, colsample_bytree=0.7, seed=3,
                 device=resolve_device(device))


@pytest.mark.parametrize("growth", ["depthwise", "leafwise"])
@pytest.mark.parametrize("counts", ["rows", "hessian"])
def test_regression_fit_gives_the_same_trees_on_both_devices(counts, growth):
    cpu = run_boost("cpu", counts=counts, growth=growth)
    gpu = run_boost("cuda", counts=counts, growth=growth)
    a, b = cpu.ensemble, gpu.ensemble
    for name in ("tree_ptr", "feature", "threshold", "left", "right", "value", "flags"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name), err_msg=name)


SAME_MODEL_CASES = {
    "defaults": {},
    "depthwise": dict(growth="depthwise", max_depth=6, max_leaves=None),
    "xendcg": dict(objective="rank_xendcg"),
    "yetirank": dict(objective="yetirank"),
    "pairwise": dict(objective="rank_pairwise", min_samples_leaf_counts="rows"),
    "63_leaves_63_bins_sampled": dict(max_leaves=63, max_bins=63, subsample=0.8,
                                      colsample_bytree=0.8),
}


def assert_same_model(a, b, rtol=1e-9):
    """Same trees (splits and thresholds), leaf values equal to ``rtol`` relative."""
    for name in ("tree_ptr", "feature", "threshold", "left", "right", "flags"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name), err_msg=name)
    np.testing.assert_allclose(b.value, a.value, rtol=rtol, atol=0)


@pytest.mark.parametrize("case", list(SAME_MODEL_CASES))
def test_cpu_and_gpu_fits_give_the_same_model(case):
    # issue #27: one growth driver and one quantisation rule on both devices, so the same
    # parameters (the defaults included) give the same trees for 100 rounds
    X, y, qid = _data(11, n_queries=300)
    params = dict(n_estimators=100, random_state=5, **SAME_MODEL_CASES[case])
    cpu = GPUHistGBDTRanker(**params, device="cpu").fit(X, y, qid=qid)
    gpu = GPUHistGBDTRanker(**params, device="cuda").fit(X, y, qid=qid)
    assert_same_model(cpu.to_tree_ensemble(), gpu.to_tree_ensemble())


def fit_ranker(device, **kw):
    X, y, qid = _data(2, n_queries=300)
    Xtr, Xte, ytr, yte, qtr, qte = train_test_split_by_query(X, y, qid=qid, test_size=0.25,
                                                             random_state=0)
    params = dict(n_estimators=40, max_depth=5, max_leaves=None, growth="depthwise",
                  min_samples_leaf=5, learning_rate=0.2, early_stopping=False,
                  random_state=0, device=device, **kw)
    model = GPUHistGBDTRanker(**params).fit(Xtr, ytr, qid=qtr)
    return model, ndcg_score(yte, model.predict(Xte), qid=qte, k=10), (Xte, yte, qte)


@pytest.mark.parametrize("counts", ["hessian", "rows"])
def test_lambdarank_gpu_ndcg_matches_cpu(counts):
    _, ndcg_cpu, _ = fit_ranker("cpu", min_samples_leaf_counts=counts)
    model, ndcg_gpu, _ = fit_ranker("cuda", min_samples_leaf_counts=counts)
    assert model.device_ == "cuda:0"
    assert abs(ndcg_gpu - ndcg_cpu) <= 0.002, (ndcg_gpu, ndcg_cpu)


def test_gpu_fit_is_deterministic_pickles_and_predicts_on_cpu():
    a, _, (Xte, _, _) = fit_ranker("cuda:0", subsample=0.8, colsample_bytree=0.8)
    b, _, _ = fit_ranker("cuda:0", subsample=0.8, colsample_bytree=0.8)
    ea, eb = a.to_tree_ensemble(), b.to_tree_ensemble()
    for name in ("tree_ptr", "feature", "threshold", "left", "right", "value", "flags"):
        np.testing.assert_array_equal(getattr(ea, name), getattr(eb, name), err_msg=name)
    clone = pickle.loads(pickle.dumps(a))
    for v in vars(clone).values():
        assert not isinstance(v, cupy.ndarray)
    np.testing.assert_array_equal(clone.predict(Xte), a.predict(Xte))


def test_float32_X_gives_the_same_gpu_model_as_float64():
    # float32 X is uploaded and binned as float32 (a float32 value widened to double compares
    # with a float64 cut exactly): same cuts, same bins, same trees as its float64 widening
    X, y, qid = _data(5, n_queries=300)  # NaN included
    X32 = X.astype(np.float32)
    params = dict(n_estimators=15, max_depth=5, growth="depthwise", min_samples_leaf=5,
                  early_stopping=False, random_state=0, device="cuda")
    a = GPUHistGBDTRanker(**params).fit(X32, y, qid=qid)
    b = GPUHistGBDTRanker(**params).fit(X32.astype(np.float64), y, qid=qid)
    assert a.to_tree_ensemble().equals(b.to_tree_ensemble())
    np.testing.assert_array_equal(a.predict(X32), b.predict(X32.astype(np.float64)))
    assert a.to_tree_ensemble().n_trees == 15


def test_binning_routes_give_the_same_model():
    # host X (sample gathered on the host, X streamed in chunks of BIN_CHUNK_ROWS) and CuPy X
    # (sample gathered and X binned on the device, one launch): same cuts, same trees
    from skltr._device import resolve_device

    X, y, qid = _data(6, n_queries=300)
    order = np.argsort(qid, kind="stable")
    X, y, qid = X[order], y[order], qid[order]
    group_ptr = np.r_[0, np.cumsum(np.unique(qid, return_counts=True)[1])].astype(np.int64)
    kw = dict(objective=make_objective("lambdarank"), objective_name="lambdarank",
              n_estimators=6, max_bins=63, seed=1, device=resolve_device("cuda"),
              tree_params=dict(max_depth=5, growth="depthwise", min_samples_leaf=5))
    a = boost(X, y, group_ptr, **kw).ensemble
    with _config.override(BIN_CHUNK_ROWS=1000):  # 12 chunks and a short last one
        b = boost(X, y, group_ptr, **kw).ensemble
    c = boost(cupy.asarray(X), y, group_ptr, **kw).ensemble
    assert a.n_trees == 6 and a.equals(b) and a.equals(c)


@pytest.mark.parametrize("where", ["train", "validation split", "eval_set"])
def test_gpu_fit_refuses_inf_found_by_the_binning_kernels(where):
    # on the GPU the estimator skips its host search for +-inf (boost(reject_inf=True)):
    # the binning kernels must find it in the training rows, the held-out queries and eval sets
    from skltr._engine.rounds import split_queries

    X, y, qid = _data(7, n_queries=300)  # 12,000 rows: "auto" early stopping holds out queries
    params = dict(n_estimators=3, max_depth=3, growth="depthwise", random_state=0,
                  device="cuda")
    model = GPUHistGBDTRanker(**params)
    order = np.argsort(qid, kind="stable")
    group_ptr = np.r_[0, np.cumsum(np.unique(qid, return_counts=True)[1])]
    seed = int(np.random.RandomState(0).randint(np.iinfo(np.int32).max))
    train, val = split_queries(group_ptr, model.validation_fraction, seed)
    bad = X.copy()
    eval_set = None
    if where == "eval_set":
        Xe = X.copy()
        Xe[7, 2] = -np.inf
        eval_set = [(Xe, y, qid)]
    else:
        row = order[np.flatnonzero(train if where == "train" else val)[5]]
        bad[row, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        model.fit(bad, y, qid=qid, eval_set=eval_set)
    assert not hasattr(model, "ensemble_")
    # the same X without inf fits
    GPUHistGBDTRanker(**params).fit(np.where(np.isinf(bad), 1e300, bad), y, qid=qid)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_boost_reject_inf_on_both_devices(device):
    from skltr._device import resolve_device
    from skltr._engine.rounds import EvalData

    X, y, qid = _data(8, n_queries=30)
    order = np.argsort(qid, kind="stable")
    X, y, qid = X[order], y[order], qid[order]
    group_ptr = np.r_[0, np.cumsum(np.unique(qid, return_counts=True)[1])].astype(np.int64)
    kw = dict(objective=make_objective("regression"), objective_name="regression",
              n_estimators=2, max_bins=15, device=resolve_device(device),
              tree_params=dict(max_depth=3, growth="depthwise", hist_mode="quantised"))
    Xe = X.copy()
    Xe[3, 1] = -np.inf
    ev = [EvalData("e", Xe, y, group_ptr)]
    boost(X, y, group_ptr, eval_sets=ev, **kw)  # +-inf allowed unless rejected
    with pytest.raises(ValueError, match="infinity"):
        boost(X, y, group_ptr, eval_sets=ev, reject_inf=True, **kw)
    with pytest.raises(ValueError, match="infinity"):
        boost(Xe, y, group_ptr, reject_inf=True, **kw)
    boost(X, y, group_ptr, reject_inf=True, **kw)


def test_gpu_fit_accepts_cupy_inputs_and_eval_sets():
    X, y, qid = _data(3, n_queries=60)
    params = dict(n_estimators=5, max_depth=3, growth="depthwise", min_samples_leaf=3,
                  random_state=0, device="cuda")
    a = GPUHistGBDTRanker(**params, early_stopping=True, n_iter_no_change=2).fit(
        cupy.asarray(X), cupy.asarray(y), qid=cupy.asarray(qid),
        eval_set=[(cupy.asarray(X), cupy.asarray(y), cupy.asarray(qid))])
    b = GPUHistGBDTRanker(**params, early_stopping=True, n_iter_no_change=2).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)])
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert len(a.evals_result_["valid_0"]["ndcg@10"]) == a.n_iter_
    cpu = GPUHistGBDTRanker(**{**params, "device": "cpu"}, early_stopping=True,
                            n_iter_no_change=2).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    np.testing.assert_allclose(a.evals_result_["valid_0"]["ndcg@10"][:2],
                               cpu.evals_result_["valid_0"]["ndcg@10"][:2], atol=0.01)


def test_leafwise_gpu_lambdarank_fit_is_deterministic():
    # The estimator's default growth on the GPU. (Leaf-wise lambdarank fits of the two
    # devices drift apart over rounds through the gradients' float summation order -- 0.657
    # vs 0.667 NDCG@10 on this 75-query test set against the CPU's two-word bins; trees from
    # equal gradients are identical: test_gpu_leafwise_tree_equals_cpu_leafwise_tree and the
    # regression fits above.)
    X, y, qid = _data(7, n_queries=300)
    params = dict(n_estimators=15, max_leaves=31, min_samples_leaf=5, learning_rate=0.2,
                  early_stopping=False, random_state=0, device="cuda")
    a = GPUHistGBDTRanker(**params).fit(X, y, qid=qid)
    b = GPUHistGBDTRanker(**params).fit(X, y, qid=qid)
    assert a.to_tree_ensemble().equals(b.to_tree_ensemble())
    assert a.to_tree_ensemble().n_trees == 15 and a.predict(X).std() > 0


def test_unsupported_gpu_options_raise_clear_errors():
    X, y, qid = _data(4, n_queries=20)
    with pytest.raises(NotImplementedError, match="hist_mode='float'"):
        GPUHistGBDTRanker(device="cuda", growth="depthwise", max_depth=3,
                          hist_mode="float").fit(X, y, qid=qid)


# ---------------------------------------------------------------------------- sparse X
def _sparse_columns(rng, n, dtype):
    """LETOR-like columns: mostly zero, NaN, +-inf, -0.0, an all-zero and a dense column."""
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < 0.7] = 0.0
    X[rng.random(X.shape) < 0.03] = np.nan
    X[:, 3] = 0.0
    X[:, 5] = rng.normal(size=n)
    X[0, 0], X[1, 0], X[2, 1] = np.inf, -np.inf, -0.0
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_X_bins_on_the_gpu_as_its_dense_form(dtype):
    # Host CSR / CSC: the cut sample densified on the host, then X densified chunk by chunk
    # into the staging buffer; the codes are those of the dense matrix (exact).
    import scipy.sparse as sp

    from skltr._gpu.binning import fit_bin_mapper

    rng = np.random.default_rng(11)
    for n, max_bins in [(3000, 63), (200_500, 255)]:  # 200,500 rows: the sample path
        X = _sparse_columns(rng, n, dtype)
        ref = BinMapper(max_bins=max_bins, random_state=4).fit(X)
        expected = ref.transform(X)
        keep = (X != 0) | np.isnan(X) | np.signbit(X) | (rng.random(X.shape) < 0.5)
        rows, cols = np.nonzero(keep)  # every non-zero and half the zeros stored
        stored0 = sp.csr_matrix((X[rows, cols], (rows, cols)), shape=X.shape)
        for M in (sp.csr_matrix(X), sp.csc_matrix(X), stored0, sp.csr_array(X)):
            got = fit_bin_mapper(M, max_bins, 4)
            np.testing.assert_array_equal(got.cut_ptr, ref.cut_ptr)
            np.testing.assert_array_equal(got.cut_values, ref.cut_values)
            with _config.override(BIN_CHUNK_ROWS=997):  # several host chunks
                d = DeviceBinned.from_mapper(M, got)
            np.testing.assert_array_equal(d.X_bytes.get()[:, :X.shape[1]], expected)
            np.testing.assert_array_equal(d.has_missing, ref.has_missing)
            assert d.has_inf


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_fit_gives_the_dense_model_on_the_gpu(dtype):
    # The body shared with the CPU test (tests/test_sparse_input.py): CSR / CSC training and
    # eval sets give the dense fit's trees bit for bit on the GPU too.
    from test_sparse_input import run_sparse_fit_equivalence

    with _config.override(BIN_CHUNK_ROWS=97):
        run_sparse_fit_equivalence("cuda", dtype)


def test_gpu_hessian_counts_left_default_counts_invisible_missing_rows():
    # Missing rows with zero gradients and hessians follow a left default: the left child's
    # count includes them, and the partition buffer is cut there. The count left out once
    # made a child's range overlap its sibling's (illegal addresses in the histogram kernel
    # of leaf-wise fits with query and feature subsampling).
    mb = 3
    X = np.repeat(np.array([0, 1, mb], np.uint8), [15, 10, 5])[:, None].copy()
    grad = np.repeat(np.array([-1, 1, 0], np.float32), [15, 10, 5])
    hess = np.repeat(np.array([1, 1, 0], np.float32), [15, 10, 5])
    n_bins = np.array([2], np.int32)
    kw = dict(max_leaves=2, min_samples_leaf=1, min_samples_leaf_counts="hessian")
    ref = _cpu_tree(X, n_bins, mb, grad, hess, **kw)
    got = GPUTreeGrower(_device_binned(X, n_bins, mb), **kw).grow(
        cupy.asarray(grad), cupy.asarray(hess), leaf_of_row=True)
    assert_same_tree(got, ref)
    assert list(got.count[1:]) == [20, 10]


@pytest.mark.parametrize("growth", ["leafwise", "depthwise"])
def test_gpu_fit_with_query_and_feature_subsampling_is_deterministic(growth):
    # lambdarank (zero gradients in equal-label queries), 3% NaN, both subsamples: the case
    # that crashed; two fits give the same trees, equal to the CPU's two-word trees.
    X, y, qid = make_ranking(n_queries=60, docs_per_query=20, n_features=12,
                             n_informative=6, random_state=0, nan_fraction=0.03)
    p = dict(n_estimators=8, max_leaves=15, min_samples_leaf=5, max_bins=31, subsample=0.8,
             colsample_bytree=0.8, random_state=0, growth=growth, max_depth=4)
    a = GPUHistGBDTRanker(device="cuda", **p).fit(X, y, qid=qid).ensemble_
    b = GPUHistGBDTRanker(device="cuda", **p).fit(X, y, qid=qid).ensemble_
    assert a.equals(b)


def test_every_objective_has_a_device_implementation():
    from skltr._gbdt import objectives_cuda
    from skltr._gbdt.objectives import OBJECTIVES, make_objective

    # one registry: every objective names its CUDA class, which exists and gives the CPU's
    # gradients
    assert all(isinstance(getattr(objectives_cuda, cls.cuda_gradients), type)
               for cls in OBJECTIVES.values())
    y = np.array([2.0, 0.0, 1.0, 1.0, 0.0])
    gp = np.array([0, 3, 5])
    for name in OBJECTIVES:
        host = make_objective(name, random_state=0)
        g_cpu, h_cpu = np.empty(5, np.float32), np.empty(5, np.float32)
        host.gradients(np.zeros(5), y, gp, None, g_cpu, h_cpu, 0)
        dev = make_cuda_gradients(host, y, gp)
        g, h = cupy.empty(5, cupy.float32), cupy.empty(5, cupy.float32)
        dev.gradients(cupy.zeros(5), g, h, 0)
        np.testing.assert_array_equal(g.get(), g_cpu)
        np.testing.assert_array_equal(h.get(), h_cpu)


def test_cuda_leaf_objective_is_the_cpu_formula():
    # one formula, two devices: the split kernel's CUDA leaf_objective against the numba one
    # on edge cases (alpha around |G|, H + lambda at and below 0) and random values
    from skltr._cpu.split import leaf_objective
    from skltr._gpu import split as gsplit
    from skltr._gpu._compile import module

    rng = np.random.default_rng(0)
    G = np.r_[[0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0], rng.normal(0, 10, 500)]
    H = np.r_[[1.0, 0.0, -1.0, 1e-300, 2.0, 0.5, -0.5], rng.uniform(-1, 50, 500)]
    lam = np.r_[[0.0, 0.0, 1.0, 0.0, 0.5, 1.0, 0.5], rng.uniform(0, 2, 500)]
    alpha = np.r_[[0.0, 1.0, 1.0, 0.5, 0.5, 0.0, 3.0], rng.uniform(0, 3, 500)]
    src = gsplit._SOURCE + r"""
extern "C" __global__ void eval_leaf_objective(const double* G, const double* H,
        const double* lam, const double* alpha, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = leaf_objective(G[i], H[i], lam[i], alpha[i]);
}
"""
    out = cupy.empty(G.size)
    module(src).get_function("eval_leaf_objective")(
        (4,), (256,), tuple(cupy.asarray(a) for a in (G, H, lam, alpha)) + (out,
                                                                            np.int32(G.size)))
    want = np.array([leaf_objective(*v) for v in zip(G, H, lam, alpha)])
    np.testing.assert_array_equal(out.get(), want)


@pytest.mark.parametrize("settings", [{}, {"growth": "depthwise", "max_depth": 4,
                                           "subsample": 0.8, "colsample_bytree": 0.6}])
def test_continued_gpu_fit_is_the_long_fit_on_both_devices(settings):
    # init_model and warm_start on the GPU: the rounds start from the starting model's scores
    # (a CuPy copy of the host traversal's) and continue its numbering: the long fit's trees
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=120, docs_per_query=25, n_features=16,
                             n_informative=8, random_state=9)
    X[::13, 4] = np.nan
    kw = dict(max_leaves=15, random_state=4, **settings)
    long_cpu = GPUHistGBDTRanker(n_estimators=30, **kw).fit(X, y, qid=qid)
    long_gpu = GPUHistGBDTRanker(n_estimators=30, device="cuda", **kw).fit(X, y, qid=qid)
    assert long_gpu.ensemble_.equals(long_cpu.ensemble_)
    start = GPUHistGBDTRanker(n_estimators=11, **kw).fit(X, y, qid=qid)  # on the CPU
    more = GPUHistGBDTRanker(n_estimators=19, device="cuda", **kw).fit(
        X, y, qid=qid, init_model=start)
    assert more.ensemble_.equals(long_cpu.ensemble_)
    warm = GPUHistGBDTRanker(n_estimators=11, device="cuda", warm_start=True, **kw).fit(
        X, y, qid=qid)
    warm.set_params(n_estimators=30).fit(X, y, qid=qid)
    assert warm.ensemble_.equals(long_cpu.ensemble_)
    # a GPU model's truncated scores come from the GPU scorer: the CPU's, bit for bit
    for rounds in ((0, 7), (3, 17), (29, 30)):
        np.testing.assert_array_equal(long_gpu.predict(X, iteration_range=rounds),
                                      long_cpu.predict(X, iteration_range=rounds))
    np.testing.assert_array_equal(list(long_gpu.staged_predict(X))[12],
                                  long_gpu.predict(X, iteration_range=(0, 13)))


@pytest.mark.parametrize("growth", ["leafwise", "depthwise"])
def test_constrained_gpu_fit_is_the_cpu_fit(growth):
    # monotone bounds and per-node interaction masks in the CUDA split search: the CPU's
    # trees, bit for bit (the constraints' own checks: tests/test_constraints.py)
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=150, docs_per_query=25, n_features=12,
                             n_informative=8, random_state=5)
    X[::7, 2] = np.nan
    kw = dict(n_estimators=25, max_leaves=15, max_depth=5, growth=growth, random_state=1,
              reg_alpha=0.2)
    for constraints in ({"monotone_constraints": [1, -1, 1, 0, 0, -1] + [0] * 6},
                        {"interaction_constraints": [[0, 1, 2], [3, 4, 5, 6], [7, 8]]},
                        {"monotone_constraints": [1, 0, 0, 0, -1] + [0] * 7,
                         "interaction_constraints": [[0, 1, 2, 3], [4, 5, 6]]},
                        {"monotone_constraints": [1, -1, 1, 0, 0, -1] + [0] * 6,
                         "monotone_constraints_method": "intermediate"}):
        if growth == "depthwise" and "monotone_constraints_method" in constraints:
            continue  # intermediate is leaf-wise only
        cpu = GPUHistGBDTRanker(**kw, **constraints).fit(X, y, qid=qid)
        gpu = GPUHistGBDTRanker(device="cuda", **kw, **constraints).fit(X, y, qid=qid)
        assert gpu.ensemble_.equals(cpu.ensemble_), constraints


@pytest.mark.parametrize("growth", ["leafwise", "depthwise"])
def test_categorical_gpu_fit_is_the_cpu_fit(growth):
    # categorical splits: bins by category on the GPU (host-found bins written to the
    # device matrix), the split decided on the host from the device histograms by the CPU's
    # rule, the set partition and the eval / subsample scores read the left bins: the
    # CPU's trees, bit for bit (the split rule's own checks: tests/test_categorical.py)
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=300, docs_per_query=25, n_features=12,
                             n_informative=8, categorical_levels=(3, 40, 2000),
                             random_state=5)
    X[::9, -2] = np.nan
    cat = [X.shape[1] - 3, X.shape[1] - 2, X.shape[1] - 1]
    kw = dict(n_estimators=20, max_leaves=15, max_depth=6, growth=growth, random_state=1,
              categorical_features=cat, min_data_per_group=20, cat_smooth=5.0)
    evals = [(X[:600], y[:600], qid[:600])]
    # the 2000-level column keeps more categories than bins (wide: uint16 codes, extra
    # histogram rows built by their own kernel, longer left sets); at 16 bins so does the
    # 40-level one, over several histogram rows
    assert BinMapper(categorical=cat).fit(X).wide.tolist() == [cat[2]]
    assert BinMapper(max_bins=16, categorical=cat).fit(X).wide.tolist() == cat[1:]
    for extra in ({}, {"subsample": 0.7, "colsample_bytree": 0.8},
                  {"interaction_constraints": [[0, 1, cat[1]], [cat[2], 3]]},
                  {"max_cat_to_onehot": 64}, {"max_bins": 16, "subsample": 0.8}):
        cpu = GPUHistGBDTRanker(**kw, **extra).fit(X, y, qid=qid, eval_set=evals)
        gpu = GPUHistGBDTRanker(device="cuda", **kw, **extra).fit(X, y, qid=qid,
                                                                   eval_set=evals)
        assert np.any(cpu.ensemble_.flags & NodeFlags.CATEGORICAL), extra
        used = set(cpu.ensemble_.feature[cpu.ensemble_.flags & NodeFlags.CATEGORICAL > 0])
        assert cat[2] in used, extra
        assert gpu.ensemble_.equals(cpu.ensemble_), extra
        assert gpu.evals_result_ == cpu.evals_result_, extra


def test_partition_level_reads_categorical_left_bins():
    from skltr._gpu.partition import partition_info, partition_level

    rng = np.random.default_rng(3)
    n = 5000
    X = rng.integers(0, 200, size=(n, 4)).astype(np.uint8)
    bits = np.zeros(4, np.uint64)
    left = rng.choice(200, 70, replace=False)
    for b in left:
        bits[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    # node 0 splits on feature 2 by category; one threshold split beside it would need a
    # second node: the root alone, then the children's range
    info = partition_info(3, [(0, 2, 0, 0, 0, n, 1, 2)], [bits])
    buf = cupy.arange(n, dtype=cupy.uint32)
    pos = cupy.zeros(n, cupy.int32)
    new_buf, new_pos, n_left = partition_level(buf, pos, cupy.asarray(X), 255, 3, info,
                                               left_counts=True, n_splits=1)
    goes_left = np.isin(X[:, 2], left)
    expected = np.concatenate([np.flatnonzero(goes_left), np.flatnonzero(~goes_left)])
    np.testing.assert_array_equal(new_buf.get(), expected)
    assert n_left[0] == goes_left.sum()


def test_partition_and_scores_read_wide_codes():
    # a split on a wide categorical feature reads its uint16 column and a longer left set,
    # beside a threshold split of a byte feature in the same launch; binned scoring too
    from skltr._engine.binned_tree import GrownTree
    from skltr._gpu.binned import DeviceBinned
    from skltr._gpu.partition import partition_info, partition_level
    from skltr._gpu.predict_binned import DeviceTree, add_tree_binned

    rng = np.random.default_rng(4)
    n = 6000
    X = rng.integers(0, 250, size=(n, 4)).astype(np.uint8)
    codes = rng.integers(0, 1001, size=(n, 2)).astype(np.uint16)  # 1000 codes + missing
    words = (1000 + 64) // 64
    bits = np.zeros(words, np.uint64)
    left = rng.choice(1000, 400, replace=False)
    for b in left:
        bits[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    # node 0 (rows 0..n/2) on wide column 1 (feature 3); node 1 (the rest) by threshold
    half = n // 2
    splits = [(0, 3, 0, 0, 0, half, 2, 3), (1, 1, 100, 0, half, n, 4, 5)]
    info = partition_info(6, splits, [bits, None], [1, -1])
    buf = cupy.arange(n, dtype=cupy.uint32)
    pos = cupy.asarray(np.repeat([0, 1], [half, n - half]).astype(np.int32))
    new_buf, new_pos, n_left = partition_level(buf, pos, cupy.asarray(X), 255, 6, info,
                                               left_counts=True, n_splits=2,
                                               X_wide=cupy.asarray(codes))
    a = np.isin(codes[:half, 1], left)
    b_ = X[half:, 1] <= 100
    expected = np.concatenate([np.flatnonzero(a), np.flatnonzero(~a),
                               half + np.flatnonzero(b_), half + np.flatnonzero(~b_)])
    np.testing.assert_array_equal(new_buf.get(), expected)
    np.testing.assert_array_equal(n_left, [a.sum(), b_.sum()])
    # the same split as a grown tree, scored on the binned matrix (CPU and GPU)
    cat_bits = np.zeros((3, words), np.uint64)
    cat_bits[0] = bits
    tree = GrownTree(np.array([3, -1, -1], np.int32), np.array([-1, -1, -1], np.int32),
                     np.zeros(3, bool), np.array([1, -1, -1], np.int32),
                     np.array([2, -1, -1], np.int32), np.array([0.0, 1.5, -2.0]),
                     np.zeros(3), np.zeros(3, np.int64), np.zeros(3), None, None, 255,
                     cat_bits)
    d = DeviceBinned(cupy.asarray(X), 4, np.full(4, 250, np.int32), 255)
    d.X_wide = cupy.asarray(codes)
    d.wide_of = cupy.asarray(np.array([-1, -1, 0, 1], np.int32))
    scores = cupy.zeros(n, cupy.float64)
    add_tree_binned(d, DeviceTree(tree), scores)
    want = np.where(np.isin(codes[:, 1], left), 1.5, -2.0)
    np.testing.assert_array_equal(scores.get(), want)
    host = np.zeros(n)
    tree.add_to_scores(X, host, 2, (codes, np.array([-1, -1, 0, 1], np.int64)))
    np.testing.assert_array_equal(host, want)


def test_wide_histograms_match_numpy():
    from skltr._gpu.histogram import build_wide_histograms

    rng = np.random.default_rng(6)
    n, nf, W = 20000, 3, 256
    n_bins = np.array([900, 300])
    n_rows = -(-(n_bins + 1) // W)
    offsets = np.concatenate([[0], np.cumsum(n_rows)[:-1]]) * W
    codes = np.column_stack([rng.integers(0, b + 1, n) for b in n_bins]).astype(np.uint16)
    qg = rng.integers(-1000, 1000, n).astype(np.int32)
    qh = rng.integers(0, 1000, n).astype(np.uint32)
    rows = rng.permutation(n).astype(np.uint32)
    shift = 40
    slots = 3
    hist = cupy.zeros((slots, nf + int(n_rows.sum()), W, 2), cupy.int64)
    # two nodes: rows[0:7000] into slot 2, rows[7000:20000] into slot 0, in chunks
    tasks = np.array([[0, 3000, 2], [3000, 7000, 2], [7000, 20000, 0]], np.int64)
    build_wide_histograms(cupy.asarray(codes), cupy.asarray(rows), cupy.asarray(qg),
                          cupy.asarray(qh), cupy.asarray(tasks), hist, nf,
                          cupy.asarray(offsets.astype(np.int64)), shift)
    got = hist.get()
    assert not got[1].any() and not got[:, :nf].any()
    for slot, (lo, hi) in ((2, (0, 7000)), (0, (7000, 20000))):
        want = np.zeros((int(n_rows.sum()) * W, 2), np.int64)
        sel = rows[lo:hi]
        for w in range(2):
            idx = offsets[w] + codes[sel, w].astype(np.int64)
            np.add.at(want[:, 0], idx, qg[sel].astype(np.int64))
            np.add.at(want[:, 1], idx, (np.int64(1) << shift) + qh[sel].astype(np.int64))
        np.testing.assert_array_equal(got[slot, nf:].reshape(-1, 2), want)


# ------------------------------------------------------------ learning from clicks (issue #30)
@pytest.mark.parametrize("xgboost_cost", [False, True])
@pytest.mark.parametrize("spread", [1.0, 1e3])  # 1e3: the overflow-safe (exact) branch
@pytest.mark.parametrize("shared_max", [1024, 8])  # 8: the global-scratch kernel too
def test_unbiased_pair_gradients_and_costs_match_cpu(xgboost_cost, spread, shared_max):
    """Unbiased LambdaMART's gradients, hessians and row costs: the CPU's bits."""
    from skltr._cpu import objectives as cpu_kernels
    from skltr._gpu import objectives as gpu_kernels

    rng = np.random.default_rng(8)
    sizes = [1, 2, 7, 120, 1, 300, 33, 1024, 1025]
    y, group_ptr, scores = _queries(rng, sizes, levels=2)  # clicks
    scores = scores * spread
    y[group_ptr[2]:group_ptr[3]] = 1.0
    n = y.size
    shown = np.concatenate([rng.permutation(m) for m in sizes]).astype(np.int64)
    k = 12
    tplus, tminus = rng.uniform(0.1, 1.5, k), rng.uniform(0.1, 1.5, k)
    tplus[4] = 0.0
    g_cpu, h_cpu = np.empty(n, np.float32), np.empty(n, np.float32)
    li_cpu, lj_cpu = np.empty(n), np.empty(n)
    cpu_kernels.unbiased_lambdarank_gradients(scores, y, group_ptr, np.empty(0), True, 30,
                                              1.0, True, shown, tplus, tminus, li_cpu,
                                              lj_cpu, g_cpu, h_cpu,
                                              cpu_kernels.QueryMemo.none(), xgboost_cost)
    obj = make_objective("lambdarank", truncation_level=30)
    with _config.override(QUERY_SHARED_MAX_DOCS=shared_max):
        gobj = make_cuda_gradients(obj, y, group_ptr, None)
    g, h = cupy.empty(n, cupy.float32), cupy.empty(n, cupy.float32)
    li, lj = cupy.full(n, np.nan), cupy.full(n, np.nan)
    gobj._pair_gradients(cupy.asarray(scores), g, h, unbiased=(
        cupy.asarray(shown), cupy.asarray(tplus), cupy.asarray(tminus), xgboost_cost, li, lj))
    np.testing.assert_array_equal(g.get(), g_cpu)
    np.testing.assert_array_equal(h.get(), h_cpu)
    np.testing.assert_array_equal(li.get(), li_cpu)
    np.testing.assert_array_equal(lj.get(), lj_cpu)
    assert gpu_kernels.BYTES_PER_DOC + gpu_kernels.POSITION_BYTES == 56


@pytest.mark.parametrize("mode", ["unbiased", "unbiased_paper", "additive"])
def test_position_bias_fits_give_the_same_model_and_estimate_on_both_devices(mode):
    from skltr.datasets import simulate_clicks

    X, y, qid = _data(12, n_queries=300)
    log = simulate_clicks(y, qid, n_sessions=2, random_state=0)
    params = dict(n_estimators=40, position_bias=mode, random_state=5)
    fits = [GPUHistGBDTRanker(**params, device=device).fit(
        X[log.rows], log.clicks, qid=log.session, position=log.position)
        for device in ("cpu", "cuda")]
    assert_same_model(fits[0].to_tree_ensemble(), fits[1].to_tree_ensemble())
    np.testing.assert_array_equal(fits[1].position_bias_, fits[0].position_bias_)
    if mode != "additive":
        np.testing.assert_array_equal(fits[1].position_bias_minus_,
                                      fits[0].position_bias_minus_)
