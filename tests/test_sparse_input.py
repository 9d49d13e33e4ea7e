"""scipy CSR / CSC input: every prediction equals the source library's own ``predict`` on the
very same sparse object (max abs diff 0), fits equal dense fits bit for bit, and the row
blocks of ``skltr.trees._sparse_input`` are exact at their boundaries.

What an absent entry means is each library's (checked here against the library itself):
XGBoost reads it as missing and an explicitly stored 0.0 as the value 0.0; LightGBM and
scikit-learn read both as 0.0; a stored NaN is missing everywhere.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import skltr.trees._sparse_input as sparse_input
from skltr import GPUHistGBDTRanker, QuickScorerPredictor
from skltr.convert import to_tree_ensemble
from skltr.datasets import load_letor, make_ranking

BACKENDS = ["quickscorer", "traversal"]
_ENSEMBLE_ARRAYS = ("tree_ptr", "feature", "threshold", "left", "right", "value", "flags",
                    "base_score")


def _dense(seed=0, n=600, p=7, zero_frac=0.55, nan_frac=0.04):
    """Rows with many exact zeros, some NaN, a -0.0 and values on a coarse grid (so that
    trees split right next to 0)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, p)) * 4) / 4
    X[rng.random((n, p)) < zero_frac] = 0.0
    X[rng.random((n, p)) < nan_frac] = np.nan
    X[3, 1] = -0.0
    return X


def _explicit(X, frac=1.0, seed=0):
    """CSR of X storing every non-zero (and -0.0) and a fraction ``frac`` of its zeros."""
    rng = np.random.default_rng(seed)
    keep = (X != 0) | np.signbit(X.astype(np.float64)) | np.isnan(X) | (
        rng.random(X.shape) < frac)
    rows, cols = np.nonzero(keep)
    return sp.csr_matrix((X[rows, cols], (rows, cols)), shape=X.shape)


def _sparse_variants(X):
    """The same rows as CSR / CSC / sparse arrays, with zeros absent, stored, or mixed."""
    implicit = sp.csr_matrix(X)  # zeros absent, NaN stored
    explicit = _explicit(X)  # every zero stored
    mixed = _explicit(X, frac=0.5, seed=1)
    assert implicit.nnz < mixed.nnz < explicit.nnz == X.size
    return {"csr": implicit, "csr_explicit0": explicit, "csr_mixed0": mixed,
            "csc": implicit.tocsc(), "csc_explicit0": explicit.tocsc(),
            "csr_array": sp.csr_array(mixed), "csc_array": sp.csc_array(mixed),
            "csr_float32": implicit.astype(np.float32),
            "csr_int64_indices": sp.csr_matrix((implicit.data, implicit.indices.astype(np.int64),
                                                implicit.indptr.astype(np.int64)),
                                               shape=implicit.shape)}


@pytest.fixture(params=[None, 3, 1], ids=["default_blocks", "3_row_blocks", "1_row_blocks"])
def block_rows(request, monkeypatch):
    """Force the row blocks small (3 or 1 rows) so that most rows sit at a block boundary."""
    if request.param is not None:
        monkeypatch.setattr(sparse_input, "CHUNK_BYTES", 8 * 7 * request.param)
    return request.param


