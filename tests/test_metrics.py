"""Tests of skltr.metrics against naive references, scikit-learn and hand computations."""

import itertools
import math
import warnings

import numpy as np
import pytest
import sklearn.metrics
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import UndefinedMetricWarning

import naive_metrics as naive
from skltr.metrics import (
    average_precision_score,
    dcg_score,
    err_score,
    map_score,
    mrr_score,
    ndcg_score,
    precision_at_k,
)

# name -> (function, naive reference, option values to explore)
METRICS = {
    "ndcg": (ndcg_score, naive.ndcg, {
        "gain": ["exp2", "linear"], "ties": ["average", "stable"],
        "zero_relevance": ["one", "zero", "skip"]}),
    "dcg": (dcg_score, naive.dcg, {
        "gain": ["exp2", "linear"], "ties": ["average", "stable"],
        "zero_relevance": ["zero", "skip"]}),
    "ap": (average_precision_score, naive.average_precision, {
        "relevance_threshold": [1, 2, 0.5], "ties": ["pessimistic", "optimistic", "stable"],
        "zero_relevance": ["one", "zero", "skip"]}),
    "mrr": (mrr_score, naive.reciprocal_rank, {
        "relevance_threshold": [1, 3], "ties": ["pessimistic", "optimistic", "stable"],
        "zero_relevance": ["one", "zero", "skip"]}),
    "err": (err_score, naive.err, {
        "max_grade": [None, 4, 6.5], "ties": ["pessimistic", "optimistic", "stable"],
        "zero_relevance": ["one", "zero", "skip"]}),
    "precision": (precision_at_k, naive.precision, {
        "relevance_threshold": [1, 2], "ties": ["average", "stable"],
        "zero_relevance": ["zero", "skip"]}),
}
ALL_FUNCS = [m[0] for m in METRICS.values()]


@st.composite
def ragged(draw, max_size=7, max_label=4):
    """Random ragged queries, rows shuffled, with ties, all-zero and 1-document queries."""
    sizes = draw(st.lists(st.integers(1, max_size), min_size=1, max_size=6))
    labels, scores = [], []
    tie_heavy = draw(st.booleans())
    for size in sizes:
        if draw(st.integers(0, 4)) == 0:
            labels += [0] * size  # all-zero query
        else:
            labels += draw(st.lists(st.integers(0, max_label), min_size=size, max_size=size))
        if tie_heavy:
            scores += draw(st.lists(st.integers(0, 2), min_size=size, max_size=size))
        else:
            scores += draw(st.lists(st.floats(-5, 5, width=32), min_size=size, max_size=size))
    kind = draw(st.sampled_from(["int", "str", "float", "none"]))
    n_q = len(sizes)
    if kind == "int":
        ids = draw(st.lists(st.integers(-1000, 1000), min_size=n_q, max_size=n_q, unique=True))
    elif kind == "str":
        ids = draw(st.lists(st.text("abqz", min_size=1, max_size=3), min_size=n_q,
                            max_size=n_q, unique=True))
    elif kind == "float":
        ids = [v / 2 for v in draw(st.lists(st.integers(-50, 50), min_size=n_q,
                                            max_size=n_q, unique=True))]
    else:
        ids = [0] * n_q
    qid = [ids[q] for q, size in enumerate(sizes) for _ in range(size)]
    perm = draw(st.permutations(range(len(qid))))
    labels = np.array(labels, dtype=float)[perm]
    scores = np.array(scores, dtype=float)[perm]
    qid = None if kind == "none" else np.array(qid)[perm]
    return labels, scores, qid


def assert_same(got, expected, mean_got, mean_expected):
    values, unique_qid = got
    ref_values, ref_ids = expected
    assert unique_qid.tolist() == list(ref_ids)
    np.testing.assert_allclose(values, ref_values, rtol=1e-12, atol=1e-13, equal_nan=True)
    if math.isnan(mean_expected):
        assert math.isnan(mean_got)
    else:
        assert mean_got == pytest.approx(mean_expected, rel=1e-12, abs=1e-13)


