"""skltr.datasets: make_ranking, load_letor, dump_letor."""

import gzip
import io

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from skltr.datasets import dump_letor, load_letor, make_ranking

SMALL = dict(n_queries=60, docs_per_query=40, n_features=30, n_informative=8)


def _ndcg_at(y, score, qid, k=10):
    """Mean NDCG@k over queries with at least one relevant document (gain 2**y - 1)."""
    out = []
    for q in np.unique(qid):
        m = qid == q
        gain = 2.0 ** y[m] - 1
        ideal = np.sort(gain)[::-1][:k]
        if ideal.sum() == 0:
            continue
        top = gain[np.argsort(-score[m], kind="stable")][:k]
        disc = 1.0 / np.log2(np.arange(2, k + 2))
        out.append((top * disc[: top.size]).sum() / (ideal * disc[: ideal.size]).sum())
    return float(np.mean(out))


# ------------------------------------------------------------------------------------------
# make_ranking
# ------------------------------------------------------------------------------------------


def test_make_ranking_shapes_and_dtypes():
    X, y, qid, sizes = make_ranking(**SMALL, random_state=0, return_query_sizes=True)
    n = X.shape[0]
    assert X.shape == (n, 30) and X.dtype == np.float32 and X.flags.c_contiguous
    assert y.shape == (n,) and y.dtype == np.float64
    assert qid.shape == (n,) and qid.dtype == np.int64
    assert sizes.dtype == np.int64 and sizes.sum() == n and sizes.min() >= 1
    np.testing.assert_array_equal(np.bincount(qid), sizes)
    np.testing.assert_array_equal(np.unique(qid), np.arange(60))
    assert np.all(np.diff(qid) >= 0)
    assert np.isfinite(X).all()


def test_make_ranking_float64_is_widened_float32():
    X32, y32, q32 = make_ranking(**SMALL, random_state=3)
    X64, y64, q64 = make_ranking(**SMALL, random_state=3, dtype=np.float64)
    assert X64.dtype == np.float64
    np.testing.assert_array_equal(X64, X32.astype(np.float64))
    np.testing.assert_array_equal(y64, y32)
    np.testing.assert_array_equal(q64, q32)


def test_make_ranking_deterministic():
    a = make_ranking(**SMALL, nan_fraction=0.1, random_state=7, n_jobs=1)
    b = make_ranking(**SMALL, nan_fraction=0.1, random_state=7, n_jobs=2)
    c = make_ranking(**SMALL, nan_fraction=0.1, random_state=np.random.RandomState(7))
    for u, v, w in zip(a, b, c):
        np.testing.assert_array_equal(u, v)
        np.testing.assert_array_equal(u, w)
    d = make_ranking(**SMALL, nan_fraction=0.1, random_state=8)
    assert d[0].shape != a[0].shape or not np.array_equal(d[0], a[0], equal_nan=True)
    # more blocks than one (8192 rows), threads or not
    e = make_ranking(n_queries=300, docs_per_query=60, n_features=5, n_informative=2,
                     random_state=1, n_jobs=1)
    f = make_ranking(n_queries=300, docs_per_query=60, n_features=5, n_informative=2,
                     random_state=1, n_jobs=2)
    assert e[0].shape[0] > 8192
    for u, v in zip(e, f):
        np.testing.assert_array_equal(u, v)


def test_make_ranking_labels_skewed_and_mixed_per_query():
    X, y, qid = make_ranking(n_queries=400, docs_per_query=50, n_features=20,
                             n_informative=6, random_state=0)
    assert np.array_equal(y, np.round(y)) and y.min() == 0 and y.max() == 4
    freq = np.bincount(y.astype(int), minlength=5) / y.size
    assert np.all(np.diff(freq) < 0), freq  # each grade rarer than the one below
    assert 0.4 < freq[0] < 0.7 and freq[4] < 0.06
    per_query_max = np.array([y[qid == q].max() for q in range(400)])
    per_query_levels = np.array([np.unique(y[qid == q]).size for q in range(400)])
    assert 1 <= np.sum(per_query_max == 0) <= 40  # a few all-zero queries
    assert np.mean(per_query_levels >= 2) > 0.9
    # the share of relevant documents varies between queries
    rel = np.array([np.mean(y[qid == q] > 0) for q in range(400)])
    assert rel.std() > 0.1


