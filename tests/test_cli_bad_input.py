"""Bad input for the ``skltr`` commands and for ``QuickScorerPredictor`` (issue #26).

Every case ends in a clear error (for the CLI: exit status 2 and one line on stderr, no
traceback) or in a correct result, within a time limit (a hang fails the case). The defects
of the issue each have a test here that failed before their fix:

2. skltr models refuse +-inf in QuickScorerPredictor and ``skltr predict`` as their own
   ``predict`` does; XGBoost / LightGBM models keep reading inf as their libraries do.
3. ``QuickScorerPredictor(LGBMRanker / XGBRanker).fit`` checks ``sample_weight`` before it
   reorders the rows, and maps per-row weights to XGBoost's per-query weights.
7. An empty data file is an error naming the file.
8. A huge feature index is an error naming the line and the index; nothing is allocated.
10. A rule model written by ``skltr train`` is scored by ``skltr predict``; ``skltr
    convert`` says why it cannot convert it.
11. ``skltr train`` checks ``-o`` before training; files are written atomically.
12. ``QuickScorerPredictor``'s sparse tag follows its model; ``from_file`` sets
    ``feature_names_in_``.
"""

from __future__ import annotations

import contextlib
import os
import signal

import numpy as np
import pytest
import scipy.sparse as sp

from _limits import time_limit
from skltr.cli import main
from skltr.datasets import dump_letor, load_letor, make_ranking


# --------------------------------------------------------------------------- helpers
def run_cli(capsys, *args, limit=120):
    """``skltr ARGS`` in-process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    with time_limit(limit):
        status = main([str(a) for a in args])
    out = capsys.readouterr()
    return status, out.out, out.err


def assert_one_line_error(status, err, *words):
    """Exit status 2, one ``skltr CMD: error: ...`` line on stderr holding ``words``."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("read ")]
    assert status == 2, err
    assert len(lines) == 1 and lines[0].startswith("skltr ") and ": error: " in lines[0], err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=12, docs_per_query=10, n_features=4, n_informative=3,
                             random_state=0, dtype=np.float64)
    return X, y, qid


@pytest.fixture(scope="module")
def files(tmp_path_factory, data):
    """A training file, a skltr GBDT model trained on it by ``skltr train``, and bad files."""
    X, y, qid = data
    d = tmp_path_factory.mktemp("bad_input")
    train = d / "train.txt"
    dump_letor(train, X, y, qid)
    model = d / "model.json"
    assert main(["train", str(train), "-o", str(model), "--n-estimators", "3",
                 "--max-leaves", "4", "--min-samples-leaf", "2", "--quiet"]) == 0
    (d / "empty.txt").write_bytes(b"")
    (d / "comments.txt").write_text("# only a comment\n\n   \n# another\n")
    (d / "garbage.bin").write_bytes(bytes(range(256)) * 4)
    (d / "wide.txt").write_text("1 qid:1 100000000:1\n0 qid:1 2:1\n")
    (d / "negative.txt").write_text("1 qid:1 -3:1\n0 qid:1 2:1\n")
    (d / "fraction.txt").write_text("1 qid:1 1.5:1\n0 qid:1 2:1\n")
    (d / "huge_index.txt").write_text("1 qid:1 123456789012345678901234567890:1\n")
    (d / "too_many.txt").write_text("1 qid:1 1:1 9:1\n0 qid:1 2:1\n")  # the model has 4
    (d / "inf.txt").write_text("1 qid:1 1:0.5 2:inf\n0 qid:1 1:0.25\n")
    (d / "nan.txt").write_text("1 qid:1 1:nan 2:1\n0 qid:1 1:0.25\n")
    (d / "nan_label.txt").write_text("# header\n1 qid:1 1:1\nnan qid:1 1:2\n")
    (d / "mixed_qid.txt").write_text("1 qid:1 1:1\n0 1:2\n")
    (d / "text_label.txt").write_text("good qid:1 1:1\n")
    (d / "duplicate.txt").write_text("1 qid:1 1:1 1:2\n")
    return d


def _nan_data(n_features=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, n_features))
    X[rng.random(X.shape) < 0.3] = np.nan
    y = rng.integers(0, 3, 300).astype(np.float64)
    qid = np.repeat(np.arange(30), 10)
    return X, y, qid


@pytest.fixture(scope="module")
def skltr_rankers():
    from skltr import GPUHistGBDTRanker, RankBoostRanker

    X, y, qid = _nan_data()
    return [RankBoostRanker(n_estimators=10).fit(X, y, qid=qid),
            GPUHistGBDTRanker(n_estimators=3, max_leaves=4, min_samples_leaf=5).fit(
                X, y, qid=qid)]


