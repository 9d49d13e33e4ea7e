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


# ------------------------------------------------------------------ unreadable model files
# Every reader of model files names the file and the reason in a ModelFileError (a
# ValueError) and keeps the parser's error as __cause__.
def _ranker_file(tmp_path, **params):
    from skltr import GPUHistGBDTRanker

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(120, 4)), rng.integers(0, 3, 120)
    qid = np.repeat(np.arange(12), 10)
    r = GPUHistGBDTRanker(n_estimators=4, max_leaves=4, min_samples_leaf=2, random_state=0,
                          **params).fit(X, y, qid=qid)
    path = tmp_path / "ranker.json"
    r.save_model(path)
    return r, path, X


def _peer_data():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(100, 4)), rng.integers(0, 3, 100)
    return X, y, np.repeat(np.arange(10), 10)


def _check_error(exc_info, path, reason, cause=None):
    from skltr.utils._model_io import ModelFileError

    err = exc_info.value
    assert isinstance(err, ModelFileError) and isinstance(err, ValueError)
    assert str(path) in str(err) and err.path == str(path)
    assert reason in str(err), str(err)
    if cause is not None:
        assert isinstance(err.__cause__, cause), repr(err.__cause__)


def _every_reader():
    from skltr import GPUHistGBDTRanker, QuickScorerPredictor
    from skltr.convert import load_model
    from skltr.trees import TreeEnsemble

    return {"load_model": load_model, "from_file": QuickScorerPredictor.from_file,
            "ranker": GPUHistGBDTRanker.load_model, "ensemble": TreeEnsemble.load}


@pytest.mark.parametrize("reader", ["load_model", "from_file", "ranker", "ensemble"])
@pytest.mark.parametrize("keep", [0.5, 0.99, 0.0])
def test_truncated_skltr_json_names_the_file(tmp_path, reader, keep):
    import json

    _, path, _ = _ranker_file(tmp_path)
    text = path.read_text()
    path.write_text(text[:int(len(text) * keep)])
    with pytest.raises(ValueError) as exc_info:
        _every_reader()[reader](path)
    if keep == 0.0 and reader in ("load_model", "from_file"):  # these tell kinds apart first
        _check_error(exc_info, path, "the file is empty")
    else:
        _check_error(exc_info, path, "not valid JSON", json.JSONDecodeError)
        assert "truncated or corrupt" in str(exc_info.value)


@pytest.mark.parametrize("content,reason", [
    (b"[1, 2, 3]", "not a skltr model document"),
    (b"\xff\xfe{garbage", "not UTF-8"),
])
def test_skltr_json_of_the_wrong_shape(tmp_path, content, reason):
    from skltr import GPUHistGBDTRanker

    path = tmp_path / "m.json"
    path.write_bytes(content)
    with pytest.raises(ValueError) as exc_info:
        GPUHistGBDTRanker.load_model(path)
    _check_error(exc_info, path, reason)


def test_corrupt_skltr_arrays_name_the_file(tmp_path):
    import json

    from skltr.convert import load_model

    _, path, _ = _ranker_file(tmp_path)
    doc = json.loads(path.read_text())
    doc["arrays"]["threshold"]["data"] = doc["arrays"]["threshold"]["data"][:-8]
    path.write_text(json.dumps(doc))
    for read in _every_reader().values():
        with pytest.raises(ValueError) as exc_info:
            read(path)
        _check_error(exc_info, path, "truncated or corrupt")
    with pytest.raises(FileNotFoundError):  # a missing file keeps open()'s own error
        load_model(tmp_path / "absent.json")


