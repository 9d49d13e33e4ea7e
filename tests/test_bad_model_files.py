"""Bad-input suite (#26): corrupt and truncated model files of every format skltr reads.

Every file skltr reads is untrusted. Starting from small valid files written by the
libraries themselves (skltr JSON of a GPUHistGBDTRanker, a RankBoostRanker and a converted
model; XGBoost JSON and UBJSON; LightGBM text; an OnDemandRuleRanker model), each case
truncates, overwrites or corrupts the file and reads it with every entry point of that
format, under a time limit so that a hang fails. The property: the read ends either in a
``ModelFileError`` (a ``ValueError``) that names the file and says what is wrong, or in a
model that predicts finite scores on a probe matrix. Any other exception (``KeyError``,
``IndexError``, ``RecursionError``, ``MemoryError``, ...) fails.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skltr.trees import TreeEnsemble
from skltr.utils._model_io import ModelFileError

from _limits import time_limit

#: Seconds one read (and prediction) of a corrupt file may take. The valid files load in
#: milliseconds; the limit only has to tell a hang from a slow, loaded machine.
LIMIT_S = 5.0

N_FEATURES = 4
BYTE_CASES = settings(max_examples=50, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow,
                                             HealthCheck.function_scoped_fixture])


# --------------------------------------------------------------------------- valid files
@dataclass
class Model:
    raw: bytes
    suffix: str
    readers: dict  # name -> callable(path) -> model with predict

    def __repr__(self):  # hypothesis prints the fixture of a failing example
        return f"Model({len(self.raw)} bytes, {self.suffix}, {sorted(self.readers)})"


def _data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, N_FEATURES))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = rng.integers(0, 3, 120)
    return X, y, np.repeat(np.arange(12), 10)


def _skltr_readers(cls=None):
    from skltr import QuickScorerPredictor
    from skltr.convert import load_model

    readers = {"load_model": load_model, "TreeEnsemble.load": TreeEnsemble.load,
               "QuickScorerPredictor.from_file": QuickScorerPredictor.from_file}
    if cls is not None:
        readers[f"{cls.__name__}.load_model"] = cls.load_model
    return readers


def _xgb_readers():
    from skltr.convert import from_xgboost, load_model

    return {"load_model": load_model, "from_xgboost": from_xgboost}


def _build_models(tmp: Path) -> dict:
    import lightgbm as lgb
    import xgboost as xgb

    from skltr import GPUHistGBDTRanker, OnDemandRuleRanker, RankBoostRanker
    from skltr.convert import from_lightgbm, from_xgboost, load_model

    X, y, qid = _data()
    models = {}
    gbdt = GPUHistGBDTRanker(n_estimators=4, max_leaves=4, min_samples_leaf=2,
                             random_state=0).fit(X, y, qid=qid)
    gbdt.save_model(tmp / "gbdt.json")
    models["skltr_gbdt"] = Model((tmp / "gbdt.json").read_bytes(), ".json",
                                 _skltr_readers(GPUHistGBDTRanker))
    rb = RankBoostRanker(n_estimators=4, random_state=0).fit(X, y, qid=qid)
    rb.save_model(tmp / "rb.json")
    models["skltr_rankboost"] = Model((tmp / "rb.json").read_bytes(), ".json",
                                      _skltr_readers(RankBoostRanker))
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 2, "nthread": 1},
                        xgb.DMatrix(np.nan_to_num(X), y, qid=qid), num_boost_round=3)
    booster.save_model(str(tmp / "xgb.json"))
    booster.save_model(str(tmp / "xgb.ubj"))
    from_xgboost(str(tmp / "xgb.json")).save(tmp / "converted.json")
    models["skltr_converted"] = Model((tmp / "converted.json").read_bytes(), ".json",
                                      _skltr_readers())
    models["xgboost_json"] = Model((tmp / "xgb.json").read_bytes(), ".json", _xgb_readers())
    models["xgboost_ubj"] = Model((tmp / "xgb.ubj").read_bytes(), ".ubj", _xgb_readers())
    lgbm = lgb.LGBMRanker(n_estimators=3, num_leaves=4, min_child_samples=2, verbose=-1,
                          n_jobs=1).fit(X, y, group=np.bincount(qid))
    lgbm.booster_.save_model(str(tmp / "lgb.txt"))
    models["lightgbm_text"] = Model((tmp / "lgb.txt").read_bytes(), ".txt",
                                    {"load_model": load_model, "from_lightgbm": from_lightgbm})
    rules = OnDemandRuleRanker(max_rule_size=2, discretization="quantile", n_bins=4,
                               random_state=0).fit(X, y, qid=qid)
    rules.save_model(tmp / "rules.json")
    models["rule_ranker"] = Model((tmp / "rules.json").read_bytes(), ".json",
                                  {"OnDemandRuleRanker.load_model":
                                   OnDemandRuleRanker.load_model})
    return models


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    pytest.importorskip("xgboost")
    pytest.importorskip("lightgbm")
    tmp = tmp_path_factory.mktemp("valid")
    built = _build_models(tmp)
    # Compile every kernel a read and a prediction use now, outside the time limits: a
    # cold numba cache takes longer than a limit on a loaded machine.
    for name, model in built.items():
        path = tmp / f"warm_{name}{model.suffix}"
        path.write_bytes(model.raw)
        for reader in model.readers.values():
            _check_predicts(reader(path))
    return built


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("bad")


FORMATS = ["skltr_gbdt", "skltr_rankboost", "skltr_converted", "xgboost_json", "xgboost_ubj",
           "lightgbm_text", "rule_ranker"]


# --------------------------------------------------------------------------- the property
def _n_features(model) -> int:
    return int(model.n_features if isinstance(model, TreeEnsemble) else model.n_features_in_)


def _probe(n_features):
    """Rows that reach many leaves: normal values, NaN, zeros and very large values."""
    rng = np.random.default_rng(0)
    X = rng.normal(scale=2.0, size=(24, n_features))
    X[0], X[1], X[2], X[3] = np.nan, 0.0, 1e30, -1e30
    return X


def _ensemble_of(model):
    if isinstance(model, TreeEnsemble):
        return model
    return getattr(model, "ensemble_", None)


def _check_predicts(model):
    """A model that loaded must score the probe: finite scores, no exception.

    Two exceptions are allowed. A rule model may refuse the probe as its stored itemset limit
    says (a valid setting, a clear error). And a skltr JSON file may hold any ensemble
    ``TreeEnsemble`` accepts, which includes leaves so large that their float sum can
    overflow (the TreeEnsemble tests use them on purpose); ``check_score_range`` tells those
    apart.
    """
    X = _probe(_n_features(model))
    ensemble = _ensemble_of(model)
    scores = [model.predict_raw(X)] if isinstance(model, TreeEnsemble) else []
    try:
        out = np.asarray(model.predict(X))
    except ValueError as exc:
        # a rule model whose (valid) stored max_itemsets_per_document is below the probe's
        # itemset count refuses to rank it, as its settings say: a clear error
        if ensemble is None and "max_itemsets_per_document" in str(exc):
            return
        raise
    if ensemble is None or not ensemble.output_transform.endswith("exp"):
        scores.append(out)
    for s in scores:
        if not np.all(np.isfinite(s)):
            assert ensemble is not None, f"non-finite scores {s[:4]}"
            with pytest.raises(ValueError, match="beyond the"):
                ensemble.check_score_range()


def _read(model: Model, reader_name: str, path: Path):
    """Read ``path`` with one reader under the time limit; return the model or None when it
    was refused with a clear error. Anything else fails the test."""
    reader = model.readers[reader_name]
    with time_limit(LIMIT_S, f"{reader_name}({path.name})"):
        try:
            loaded = reader(path)
        except ModelFileError as exc:
            assert exc.path == str(path) and str(path) in str(exc), str(exc)
            assert len(exc.reason) >= 15, exc.reason  # says what is wrong, not "error"
            return None
        _check_predicts(loaded)
    return loaded


def _read_all(model: Model, data: bytes, workdir: Path, tag="case"):
    path = workdir / f"{tag}{model.suffix}"
    path.write_bytes(data)
    return {name: _read(model, name, path) for name in model.readers}


def test_valid_files_load_and_predict(models, workdir):
    for name, model in models.items():
        loaded = _read_all(model, model.raw, workdir, tag=name)
        assert all(v is not None for v in loaded.values()), name


# --------------------------------------------------------------------------- byte mutations
@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_at_many_offsets(models, workdir, fmt):
    model = models[fmt]
    n = len(model.raw)
    offsets = sorted({0, 1, 2, 3, 8, n - 1, n - 2, *np.linspace(0, n - 1, 40).astype(int)})
    for k in offsets:
        loaded = _read_all(model, model.raw[:k], workdir)
        # Only whitespace may be cut from a valid file without it becoming invalid.
        if any(v is not None for v in loaded.values()):
            assert model.raw[k:].strip() == b"" or fmt == "lightgbm_text", (fmt, k)


@pytest.mark.parametrize("fmt", FORMATS)
@BYTE_CASES
@given(data=st.data())
def test_truncated_anywhere(models, workdir, fmt, data):
    model = models[fmt]
    k = data.draw(st.integers(0, len(model.raw) - 1), label="keep")
    _read_all(model, model.raw[:k], workdir)


@pytest.mark.parametrize("fmt", FORMATS)
@BYTE_CASES
@given(data=st.data())
def test_overwritten_bytes(models, workdir, fmt, data):
    model = models[fmt]
    raw = bytearray(model.raw)
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(0, 255)),
                               min_size=1, max_size=6), label="edits")
    for pos, byte in edits:
        raw[pos] = byte
    _read_all(model, bytes(raw), workdir)


@pytest.mark.parametrize("fmt", FORMATS)
@BYTE_CASES
@given(data=st.data())
def test_flipped_bits(models, workdir, fmt, data):
    model = models[fmt]
    raw = bytearray(model.raw)
    for pos, bit in data.draw(st.lists(st.tuples(st.integers(0, len(raw) - 1),
                                                 st.integers(0, 7)), min_size=1, max_size=4),
                              label="flips"):
        raw[pos] ^= 1 << bit
    _read_all(model, bytes(raw), workdir)


_NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_BAD_NUMBERS = [b"NaN", b"Infinity", b"-Infinity", b"nan", b"inf", b"-1", b"-7", b"1e308",
                b"-1e308", b"1e39", b"4294967296", b"99999999999999999999", b"2.5", b'"x"',
                b"[]", b"{}", b"null", b"true", b"0", b"1", b"65535", b"3"]


@pytest.mark.parametrize("fmt", ["skltr_gbdt", "skltr_converted", "xgboost_json",
                                 "lightgbm_text", "rule_ranker"])
@BYTE_CASES
@given(data=st.data())
def test_numbers_replaced(models, workdir, fmt, data):
    """Text formats: a number of the file (a count, an index, a value, a version) becomes
    NaN, inf, negative, huge, fractional or of another type."""
    model = models[fmt]
    spans = [m.span() for m in _NUMBER.finditer(model.raw)]
    raw = model.raw
    for _ in range(data.draw(st.integers(1, 3), label="n_edits")):
        spans = [m.span() for m in _NUMBER.finditer(raw)]
        a, b = data.draw(st.sampled_from(spans), label="number")
        raw = raw[:a] + data.draw(st.sampled_from(_BAD_NUMBERS), label="by") + raw[b:]
    _read_all(model, raw, workdir)


# --------------------------------------------------------------------------- targeted: UBJSON
def _expect_refused(model: Model, data: bytes, workdir: Path, *reasons: str):
    """Every reader refuses ``data`` with a ModelFileError whose message holds one of
    ``reasons``."""
    path = workdir / f"targeted{model.suffix}"
    path.write_bytes(data)
    for name, reader in model.readers.items():
        with time_limit(LIMIT_S, f"{name}({path.name})"):
            with pytest.raises(ModelFileError) as info:
                reader(path)
        assert str(path) in str(info.value)
        assert any(r in str(info.value) for r in reasons), (name, str(info.value))


@pytest.mark.parametrize("data,reason", [
    # the 8 bytes of issue #26: an array of strings whose length is -3 looped forever
    (b"{i\x01a[Si\xfd", "negative string length -3"),
    (b"{i\x01a[#L\x7f\xff\xff\xff\xff\xff\xff\xff", "container count"),
    (b"{#L\x40\x00\x00\x00\x00\x00\x00\x00", "container count"),
    (b"{i\x01a[$Z#L\x00\x00\x00\x00\x7f\xff\xff\xff", "container count"),
    (b"{i\x01a[$d#l\x10\x00\x00\x00\x00\x00", "container count"),
    (b"{i\x01aSl\x7f\xff\xff\xff", "string length"),
    (b"{i\x01a" + b"[" * 1000, "nested deeper"),
    (b"{i\x01a" + b"[" * 200_000, "nested deeper"),
    (b"{i\x01aX}", "unknown UBJSON marker"),
    (b"{i\x01a[$Q#i\x01\x00]}", "unknown container type"),
    (b"{i\x01aSi\x02\xff\xfe}", "UTF-8"),
    (b"{i\x01aH\x69\x03abc}", "not a number"),
    (b"{i\x01ai", "runs past the end"),
    (b"{i\x01aT}garbage", "after the top-level object"),
    (b"{i\x01aT", "end of data"),
])
def test_ubjson_reader_bounds(models, workdir, data, reason):
    _expect_refused(models["xgboost_ubj"], data, workdir, reason)


def _ubj_set_string(raw: bytes, key: bytes, text: bytes) -> bytes:
    """Overwrite the string value of ``key`` in place (same length, padded with blanks)."""
    at = raw.index(key) + len(key)
    assert raw[at:at + 1] == b"S"
    width = {b"i": 1, b"U": 1, b"I": 2, b"l": 4, b"L": 8}[raw[at + 1:at + 2]]
    start = at + 2 + width
    n = int.from_bytes(raw[at + 2:start], "big")
    assert len(text) <= n
    return raw[:start] + text.ljust(n) + raw[start + n:]


@pytest.mark.parametrize("value,reason", [(b"[nan]", "base_score"), (b"[inf]", "base_score"),
                                          (b"[1e39]", "base_score"), (b"[x]", "base_score")])
def test_ubj_base_score(models, workdir, value, reason):
    model = models["xgboost_ubj"]
    _expect_refused(model, _ubj_set_string(model.raw, b"base_score", value), workdir, reason)


# --------------------------------------------------------------------------- targeted: XGBoost
def _xgb_doc(models):
    return json.loads(models["xgboost_json"].raw)


def _trees(doc):
    return doc["learner"]["gradient_booster"]["model"]["trees"]


def _internal(tree):
    return [i for i, c in enumerate(tree["left_children"]) if c >= 0]


def _xgb_edit(name):
    """(edit(doc), expected reason) of the XGBoost JSON corruptions."""
    def param(key, value):
        return lambda d: d["learner"]["learner_model_param"].__setitem__(key, value)

    def tree_field(key, fn):
        return lambda d: _trees(d)[1].__setitem__(key, fn(_trees(d)[1]))

    def set_at(key, i_fn, value):
        def fn(tree):
            arr = list(tree[key])
            arr[i_fn(tree)] = value
            return arr
        return fn

    first_internal = lambda t: _internal(t)[0]  # noqa: E731
    last_internal = lambda t: _internal(t)[-1]  # noqa: E731
    first_leaf = lambda t: t["left_children"].index(-1)  # noqa: E731
    return {
        "base_score nan": (param("base_score", "[nan]"), "base_score"),
        "base_score NaN number": (param("base_score", float("nan")), "base_score"),
        "base_score inf": (param("base_score", "[inf]"), "base_score"),
        "base_score beyond float32": (param("base_score", "[1E39]"), "base_score"),
        "base_score list": (param("base_score", [[0.5]]), "base_score"),
        "base_score bool": (param("base_score", True), "base_score"),
        "num_class huge": (param("num_class", "1000000000"), "outputs"),
        "num_class negative": (param("num_class", "-3"), "num_class"),
        "num_class not a number": (param("num_class", "x"), "num_class"),
        "num_feature below the splits": (param("num_feature", "1"), "num_feature=1"),
        "num_feature beyond int32": (param("num_feature", "99999999999"), "num_feature"),
        "right child out of range": (tree_field("right_children",
                                                set_at("right_children", first_internal, 900)),
                                     "right child 900 is outside the tree's"),
        "left child -5": (tree_field("left_children", set_at("left_children", first_internal,
                                                             -5)), "left child -5"),
        "cycle": (tree_field("left_children", set_at("left_children", last_internal, 0)),
                  "tree 1, node 0"),
        "one child": (tree_field("right_children", set_at("right_children", first_internal,
                                                          -1)), "exactly one child"),
        "feature out of range": (tree_field("split_indices",
                                            set_at("split_indices", first_internal, 77)),
                                 "splits on feature 77"),
        "negative feature": (tree_field("split_indices", set_at("split_indices",
                                                                first_internal, -2)),
                             "splits on feature -2"),
        "leaf nan": (tree_field("split_conditions", set_at("split_conditions", first_leaf,
                                                           float("nan"))), "leaf value"),
        "leaf beyond float32": (tree_field("split_conditions",
                                           set_at("split_conditions", first_leaf, 1e39)),
                                "leaf value"),
        "threshold inf": (tree_field("split_conditions", set_at("split_conditions",
                                                                first_internal,
                                                                float("inf"))),
                          "non-finite threshold"),
        "fractional child": (tree_field("left_children", set_at("left_children",
                                                                first_internal, 1.5)),
                             "not a flat list of integers"),
        "children as string": (tree_field("left_children", lambda t: "1,2"),
                               "not a JSON array"),
        "nested children": (tree_field("left_children", lambda t: [t["left_children"]]),
                            "not a flat list"),
        "short node array": (tree_field("split_indices", lambda t: t["split_indices"][:-1]),
                             "split_indices has"),
        "default_left 7": (tree_field("default_left", set_at("default_left", first_internal,
                                                             7)), "default_left"),
        "split_type 5": (tree_field("split_type", set_at("split_type", first_internal, 5)),
                         "split_type 5"),
        "tree not an object": (lambda d: _trees(d).__setitem__(1, [1, 2]), "not a JSON object"),
        "missing key": (lambda d: _trees(d)[1].pop("left_children"),
                        "left_children is missing"),
        "num_trees inconsistent": (
            lambda d: d["learner"]["gradient_booster"]["model"]["gbtree_model_param"]
            .__setitem__("num_trees", "7"), "num_trees"),
        "num_nodes inconsistent": (lambda d: _trees(d)[1]["tree_param"].__setitem__(
            "num_nodes", "99"), "num_nodes"),
        "tree_info short": (lambda d: d["learner"]["gradient_booster"]["model"]
                            .__setitem__("tree_info", [0]), "tree_info"),
        "tree_info out of range": (lambda d: d["learner"]["gradient_booster"]["model"]
                                   .__setitem__("tree_info", [0, 3, 0]), "tree_info"),
        "iteration_indptr decreasing": (lambda d: d["learner"]["gradient_booster"]["model"]
                                        .__setitem__("iteration_indptr", [0, 2, 1, 3]),
                                        "iteration_indptr"),
        "iteration_indptr not ints": (lambda d: d["learner"]["gradient_booster"]["model"]
                                      .__setitem__("iteration_indptr", ["a", "b"]),
                                      "iteration_indptr"),
        "num_parallel_tree 0": (lambda d: d["learner"]["gradient_booster"]["model"][
            "gbtree_model_param"].__setitem__("num_parallel_tree", "0"), "num_parallel_tree"),
        "no learner": (lambda d: d.pop("learner"),
                       ("'learner' is missing", "neither a skltr nor an XGBoost model")),
        "learner a list": (lambda d: d.__setitem__("learner", []), "'learner'"),
        "objective not a string": (lambda d: d["learner"]["objective"].__setitem__("name", 3),
                                   "objective.name"),
        "version strings": (lambda d: d.__setitem__("version", ["a"]), "version"),
        "feature_names not strings": (lambda d: d["learner"].__setitem__("feature_names",
                                                                         [1, 2, 3, 4]),
                                      "feature_names"),
    }[name]


_XGB_EDITS = [
    "base_score nan", "base_score NaN number", "base_score inf", "base_score beyond float32",
    "base_score list", "base_score bool", "num_class huge", "num_class negative",
    "num_class not a number", "num_feature below the splits", "num_feature beyond int32",
    "right child out of range", "left child -5", "cycle", "one child", "feature out of range",
    "negative feature", "leaf nan", "leaf beyond float32", "threshold inf",
    "fractional child", "children as string", "nested children", "short node array",
    "default_left 7", "split_type 5", "tree not an object", "missing key",
    "num_trees inconsistent", "num_nodes inconsistent", "tree_info short",
    "tree_info out of range", "iteration_indptr decreasing", "iteration_indptr not ints",
    "num_parallel_tree 0", "no learner", "learner a list", "objective not a string",
    "version strings", "feature_names not strings",
]


@pytest.mark.parametrize("name", _XGB_EDITS)
def test_xgboost_json_field_corruptions(models, workdir, name):
    edit, reason = _xgb_edit(name)
    doc = _xgb_doc(models)
    edit(doc)
    reasons = reason if isinstance(reason, tuple) else (reason,)
    _expect_refused(models["xgboost_json"], json.dumps(doc).encode(), workdir, *reasons)


@pytest.mark.parametrize("value", ["[5E-1]", "5E-1", "[-8.591273E-9]", 0.25, [0.25]])
def test_xgboost_base_score_forms_load(models, workdir, value):
    """The forms XGBoost writes (3.x vectors, older scalars) still load, and predict finite
    scores shifted by the base score."""
    doc = _xgb_doc(models)
    doc["learner"]["learner_model_param"]["base_score"] = value
    path = workdir / "base.json"
    path.write_text(json.dumps(doc))
    loaded = _read(models["xgboost_json"], "load_model", path)
    expected = float(np.float32(np.atleast_1d(
        float(str(value[0] if isinstance(value, list) else value).strip("[]")))[0]))
    assert loaded.base_score.tolist() == [expected]


def test_xgboost_deep_json_nesting(models, workdir):
    _expect_refused(models["xgboost_json"], b'{"learner":' + b"[" * 100_000 + b"]" * 100_000
                    + b"}", workdir, "too deeply")


# --------------------------------------------------------------------------- targeted: LightGBM
def _lgb_edit(text: str, name: str) -> tuple[str, str]:
    """(corrupted model text, expected reason)."""
    tree1 = text.index("Tree=1")

    def sub_in_tree1(key, fn):
        start = text.index(f"\n{key}=", tree1) + 1
        end = text.index("\n", start)
        values = text[start + len(key) + 1:end].split()
        return text[:start] + f"{key}=" + " ".join(fn(values)) + text[end:]

    def first(v):
        return lambda values: [v] + values[1:]

    return {
        "leaf nan": (sub_in_tree1("leaf_value", first("nan")), "leaf 0 has the value nan"),
        "leaf inf": (sub_in_tree1("leaf_value", first("inf")), "leaf 0 has the value inf"),
        "threshold nan": (sub_in_tree1("threshold", first("nan")), "NaN or -inf threshold"),
        "threshold text": (sub_in_tree1("threshold", first("abc")), "not a number"),
        "num_leaves inconsistent": (sub_in_tree1("num_leaves", lambda v: ["999"]),
                                    "entries, expected"),
        "num_leaves huge": (sub_in_tree1("num_leaves", lambda v: ["99999999999999"]),
                            "entries, expected"),
        "num_leaves 0": (sub_in_tree1("num_leaves", lambda v: ["0"]), "num_leaves"),
        "split_feature out of range": (sub_in_tree1("split_feature", first("1000000")),
                                       "splits on feature 1000000"),
        "split_feature negative": (sub_in_tree1("split_feature", first("-1")),
                                   "splits on feature -1"),
        "left_child out of range": (sub_in_tree1("left_child", first("50")),
                                    "left_child 50 is outside"),
        "right_child leaf out of range": (sub_in_tree1("right_child", first("-60")),
                                          "right_child -60 is outside"),
        "cycle": (sub_in_tree1("left_child", lambda v: v[:1] + ["0"] + v[2:]), "tree 1"),
        "decision_type 99": (sub_in_tree1("decision_type", first("99")), "decision_type 99"),
        "decision_type missing 3": (sub_in_tree1("decision_type", first("12")),
                                    "decision_type 12"),
        "shrinkage nan": (sub_in_tree1("shrinkage", lambda v: ["nan"]), "shrinkage"),
        "tree_sizes short": (re.sub(r"tree_sizes=(\d+) ", "tree_sizes=", text, count=1),
                             "tree_sizes"),
        "max_feature_idx text": (text.replace("max_feature_idx=", "max_feature_idx=x", 1),
                                 "max_feature_idx"),
        "max_feature_idx huge": (re.sub(r"max_feature_idx=\d+", "max_feature_idx=99999999999",
                                        text, count=1), "max_feature_idx"),
        "num_tree_per_iteration 0": (re.sub(r"num_tree_per_iteration=\d+",
                                            "num_tree_per_iteration=0", text, count=1),
                                     "num_tree_per_iteration"),
        "missing leaf_value": (sub_in_tree1("leaf_value", lambda v: []), "entries, expected"),
        "no end": (text.replace("end of trees", "end of tree"), "truncated"),
        "tree index skipped": (text.replace("Tree=1", "Tree=5"), "expected Tree=1"),
        "pandas_categorical deep": (text + "\npandas_categorical:" + "[" * 100_000 + "\n",
                                    "pandas_categorical"),
    }[name]


_LGB_EDITS = ["leaf nan", "leaf inf", "threshold nan", "threshold text",
              "num_leaves inconsistent", "num_leaves huge", "num_leaves 0",
              "split_feature out of range", "split_feature negative", "left_child out of range",
              "right_child leaf out of range", "cycle", "decision_type 99",
              "decision_type missing 3", "shrinkage nan", "tree_sizes short",
              "max_feature_idx text", "max_feature_idx huge", "num_tree_per_iteration 0",
              "missing leaf_value", "no end", "tree index skipped", "pandas_categorical deep"]


@pytest.mark.parametrize("name", _LGB_EDITS)
def test_lightgbm_text_field_corruptions(models, workdir, name):
    model = models["lightgbm_text"]
    text, reason = _lgb_edit(model.raw.decode(), name)
    assert text.encode() != model.raw
    _expect_refused(model, text.encode(), workdir, reason)


def test_lightgbm_not_utf8(models, workdir):
    model = models["lightgbm_text"]
    _expect_refused(model, model.raw[:200] + b"\xff\xfe" + model.raw[200:], workdir, "UTF-8")


# --------------------------------------------------------------------------- targeted: skltr JSON
def _array_set(doc, name, fn, dtype=None):
    """Replace array ``name`` of a skltr document by ``fn(values)`` (as ``dtype``)."""
    from skltr.utils._model_io import decode_array, encode_array

    arr = decode_array(doc["arrays"][name])
    doc["arrays"][name] = encode_array(np.asarray(fn(arr.astype(dtype or arr.dtype))))


def _set(arr, i, v):
    arr[i] = v
    return arr


def _internal_node(doc):
    from skltr.utils._model_io import decode_array

    return int(np.flatnonzero(decode_array(doc["arrays"]["left"]) >= 0)[0])


def _skltr_edit(name):
    """(edit(doc), expected reason) of skltr JSON corruptions (GPUHistGBDTRanker file)."""
    def meta(key, value):
        return lambda d: d["meta"].__setitem__(key, value)

    def fitted(key, value):
        return lambda d: d["meta"]["estimator"]["fitted"].__setitem__(key, value)

    def node(key, value, dtype=None):
        return lambda d: _array_set(d, key, lambda a: _set(a, _internal_node(d), value), dtype)

    def leaf(value):
        def fn(d):
            from skltr.utils._model_io import decode_array
            first_leaf = int(np.flatnonzero(decode_array(d["arrays"]["left"]) < 0)[0])
            _array_set(d, "value", lambda a: _set(a, first_leaf, value))
        return fn

    return {
        "base_score nan": (lambda d: _array_set(d, "base_score", lambda a: a * np.nan),
                           "base_score[0] is nan"),
        "base_score inf": (lambda d: _array_set(d, "base_score", lambda a: a + np.inf),
                           "base_score[0] is inf"),
        "tree_weight nan": (lambda d: _array_set(d, "tree_weight", lambda a: _set(a, 2, np.nan)),
                            "tree_weight[2] is nan"),
        "tree_weight inf": (lambda d: _array_set(d, "tree_weight", lambda a: _set(a, 0, -np.inf)),
                            "tree_weight[0] is -inf"),
        "leaf nan": (leaf(np.nan), "leaf values must be finite"),
        "threshold inf": (node("threshold", np.inf), "non-finite threshold"),
        "child out of range": (node("left", 900), "left child 900 is outside the tree"),
        "cycle": (node("left", 0), "root is some node's child"),
        "feature out of range": (node("feature", 4), "splits on feature 4"),
        "feature negative": (node("feature", -3), "splits on feature -3"),
        "feature wraps int32": (node("feature", 2**32 + 1, np.int64), "range of int32"),
        "fractional child": (node("left", 1.5, np.float64), "non-integer"),
        "unknown flag bit": (node("flags", 128), "flags 128"),
        "missing type 3": (node("flags", 12), "missing type 3"),
        "tree_ptr beyond the nodes": (
            lambda d: (_array_set(d, "tree_ptr", lambda a: _set(a, -1, 2**40)),
                       d["arrays"].pop("flags")), "tree_ptr"),
        "tree_ptr decreasing": (lambda d: _array_set(d, "tree_ptr", lambda a: a[::-1]),
                                "tree_ptr"),
        "negative shape": (lambda d: d["arrays"]["value"].__setitem__("shape", [-1]), "shape"),
        "huge shape": (lambda d: d["arrays"]["value"].__setitem__("shape", [2**40, 2**40]),
                       "needs"),
        "object dtype": (lambda d: d["arrays"]["value"].__setitem__("dtype", "|O"),
                         "unsupported dtype"),
        "string dtype": (lambda d: d["arrays"]["value"].__setitem__("dtype", "<U8"),
                         "unsupported dtype"),
        "arrays a list": (lambda d: d.__setitem__("arrays", []), "'arrays'"),
        "missing array": (lambda d: d["arrays"].pop("left"), "lacks required entries"),
        "n_features text": (meta("n_features", "x"), "meta.n_features"),
        "n_features fraction": (meta("n_features", 4.5), "meta.n_features"),
        "n_features huge": (meta("n_features", 2**40), "n_features"),
        "average_output text": (meta("average_output", "false"), "meta.average_output"),
        "transform nan scale": (meta("transform_params", {"scale": float("nan")}), "scale"),
        "unknown transform": (meta("output_transform", "rm -rf"), "output_transform"),
        "unknown decision": (meta("decision", ">"), "decision"),
        "feature_names a string": (meta("feature_names", "abcd"), "meta.feature_names"),
        "source a list": (meta("source", []), "meta.source"),
        "missing_value text": (meta("missing_value", "abc"), "missing_value"),
        "schema major": (lambda d: d.__setitem__("schema_version", "9.0"), "schema version"),
        "schema text": (lambda d: d.__setitem__("schema_version", "x"), "schema_version"),
        "best_iteration_ text": (fitted("best_iteration_", "x"), "best_iteration_"),
        "best_iteration_ out of range": (fitted("best_iteration_", 99), "best_iteration_"),
        "n_iter_ fraction": (fitted("n_iter_", 2.5), "n_iter_"),
        "n_iter_ below the trees": (fitted("n_iter_", 1), "n_iter_"),
        "n_features_in_ text": (fitted("n_features_in_", "4"), "n_features_in_"),
        "split_gain nan": (fitted("split_gain", [float("nan")] * 4), "split_gain"),
        "split_count fraction": (fitted("split_count", [0.5] * 4), "split_count"),
        "evals_result_ nan": (fitted("evals_result_", {"v": {"ndcg@10": [float("nan")]}}),
                              "evals_result_"),
        "device_ number": (fitted("device_", 3), "device_"),
        "feature_names_in_ numbers": (fitted("feature_names_in_", [1, 2, 3, 4]),
                                      "feature_names_in_"),
        "fitted missing": (lambda d: d["meta"]["estimator"].pop("fitted"), "fitted"),
        "params negative": (lambda d: d["meta"]["estimator"]["params"].__setitem__(
            "n_estimators", -1), "hyper-parameter"),
    }[name]


_SKLTR_EDITS = [
    "base_score nan", "base_score inf", "tree_weight nan", "tree_weight inf", "leaf nan",
    "threshold inf", "child out of range", "cycle", "feature out of range",
    "feature negative", "feature wraps int32", "fractional child", "unknown flag bit",
    "missing type 3", "tree_ptr beyond the nodes", "tree_ptr decreasing", "negative shape",
    "huge shape", "object dtype", "string dtype", "arrays a list", "missing array",
    "n_features text", "n_features fraction", "n_features huge", "average_output text",
    "transform nan scale", "unknown transform", "unknown decision", "feature_names a string",
    "source a list", "missing_value text", "schema major", "schema text",
    "best_iteration_ text", "best_iteration_ out of range", "n_iter_ fraction",
    "n_iter_ below the trees", "n_features_in_ text", "split_gain nan",
    "split_count fraction", "evals_result_ nan", "device_ number",
    "feature_names_in_ numbers", "fitted missing", "params negative",
]
#: Edits of the estimator state: only the ranker's own reader sees them.
_ESTIMATOR_ONLY = {"best_iteration_ text", "best_iteration_ out of range", "n_iter_ fraction",
                   "n_iter_ below the trees", "n_features_in_ text", "split_gain nan",
                   "split_count fraction", "evals_result_ nan", "device_ number",
                   "feature_names_in_ numbers", "fitted missing", "params negative"}


@pytest.mark.parametrize("name", _SKLTR_EDITS)
def test_skltr_json_field_corruptions(models, workdir, name):
    model = models["skltr_gbdt"]
    edit, reason = _skltr_edit(name)
    doc = json.loads(model.raw)
    edit(doc)
    data = json.dumps(doc).encode()  # NaN written as the NaN literal, which json reads back
    if name in _ESTIMATOR_ONLY:
        model = Model(model.raw, model.suffix, {k: v for k, v in model.readers.items()
                                                if k.endswith("Ranker.load_model")})
    _expect_refused(model, data, workdir, reason)


def test_skltr_json_deep_nesting(models, workdir):
    _expect_refused(models["skltr_gbdt"], b'{"format":' + b"[" * 100_000 + b"}", workdir,
                    "too deeply")


def test_skltr_json_base64_garbage(models, workdir):
    doc = json.loads(models["skltr_gbdt"].raw)
    doc["arrays"]["value"]["data"] = base64.b64encode(b"\x00" * 3).decode() + "!!"
    _expect_refused(models["skltr_gbdt"], json.dumps(doc).encode(), workdir, "malformed array")


# --------------------------------------------------------------------------- targeted: rules
def _rule_edit(name):
    def arr(key, fn, dtype=None):
        return lambda d: _array_set(d, key, fn, dtype)

    def fitted(key, value):
        return lambda d: d["meta"]["fitted"].__setitem__(key, value)

    return {
        "levels nan": (arr("levels", lambda a: _set(a, 1, np.nan)), "levels"),
        "levels inf": (arr("levels", lambda a: _set(a, -1, np.inf)), "levels"),
        "levels unsorted": (arr("levels", lambda a: a[::-1]), "levels"),
        "levels repeated": (arr("levels", lambda a: _set(a, 1, a[0])), "levels"),
        "levels fractional": (arr("levels", lambda a: _set(a, 1, 1.5)), "levels"),
        "levels negative": (arr("levels", lambda a: _set(a, 0, -1.0)), "levels"),
        "cut_values nan": (arr("cut_values", lambda a: _set(a, 0, np.nan)), "cut_values"),
        "cut_values inf": (arr("cut_values", lambda a: _set(a, 0, -np.inf)), "cut_values"),
        "cut_values unsorted": (arr("cut_values", lambda a: _set(a, 1, a[0] - 1.0)),
                                "increase strictly"),
        "cut_values wrong dtype": (arr("cut_values", lambda a: a, np.float32), "dtype"),
        "level_doc_ptr short": (arr("level_doc_ptr", lambda a: a[:-1]), "level_doc_ptr"),
        "level_doc_ptr empty level": (arr("level_doc_ptr", lambda a: _set(a, 1, 0)),
                                      "level_doc_ptr"),
        "code beyond items": (arr("train_codes", lambda a: _set(a, (0, 0), 250)),
                              "train_codes"),
        "used_features out of range": (arr("used_features", lambda a: _set(a, -1, 99)),
                                       "used_features"),
        "missing array": (lambda d: d["arrays"].pop("levels"), "levels"),
        "n_features_in_ text": (fitted("n_features_in_", "4"), "n_features_in_"),
        "n_features_in_ huge": (fitted("n_features_in_", 2**40), "n_features_in_"),
        "device_ list": (fitted("device_", ["cpu"]), "device_"),
        "feature_names_in_ short": (fitted("feature_names_in_", ["a"]), "feature_names_in_"),
        "max_rule_size negative": (lambda d: d["meta"]["params"].__setitem__(
            "max_rule_size", -1), "hyper-parameter"),
        "min_confidence nan": (lambda d: d["meta"]["params"].__setitem__(
            "min_confidence", float("nan")), "hyper-parameter"),
        "unknown parameter": (lambda d: d["meta"]["params"].__setitem__("evil", 1),
                              "does not have"),
    }[name]


_RULE_EDITS = ["levels nan", "levels inf", "levels unsorted", "levels repeated",
               "levels fractional", "levels negative",
               "cut_values nan", "cut_values inf", "cut_values unsorted",
               "cut_values wrong dtype", "level_doc_ptr short", "level_doc_ptr empty level",
               "code beyond items", "used_features out of range", "missing array",
               "n_features_in_ text", "n_features_in_ huge", "device_ list",
               "feature_names_in_ short", "max_rule_size negative", "min_confidence nan",
               "unknown parameter"]


@pytest.mark.parametrize("name", _RULE_EDITS)
def test_rule_model_field_corruptions(models, workdir, name):
    model = models["rule_ranker"]
    edit, reason = _rule_edit(name)
    doc = json.loads(model.raw)
    edit(doc)
    _expect_refused(model, json.dumps(doc).encode(), workdir, reason)


# --------------------------------------------------------------------------- the command line
@pytest.mark.parametrize("fmt,damage", [
    ("xgboost_ubj", b"{i\x01a[Si\xfd"),
    ("xgboost_json", "base_score nan"),
    ("skltr_gbdt", "cycle"),
    ("lightgbm_text", "leaf nan"),
])
@pytest.mark.parametrize("command", ["predict", "convert"])
def test_cli_reports_bad_model_files(models, workdir, capsys, fmt, damage, command):
    """``skltr predict`` / ``skltr convert`` end with one line naming the file and the
    problem, and exit status 2, within the time limit."""
    from skltr.cli import main
    from skltr.datasets import dump_letor

    model = models[fmt]
    if isinstance(damage, bytes):
        data = damage
    elif fmt == "xgboost_json":
        doc = _xgb_doc(models)
        _xgb_edit(damage)[0](doc)
        data = json.dumps(doc).encode()
    elif fmt == "skltr_gbdt":
        doc = json.loads(model.raw)
        _skltr_edit(damage)[0](doc)
        data = json.dumps(doc).encode()
    else:
        data = _lgb_edit(model.raw.decode(), damage)[0].encode()
    path = workdir / f"cli{model.suffix}"
    path.write_bytes(data)
    X, y, qid = _data()
    letor = workdir / "data.letor"
    dump_letor(letor, np.nan_to_num(X), y, qid)
    argv = ([command, str(path), str(letor)] if command == "predict"
            else [command, str(path), "-o", str(workdir / "out.json")])
    capsys.readouterr()
    with time_limit(LIMIT_S * 2, f"skltr {command}"):
        status = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and err[0].startswith(f"skltr {command}: error: "), err
    assert str(path) in err[0] and "Traceback" not in err[0]