@pytest.mark.parametrize("levels", [2, 7])
def test_make_ranking_label_levels(levels):
    _, y, _ = make_ranking(**SMALL, label_levels=levels, random_state=0)
    assert set(np.unique(y)) == set(range(levels))


def test_make_ranking_nan_fraction_after_labels():
    X0, y0, q0 = make_ranking(**SMALL, random_state=5)
    X1, y1, q1 = make_ranking(**SMALL, nan_fraction=0.2, random_state=5)
    mask = np.isnan(X1)
    assert abs(mask.mean() - 0.2) < 0.01
    np.testing.assert_array_equal(y0, y1)
    np.testing.assert_array_equal(X0[~mask], X1[~mask])
    assert not np.isnan(X0).any()


def test_make_ranking_mixed_feature_kinds():
    X, y, qid = make_ranking(n_queries=100, docs_per_query=50, n_features=60,
                             n_informative=10, sparse_fraction=0.3, random_state=0)
    zero_rate = (X == 0).mean(axis=0)
    assert np.sum(zero_rate >= 0.6) >= 18  # the 30 % sparse columns (counts may add more)
    n_distinct = np.array([np.unique(c).size for c in X.T])
    assert np.any(n_distinct == 2) or np.any(n_distinct <= 5)  # flags / small integers
    assert np.sum(n_distinct <= 5) >= 1
    # heavy tails: some column's max is far beyond its 99th percentile
    dense_cols = X[:, zero_rate < 0.5]
    spread = (dense_cols.max(0) - np.median(dense_cols, 0)) / (
        np.percentile(dense_cols, 75, axis=0) - np.percentile(dense_cols, 25, axis=0) + 1e-12)
    assert spread.max() > 20
    # query-level offsets: some columns differ strongly between queries
    pvals = [stats.f_oneway(*[c[qid == q] for q in range(100)]).pvalue
             for c in X.T if np.unique(c).size > 100]
    assert np.sum(np.array(pvals) < 1e-10) >= 3
    X0, _, _ = make_ranking(n_queries=50, docs_per_query=50, n_features=60, n_informative=10,
                            sparse_fraction=0.0, random_state=0)
    assert np.sum((X0 == 0).mean(axis=0) >= 0.6) < 18


def test_make_ranking_query_sizes():
    _, _, qid = make_ranking(**SMALL, random_state=0)
    sizes = np.bincount(qid)
    assert sizes.std() > 5 and sizes.min() >= 1
    _, _, qid = make_ranking(**{**SMALL, "docs_per_query": (12, 12)}, random_state=0)
    assert np.all(np.bincount(qid) == 12)
    _, _, qid = make_ranking(**{**SMALL, "docs_per_query": (1, 4)}, random_state=0)
    assert set(np.bincount(qid)) <= {1, 2, 3, 4}
    _, _, qid = make_ranking(**{**SMALL, "docs_per_query": 1}, random_state=0)
    assert np.bincount(qid).min() >= 1


def test_make_ranking_no_informative_features():
    X, y, qid = make_ranking(**{**SMALL, "n_informative": 0}, random_state=0)
    assert y.max() > 0


def test_make_ranking_is_learnable():
    lightgbm = pytest.importorskip("lightgbm")
    X, y, qid = make_ranking(n_queries=300, docs_per_query=50, random_state=0,
                             nan_fraction=0.05)
    train, test = qid < 200, qid >= 200
    model = lightgbm.LGBMRanker(n_estimators=50, verbose=-1, n_jobs=1, random_state=0)
    model.fit(X[train], y[train], group=np.bincount(qid[train]))
    learned = _ndcg_at(y[test], model.predict(X[test]), qid[test])
    rand = _ndcg_at(y[test], np.random.default_rng(0).random(test.sum()), qid[test])
    assert learned > rand + 0.2, (learned, rand)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_features=5, n_informative=6), "n_informative=6 is larger than n_features=5"),
        (dict(label_levels=1), "label_levels"),
        (dict(nan_fraction=1.0), "nan_fraction"),
        (dict(nan_fraction=-0.1), "nan_fraction"),
        (dict(sparse_fraction=1.5), "sparse_fraction"),
        (dict(n_queries=0), "n_queries"),
        (dict(docs_per_query=0), "docs_per_query"),
        (dict(docs_per_query=(5, 2)), "low <= high"),
        (dict(docs_per_query=(0, 2)), "low <= high"),
        (dict(docs_per_query=(1, 2, 3)), r"\(low, high\)"),
        (dict(dtype=np.int32), "dtype"),
        (dict(random_state="x"), "random_state"),
    ],
)
def test_make_ranking_parameter_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_ranking(**{**SMALL, **kwargs})