# --------------------------------------------------------------------------------------------
# against the naive references
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(METRICS))
@settings(deadline=None, max_examples=50)
@given(data=ragged(), draw=st.data())
def test_against_naive(name, data, draw):
    func, ref, options = METRICS[name]
    y_true, y_score, qid = data
    kwargs = {opt: draw.draw(st.sampled_from(vals), label=opt) for opt, vals in options.items()}
    kwargs["k"] = draw.draw(st.one_of(st.none(), st.integers(1, 9)), label="k")
    kwargs["single_document"] = draw.draw(st.sampled_from(["include", "skip"]), label="single")
    weights = draw.draw(st.one_of(st.none(), st.lists(st.floats(0.1, 3), min_size=len(y_true),
                                                      max_size=len(y_true))), label="w")
    expected = ref(y_true, y_score, qid, **kwargs)
    got = func(y_true, y_score, qid=qid, return_per_query=True, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        mean_got = func(y_true, y_score, qid=qid, sample_weight=weights, **kwargs)
    assert_same(got, expected, mean_got, naive.mean(expected[0], qid, weights))


@pytest.mark.parametrize("name", ["ndcg", "dcg", "err"])
def test_non_integer_labels(name):
    func, ref, _ = METRICS[name]
    rng = np.random.default_rng(0)
    y_true = rng.uniform(0, 4, 40)
    y_score = rng.integers(0, 3, 40).astype(float)
    qid = rng.integers(0, 6, 40)
    expected = ref(y_true, y_score, qid)
    got = func(y_true, y_score, qid=qid, return_per_query=True)
    assert_same(got, expected, func(y_true, y_score, qid=qid), naive.mean(expected[0]))


# --------------------------------------------------------------------------------------------
# the naive tie rules themselves, by brute force over orderings
# --------------------------------------------------------------------------------------------


def _tie_orderings(scores):
    """Every ordering that sorts the documents by descending score."""
    for perm in itertools.permutations(range(len(scores))):
        if all(scores[perm[i]] >= scores[perm[i + 1]] for i in range(len(perm) - 1)):
            yield list(perm)


@settings(deadline=None, max_examples=30)
@given(labels=st.lists(st.integers(0, 3), min_size=1, max_size=6), draw=st.data())
def test_tie_rules_brute_force(labels, draw):
    n = len(labels)
    scores = draw.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    k = draw.draw(st.integers(1, n + 1))
    y, s = np.array(labels, float), np.array(scores, float)
    orderings = list(_tie_orderings(scores))
    # one query per ordering, its rows in that order and ranked so by strictly falling scores
    stacked_y = np.concatenate([y[o] for o in orderings])
    stacked_s = np.tile(-np.arange(n, dtype=float), len(orderings))
    stacked_q = np.repeat(np.arange(len(orderings)), n)

    def by_order(metric, **kw):
        return metric(stacked_y, stacked_s, qid=stacked_q, k=k, return_per_query=True, **kw)[0]

    # average = mean over orderings (DCG, NDCG, precision)
    for metric in (dcg_score, ndcg_score, precision_at_k):
        expected = np.mean(by_order(metric, ties="stable"))
        assert metric(y, s, k=k) == pytest.approx(expected, rel=1e-12, abs=1e-14)
    # pessimistic = worst ordering, optimistic = best (AP, MRR, ERR)
    for metric in (average_precision_score, mrr_score, err_score):
        kw = {"max_grade": 3} if metric is err_score else {}
        values = by_order(metric, ties="stable", **kw)
        assert metric(y, s, k=k, **kw) == pytest.approx(min(values), rel=1e-12, abs=1e-14)
        assert metric(y, s, k=k, ties="optimistic", **kw) == pytest.approx(
            max(values), rel=1e-12, abs=1e-14)


# --------------------------------------------------------------------------------------------
# against scikit-learn
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gain", ["linear", "exp2"])
@settings(deadline=None, max_examples=40)
@given(data=ragged(), k=st.one_of(st.none(), st.integers(1, 8)))
def test_against_sklearn(gain, data, k):
    y_true, y_score, qid = data
    ours_ndcg, ids = ndcg_score(y_true, y_score, qid=qid, k=k, gain=gain,
                                zero_relevance="zero", return_per_query=True)
    ours_dcg, _ = dcg_score(y_true, y_score, qid=qid, k=k, gain=gain, return_per_query=True)
    codes = np.zeros(len(y_true), int) if qid is None else np.searchsorted(ids, qid)
    for q in range(len(ids)):
        rows = codes == q
        t = y_true[rows][None, :]
        t = t if gain == "linear" else 2.0 ** t - 1
        s = y_score[rows][None, :]
        if rows.sum() == 1:  # sklearn refuses 1-document queries
            continue
        assert ours_dcg[q] == pytest.approx(sklearn.metrics.dcg_score(t, s, k=k), rel=1e-12)
        assert ours_ndcg[q] == pytest.approx(
            sklearn.metrics.ndcg_score(t, s, k=k), rel=1e-12, abs=1e-14)


# --------------------------------------------------------------------------------------------
# hand-computed cases
# --------------------------------------------------------------------------------------------


def test_hand_ndcg_three_documents():
    # scores rank the rows 1, 2, 0 -> labels 2, 0, 3
    # exp2 gains 3, 0, 7:  DCG = 3/log2(2) + 0/log2(3) + 7/log2(4) = 3 + 3.5 = 6.5
    # ideal 7, 3, 0:       IDCG = 7 + 3/log2(3) = 8.892789260714372
    y_true, y_score = [3, 2, 0], [0.1, 0.9, 0.5]
    assert dcg_score(y_true, y_score) == pytest.approx(6.5, rel=1e-15)
    assert ndcg_score(y_true, y_score) == pytest.approx(6.5 / (7 + 3 / math.log2(3)), rel=1e-15)
    # linear: DCG = 2 + 0 + 3/2 = 3.5, IDCG = 3 + 2/log2(3) = 4.2618595071429155
    assert dcg_score(y_true, y_score, gain="linear") == pytest.approx(3.5, rel=1e-15)
    assert ndcg_score(y_true, y_score, gain="linear") == pytest.approx(
        3.5 / (3 + 2 / math.log2(3)), rel=1e-15)
    # k=2: DCG@2 = 3, IDCG@2 = 7 + 3/log2(3)
    assert ndcg_score(y_true, y_score, k=2) == pytest.approx(3 / (7 + 3 / math.log2(3)))


def test_hand_ndcg_tie_straddling_cutoff():
    # labels 3, 0, 1 with scores 1, 1, 0: rows 0 and 1 tie for positions 1-2; k=1 cuts the tie
    # average: mean gain of the tie (7 + 0) / 2 = 3.5 at position 1 -> DCG@1 = 3.5
    # ideal@1 = 7 -> NDCG@1 = 0.5;  stable puts row 0 first -> NDCG@1 = 1
    y_true, y_score = [3, 0, 1], [1.0, 1.0, 0.0]
    assert dcg_score(y_true, y_score, k=1) == 3.5
    assert ndcg_score(y_true, y_score, k=1) == 0.5
    assert ndcg_score(y_true, y_score, k=1, ties="stable") == 1.0
    # full: 3.5 * (1 + 1/log2(3)) + 1 * 1/2 = 6.208265346...
    assert dcg_score(y_true, y_score) == pytest.approx(3.5 * (1 + 1 / math.log2(3)) + 0.5)


def test_hand_map_mrr_precision():
    # query a: labels 1, 0, 2, 0 with scores .9 .8 .7 .1 -> ranked labels 1, 0, 2, 0
    #   relevant at ranks 1 and 3: AP = (1/1 + 2/3) / 2 = 0.8333...; RR = 1
    #   AP@2 = (1/1) / min(2, 2) = 0.5; P@2 = 1/2; P@3 = 2/3
    # query b: labels 0, 1 with tied scores: pessimistic ranks the 0 first
    #   AP = RR = 1/2, optimistic AP = RR = 1; P@1 average = 1/2
    y_true = [1, 0, 2, 0, 0, 1]
    y_score = [0.9, 0.8, 0.7, 0.1, 0.5, 0.5]
    qid = ["a", "a", "a", "a", "b", "b"]
    ap, ids = average_precision_score(y_true, y_score, qid=qid, return_per_query=True)
    assert ids.tolist() == ["a", "b"]
    np.testing.assert_allclose(ap, [5 / 6, 0.5])
    ap2, _ = map_score(y_true, y_score, qid=qid, k=2, return_per_query=True)
    np.testing.assert_allclose(ap2, [0.5, 0.5])
    assert average_precision_score(y_true, y_score, qid=qid, ties="optimistic") == pytest.approx(
        (5 / 6 + 1) / 2)
    rr, _ = mrr_score(y_true, y_score, qid=qid, return_per_query=True)
    np.testing.assert_allclose(rr, [1.0, 0.5])
    p1, _ = precision_at_k(y_true, y_score, qid=qid, k=1, return_per_query=True)
    np.testing.assert_allclose(p1, [1.0, 0.5])
    p3, _ = precision_at_k(y_true, y_score, qid=qid, k=3, return_per_query=True)
    np.testing.assert_allclose(p3, [2 / 3, 1 / 2])  # query b has 2 docs: min(k, n) = 2
    # relevance_threshold=2 keeps only the label-2 document of query a (rank 3)
    assert mrr_score(y_true, y_score, qid=qid, relevance_threshold=2,
                     zero_relevance="skip") == pytest.approx(1 / 3)


def test_hand_err():
    # labels 2, 1, 0 ranked in that order, g_max = 2: R = 3/4, 1/4, 0
    # ERR = 3/4 + (1/2)(1/4)(1/4) = 0.78125
    assert err_score([2, 1, 0], [3, 2, 1]) == 0.78125
    # g_max = 3: R = 3/8, 1/8: ERR = 3/8 + (1/2)(1/8)(5/8) = 0.4140625
    assert err_score([2, 1, 0], [3, 2, 1], max_grade=3) == 0.4140625
    # k=1 stops after the first document
    assert err_score([2, 1, 0], [3, 2, 1], k=1) == 0.75


def test_hand_policies():
    # query 0: all-zero labels; query 1: one document with label 1; query 2: labels 1, 0
    y_true = [0, 0, 1, 1, 0]
    y_score = [0.3, 0.2, 0.5, 0.1, 0.9]
    qid = [0, 0, 1, 2, 2]
    # query 2 ranks the 0 first: NDCG = (1/log2(3)) / 1 = 0.6309
    q2 = 1 / math.log2(3)
    for policy, value in [("one", 1.0), ("zero", 0.0)]:
        v, _ = ndcg_score(y_true, y_score, qid=qid, zero_relevance=policy, return_per_query=True)
        np.testing.assert_allclose(v, [value, 1.0, q2])
    v, _ = ndcg_score(y_true, y_score, qid=qid, zero_relevance="skip", return_per_query=True)
    np.testing.assert_allclose(v, [np.nan, 1.0, q2])
    assert ndcg_score(y_true, y_score, qid=qid, zero_relevance="skip") == pytest.approx(
        (1 + q2) / 2)
    v, _ = ndcg_score(y_true, y_score, qid=qid, single_document="skip", return_per_query=True)
    np.testing.assert_allclose(v, [1.0, np.nan, q2])
    assert ndcg_score(y_true, y_score, qid=qid, single_document="skip",
                      zero_relevance="skip") == pytest.approx(q2)
    for func in (average_precision_score, mrr_score, err_score):
        v, _ = func(y_true, y_score, qid=qid, return_per_query=True)
        assert v[0] == 1.0
        v, _ = func(y_true, y_score, qid=qid, zero_relevance="zero", return_per_query=True)
        assert v[0] == 0.0


def test_sample_weight_is_mean_per_query():
    # query a: NDCG 1 with row weights 1, 3 (query weight 2); query b: NDCG 0.5 (weight 1)
    y_true = [1, 0, 0, 3, 0]
    y_score = [2, 1, 1, 1, 0]
    qid = ["a", "a", "b", "b", "b"]
    w = [1, 3, 1, 1, 1]
    v, _ = ndcg_score(y_true, y_score, qid=qid, k=1, return_per_query=True)
    np.testing.assert_allclose(v, [1.0, 0.5])  # tie of 0 and 3 at rank 1: gain (0 + 7)/2 / 7
    assert ndcg_score(y_true, y_score, qid=qid, k=1, sample_weight=w) == pytest.approx(
        (2 * 1.0 + 1 * 0.5) / 3)


def test_single_query_default_and_alias():
    assert map_score is average_precision_score
    v, ids = ndcg_score([1, 0], [0.0, 1.0], return_per_query=True)
    assert ids.tolist() == [0] and v.shape == (1,)
    assert ndcg_score([1, 0], [0.0, 1.0], qid=["x", "x"]) == v[0]


def test_all_skipped_warns_nan():
    with pytest.warns(UndefinedMetricWarning, match="every query was skipped"):
        assert math.isnan(ndcg_score([0, 0], [1, 2], zero_relevance="skip"))
    with pytest.warns(UndefinedMetricWarning, match="total sample_weight 0"):
        assert math.isnan(ndcg_score([1, 0], [1, 2], sample_weight=[0, 0]))


# --------------------------------------------------------------------------------------------
# invariance of every default to the order of rows within a query
# --------------------------------------------------------------------------------------------


@settings(deadline=None, max_examples=40)
@given(data=ragged(), perm_seed=st.integers(0, 2**32 - 1))
def test_defaults_invariant_to_row_order(data, perm_seed):
    y_true, y_score, qid = data
    perm = np.random.default_rng(perm_seed).permutation(len(y_true))
    q2 = None if qid is None else qid[perm]
    for func in ALL_FUNCS:
        a, ida = func(y_true, y_score, qid=qid, return_per_query=True)
        b, idb = func(y_true[perm], y_score[perm], qid=q2, return_per_query=True)
        assert ida.tolist() == idb.tolist()
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)