# =========================================================================== defect 2
@pytest.mark.parametrize("which", [0, 1], ids=["rankboost", "gbdt"])
def test_skltr_models_refuse_inf_in_the_predictor_as_in_their_own_predict(
        skltr_rankers, which, tmp_path):
    import pandas as pd

    from skltr import QuickScorerPredictor

    ranker = skltr_rankers[which]
    bad = np.array([[np.inf, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="infinity"):
        ranker.predict(bad)
    path = tmp_path / "m.json"
    ranker.save_model(path)
    predictors = [QuickScorerPredictor.from_model(ranker),
                  QuickScorerPredictor.from_model(ranker, backend="traversal"),
                  QuickScorerPredictor.from_model(ranker.to_tree_ensemble()),
                  QuickScorerPredictor.from_file(path)]
    for qs in predictors:
        for X in (bad, -bad, bad.astype(np.float32), sp.csr_matrix(bad), sp.csc_matrix(-bad),
                  pd.DataFrame(bad)):
            with time_limit(60), pytest.raises(ValueError, match="infinity"):
                qs.predict(X)
        # what the ranker accepts is still scored as the ranker scores it
        ok = np.array([[np.nan, 0.0], [1e300, -1e300], [0.5, np.nan]])
        np.testing.assert_array_equal(qs.predict(ok), ranker.predict(ok))
        np.testing.assert_array_equal(qs.predict(sp.csr_matrix(ok)),
                                      ranker.predict(sp.csr_matrix(ok)))
    # the ensemble itself carries the rule
    with pytest.raises(ValueError, match="infinity"):
        ranker.to_tree_ensemble().predict(bad)


@pytest.mark.gpu
def test_skltr_models_refuse_inf_on_the_gpu(skltr_rankers):
    """CuPy input (read where it is) and host input on a GPU predictor: the same refusal."""
    import cupy

    from skltr import QuickScorerPredictor

    ranker = skltr_rankers[1]
    bad = np.array([[np.inf, 0.0], [0.0, 1.0]])
    qs = QuickScorerPredictor.from_model(ranker, device="cuda")
    for X in (cupy.asarray(bad), cupy.asarray(-bad, dtype=cupy.float32), bad,
              sp.csr_matrix(bad)):
        with pytest.raises(ValueError, match="infinity"):
            qs.predict(X)
    ok = np.array([[np.nan, 0.0], [1e300, -1e300]])
    np.testing.assert_array_equal(cupy.asnumpy(qs.predict(cupy.asarray(ok))),
                                  ranker.predict(ok))


def test_skltr_predict_refuses_inf_for_skltr_models_naming_the_line(files, capsys):
    status, out, err = run_cli(capsys, "predict", files / "model.json", files / "inf.txt")
    assert_one_line_error(status, err, "inf.txt", "line 1", "infinity")
    assert out == ""


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_xgboost_and_lightgbm_models_keep_reading_inf_as_their_libraries(library):
    from skltr import QuickScorerPredictor

    X, y, qid = _nan_data(3, seed=1)
    if library == "xgboost":
        xgb = pytest.importorskip("xgboost")
        model = xgb.XGBRanker(n_estimators=4, max_depth=3, n_jobs=1).fit(X, y, qid=qid)
    else:
        lgb = pytest.importorskip("lightgbm")
        model = lgb.LGBMRanker(n_estimators=4, num_leaves=5, min_child_samples=5,
                               verbose=-1, n_jobs=1).fit(X, y, group=np.full(30, 10))
    rows = np.array([[np.inf, 0.0, 1.0], [-np.inf, np.inf, np.nan], [0.0, -np.inf, 2.0]])
    qs = QuickScorerPredictor.from_model(model)
    np.testing.assert_array_equal(qs.predict(rows), model.predict(rows))
    np.testing.assert_array_equal(qs.predict(sp.csr_matrix(rows)),
                                  model.predict(sp.csr_matrix(rows)))


# =========================================================================== defect 3
def _ranking_rows(seed=0, n=120):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = rng.integers(0, 3, n).astype(np.float64)
    qid = rng.integers(0, 12, n)  # unsorted on purpose
    return X, y, qid


def test_lightgbm_ranker_sample_weight_length_is_checked_before_reordering():
    lgb = pytest.importorskip("lightgbm")
    from skltr import QuickScorerPredictor

    X, y, qid = _ranking_rows()
    n = len(y)
    qs = QuickScorerPredictor(lgb.LGBMRanker(n_estimators=3, verbose=-1, n_jobs=1))
    for bad in (np.ones(n + 7), np.ones(n - 3), np.ones((n, 1))):
        with pytest.raises(ValueError, match=f"sample_weight.* {n} rows"):
            qs.fit(X, y, qid=qid, sample_weight=bad)
        assert not hasattr(qs, "ensemble_")
    with pytest.raises(ValueError, match="qid has 5 entries"):
        qs.fit(X, y, qid=qid[:5])
    with pytest.raises(ValueError, match="y has 4 entries"):
        qs.fit(X, y[:4], qid=qid)


def test_lightgbm_ranker_per_row_weights_follow_their_rows():
    lgb = pytest.importorskip("lightgbm")
    from skltr import QuickScorerPredictor

    X, y, qid = _ranking_rows(1)
    w = np.random.default_rng(2).uniform(0.1, 3.0, len(y))
    params = dict(n_estimators=4, num_leaves=5, min_child_samples=3, verbose=-1, n_jobs=1)
    qs = QuickScorerPredictor(lgb.LGBMRanker(**params)).fit(X, y, qid=qid, sample_weight=w)
    order = np.argsort(qid, kind="stable")
    direct = lgb.LGBMRanker(**params).fit(X[order], y[order], sample_weight=w[order],
                                          group=np.unique(qid, return_counts=True)[1])
    np.testing.assert_array_equal(qs.predict(X), direct.predict(X))


def test_xgboost_ranker_takes_per_row_weights_that_are_one_per_query():
    xgb = pytest.importorskip("xgboost")
    from skltr import QuickScorerPredictor

    X, y, qid = _ranking_rows(3)
    per_query = np.random.default_rng(4).uniform(0.2, 2.0, 12)
    w = per_query[qid]  # constant within each query: XGBoost's per-query weights
    params = dict(n_estimators=4, max_depth=3, n_jobs=1)
    qs = QuickScorerPredictor(xgb.XGBRanker(**params)).fit(X, y, qid=qid, sample_weight=w)
    order = np.argsort(qid, kind="stable")
    direct = xgb.XGBRanker(**params).fit(X[order], y[order], qid=qid[order],
                                         sample_weight=per_query[np.unique(qid)])
    np.testing.assert_array_equal(qs.predict(X), direct.predict(X))
    unweighted = xgb.XGBRanker(**params).fit(X[order], y[order], qid=qid[order])
    assert not np.array_equal(qs.predict(X), unweighted.predict(X))  # the weights were used
    varying = w.copy()
    varying[np.flatnonzero(qid == qid[0])[1]] += 1.0
    fitted = QuickScorerPredictor(xgb.XGBRanker(**params)).fit(X, y, qid=qid)
    before = fitted.predict(X)
    with pytest.raises(ValueError, match="one weight per query"):
        fitted.fit(X, y, qid=qid, sample_weight=varying)
    np.testing.assert_array_equal(fitted.predict(X), before)  # fitted state untouched
    with pytest.raises(ValueError, match=f"sample_weight has {len(y) + 1} entries"):
        fitted.fit(X, y, qid=qid, sample_weight=np.ones(len(y) + 1))


# =========================================================================== defect 7
@pytest.mark.parametrize("name", ["empty.txt", "comments.txt"])
@pytest.mark.parametrize("command", ["predict", "train"])
def test_a_data_file_without_data_lines_is_an_error(files, capsys, tmp_path, name, command):
    out_path = tmp_path / "out"
    if command == "predict":
        args = ("predict", files / "model.json", files / name, "-o", out_path)
    else:
        args = ("train", files / name, "-o", out_path, "--quiet")
    status, _, err = run_cli(capsys, *args)
    assert_one_line_error(status, err, name, "no data lines")
    assert not out_path.exists()


# =========================================================================== defect 8
def test_a_huge_feature_index_names_the_line_and_allocates_nothing(files, capsys, tmp_path):
    status, _, err = run_cli(capsys, "train", files / "wide.txt", "-o", tmp_path / "m.json",
                             "--quiet", limit=30)
    assert_one_line_error(status, err, "wide.txt", "line 1", "100000000")
    assert not (tmp_path / "m.json").exists()


def test_load_letor_reads_wide_sparse_files_as_csr_and_refuses_a_huge_dense_array(files):
    with time_limit(30):
        X, y, qid = load_letor(files / "wide.txt", dense=False)
    assert sp.issparse(X) and X.shape == (2, 100_000_000) and X.nnz == 2
    with time_limit(30):
        X_auto, _, _ = load_letor(files / "wide.txt", dense="auto")
    assert sp.issparse(X_auto) and (X_auto != X).nnz == 0
    with time_limit(30), pytest.raises(ValueError, match=r"line 1: .*100000000.*dense=False"):
        load_letor(files / "wide.txt")
    # small files stay dense with dense="auto"
    X_small, _, _ = load_letor(files / "train.txt", dense="auto")
    assert isinstance(X_small, np.ndarray)
    np.testing.assert_array_equal(X_small, load_letor(files / "train.txt")[0])


# =========================================================================== defect 10
def test_a_rule_model_from_skltr_train_is_scored_by_skltr_predict(files, capsys, tmp_path,
                                                                  data):
    from skltr import OnDemandRuleRanker

    model = tmp_path / "rules.json"
    status, _, err = run_cli(capsys, "train", files / "train.txt", "-o", model, "--ranker",
                             "rules", "--max-rule-size", "2", "--quiet")
    assert status == 0, err
    scores = tmp_path / "scores.txt"
    status, _, err = run_cli(capsys, "predict", model, files / "train.txt", "-o", scores)
    assert status == 0, err
    X, y, qid = data
    np.testing.assert_array_equal(np.loadtxt(scores), OnDemandRuleRanker.load_model(
        model).predict(X))
    assert "NDCG@10" in err
    status, _, err = run_cli(capsys, "convert", model, "-o", tmp_path / "c.json")
    assert_one_line_error(status, err, "rule", "not a tree")
    assert not (tmp_path / "c.json").exists()


# =========================================================================== defect 11
def test_train_checks_the_output_path_before_training(files, capsys, tmp_path, monkeypatch):
    from skltr.ranking._gbdt_ranker import GPUHistGBDTRanker

    def no_fit(*args, **kwargs):  # pragma: no cover - reached only by the bug
        raise AssertionError("trained before checking -o")

    monkeypatch.setattr(GPUHistGBDTRanker, "fit", no_fit)
    for output, words in ((tmp_path / "no" / "such" / "m.json", ("no such directory",)),
                          (tmp_path, ("is a directory",))):
        status, _, err = run_cli(capsys, "train", files / "train.txt", "-o", output,
                                 "--quiet")
        assert_one_line_error(status, err, str(output), *words)


def test_train_refuses_an_unwritable_output_folder(files, capsys, tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # root may write anywhere: pretend
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if os.fspath(p) == str(
            folder) else real(p, mode, **kw))
    try:
        status, _, err = run_cli(capsys, "train", files / "train.txt", "-o",
                                 folder / "m.json", "--quiet")
    finally:
        folder.chmod(0o700)
    assert_one_line_error(status, err, "not writable")
    assert not (folder / "m.json").exists()


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    from skltr.utils._atomic import atomic_write

    target = tmp_path / "m.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="disk on fire"):
        with atomic_write(target, "w") as fh:
            fh.write("half of the new")
            raise RuntimeError("disk on fire")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]
    target.chmod(0o640)
    with atomic_write(target, "w") as fh:
        fh.write("new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o640  # the replaced file's permissions
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]
    fresh = tmp_path / "new.json"
    with atomic_write(fresh, "wb") as fh:
        fh.write(b"x")
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() would create it


@contextlib.contextmanager
def file_size_limit(n_bytes: int):
    """Writes that would make any file larger than ``n_bytes`` fail (``OSError`` EFBIG, a
    real mid-write failure: the file is left half-written), as on a full disk."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (n_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def test_model_files_and_letor_files_are_written_atomically(skltr_rankers, tmp_path):
    ranker = skltr_rankers[0]
    model = tmp_path / "m.json"
    ranker.save_model(model)
    before = model.read_bytes()
    letor = tmp_path / "d.txt"
    dump_letor(letor, np.eye(3), [1, 0, 1], [1, 1, 2], query_file=True)
    letor_before = letor.read_bytes(), (tmp_path / "d.txt.query").read_bytes()
    with file_size_limit(30):
        with pytest.raises(OSError, match="too large"):
            ranker.save_model(model)
        with pytest.raises(OSError, match="too large"):
            ranker.to_tree_ensemble().save(model)
        with pytest.raises(OSError, match="too large"):
            dump_letor(letor, np.ones((3, 3)), [2, 2, 2], [1, 1, 2], query_file=True)
    assert model.read_bytes() == before
    assert (letor.read_bytes(), (tmp_path / "d.txt.query").read_bytes()) == letor_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.txt", "d.txt.query", "m.json"]


def test_cli_outputs_are_written_atomically(files, capsys, tmp_path):
    scores, converted = tmp_path / "scores.txt", tmp_path / "c.json"
    status, _, err = run_cli(capsys, "predict", files / "model.json", files / "train.txt",
                             "-o", scores)  # the kernels compile (and are cached) here
    assert status == 0, err
    scores.write_text("old scores")
    converted.write_text("old model")
    with file_size_limit(30):
        status, _, err = run_cli(capsys, "predict", files / "model.json",
                                 files / "train.txt", "-o", scores)
        assert_one_line_error(status, err, "too large")
        status, _, err = run_cli(capsys, "convert", files / "model.json", "-o", converted)
        assert_one_line_error(status, err, "too large")
    assert scores.read_text() == "old scores" and converted.read_text() == "old model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "scores.txt"]


# =========================================================================== defect 12
def test_quickscorer_predictor_sparse_tag_follows_what_fit_accepts():
    from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor
    from sklearn.utils import get_tags
    from sklearn.utils.estimator_checks import check_estimator_sparse_tag

    from skltr import QuickScorerPredictor

    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    for model in (lgb.LGBMRegressor(n_estimators=3, verbose=-1),
                  xgb.XGBRegressor(n_estimators=3), HistGradientBoostingRegressor(max_iter=3)):
        qs = QuickScorerPredictor(model)
        check_estimator_sparse_tag(type(qs).__name__, qs)
        assert get_tags(qs).input_tags.sparse == get_tags(model).input_tags.sparse
    assert get_tags(QuickScorerPredictor()).input_tags.sparse  # predict takes CSR / CSC
    assert not get_tags(QuickScorerPredictor(GradientBoostingRegressor())).input_tags.allow_nan


def _letor(folder, X, y, qid):
    path = folder / "data.txt"
    dump_letor(path, X, y, qid, zero_based=True)
    return path


def test_from_file_sets_feature_names_in_from_the_file(tmp_path, capsys):
    import pandas as pd

    from skltr import GPUHistGBDTRanker, QuickScorerPredictor

    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    X, y, qid = _ranking_rows(5)
    frame = pd.DataFrame(X, columns=["bm25", "pagerank", "clicks", "age"])
    order = np.argsort(qid, kind="stable")
    frame, X, y, qid = frame.iloc[order].reset_index(drop=True), X[order], y[order], qid[order]
    names = ["bm25", "pagerank", "clicks", "age"]
    fitted = {
        "xgb.json": xgb.XGBRanker(n_estimators=2, max_depth=2).fit(frame, y, qid=qid),
        "lgb.txt": lgb.LGBMRanker(n_estimators=2, num_leaves=3, min_child_samples=3,
                                  verbose=-1).fit(frame, y, group=np.unique(
                                      qid, return_counts=True)[1]),
        "skltr.json": GPUHistGBDTRanker(n_estimators=2, max_leaves=3,
                                        min_samples_leaf=3).fit(frame, y, qid=qid),
    }
    for name, model in fitted.items():
        path = tmp_path / name
        if name == "xgb.json":
            model.save_model(path)
        elif name == "lgb.txt":
            model.booster_.save_model(path)
        else:
            model.save_model(path)
        qs = QuickScorerPredictor.from_file(path)
        assert list(qs.feature_names_in_) == names, name
        assert qs.n_features_in_ == 4
        np.testing.assert_array_equal(qs.predict(frame), model.predict(frame))
    # skltr predict reads files, which have no column names: no warning about them
    status = main(["predict", str(tmp_path / "lgb.txt"), str(_letor(tmp_path, X, y, qid)),
                   "-o", str(tmp_path / "s.txt")])
    assert status == 0
    assert "feature names" not in capsys.readouterr().err
    # a LightGBM model fitted on an array names its columns Column_0...: no names then
    array_model = lgb.LGBMRanker(n_estimators=2, verbose=-1, min_child_samples=3).fit(
        X, y, group=np.unique(qid, return_counts=True)[1])
    array_model.booster_.save_model(tmp_path / "plain.txt")
    assert not hasattr(QuickScorerPredictor.from_file(tmp_path / "plain.txt"),
                       "feature_names_in_")
# =========================================================================== the suite: CLI
@pytest.fixture(scope="module")
def lib_models(files, data):
    """An XGBoost JSON model and a LightGBM text model trained on the same data (4
    features), and a rule model written by ``skltr train --ranker rules``."""
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    X, y, qid = data
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 3, "nthread": 1},
                        xgb.DMatrix(X, y, qid=qid), num_boost_round=3)
    booster.save_model(str(files / "xgb.json"))
    lgbm = lgb.train({"objective": "lambdarank", "verbose": -1, "min_data_in_leaf": 3,
                      "num_threads": 1}, lgb.Dataset(X, y, group=np.bincount(qid)), 3)
    lgbm.save_model(str(files / "lgb.txt"))
    assert main(["train", str(files / "train.txt"), "-o", str(files / "rules.json"),
                 "--ranker", "rules", "--max-rule-size", "2", "--quiet"]) == 0
    return {"xgboost": (files / "xgb.json", booster), "lightgbm": (files / "lgb.txt", lgbm),
            "rules": (files / "rules.json", None)}


PREDICT_DATA_ERRORS = {
    # data file: words the one-line error holds
    "missing.txt": ["missing.txt", "No such file"],
    ".": ["Is a directory"],
    "empty.txt": ["empty.txt", "no data lines"],
    "comments.txt": ["comments.txt", "no data lines"],
    "garbage.bin": ["garbage.bin", "line 1", "label"],
    "too_many.txt": ["too_many.txt", "line 1", "feature index 9", "4 features"],
    "negative.txt": ["negative.txt", "line 1", "-3:1"],
    "fraction.txt": ["fraction.txt", "line 1", "1.5:1"],
    "huge_index.txt": ["huge_index.txt", "line 1", "too large"],
    "mixed_qid.txt": ["mixed_qid.txt", "line 2", "qid"],
    "text_label.txt": ["text_label.txt", "line 1", "'good'"],
    "duplicate.txt": ["duplicate.txt", "line 1", "more than once"],
}


@pytest.mark.parametrize("model", ["skltr", "xgboost", "lightgbm", "rules"])
@pytest.mark.parametrize("name", sorted(PREDICT_DATA_ERRORS))
def test_predict_bad_data_files(files, lib_models, capsys, tmp_path, model, name):
    path = files / "model.json" if model == "skltr" else lib_models[model][0]
    out = tmp_path / "scores.txt"
    data = files if name == "." else files / name
    status, stdout, err = run_cli(capsys, "predict", path, data, "-o", out, limit=60)
    assert_one_line_error(status, err, *PREDICT_DATA_ERRORS[name])
    assert stdout == "" and not out.exists()


@pytest.mark.parametrize("name", ["missing.json", "empty.txt", ".", "garbage.bin",
                                  "truncated.json", "train.txt"])
@pytest.mark.parametrize("command", ["predict", "convert"])
def test_bad_model_files(files, capsys, tmp_path, command, name):
    (files / "truncated.json").write_text((files / "model.json").read_text()[:200])
    model = files if name == "." else files / name
    out = tmp_path / "out"
    args = (("predict", model, files / "train.txt", "-o", out) if command == "predict"
            else ("convert", model, "-o", out))
    status, stdout, err = run_cli(capsys, *args, limit=60)
    words = {"missing.json": ["No such file"], "empty.txt": ["empty"],
             ".": ["Is a directory"], "garbage.bin": ["garbage.bin", "cannot tell"],
             "truncated.json": ["truncated.json", "not valid JSON"],
             "train.txt": ["train.txt", "cannot tell"]}[name]
    assert_one_line_error(status, err, *words)
    assert stdout == "" and not out.exists()


@pytest.mark.parametrize("command", ["train", "predict", "convert"])
@pytest.mark.parametrize("where", ["missing folder", "a folder", "a file as folder"])
def test_unusable_output_paths(files, capsys, tmp_path, command, where):
    output = {"missing folder": tmp_path / "no" / "out.json", "a folder": tmp_path,
              "a file as folder": files / "train.txt" / "out.json"}[where]
    args = {"train": ("train", files / "train.txt", "-o", output, "--quiet"),
            "predict": ("predict", files / "model.json", files / "train.txt", "-o", output),
            "convert": ("convert", files / "model.json", "-o", output)}[command]
    status, stdout, err = run_cli(capsys, *args, limit=60)
    words = {"missing folder": ["no such directory"], "a folder": ["is a directory"],
             "a file as folder": ["not a directory"]}[where]
    assert_one_line_error(status, err, *words)
    assert stdout == ""


TRAIN_DATA_ERRORS = {
    "missing.txt": ["missing.txt", "No such file"],
    ".": ["Is a directory"],
    "empty.txt": ["empty.txt", "no data lines"],
    "garbage.bin": ["garbage.bin", "line 1", "label"],
    "wide.txt": ["wide.txt", "line 1", "feature index 100000000"],
    "negative.txt": ["negative.txt", "line 1", "-3:1"],
    "huge_index.txt": ["huge_index.txt", "line 1", "too large"],
    "inf.txt": ["inf.txt", "line 1", "feature 2 is inf", "refuse infinity"],
    "nan_label.txt": ["nan_label.txt", "line 3", "label nan"],
    "mixed_qid.txt": ["mixed_qid.txt", "line 2"],
    "duplicate.txt": ["duplicate.txt", "line 1", "more than once"],
}


@pytest.mark.parametrize("ranker", ["gbdt", "rankboost", "rules"])
@pytest.mark.parametrize("name", sorted(TRAIN_DATA_ERRORS))
def test_train_bad_data_files(files, capsys, tmp_path, ranker, name):
    data = files if name == "." else files / name
    out = tmp_path / "m.json"
    status, stdout, err = run_cli(capsys, "train", data, "-o", out, "--ranker", ranker,
                                  "--quiet", limit=60)
    assert_one_line_error(status, err, *TRAIN_DATA_ERRORS[name])
    assert not out.exists()


def test_train_with_labels_ndcg_cannot_use_saves_the_model_and_says_why(files, capsys,
                                                                        tmp_path):
    """The regression objective takes negative labels, NDCG does not: the model is saved and
    the NDCG line says why it is missing (exit 2 came after the model was saved)."""
    data, model = tmp_path / "neg.txt", tmp_path / "m.json"
    data.write_text("-1 qid:1 1:1\n2.5 qid:1 1:2\n3 qid:2 1:3\n0 qid:2 1:4\n")
    status, out, err = run_cli(capsys, "train", data, "-o", model, "--objective",
                               "regression", "--min-samples-leaf", "1", "--n-estimators", "2",
                               "--score-train", "--quiet")
    assert status == 0, err
    assert model.exists() and "NDCG@10 train: not computed (" in out


def test_train_test_file_wider_than_the_training_file(files, capsys, tmp_path):
    status, _, err = run_cli(capsys, "train", files / "train.txt", "-o", tmp_path / "m.json",
                             "--test", files / "too_many.txt", "--quiet")
    assert_one_line_error(status, err, "too_many.txt", "line 1", "feature index 9")
    assert not (tmp_path / "m.json").exists()


def test_nan_values_are_missing_for_skltr_and_lightgbm_models(files, lib_models, capsys,
                                                             tmp_path):
    """A written ``nan`` is a missing value to skltr's rankers and to LightGBM's file reader,
    which reads ``inf`` as +-1e308 (the same routes): the scores are the models' own."""
    from skltr import GPUHistGBDTRanker

    scores = tmp_path / "s.txt"
    status, _, err = run_cli(capsys, "predict", files / "model.json", files / "nan.txt",
                             "-o", scores)
    assert status == 0, err
    X, _, _ = load_letor(files / "nan.txt", n_features=4, zero_based=False)
    np.testing.assert_array_equal(np.loadtxt(scores),
                                  GPUHistGBDTRanker.load_model(files / "model.json").predict(X))
    path, booster = lib_models["lightgbm"]
    data = tmp_path / "lgb.txt"  # LightGBM numbers columns by the index: 0 .. 3
    data.write_text("1 1:nan 3:1\n0 1:0.25 2:inf\n0 0:1 3:-inf\n2 0:-INF 2:Infinity\n")
    (tmp_path / "lgb.txt.query").write_text("4\n")
    status, _, err = run_cli(capsys, "predict", path, data, "-o", scores)
    assert status == 0, err
    np.testing.assert_array_equal(np.loadtxt(scores), booster.predict(str(data)))


@pytest.mark.filterwarnings("ignore:.*Text file input has been deprecated")
@pytest.mark.parametrize("text", ["1 qid:1 1:0.5 2:nan", "1 qid:1 1:nan 2:1",
                                  "1 qid:1 1:0.5 2:inf", "1 qid:1 1:-inf 2:1"])
def test_xgboost_models_refuse_what_xgboost_files_cannot_hold(files, lib_models, capsys,
                                                              tmp_path, text):
    """XGBoost's own LibSVM reader has no value for nan / inf (it reads 0.0 or refuses the
    file): skltr predict refuses them rather than score them otherwise."""
    xgb = pytest.importorskip("xgboost")
    path, booster = lib_models["xgboost"]
    data = tmp_path / "x.txt"
    data.write_text(text + "\n")
    try:
        read = xgb.DMatrix(f"{data}?format=libsvm").get_data()
    except xgb.core.XGBoostError:
        pass
    else:
        assert read[0, 2 if text.endswith(("nan", "inf")) else 1] == 0.0
    status, _, err = run_cli(capsys, "predict", path, data, "-o", tmp_path / "s")
    assert_one_line_error(status, err, "x.txt", "line 1", "XGBoost's LibSVM reader")


@pytest.mark.parametrize("text, words", [
    ("# header\n1 qid:1 1:1\nnan qid:1 1:2\n", "line 3: label nan"),
    ("# header\n1 qid:1 1:1\n-1 qid:1 1:2\n", "line 3: label -1.0 is negative"),
])
def test_labels_ndcg_cannot_use_leave_the_scores_and_say_why_there_is_no_ndcg(
        files, capsys, tmp_path, text, words):
    data, scores = tmp_path / "d.txt", tmp_path / "s.txt"
    data.write_text(text)
    status, _, err = run_cli(capsys, "predict", files / "model.json", data, "-o", scores)
    assert status == 0, err
    assert np.loadtxt(scores).shape == (2,)
    assert "no NDCG@10 (" in err and words in err


def test_the_cli_reports_no_traceback_in_a_subprocess(files, tmp_path):
    """The same one-line errors from ``python -m skltr`` (what a shell user sees)."""
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get(
        "PYTHONPATH", "")
    for args in (["predict", files / "model.json", files / "empty.txt"],
                 ["train", files / "wide.txt", "-o", tmp_path / "m.json"],
                 ["convert", files / "garbage.bin", "-o", tmp_path / "c.json"]):
        run = subprocess.run([sys.executable, "-m", "skltr", *map(str, args)],
                             capture_output=True, text=True, env=env, timeout=120)
        lines = [x for x in run.stderr.splitlines() if not x.startswith("read ")]
        assert run.returncode == 2 and len(lines) == 1 and "Traceback" not in run.stderr, (
            run.stderr)


# =========================================================================== the suite: arrays
def _sources():
    """Fitted source models of every type on the same 3-feature data, by name."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    from skltr import GPUHistGBDTRanker, RankBoostRanker

    X, y, qid = _nan_data(3, seed=7)
    out = {"gbdt": GPUHistGBDTRanker(n_estimators=3, max_leaves=4, min_samples_leaf=5).fit(
               X, y, qid=qid),
           "rankboost": RankBoostRanker(n_estimators=5).fit(X, y, qid=qid),
           "sklearn": HistGradientBoostingRegressor(max_iter=3).fit(X, y)}
    try:
        import xgboost as xgb

        out["xgboost"] = xgb.XGBRanker(n_estimators=3, max_depth=3, n_jobs=1).fit(
            X, y, qid=qid)
    except ImportError:  # pragma: no cover
        pass
    try:
        import lightgbm as lgb

        out["lightgbm"] = lgb.LGBMRanker(n_estimators=3, num_leaves=5, min_child_samples=5,
                                         verbose=-1, n_jobs=1).fit(X, y, group=np.full(30, 10))
    except ImportError:  # pragma: no cover
        pass
    return out


@pytest.fixture(scope="module")
def predictors(tmp_path_factory):
    """``{name: (QuickScorerPredictor, source)}`` for every source type, plus the skltr
    GBDT read back from its file (``from_file``)."""
    from skltr import QuickScorerPredictor

    out = {name: (QuickScorerPredictor.from_model(model), model)
           for name, model in _sources().items()}
    path = tmp_path_factory.mktemp("qs") / "gbdt.json"
    out["gbdt"][1].save_model(path)
    out["gbdt file"] = (QuickScorerPredictor.from_file(path), out["gbdt"][1])
    return out


SOURCES = ["gbdt", "rankboost", "sklearn", "xgboost", "lightgbm", "gbdt file"]
BAD_ARRAYS = {
    # name: (X, error type, message pattern)
    "too few features": (np.zeros((2, 2)), ValueError, "features"),
    "too many features": (np.zeros((2, 5)), ValueError, "features"),
    "CSR, too many features": (sp.csr_matrix(np.ones((2, 4))), ValueError, "features"),
    "strings": (np.array([["a", "b", "c"]]), ValueError, "numeric|string"),
    "3-D": (np.zeros((2, 3, 1)), ValueError, "dim|2-D|2D"),
    "1-D": (np.zeros(3), ValueError, "2D|2-D|Reshape"),
    "scalar": (np.float64(1.0), ValueError, "2D|2-D|scalar|Reshape"),
    "COO": (sp.coo_matrix(np.ones((2, 3))), (TypeError, ValueError), "CSR|csr"),
    "None": (None, (TypeError, ValueError), "None|array"),
}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("bad", sorted(BAD_ARRAYS))
def test_predictor_bad_arrays(predictors, source, bad):
    if source not in predictors:
        pytest.skip(f"{source} not installed")
    qs, _ = predictors[source]
    X, error, pattern = BAD_ARRAYS[bad]
    with time_limit(60), pytest.raises(error, match=pattern):
        qs.predict(X)


@pytest.mark.parametrize("source", SOURCES)
def test_predictor_special_values(predictors, source):
    """inf: refused for skltr models, the library's own result for XGBoost, LightGBM and
    HistGradientBoosting; NaN is missing for all; an empty X gives empty scores."""
    if source not in predictors:
        pytest.skip(f"{source} not installed")
    qs, model = predictors[source]
    with time_limit(60):
        nan_rows = np.array([[np.nan, 0.0, 1.0], [np.nan, np.nan, np.nan]])
        np.testing.assert_array_equal(qs.predict(nan_rows), model.predict(nan_rows))
        inf_rows = np.array([[np.inf, 0.0, 1.0], [-np.inf, np.nan, np.inf]])
        if source in ("gbdt", "rankboost", "gbdt file"):
            with pytest.raises(ValueError, match="infinity"):
                qs.predict(inf_rows)
        else:  # XGBoost, LightGBM, HistGradientBoosting: inf is a value
            np.testing.assert_array_equal(qs.predict(inf_rows), model.predict(inf_rows))
        assert qs.predict(np.zeros((0, 3))).shape == (0,)
        assert qs.predict(sp.csr_matrix((0, 3))).shape == (0,)
        objects = np.array([[1, 2.5, None]], dtype=object)  # None in an object array: NaN
        np.testing.assert_array_equal(qs.predict(objects), qs.predict(
            np.array([[1.0, 2.5, np.nan]])))