# ----------------------------------------------------------------------------- XGBoost
@pytest.fixture(scope="module")
def xgb_ranker():
    xgb = pytest.importorskip("xgboost")
    X = _dense()
    y = np.random.default_rng(1).integers(0, 4, X.shape[0])
    qid = np.repeat(np.arange(30), 20)
    return xgb.XGBRanker(n_estimators=25, max_depth=5, tree_method="hist").fit(X, y, qid=qid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_xgboost_sparse_predict_equals_xgboost(xgb_ranker, backend, block_rows):
    X = _dense()
    qs = QuickScorerPredictor.from_model(xgb_ranker, backend=backend)
    for name, M in _sparse_variants(X).items():
        np.testing.assert_array_equal(qs.predict(M), xgb_ranker.predict(M), err_msg=name)
    # absent and stored zeros differ for XGBoost: the comparison above can tell them apart
    variants = _sparse_variants(X)
    assert np.abs(xgb_ranker.predict(variants["csr"])
                  - xgb_ranker.predict(variants["csr_explicit0"])).max() > 0.1


def test_xgboost_tree_ensemble_and_sentinel(block_rows):
    xgb = pytest.importorskip("xgboost")
    X = _dense(seed=2)
    y = np.random.default_rng(2).integers(0, 4, X.shape[0])
    # a missing= sentinel: a stored -0.25 is missing, so is an absent entry
    model = xgb.XGBRegressor(n_estimators=15, max_depth=4, missing=-0.25).fit(X, y)
    ens = to_tree_ensemble(model)
    for name, M in _sparse_variants(X).items():
        np.testing.assert_array_equal(ens.predict_raw(M),
                                      model.predict(M, output_margin=True), err_msg=name)
        np.testing.assert_array_equal(QuickScorerPredictor.from_model(model).predict(M),
                                      model.predict(M), err_msg=name)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32])
def test_xgboost_integer_and_float32_data(dtype, block_rows):
    # int64 values above 2**24 round to float32 in XGBoost; absent entries still missing
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(3)
    n, p = 500, 7
    big = 2**26 if dtype != np.float32 else 2**10
    Xi = (rng.integers(-big, big, (n, p)) * (rng.random((n, p)) < 0.4)).astype(dtype)
    y = rng.integers(0, 3, n)
    model = xgb.XGBRanker(n_estimators=15, max_depth=5).fit(Xi, y, qid=np.repeat(np.arange(25), 20))
    qs = QuickScorerPredictor.from_model(model)
    for M in (sp.csr_matrix(Xi), sp.csc_matrix(Xi), _explicit(Xi, 0.3)):
        assert M.dtype == dtype
        np.testing.assert_array_equal(qs.predict(M), model.predict(M))


# ----------------------------------------------------------------------------- LightGBM
@pytest.fixture(scope="module", params=[{}, {"zero_as_missing": True}, {"use_missing": False}],
                ids=["nan_missing", "zero_as_missing", "no_missing"])
def lgb_ranker(request):
    lgb = pytest.importorskip("lightgbm")
    X = _dense()
    y = np.random.default_rng(1).integers(0, 4, X.shape[0])
    return lgb.LGBMRanker(n_estimators=25, num_leaves=12, min_child_samples=5, verbose=-1,
                          **request.param).fit(X, y, group=[20] * 30)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lightgbm_sparse_predict_equals_lightgbm(lgb_ranker, backend, block_rows):
    X = _dense()
    qs = QuickScorerPredictor.from_model(lgb_ranker, backend=backend)
    for name, M in _sparse_variants(X).items():
        if name.endswith("_array"):  # LightGBM's booster predict takes scipy matrices
            ref = lgb_ranker.predict(sp.csr_matrix(M) if "csr" in name else sp.csc_matrix(M))
        else:
            ref = lgb_ranker.predict(M)
        np.testing.assert_array_equal(qs.predict(M), ref, err_msg=name)
        np.testing.assert_array_equal(qs.predict(M), lgb_ranker.predict(X), err_msg=name)


def test_lightgbm_integer_sparse_reads_as_its_dense_integers():
    # LightGBM refuses integer sparse data (TypeError: Expected np.float32 or np.float64);
    # skltr reads it by LightGBM's rule for every non-float array (float32), so a CSR of
    # integers scores as LightGBM scores the same integers in a dense array.
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(4)
    n, p = 600, 5
    # values 2**25 + k: float32 (spacing 4 there) merges neighbours the trees split apart
    Xi = (2**25 + rng.integers(0, 16, (n, p))) * (rng.random((n, p)) < 0.5)
    target = (Xi % 4 + rng.random((n, p))).sum(axis=1)
    model = lgb.LGBMRegressor(n_estimators=20, num_leaves=16, min_child_samples=3,
                              verbose=-1).fit(Xi.astype(np.float64), target)
    csr = sp.csr_matrix(Xi)
    with pytest.raises(TypeError, match="float32 or np.float64"):
        model.predict(csr)
    qs = QuickScorerPredictor.from_model(model)
    np.testing.assert_array_equal(qs.predict(csr), model.predict(Xi))
    np.testing.assert_array_equal(qs.predict(csr.tocsc()), model.predict(Xi))
    assert np.abs(model.predict(Xi) - model.predict(Xi.astype(np.float64))).max() > 0