# --------------------------------------------------------------------------------------------
# large labels
# --------------------------------------------------------------------------------------------


def test_exp2_labels_above_31():
    y_true = [40, 33, 0, 52, 1]
    y_score = [0.1, 0.5, 0.9, 0.3, 0.2]
    # single document: DCG is its gain, 2**40 - 1 exactly
    assert dcg_score([40], [0.0]) == 2.0 ** 40 - 1
    # integer-exact up to label 53 (2**53 - 1 is representable), rounded beyond
    assert int(dcg_score([53], [0.0])) == 2 ** 53 - 1
    assert dcg_score([60], [0.0]) == float(2 ** 60 - 1)
    for func, ref in [(dcg_score, naive.dcg), (ndcg_score, naive.ndcg)]:
        expected, _ = ref(y_true, y_score)
        assert func(y_true, y_score) == pytest.approx(expected[0], rel=1e-14)
    ndcg = ndcg_score(y_true, y_score)
    assert 0 < ndcg < 1
    # ERR with large grades: R(52) = 1 - 2**-52, R(40) = 2**-12 - 2**-52
    expected, _ = naive.err(y_true, y_score)
    assert err_score(y_true, y_score) == pytest.approx(expected[0], rel=1e-14)
    assert err_score([1, 0], [1, 0], max_grade=2000) == pytest.approx(2.0 ** -2000, abs=0)