# ------------------------------------------------------------------------------------------
# load_letor on the real sample
# ------------------------------------------------------------------------------------------


def test_load_letor_small_matches_sklearn(letor_dir):
    from sklearn.datasets import load_svmlight_file

    X, y, qid = load_letor(letor_dir / "train.letor")
    assert X.shape[0] == 3005 and np.unique(qid).size == 201
    assert isinstance(X, np.ndarray) and X.dtype == np.float64
    Xs, ys, qs = load_svmlight_file(str(letor_dir / "train.letor"), query_id=True)
    np.testing.assert_array_equal(X, Xs.toarray())
    np.testing.assert_array_equal(y, ys)
    np.testing.assert_array_equal(qid, qs)

    Xc, yc, qc = load_letor(letor_dir / "train.letor", dense=False, dtype=np.float32)
    assert sp.isspmatrix_csr(Xc) and Xc.dtype == np.float32 and Xc.has_sorted_indices
    Xs32, _, _ = load_svmlight_file(str(letor_dir / "train.letor"), query_id=True,
                                    dtype=np.float32)
    assert (Xc != Xs32).nnz == 0


def test_load_letor_query_file_gives_same_data(letor_dir):
    X, y, qid = load_letor(letor_dir / "train.letor")
    X2, y2, qid2 = load_letor(letor_dir / "rank.train", n_features=X.shape[1])  # auto .query
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    # same grouping: same boundaries, ids 0..n-1
    np.testing.assert_array_equal(np.diff(qid) != 0, np.diff(qid2) != 0)
    np.testing.assert_array_equal(np.unique(qid2), np.arange(201))
    X3, _, qid3 = load_letor(letor_dir / "rank.train", query_file=letor_dir / "rank.train.query",
                             dense=False)
    np.testing.assert_array_equal(qid3, qid2)
    with pytest.raises(ValueError, match="no qid: tokens"):
        load_letor(letor_dir / "rank.train", query_file=False)
    with pytest.raises(ValueError, match="sum to 3005 but .* has 768 data lines"):
        load_letor(letor_dir / "rank.test", query_file=letor_dir / "rank.train.query")
    with pytest.raises(ValueError, match="one source of query ids"):
        load_letor(letor_dir / "train.letor", query_file=letor_dir / "rank.train.query")


def test_load_letor_test_file_width(letor_dir):
    Xt, yt, qt = load_letor(letor_dir / "test.letor", n_features=300)
    assert Xt.shape == (768, 300) and np.unique(qt).size == 50
    with pytest.raises(ValueError, match=r"line \d+: feature index \d+ is beyond n_features=10"):
        load_letor(letor_dir / "test.letor", n_features=10)


# ------------------------------------------------------------------------------------------
# round trips
# ------------------------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
value = st.one_of(st.just(0.0), finite, st.integers(-5, 5).map(float),
                  st.floats(-1, 1, allow_subnormal=True))


@st.composite
def ranking_sets(draw):
    n = draw(st.integers(1, 12))
    d = draw(st.integers(1, 6))
    X = np.array(draw(st.lists(value, min_size=n * d, max_size=n * d))).reshape(n, d)
    y = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float)
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=n))
    qid = np.repeat(np.arange(len(sizes)) * 3 + 1, sizes)[:n]
    qid = np.concatenate([qid, np.full(n - qid.size, qid[-1])])
    return X, y, qid


@settings(deadline=None, max_examples=30)
@given(data=ranking_sets(), sparse=st.booleans(), zero_based=st.booleans(),
       query_file=st.booleans(), f32=st.booleans())
def test_dump_load_round_trip(tmp_path_factory, data, sparse, zero_based, query_file, f32):
    X, y, qid = data
    if f32:
        with np.errstate(over="ignore"):
            X = X.astype(np.float32)
        X[~np.isfinite(X)] = 1.5
    path = tmp_path_factory.mktemp("rt") / "data.txt"
    dump_letor(path, sp.csr_matrix(X) if sparse else X, y, qid, zero_based=zero_based,
               query_file=query_file, comment="round trip\ntest")
    X2, y2, qid2 = load_letor(path, n_features=X.shape[1], dense=not sparse, dtype=X.dtype,
                              zero_based=zero_based)
    if sparse:
        X2 = X2.toarray()
    assert X2.dtype == X.dtype
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
    if query_file:
        np.testing.assert_array_equal(np.diff(qid2) != 0, np.diff(qid) != 0)
    else:
        np.testing.assert_array_equal(qid2, qid)


