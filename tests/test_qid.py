import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skltr.utils import group_by_qid, group_sizes_to_qid


@settings(max_examples=60)
@given(st.lists(st.integers(-3, 5), min_size=1, max_size=40))
def test_grouping_matches_naive(ids):
    qid = np.array(ids)
    g = group_by_qid(qid)
    # Naive: each query's rows in their original order, queries in sorted-id order.
    expected = [i for q in sorted(set(ids)) for i, v in enumerate(ids) if v == q]
    assert g.order.tolist() == expected
    assert g.unique_qid.tolist() == sorted(set(ids))
    assert g.sizes.tolist() == [ids.count(q) for q in sorted(set(ids))]
    assert g.is_sorted == (ids == sorted(ids))
    assert np.array_equal(g.unique_qid[g.codes], qid)


def test_string_and_float_qid():
    g = group_by_qid(np.array(["q2", "q1", "q2"], dtype=object))
    assert g.order.tolist() == [1, 0, 2]
    g = group_by_qid([1.5, 0.5, 1.5])
    assert g.group_ptr.tolist() == [0, 1, 3]


@pytest.mark.parametrize("bad, match", [
    ([1.0, np.nan, 2.0], "NaN .first at row 1"),
    (np.array([1, None, 2], dtype=object), "None/NaN"),
    (np.zeros((2, 2)), "1-D"),
    (np.array([1, "a", 2], dtype=object), "cannot be ordered"),
])
def test_bad_qid(bad, match):
    with pytest.raises(ValueError, match=match):
        group_by_qid(bad)


def test_length_mismatch_names_both_numbers_and_spots_group_sizes():
    with pytest.raises(ValueError, match="qid has 3 entries but X has 10 rows") as err:
        group_by_qid([2, 3, 5], 10)
    assert "group_sizes_to_qid" in str(err.value)
    with pytest.raises(ValueError, match="qid has 3 entries but X has 11 rows") as err:
        group_by_qid([2, 3, 5], 11)
    assert "group_sizes_to_qid" not in str(err.value)
    with pytest.raises(ValueError, match="qid is required"):
        group_by_qid(None, 3)


def test_group_sizes_to_qid():
    assert group_sizes_to_qid([2, 0, 1]).tolist() == [0, 0, 2]
    assert group_sizes_to_qid(np.array([1.0, 2.0])).tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match="whole numbers; entry 1 is 2.5"):
        group_sizes_to_qid([1, 2.5])
    with pytest.raises(ValueError, match="non-negative; entry 0 is -1"):
        group_sizes_to_qid([-1, 2])
    with pytest.raises(ValueError, match="integers"):
        group_sizes_to_qid(["a"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 5), min_size=0, max_size=40),
       st.sampled_from([np.int64, np.int32, np.uint8, np.float64, np.float32]))
def test_sorted_qid_fast_path_equals_the_general_path(sizes, dtype):
    # ascending, already grouped qid take the run-boundary path: same codes, ids and
    # groups as np.unique's factorisation (the general path)
    ids = np.repeat(np.arange(len(sizes)) * 2 + 1, np.maximum(np.array(sizes, int), 0))
    ids = ids.astype(dtype)
    fast = group_by_qid(ids)
    unique, codes = np.unique(ids, return_inverse=True)
    assert fast.is_sorted
    np.testing.assert_array_equal(fast.codes, codes.ravel())
    np.testing.assert_array_equal(fast.unique_qid, unique)
    assert fast.unique_qid.dtype == unique.dtype and fast.codes.dtype == np.int64
    np.testing.assert_array_equal(fast.group_ptr,
                                  np.r_[0, np.cumsum(np.bincount(codes.ravel()))])
    np.testing.assert_array_equal(fast.order, np.arange(ids.size))