def test_exp2_overflow_raises_and_suggests_linear():
    with pytest.raises(ValueError, match=r"label 2000\.0 at row 1.*gain='linear'"):
        ndcg_score([1, 2000, 3], [0.1, 0.2, 0.3], qid=[5, 5, 4])
    with pytest.raises(ValueError, match="gain='linear'"):
        dcg_score([2000], [0.0])
    # label 1023 alone is representable, but two of them overflow the query's sum
    assert dcg_score([1023], [0.0]) == 2.0 ** 1023
    with pytest.raises(ValueError, match="sum beyond the float64 range.*gain='linear'"):
        ndcg_score([1023, 1023], [0.0, 1.0])
    assert ndcg_score([1, 2000, 3], [0.1, 0.2, 0.3], gain="linear") == pytest.approx(
        naive.ndcg([1, 2000, 3], [0.1, 0.2, 0.3], gain="linear")[0][0])


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("func", ALL_FUNCS)
def test_input_errors(func):
    with pytest.raises(ValueError, match="y_true has 3 entries but y_score has 2"):
        func([1, 0, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="qid has 2 entries but y_true has 3"):
        func([1, 0, 1], [0.1, 0.2, 0.3], qid=[1, 2])
    with pytest.raises(ValueError, match="looks like per-query group sizes"):
        func([1, 0, 1], [0.1, 0.2, 0.3], qid=[2, 1])
    with pytest.raises(ValueError, match=r"y_true contains nan at row 1"):
        func([1, np.nan, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"y_score contains inf at row 2"):
        func([1, 0, 1], [0.1, 0.2, np.inf])
    with pytest.raises(ValueError, match=r"y_score must be 1-D.*shape \(1, 3\)"):
        func([1, 0, 1], [[0.1, 0.2, 0.3]])
    with pytest.raises(ValueError, match=r"y_true must be 1-D.*shape \(3, 1\)"):
        func([[1], [0], [1]], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="empty"):
        func([], [])
    with pytest.raises(ValueError, match="negative label -1.0 at row 2"):
        func([1, 0, -1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="y_true must be numeric"):
        func(["a", "b"], [0.1, 0.2])
    for bad_k in (0, -2, 1.5, True, "3"):
        with pytest.raises(ValueError, match=r"'k' parameter .* must be an int in the range|"
                                             r"k must be a positive int"):
            func([1, 0], [0.1, 0.2], k=bad_k)
    with pytest.raises(ValueError, match="qid contains NaN"):
        func([1, 0], [0.1, 0.2], qid=[1.0, np.nan])
    with pytest.raises(ValueError, match="sample_weight has 1 entries but y_true has 2"):
        func([1, 0], [0.1, 0.2], sample_weight=[1.0])
    with pytest.raises(ValueError, match="negative weight -1.0 at row 0"):
        func([1, 0], [0.1, 0.2], sample_weight=[-1.0, 1.0])
    with pytest.raises(ValueError, match="'single_document' parameter .* must be a str among"):
        func([1, 0], [0.1, 0.2], single_document="drop")
    with pytest.raises(ValueError, match="'ties' parameter .* must be a str among"):
        func([1, 0], [0.1, 0.2], ties="random")
    with pytest.raises(ValueError, match="'zero_relevance' parameter .* must be a str among"):
        func([1, 0], [0.1, 0.2], zero_relevance="nan")


def test_option_errors():
    with pytest.raises(ValueError, match=r"'gain' parameter of ndcg_score must be a str among"):
        ndcg_score([1, 0], [0.1, 0.2], gain="exp")
    with pytest.raises(ValueError, match=r"'ties' parameter of ndcg_score .*'average'"):
        ndcg_score([1, 0], [0.1, 0.2], ties="pessimistic")
    with pytest.raises(ValueError, match=r"'ties' parameter of mrr_score .*'pessimistic'"):
        mrr_score([1, 0], [0.1, 0.2], ties="average")
    with pytest.raises(ValueError, match=r"'zero_relevance' parameter of dcg_score .*'skip'"):
        dcg_score([1, 0], [0.1, 0.2], zero_relevance="one")
    with pytest.raises(ValueError, match=r"'relevance_threshold' parameter .* range \(0.0, inf\)"):
        average_precision_score([1, 0], [0.1, 0.2], relevance_threshold=0)
    with pytest.raises(ValueError, match=r"max_grade=2.0 is below the label 3.0 .* row 1"):
        err_score([1, 3], [0.1, 0.2], max_grade=2)
    with pytest.raises(ValueError, match=r"'max_grade' parameter of err_score must be a float"):
        err_score([1, 3], [0.1, 0.2], max_grade=np.inf)


def test_ndcg_evaluator_equals_ndcg_score():
    from skltr.metrics import NDCGEvaluator

    rng = np.random.default_rng(5)
    n = 300
    qid = rng.integers(0, 25, n)  # unsorted query ids
    y = rng.integers(0, 5, n).astype(float)
    w = rng.uniform(0.5, 2.0, 25)[qid]
    ev = NDCGEvaluator(y, qid=qid, eval_at=[1, 5, 10], gain="exp2", sample_weight=w)
    assert ev.names == ["ndcg@1", "ndcg@5", "ndcg@10"]
    for _ in range(3):
        s = np.round(rng.normal(size=n), 1)  # with ties
        assert ev(s) == [ndcg_score(y, s, qid=qid, k=k, sample_weight=w) for k in (1, 5, 10)]
    lin = NDCGEvaluator(y, qid=qid, eval_at=(3,), gain="linear")
    assert lin(s) == [ndcg_score(y, s, qid=qid, k=3, gain="linear")]


def test_ndcg_evaluator_errors():
    from sklearn.utils._param_validation import InvalidParameterError

    from skltr.metrics import NDCGEvaluator

    with pytest.raises(InvalidParameterError, match="gain"):
        NDCGEvaluator([1, 0], eval_at=[1], gain="log")
    with pytest.raises(ValueError, match="eval_at"):
        NDCGEvaluator([1, 0], eval_at=[0])
    with pytest.raises(ValueError, match="y_score has shape"):
        NDCGEvaluator([1, 0], eval_at=[1])([0.5])