@settings(deadline=None, max_examples=30)
@given(st.lists(finite, min_size=1, max_size=40),
       st.sampled_from(["{!r}", "{:.17g}", "{:.25e}", "{:.3f}", "{:.40f}", "{:e}"]))
def test_values_parse_like_python_float(values, fmt):
    """Every number comes back as the correctly rounded double of its text."""
    texts = [fmt.format(v) for v in values]
    line = "1 qid:1 " + " ".join(f"{i + 1}:{t}" for i, t in enumerate(texts))
    X, _, _ = load_letor(io.BytesIO(line.encode()))
    expected = np.array([float(t) for t in texts])
    np.testing.assert_array_equal(X[0].view(np.uint64), expected.view(np.uint64))


def test_parse_many_numbers_exactly():
    """Bulk check of the in-kernel conversion (Clinger + Eisel-Lemire) against float()."""
    from decimal import Decimal

    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**63, 20000, dtype=np.uint64).view(np.float64)
    texts = [repr(float(v)) for v in bits if np.isfinite(v)]
    texts += [repr(float(np.float32(v))) for v in rng.standard_normal(5000) * 100]
    texts += ["%.20e" % v for v in rng.standard_normal(3000)]
    for v in rng.random(2000):  # exact midpoints between neighbouring doubles
        a, b = float(v), float(np.nextafter(v, 2.0))
        texts.append(str((Decimal(a) + Decimal(b)) / 2))
    for _ in range(5000):  # random digit strings, up to 30 digits, wide exponents
        digits = "".join(map(str, rng.integers(0, 10, rng.integers(1, 31))))
        k = int(rng.integers(0, len(digits) + 1))
        texts.append(f"{digits[:k]}.{digits[k:]}e{int(rng.integers(-330, 330))}")
    texts += ["2.2250738585072014e-308", "1.7976931348623157e308", "9007199254740993",
              "123456789012345678901234567890", "0.1000000000000000055511151231257827"]
    line = "0 qid:1 " + " ".join(f"{i + 1}:{t}" for i, t in enumerate(texts))
    X, _, _ = load_letor(io.BytesIO(line.encode()))
    expected = np.array([float(t) for t in texts])
    np.testing.assert_array_equal(X[0].view(np.uint64), expected.view(np.uint64))


def test_power_of_ten_table_matches_go():
    from skltr.datasets._letor_kernel import _POW10_HI, _POW10_LO

    # strconv's detailedPowersOfTen rows for 1e-348, 1e-347 and 1e43
    assert (int(_POW10_HI[0]), int(_POW10_LO[0])) == (0xFA8FD5A0081C0288, 0x1732C869CD60E453)
    assert (int(_POW10_HI[1]), int(_POW10_LO[1])) == (0x9C99E58405118195, 0x0E7FBD42205C8EB4)
    assert (int(_POW10_HI[391]), int(_POW10_LO[391])) == (0xE596B7B0C643C719, 0x6D9CCD05D0000000)


def test_parse_special_values():
    line = b"nan qid:-3 1:inf 2:-inf 3:nan 4:1e-400 5:1e400 6:-0 7:4.9e-324 8:+.5 9:5. 10:1E3\n"
    X, y, qid = load_letor(io.BytesIO(line))
    assert np.isnan(y[0]) and qid[0] == -3
    np.testing.assert_array_equal(
        X[0], [np.inf, -np.inf, np.nan, 0.0, np.inf, 0.0, 5e-324, 0.5, 5.0, 1000.0])


def test_round_trip_nan_policy(tmp_path):
    X, y, qid = make_ranking(**SMALL, nan_fraction=0.1, random_state=0)
    with pytest.raises(ValueError, match=r"X has NaN \(first at row \d+, column \d+\)"):
        dump_letor(tmp_path / "a.txt", X, y, qid)
    dump_letor(tmp_path / "a.txt", X, y, qid, nan_policy="write")
    X2, y2, qid2 = load_letor(tmp_path / "a.txt", dtype=np.float32, n_features=X.shape[1])
    np.testing.assert_array_equal(X2, X)  # NaN compare equal position-wise
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(qid2, qid)


