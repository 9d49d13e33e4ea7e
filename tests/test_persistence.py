import pickle
import warnings

import numpy as np
import pytest

import skltr
from skltr.utils._model_io import decode_array, encode_array, make_document, read_document

from _rankers import LinearTestRanker


@pytest.mark.parametrize("arr", [
    np.array([1.5, np.nan, -np.inf, 5e-324]), np.arange(6, dtype=np.int32).reshape(2, 3),
    np.array([True, False]), np.array([], dtype=np.uint32), np.array([1, 2], dtype=">i8"),
])
def test_array_round_trip_bitwise(arr):
    out = decode_array(encode_array(arr))
    assert out.shape == arr.shape and out.dtype == arr.dtype.newbyteorder("=")
    assert out.tobytes() == arr.astype(arr.dtype.newbyteorder("=")).tobytes()


def test_document_versions():
    doc = make_document("Thing", {"a": 1}, {"x": np.arange(3)})
    meta, arrays = read_document(doc, "Thing")
    assert meta == {"a": 1} and arrays["x"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="holds a 'Thing', not a 'Other'"):
        read_document(doc, "Other")
    with pytest.raises(ValueError, match=r"schema version 2.0.*reads schema 1.x only"):
        read_document({**doc, "schema_version": "2.0"})
    with pytest.warns(UserWarning, match="newer than this skltr"):
        read_document({**doc, "schema_version": "1.99"})
    with pytest.raises(ValueError, match="not a skltr model document"):
        read_document({"learner": {}})
    bad = make_document("Thing", {}, {"x": np.arange(3)})
    bad["arrays"]["x"]["shape"] = [4]
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_document(bad)


def test_pickle_carries_version_and_warns_on_mismatch(monkeypatch):
    rng = np.random.default_rng(0)
    X, y, qid = rng.normal(size=(20, 3)), rng.integers(0, 3, 20), np.repeat(np.arange(4), 5)
    model = LinearTestRanker().fit(X, y, qid=qid)
    blob = pickle.dumps(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = pickle.loads(blob)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    import skltr.utils._model_io as mio

    monkeypatch.setattr(mio, "__version__", "999.0")
    with pytest.warns(UserWarning, match=f"saved by skltr {skltr.__version__} with skltr 999.0"):
        pickle.loads(blob)