# ----------------------------------------------------------------------------- scikit-learn
def test_sklearn_hist_gradient_boosting_reads_absent_entries_as_zero(block_rows):
    # HistGradientBoosting refuses sparse X ("dense data is required"); skltr reads an absent
    # entry as scikit-learn's own X.toarray() does: 0.0.
    from sklearn.ensemble import (HistGradientBoostingClassifier,
                                  HistGradientBoostingRegressor)

    X = _dense(seed=5)
    y = np.random.default_rng(5).normal(size=X.shape[0])
    reg = HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(X, y)
    clf = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, y > 0)
    with pytest.raises(TypeError, match="dense data is required"):
        reg.predict(sp.csr_matrix(X))
    for name, M in _sparse_variants(X).items():
        dense = M.toarray()
        np.testing.assert_array_equal(QuickScorerPredictor.from_model(reg).predict(M),
                                      reg.predict(dense), err_msg=name)
        qc = QuickScorerPredictor.from_model(clf)
        np.testing.assert_array_equal(qc.predict_proba(M), clf.predict_proba(dense),
                                      err_msg=name)
        np.testing.assert_array_equal(qc.decision_function(M), clf.decision_function(dense),
                                      err_msg=name)


# ----------------------------------------------------------------------------- skltr ranker
def _ranking(seed=0, dtype=np.float64, n_queries=60):
    """make_ranking rows with most values zero (LETOR-like), NaN, rows of a query apart."""
    X, y, qid = make_ranking(n_queries=n_queries, docs_per_query=20, n_features=12,
                             n_informative=6, random_state=seed, dtype=np.float64,
                             nan_fraction=0.03)
    rng = np.random.default_rng(seed)
    X[rng.random(X.shape) < 0.6] = 0.0
    X[:, 5] = 0.0  # an all-zero feature
    perm = rng.permutation(len(y))  # interleave the queries: fit groups a CSR by rows
    return X[perm].astype(dtype), y[perm], qid[perm]


def run_sparse_fit_equivalence(device, dtype=np.float64):
    """CSR / CSC fits (eval sets too) give the dense fit's model bit for bit (shared body)."""
    X, y, qid = _ranking(dtype=dtype)
    Xv, yv, qv = _ranking(seed=1, dtype=dtype, n_queries=20)
    params = dict(n_estimators=8, max_leaves=15, min_samples_leaf=5, max_bins=31,
                  subsample=0.8, colsample_bytree=0.8, random_state=0, device=device)
    ref = GPUHistGBDTRanker(**params).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    fits = {
        "csr": (sp.csr_matrix(X), sp.csr_matrix(Xv)),
        "csr_explicit0": (_explicit(X, 0.5), _explicit(Xv, 0.5)),
        "csc": (sp.csc_matrix(X), sp.csc_array(Xv)),
    }
    for name, (Xs, Xvs) in fits.items():
        got = GPUHistGBDTRanker(**params).fit(Xs, y, qid=qid, eval_set=[(Xvs, yv, qv)])
        for arr in _ENSEMBLE_ARRAYS:
            np.testing.assert_array_equal(getattr(got.ensemble_, arr),
                                          getattr(ref.ensemble_, arr), err_msg=f"{name} {arr}")
        assert got.evals_result_ == ref.evals_result_, name
        np.testing.assert_array_equal(got.feature_importances_, ref.feature_importances_)
        np.testing.assert_array_equal(got.predict(Xvs), ref.predict(Xv))
    # early stopping on held-out training queries (a row split of the CSR)
    params.update(early_stopping=True, n_iter_no_change=2, n_estimators=30)
    ref = GPUHistGBDTRanker(**params).fit(X, y, qid=qid)
    got = GPUHistGBDTRanker(**params).fit(sp.csr_matrix(X), y, qid=qid)
    assert got.ensemble_.equals(ref.ensemble_) and got.evals_result_ == ref.evals_result_
    return ref


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_fit_gives_the_dense_model(dtype):
    run_sparse_fit_equivalence("cpu", dtype)