def test_dump_format_and_file_objects(tmp_path):
    X = np.array([[0.5, 0.0, 0.1], [0.0, 0.0, 0.0], [3.0, 1e-20, -2.0]])
    f = io.StringIO()
    dump_letor(f, X, [2, 0, 1.5], [7, 7, 9], comment="hello")
    assert f.getvalue() == (
        "# hello\n2 qid:7 1:0.5 3:0.1\n0 qid:7\n1.5 qid:9 1:3 2:1e-20 3:-2\n")
    b = io.BytesIO()
    dump_letor(b, X, [2, 0, 1.5], [7, 7, 9], zero_based=True)
    assert b.getvalue().splitlines()[2] == b"1.5 qid:9 0:3 1:1e-20 2:-2"
    X2, _, _ = load_letor(io.BytesIO(b.getvalue()))  # "auto" sees index 0
    np.testing.assert_array_equal(X2, X)
    # explicit sparse zeros are not written
    S = sp.csr_matrix((np.array([0.0, 2.0]), np.array([0, 1]), np.array([0, 2])), shape=(1, 2))
    f = io.StringIO()
    dump_letor(f, S, [1], [1])
    assert f.getvalue() == "1 qid:1 2:2\n"
    # compressed files
    with gzip.open(tmp_path / "a.txt.gz", "wt") as fh:
        dump_letor(fh, X, [2, 0, 1], [7, 7, 9])
    X3, _, _ = load_letor(tmp_path / "a.txt.gz")
    np.testing.assert_array_equal(X3, X)


def test_dump_query_file(tmp_path):
    X = np.eye(5)
    dump_letor(tmp_path / "a.txt", X, np.arange(5), ["b", "b", "a", "c", "c"], query_file=True)
    assert (tmp_path / "a.txt.query").read_text() == "2\n1\n2\n"
    assert "qid" not in (tmp_path / "a.txt").read_text()
    _, _, qid = load_letor(tmp_path / "a.txt")
    np.testing.assert_array_equal(qid, [0, 0, 1, 2, 2])
    dump_letor(tmp_path / "b.txt", X, np.arange(5), [1, 1, 1, 2, 2],
               query_file=tmp_path / "groups")
    _, _, qid = load_letor(tmp_path / "b.txt", query_file=tmp_path / "groups")
    np.testing.assert_array_equal(qid, [0, 0, 0, 1, 1])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(qid=[1, 1, 2, 1, 3], query_file=True), "query 1 is not contiguous"),
        (dict(qid=["a"] * 5), "qid tokens must be integers"),
        (dict(qid=[1, 2, 3]), "qid has 3 entries but X has 5 rows"),
        (dict(y=[0, 1, np.nan, 0, 0]), "finite"),
        (dict(y=[0, 1]), "one label per row"),
        (dict(X=np.ones(5)), "2-D"),
        (dict(nan_policy="drop"), "nan_policy"),
    ],
)
def test_dump_errors(tmp_path, kwargs, match):
    args = dict(X=np.eye(5), y=np.zeros(5), qid=np.ones(5, dtype=int))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        dump_letor(tmp_path / "x.txt", **args)


# ------------------------------------------------------------------------------------------
# malformed files
# ------------------------------------------------------------------------------------------

GOOD = "1 qid:1 1:0.5 2:3\n"


@pytest.mark.parametrize(
    "text, match",
    [
        (GOOD + "x qid:1 1:2\n", r"line 2: label 'x' is not a number"),
        (GOOD + "qid:1 1:2\n", r"line 2: label 'qid:1' is not a number \(the line must start"),
        (GOOD + "1 qid:1 1:2 7\n", r"line 2: expected index:value, got '7'"),
        (GOOD + "\n# note\n1 qid:1 a:2\n", r"line 4: bad feature index in 'a:2'"),
        (GOOD + "1 qid:1 -1:2\n", r"line 2: bad feature index in '-1:2'"),
        (GOOD + "1 qid:1 1:2.5.1\n", r"line 2: feature value '2.5.1' is not a number"),
        (GOOD + "1 qid:1 1:1,5\n", r"line 2: bad feature value in '1:1,5'"),
        (GOOD + "1 qid:1 1:\n", r"line 2: bad feature value in '1:'"),
        (GOOD + "1 qid:a 1:2\n", r"line 2: bad query id in 'qid:a'"),
        (GOOD + "1 qid:1.5 1:2\n", r"line 2: bad query id in 'qid:1.5'"),
        (GOOD + "1 1:2 qid:1\n", r"line 2: 'qid:1' must come right after the label"),
        (GOOD + GOOD + "1 qid:1 3:1 1:2 3:4\n", r"line 3: feature index 3 appears more than once"),
        (GOOD + "1 1:2\n", r"line 2: this line has no qid: token but line 1 .* has one"),
        ("# c\n1 1:2\n1 qid:4 1:2\n", r"line 3: this line has a qid: token but line 2"),
        (GOOD + "1e5x qid:1\n", r"line 2: label '1e5x' is not a number"),
    ],
)
def test_malformed_lines(text, match):
    with pytest.raises(ValueError, match=match):
        load_letor(io.BytesIO(text.encode()))