def test_truncated_xgboost_json_names_the_file(tmp_path):
    import json

    xgb = pytest.importorskip("xgboost")
    from skltr.convert import load_model

    X, y, qid = _peer_data()
    path = tmp_path / "xgb.json"
    xgb.XGBRanker(n_estimators=3, max_depth=2).fit(X, y, qid=qid).save_model(path)
    text = path.read_text()
    path.write_text(text[:len(text) // 2])
    with pytest.raises(ValueError) as exc_info:
        load_model(path)
    _check_error(exc_info, path, "not valid JSON", json.JSONDecodeError)
    # Valid JSON with a tree entry removed: the converter names the tree and the entry.
    doc = json.loads(text)
    del doc["learner"]["gradient_booster"]["model"]["trees"][1]["split_conditions"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError) as exc_info:
        load_model(path)
    _check_error(exc_info, path, "tree 1: split_conditions is missing")


@pytest.mark.parametrize("damage", ["truncate", "bad marker", "bad length"])
def test_corrupt_xgboost_ubj_names_the_file(tmp_path, damage):
    xgb = pytest.importorskip("xgboost")
    from skltr import QuickScorerPredictor

    X, y, qid = _peer_data()
    path = tmp_path / "xgb.ubj"
    xgb.XGBRanker(n_estimators=3, max_depth=2).fit(X, y, qid=qid).save_model(path)
    data = bytearray(path.read_bytes())
    assert data[:1] == b"{"
    if damage == "truncate":
        data = data[:len(data) * 2 // 3]
    elif damage == "bad marker":
        data[1] = 0xFF  # where the first key's length marker belongs
    else:
        start = data.index(b"learner")
        data[start - 1] = 0x7F  # the key's length byte: the next key is read out of step
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError) as exc_info:
        QuickScorerPredictor.from_file(path)
    _check_error(exc_info, path, "UBJSON")


@pytest.mark.parametrize("keep", [0.5, 0.1, 0.95])
def test_truncated_lightgbm_text_names_the_file(tmp_path, keep):
    lgb = pytest.importorskip("lightgbm")
    from skltr.convert import load_model

    X, y, qid = _peer_data()
    path = tmp_path / "lgb.txt"
    lgb.LGBMRanker(n_estimators=3, num_leaves=4, min_child_samples=2, verbose=-1).fit(
        X, y, group=np.bincount(qid)).booster_.save_model(path)
    text = path.read_text()
    # Cut inside the trees (the parameters after "end of trees" do not matter to predict).
    path.write_text(text[:int(text.index("end of trees") * keep)])
    with pytest.raises(ValueError) as exc_info:
        load_model(path)
    _check_error(exc_info, path, "truncated", ValueError)
    path.write_text("this is not a model\n")
    with pytest.raises(ValueError) as exc_info:
        load_model(path)
    _check_error(exc_info, path, "cannot tell what model")


# ------------------------------------------------- hyper-parameters stored by save_model
def _tamper(path, **changes):
    import json

    doc = json.loads(path.read_text())
    params = doc["meta"]["estimator"]["params"]
    for key, value in changes.items():
        if value is _DELETE:
            del params[key]
        else:
            params[key] = value
    path.write_text(json.dumps(doc))


_DELETE = object()


@pytest.mark.parametrize("param,value,expected", [
    ("max_leaves", 1, "'max_leaves' parameter"),
    ("learning_rate", -0.1, "'learning_rate' parameter"),
    ("objective", "lambdamart", "'objective' parameter"),
    ("max_bins", 300, "'max_bins' parameter"),
    ("early_stopping", "sometimes", "'early_stopping' parameter"),
    ("eval_at", [5, 0], "eval_at must be a positive int"),
])
def test_tampered_hyper_parameter_is_refused(tmp_path, param, value, expected):
    from skltr import GPUHistGBDTRanker
    from sklearn.utils._param_validation import InvalidParameterError

    _, path, _ = _ranker_file(tmp_path)
    _tamper(path, **{param: value})
    with pytest.raises(ValueError) as exc_info:
        GPUHistGBDTRanker.load_model(path)
    _check_error(exc_info, path, expected)
    assert "invalid stored hyper-parameter" in str(exc_info.value)
    assert repr(value) in str(exc_info.value) or str(value) in str(exc_info.value)
    if param != "eval_at":
        assert isinstance(exc_info.value.__cause__, InvalidParameterError)


def test_unknown_stored_hyper_parameter_is_refused(tmp_path):
    from skltr import GPUHistGBDTRanker, QuickScorerPredictor

    r, path, X = _ranker_file(tmp_path)
    _tamper(path, path_smooth=1.0)  # a parameter skltr does not have
    with pytest.raises(ValueError) as exc_info:
        GPUHistGBDTRanker.load_model(path)
    _check_error(exc_info, path, "['path_smooth']")
    assert "QuickScorerPredictor.from_file" in str(exc_info.value)
    # The trees themselves remain readable, as the message says.
    np.testing.assert_array_equal(QuickScorerPredictor.from_file(path).predict(X),
                                  r.predict(X))


def test_missing_stored_hyper_parameter_takes_the_default(tmp_path):
    # A file of an older skltr lacks the parameters added since: they take their defaults.
    from skltr import GPUHistGBDTRanker

    r, path, X = _ranker_file(tmp_path, reg_lambda=2.0)
    _tamper(path, reg_lambda=_DELETE)
    loaded = GPUHistGBDTRanker.load_model(path)
    assert loaded.reg_lambda == GPUHistGBDTRanker().reg_lambda == 0.0
    np.testing.assert_array_equal(loaded.predict(X), r.predict(X))


def test_fitted_state_that_does_not_match_the_trees(tmp_path):
    import json

    from skltr import GPUHistGBDTRanker

    _, path, _ = _ranker_file(tmp_path)
    doc = json.loads(path.read_text())
    doc["meta"]["estimator"]["fitted"]["split_gain"].append(1.0)
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError) as exc_info:
        GPUHistGBDTRanker.load_model(path)
    _check_error(exc_info, path, "fitted state does not match")
    doc["meta"]["estimator"]["fitted"]["split_gain"].pop()
    del doc["meta"]["estimator"]["fitted"]["n_iter_"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError) as exc_info:
        GPUHistGBDTRanker.load_model(path)
    _check_error(exc_info, path, "'n_iter_' is missing")


def test_model_file_error_pickles():
    from skltr.utils._model_io import ModelFileError

    err = pickle.loads(pickle.dumps(ModelFileError("m.json", "broken")))
    assert isinstance(err, ValueError) and str(err) == "cannot read model file 'm.json': broken"