def test_sparse_fit_on_letor_small_gives_the_dense_model(letor_dir):
    X, y, qid = load_letor(letor_dir / "rank.train", dense=False, zero_based=True)
    Xt, yt, qt = load_letor(letor_dir / "rank.test", dense=False, zero_based=True,
                            n_features=X.shape[1])
    assert sp.issparse(X) and X.nnz < 0.4 * X.shape[0] * X.shape[1]
    params = dict(n_estimators=15, random_state=0, early_stopping=False)
    dense = GPUHistGBDTRanker(**params).fit(X.toarray(), y, qid=qid,
                                            eval_set=[(Xt.toarray(), yt, qt)])
    sparse = GPUHistGBDTRanker(**params).fit(X, y, qid=qid, eval_set=[(Xt, yt, qt)])
    for arr in _ENSEMBLE_ARRAYS:
        np.testing.assert_array_equal(getattr(sparse.ensemble_, arr),
                                      getattr(dense.ensemble_, arr), err_msg=arr)
    assert sparse.evals_result_ == dense.evals_result_
    np.testing.assert_array_equal(sparse.predict(Xt), dense.predict(Xt.toarray()))


def test_ranker_sparse_predict_equals_dense(block_rows):
    X, y, qid = _ranking()
    model = GPUHistGBDTRanker(n_estimators=10, max_leaves=15, min_samples_leaf=5,
                              random_state=0).fit(X, y, qid=qid)
    expected = model.predict(X)
    for name, M in _sparse_variants(X).items():
        if M.dtype == np.float32:
            continue  # the model reads float64; float32 values are other numbers
        np.testing.assert_array_equal(model.predict(M), expected, err_msg=name)
        np.testing.assert_array_equal(model.ensemble_.predict(M), expected, err_msg=name)
    assert model.predict(sp.csr_matrix(X)[:0]).shape == (0,)
    ens = model.ensemble_
    np.testing.assert_array_equal(ens.predict_raw(sp.csr_matrix(X)), ens.predict_raw(X))


def test_apply_on_sparse_rows(block_rows):
    from skltr.trees._traversal import apply

    X, y, qid = _ranking()
    ens = GPUHistGBDTRanker(n_estimators=5, random_state=0).fit(X, y, qid=qid).ensemble_
    leaves = apply(ens, X)
    for M in (sp.csr_matrix(X), sp.csc_matrix(X), _explicit(X, 0.5)):
        np.testing.assert_array_equal(apply(ens, M), leaves)