def test_malformed_slow_path_value_after_unsorted_row():
    text = GOOD + "1 qid:1 3:1 1:2\n1 qid:1 2:0.1 1:infx\n"
    with pytest.raises(ValueError, match=r"line 3: feature value 'infx' is not a number"):
        load_letor(io.BytesIO(text.encode()))


def test_index_order_free_but_stored_sorted():
    X, _, _ = load_letor(io.BytesIO(b"1 qid:1 3:30 1:10.000000000000000001 2:20\n"),
                         dense=False)
    assert X.has_sorted_indices
    np.testing.assert_array_equal(X.toarray(), [[10.0, 20.0, 30.0]])


def test_zero_based_and_width():
    text = b"1 qid:1 0:1 2:3\n"
    X, _, _ = load_letor(io.BytesIO(text))
    np.testing.assert_array_equal(X, [[1, 0, 3]])
    X, _, _ = load_letor(io.BytesIO(b"1 qid:1 1:1 3:3\n"), zero_based=True, n_features=5)
    np.testing.assert_array_equal(X, [[0, 1, 0, 3, 0]])
    with pytest.raises(ValueError, match=r"line 2: feature index 0 but zero_based=False"):
        load_letor(io.BytesIO(GOOD.encode() + text), zero_based=False)
    with pytest.raises(ValueError, match=r"line 1: feature index 3 is beyond n_features=2"):
        load_letor(io.BytesIO(b"1 qid:1 1:1 3:3\n"), n_features=2)
    with pytest.raises(ValueError, match="zero_based"):
        load_letor(io.BytesIO(GOOD.encode()), zero_based="yes")
    with pytest.raises(ValueError, match="n_features"):
        load_letor(io.BytesIO(GOOD.encode()), n_features=-1)
    with pytest.raises(ValueError, match="floating dtype"):
        load_letor(io.BytesIO(GOOD.encode()), dtype=np.int64)


def test_query_file_errors(tmp_path):
    (tmp_path / "d.txt").write_text("1 1:1\n0 1:2\n\n2 2:1\n")
    with pytest.raises(ValueError, match=r"no qid: tokens and no query file '.*d\.txt\.query'"):
        load_letor(tmp_path / "d.txt")
    (tmp_path / "d.txt.query").write_text("2\nx\n")
    with pytest.raises(ValueError, match=r"d\.txt\.query: line 2: expected one non-negative"):
        load_letor(tmp_path / "d.txt")
    (tmp_path / "d.txt.query").write_text("2\n2\n")
    with pytest.raises(ValueError, match=r"group sizes sum to 4 but .*d\.txt has 3 data lines"):
        load_letor(tmp_path / "d.txt")
    (tmp_path / "d.txt.query").write_text("2\n\n1\n")
    X, y, qid = load_letor(tmp_path / "d.txt")
    np.testing.assert_array_equal(qid, [0, 0, 1])
    np.testing.assert_array_equal(y, [1, 0, 2])
    with pytest.raises(ValueError, match="does not exist"):
        load_letor(tmp_path / "d.txt", query_file=tmp_path / "nope")
    with pytest.raises(ValueError, match="no qid: tokens; pass query_file"):
        load_letor(io.BytesIO(b"1 1:1\n"))


def test_empty_and_comment_only_files():
    for text in [b"", b"# only a comment\n\n  \n"]:
        X, y, qid = load_letor(io.BytesIO(text))
        assert X.shape == (0, 0) and y.shape == (0,) and qid.shape == (0,)
    X, y, qid = load_letor(io.BytesIO(b"3 qid:2\r\n1 qid:2 # no features\r\n"), n_features=2)
    np.testing.assert_array_equal(X, np.zeros((2, 2)))
    np.testing.assert_array_equal(y, [3, 1])


def test_zero_based_choice_is_explicit_and_reported():
    from skltr.datasets._svmlight import LetorIndexError, _load_letor

    one = b"1 qid:1 1:1 3:3\n"
    assert _load_letor(io.BytesIO(one))[3] is False  # "auto" without an index 0: one-based
    assert _load_letor(io.BytesIO(b"1 qid:1 0:1\n"))[3] is True
    for flag in (True, np.True_):
        X, _, _, used = _load_letor(io.BytesIO(one), zero_based=flag)
        assert used is True and X.shape == (1, 4)
    for bad in (1, 0, "true", None):
        with pytest.raises(ValueError, match="zero_based must be True, False or 'auto'"):
            load_letor(io.BytesIO(one), zero_based=bad)
    with pytest.raises(LetorIndexError) as info:
        load_letor(io.BytesIO(one), zero_based=True, n_features=3)
    assert (info.value.index, info.value.zero_based, info.value.n_features) == (3, True, 3)
    assert info.value.where == "<file object>: line 1"
    with pytest.raises(LetorIndexError) as info:
        load_letor(io.BytesIO(b"0 qid:1 0:2\n"), zero_based=False)
    assert (info.value.index, info.value.zero_based) == (0, False)


@pytest.mark.filterwarnings("ignore:.*Text file input has been deprecated")
def test_zero_based_reading_equals_xgboosts_own_loader(letor_dir, tmp_path):
    # XGBoost's text loader (dmlc's LibSVM parser, indexing_mode=0 by default) keeps the
    # index as written and stores a written "k:0" as a value; load_letor(zero_based=True,
    # dense=False) gives the same CSR (values rounded to XGBoost's float32).
    xgb = pytest.importorskip("xgboost")

    path = tmp_path / "d.svm"
    path.write_text("1 qid:1 1:0.5 3:2\n0 qid:1 2:0 3:-1.25\n2 qid:2 4:7\n")
    for p in (path, letor_dir / "rank.test"):
        ref = xgb.DMatrix(f"{p}?format=libsvm").get_data()
        X, _, _ = load_letor(p, zero_based=True, dense=False)
        assert X.shape == ref.shape
        np.testing.assert_array_equal(X.indptr, ref.indptr)
        np.testing.assert_array_equal(X.indices, ref.indices)
        np.testing.assert_array_equal(X.data.astype(np.float32), ref.data)
    assert X.nnz == ref.nnz and load_letor(path, dense=False)[0].shape == (3, 4)


def test_categorical_columns_are_codes_with_effects_and_leave_the_rest_alone():
    kw = dict(n_queries=200, docs_per_query=30, n_features=10, n_informative=5, random_state=1)
    X0, y0, q0 = make_ranking(**kw)
    X, y, qid = make_ranking(**kw, categorical_levels=(10, 1000))
    assert X.shape == (X0.shape[0], 12) and X.dtype == X0.dtype
    np.testing.assert_array_equal(X[:, :10], X0)  # the numeric columns are unchanged
    np.testing.assert_array_equal(qid, q0)
    codes = X[:, 10:]
    assert np.all(codes == np.round(codes)) and codes.min() >= 0
    assert np.unique(codes[:, 0]).size == 10 and codes[:, 1].max() <= 999
    # Zipf-like frequencies, not in code order; the categories move the labels
    counts = np.bincount(codes[:, 0].astype(int), minlength=10)
    assert counts.max() > 3 * counts.min() and not np.all(np.diff(counts) <= 0)
    means = np.array([y[codes[:, 0] == c].mean() for c in range(10)])
    assert means.max() - means.min() > 0.5
    X1, y1, _ = make_ranking(**kw, categorical_levels=(10, 1000), n_jobs=1)
    np.testing.assert_array_equal(X1, X)
    np.testing.assert_array_equal(y1, y)


@pytest.mark.parametrize("bad", [(1,), (10, 2.5), (True,), "10", (1 << 25,)])
def test_categorical_levels_are_checked(bad):
    with pytest.raises(ValueError, match="categorical_levels"):
        make_ranking(n_queries=5, docs_per_query=5, n_features=4, n_informative=2,
                     categorical_levels=bad, random_state=0)