# ----------------------------------------------------------------------------- blocks
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("fill", [0.0, np.nan])
@pytest.mark.parametrize("block_bytes", [1, 8 * 7 * 4, 8 * 7 * 1000])
def test_dense_chunks_cover_every_row_exactly(dtype, fill, block_bytes):
    X = _dense(n=53)
    if dtype in (np.int32, np.bool_):
        X = np.nan_to_num(X * 4, nan=3.0)
    X = X.astype(dtype)
    M = _explicit(X, 0.3).astype(dtype)
    stored = np.zeros(X.shape, bool)
    stored[np.repeat(np.arange(M.shape[0]), np.diff(M.indptr)), M.indices] = True
    assert (stored & (X == 0)).any() and (~stored).any()
    expected = np.where(stored, X.astype(np.float64), fill)
    blocks = list(sparse_input.dense_chunks(M, fill=fill, rule="float64",
                                            chunk_bytes=block_bytes))
    assert [b[0] for b in blocks] == list(range(0, 53, max(1, block_bytes // 56)))
    assert blocks[-1][1] == 53
    got = np.concatenate([b[2] for b in blocks])
    assert got.dtype == (np.float64 if (np.isnan(fill) and dtype in (np.int32, np.bool_))
                         else dtype)
    np.testing.assert_array_equal(got.astype(np.float64), expected)
    if dtype in (np.float64, np.float32):  # -0.0 keeps its sign (toarray() would add it)
        assert stored[3, 1] and np.signbit(got[3, 1]) and np.signbit(X[3, 1])


def test_csc_is_converted_once_and_rows_are_not_densified_whole(monkeypatch):
    X = _dense(n=200)
    M = sp.csc_matrix(X)
    seen = []
    real = sparse_input.densify_rows
    monkeypatch.setattr(sparse_input, "densify_rows",
                        lambda X, lo, hi, **kw: seen.append((X.format, hi - lo)) or
                        real(X, lo, hi, **kw))
    monkeypatch.setattr(sparse_input, "CHUNK_BYTES", 8 * 7 * 16)
    out = sparse_input.map_row_chunks(to_tree_ensemble(GPUHistGBDTRanker(
        n_estimators=2, random_state=0).fit(np.nan_to_num(X), np.arange(200) % 3,
                                            qid=np.arange(200) // 20)), M, lambda b: b)
    assert {f for f, _ in seen} == {"csr"} and max(n for _, n in seen) == 16
    np.testing.assert_array_equal(out, X)


# ----------------------------------------------------------------------------- errors
def test_bad_sparse_input_is_refused_and_state_is_kept():
    X, y, qid = _ranking()
    model = GPUHistGBDTRanker(n_estimators=3, random_state=0).fit(X, y, qid=qid)
    before = model.ensemble_
    coo = sp.coo_matrix(X)
    with pytest.raises(TypeError, match="only CSR and CSC are accepted.*tocsr"):
        model.fit(coo, y, qid=qid)
    assert model.ensemble_ is before
    with pytest.raises(TypeError, match="only CSR and CSC"):
        model.predict(coo)
    with pytest.raises(TypeError, match="only CSR and CSC"):
        QuickScorerPredictor.from_model(model).predict(sp.lil_matrix(X))
    # duplicate entries: scipy sums them, XGBoost / LightGBM keep one
    dup = sp.csr_matrix((np.array([1.0, 2.0]), np.array([0, 0]), np.array([0, 2] + [2] * 599)),
                        shape=(600, 12))
    with pytest.raises(ValueError, match="duplicate entries.*sum_duplicates"):
        model.predict(dup)
    with pytest.raises(ValueError, match="duplicate entries"):
        model.fit(dup, y, qid=qid)
    assert model.ensemble_ is before
    with pytest.raises(ValueError, match="12 features"):
        model.predict(sp.csr_matrix(X[:, :11]))
    with pytest.raises(ValueError, match="ensemble was built for 12"):
        model.ensemble_.predict(sp.csr_matrix(X[:, :11]))
    bad = sp.csr_matrix(X)
    bad.data[0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        model.fit(bad, y, qid=qid)
    assert model.ensemble_ is before
    # unsorted indices without duplicates are fine
    shuffled = sp.csr_matrix(X)
    row = int(np.flatnonzero(np.diff(shuffled.indptr) >= 3)[0])
    seg = slice(shuffled.indptr[row], shuffled.indptr[row + 1])
    shuffled.indices[seg] = shuffled.indices[seg][::-1].copy()
    shuffled.data[seg] = shuffled.data[seg][::-1].copy()
    shuffled.has_sorted_indices = False
    assert not shuffled.has_canonical_format
    np.testing.assert_array_equal(model.predict(shuffled), model.predict(X))
