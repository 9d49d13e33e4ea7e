"""The ``skltr`` command (also ``python -m skltr``).

Sub-commands:

* ``demo``: generate ranking data, train every ranker that exists, print NDCG@10 and timings;
* ``convert MODEL -o OUT.json``: XGBoost / LightGBM / skltr model file -> skltr JSON model;
* ``predict MODEL DATA``: score a LETOR/SVMlight file with QuickScorer, write one score per
  line, and print NDCG@10 when the file has labels and query ids;
* ``train DATA -o MODEL.json``: train a ranker (``--ranker gbdt | rankboost | rules``) on a
  LETOR/SVMlight file with the estimator's defaults (options left out are not passed), save
  the JSON model, print NDCG@10 on the files asked for: ``--valid`` (also the boosted
  rankers' evaluation set, LightGBM's ``valid=``), ``--test``, ``--score-train``.

``bench`` arrives with the estimators.

How the commands read and check their files: :mod:`skltr._cli_files`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import NamedTuple

import numpy as np

from ._cli_files import (
    CommandError,
    MAX_TRAIN_FEATURES,
    _ZERO_BASED,
    _bad_label,
    _indexing_words,
    _output_path,
    _progress,
    _read_letor,
    _refuse_inf,
    _refuse_what_xgboost_files_cannot_hold,
    _rule_model_source,
    model_file_indexing,
)


def run_demo(args) -> list[dict]:
    """``skltr demo``: see :mod:`skltr._demo`."""
    from ._demo import run_demo as demo  # noqa: PLC0415

    return demo(args)


def run_convert(args) -> None:
    """Convert a model file to a skltr JSON model (written atomically). A rule model is not
    a tree model: it is refused with the reason."""
    from .convert import load_model  # noqa: PLC0415
    from .utils._model_io import ModelFileError  # noqa: PLC0415

    _output_path(args.output, "output model")
    try:
        ensemble = load_model(args.model)
    except ModelFileError:
        if _rule_model_source(args.model) is None:
            raise
        raise CommandError(
            f"{args.model} is a rule model (OnDemandRuleRanker, written by skltr train "
            f"--ranker rules), not a tree model: skltr convert turns tree models into "
            f"skltr's tree format, and a rule model has no trees to convert. It is already "
            f"a skltr model: score it with skltr predict {args.model} DATA.") from None
    ensemble.save(args.output)
    print(f"{args.model} -> {args.output}: {ensemble.n_trees} trees, {ensemble.n_nodes} nodes, "
          f"{ensemble.n_features} features, transform {ensemble.output_transform}")


def _load_scorer(args):
    """The model file as ``(predict function, n_features, source record, check, scorer)``:
    a tree model through QuickScorerPredictor, a rule model through
    ``OnDemandRuleRanker.predict``; ``check(path, X, lines, used)`` refuses, by line, values
    the model's library refuses in a file; ``scorer`` names what scores."""
    from .ranking._quickscorer_predictor import QuickScorerPredictor  # noqa: PLC0415
    from .utils._model_io import ModelFileError  # noqa: PLC0415

    try:
        predictor = QuickScorerPredictor.from_file(args.model, backend=args.backend,
                                                   device=args.device)
    except ModelFileError:
        source = _rule_model_source(args.model)
        if source is None:
            raise
    else:
        from .trees._input import refuses_inf  # noqa: PLC0415

        ensemble = predictor.ensemble_
        source = ensemble.source or {}

        def check(path, X, lines, used):
            if refuses_inf(ensemble):
                _refuse_inf(path, X, lines, used, "models of skltr's rankers")
            elif source.get("library") == "xgboost":
                _refuse_what_xgboost_files_cannot_hold(path, X, lines, used)

        def predict(X):
            import warnings  # noqa: PLC0415

            with warnings.catch_warnings():  # a data file has no column names to check
                warnings.filterwarnings("ignore", "X does not have valid feature names")
                return predictor.predict(X)

        return predict, predictor.n_features_in_, source, check, f"backend {predictor.backend_}"
    from .ranking._rule_ranker import OnDemandRuleRanker  # noqa: PLC0415

    if args.backend != "auto":
        raise CommandError(
            f"--backend picks how trees are scored, but {args.model} is a rule model "
            f"(OnDemandRuleRanker), scored by its own predict; drop --backend.")
    ranker = OnDemandRuleRanker.load_model(args.model)
    ranker.device_ = args.device  # where to score (a resolved device)
    return (lambda X: ranker.predict(X.toarray()), ranker.n_features_in_,
            dict(source, library="skltr"),
            lambda path, X, lines, used: _refuse_inf(path, X, lines, used, "rule models"),
            "the rule model's predict")


def run_predict(args) -> None:
    """Score a LETOR file with a model file: a tree model through QuickScorerPredictor, a
    rule model (``skltr train --ranker rules``) through its own predict.

    The file is read as a CSR matrix with the model's indexing (:func:`model_file_indexing`,
    or ``--zero-based``); absent entries mean what the model's library reads them as. The
    scores file is written atomically.
    """
    from .metrics import ndcg_score  # noqa: PLC0415

    _output_path(args.output, "scores file")
    predict, n_features, source, check, scorer = _load_scorer(args)
    if args.zero_based is None:
        zero_based, why = model_file_indexing(source)
    else:
        zero_based, why = _ZERO_BASED[args.zero_based], f"--zero-based {args.zero_based}"
    X, y, qid, used, lines = _read_letor(args.data, zero_based=zero_based, why=why,
                                         n_features=n_features, query_file=args.query_file,
                                         model_words="the model's ")
    print(f"read {args.data} {_indexing_words(used)}, {why}", file=sys.stderr)
    check(args.data, X, lines, used)
    t = time.perf_counter()
    scores = np.asarray(predict(X))
    elapsed = time.perf_counter() - t
    columns = scores.reshape(X.shape[0], -1)
    if args.output in (None, "-"):
        # 17 significant digits round-trip every double (and so every float32) exactly.
        np.savetxt(sys.stdout, columns, fmt="%.17g")
    else:
        from .utils._atomic import atomic_write  # noqa: PLC0415

        with atomic_write(args.output, "w", encoding="utf-8") as out:
            np.savetxt(out, columns, fmt="%.17g")
    # the scores are written: labels NDCG cannot use only cost the NDCG line
    bad = _bad_label(args.data, y, lines)
    if bad is None and (y < 0).any():
        row = int(np.argmax(y < 0))
        bad = (f"{args.data}: line {lines[row]}: label {y[row]} is negative; NDCG needs "
               f"relevance grades >= 0")
    if bad is None:
        try:
            quality = f"NDCG@10 {ndcg_score(y, columns[:, 0], qid=qid, k=10):.4f}"
        except ValueError as exc:
            quality = f"no NDCG@10 ({' '.join(str(exc).split())})"
    else:
        quality = f"no NDCG@10 ({bad})"
    print(f"scored {X.shape[0]} rows in {elapsed:.3f} s with {scorer}; {quality}",
          file=sys.stderr)


#: ``skltr train --ranker NAME``: the estimator class of each ranker, by module and name.
_TRAIN_RANKERS = {
    "gbdt": ("._gbdt_ranker", "GPUHistGBDTRanker"),
    "rankboost": ("._rankboost_ranker", "RankBoostRanker"),
    "rules": ("._rule_ranker", "OnDemandRuleRanker"),
}

#: ``--early-stopping`` words and the estimators' values.
_EARLY_STOPPING = {"auto": "auto", "on": True, "off": False}


class _RankerOption(NamedTuple):
    """A ``skltr train`` option that sets an estimator parameter of some rankers. Its default
    is the estimator's own (``get_params()`` of a default instance): an option left out is
    not passed, and ``--help`` reads the default from the estimator."""

    flag: str
    param: str
    rankers: tuple
    help: str
    kwargs: dict


def _index_list(text):
    """``"3,5,7"`` -> ``[3, 5, 7]`` (argparse's ``type``: a ValueError is its usage error)."""
    values = [v.strip() for v in text.split(",")]
    if not values or not all(v.isdigit() for v in values):
        raise ValueError(text)
    return [int(v) for v in values]


_index_list.__name__ = "comma-separated column indices"  # argparse's error names the type


def _opt(flag, param, rankers, help_text, **kwargs):
    return _RankerOption(flag, param, tuple(rankers.split()), help_text, kwargs)


#: The rankers' options, by group: those of both boosted rankers, then each ranker's own.
_TRAIN_OPTIONS = {
    "boosted rankers (--ranker gbdt or rankboost)": [
        _opt("--n-estimators", "n_estimators", "gbdt rankboost", "boosting rounds", type=int),
        _opt("--early-stopping", "early_stopping", "gbdt rankboost",
             "stop when the NDCG of the --valid file (else of --validation-fraction of the "
             "training queries, held out) has not improved for --n-iter-no-change rounds; "
             "auto (gbdt): on above 10,000 rows, with a warning",
             choices=list(_EARLY_STOPPING)),
        _opt("--validation-fraction", "validation_fraction", "gbdt rankboost",
             "fraction of the training queries held out for early stopping without --valid",
             type=float),
        _opt("--n-iter-no-change", "n_iter_no_change", "gbdt rankboost",
             "rounds without improvement before early stopping stops", type=int),
    ],
    "--ranker gbdt (GPUHistGBDTRanker)": [
        _opt("--objective", "objective", "gbdt", "training objective",
             choices=["lambdarank", "rank_pairwise", "rank_xendcg", "yetirank",
                      "regression"]),
        _opt("--learning-rate", "learning_rate", "gbdt", "shrinkage", type=float),
        _opt("--max-leaves", "max_leaves", "gbdt", "leaves per tree", type=int),
        _opt("--max-depth", "max_depth", "gbdt", "depth limit (None: no limit)", type=int),
        _opt("--growth", "growth", "gbdt", "leaf-wise (LightGBM), depth-wise (XGBoost) or "
             "symmetric (CatBoost's oblivious) trees",
             choices=["leafwise", "depthwise", "symmetric"]),
        _opt("--random-strength", "random_strength", "gbdt",
             "noise on split scores (CatBoost's; --growth symmetric only)", type=float),
        _opt("--min-samples-leaf", "min_samples_leaf", "gbdt", "rows per leaf", type=int),
        _opt("--min-child-weight", "min_child_weight", "gbdt", "least hessian per leaf",
             type=float),
        _opt("--reg-lambda", "reg_lambda", "gbdt", "L2 penalty on leaves", type=float),
        _opt("--reg-alpha", "reg_alpha", "gbdt", "L1 penalty on leaves", type=float),
        _opt("--min-split-gain", "min_split_gain", "gbdt", "least gain of a split", type=float),
        _opt("--max-bins", "max_bins", "gbdt", "bins per feature (2-255)", type=int),
        _opt("--subsample", "subsample", "gbdt", "fraction of queries per tree", type=float),
        _opt("--colsample-bytree", "colsample_bytree", "gbdt", "fraction of features per tree",
             type=float),
        _opt("--categorical-features", "categorical_features", "gbdt",
             "features split by category: 0-based column indices of the data as read, "
             "comma-separated (a one-based LETOR file's feature k is column k-1); from_dtype: "
             "none for a file",
             type=_index_list),
        _opt("--max-cat-to-onehot", "max_cat_to_onehot", "gbdt",
             "fewer categories than this split one against the rest", type=int),
        _opt("--max-cat-threshold", "max_cat_threshold", "gbdt",
             "most categories on the left of a split", type=int),
        _opt("--cat-smooth", "cat_smooth", "gbdt",
             "smoothing of the categories' order, least rows of a category", type=float),
        _opt("--cat-l2", "cat_l2", "gbdt", "L2 added for many-vs-many categorical splits",
             type=float),
        _opt("--min-data-per-group", "min_data_per_group", "gbdt",
             "least rows between two categorical split candidates", type=int),
    ],
    "--ranker rankboost (RankBoostRanker)": [
        _opt("--n-thresholds", "n_thresholds", "rankboost",
             "candidate thresholds per feature (2-255)", type=int),
        _opt("--pair-weighting", "pair_weighting", "rankboost",
             "equal weight per query, or per crucial pair", choices=["query", "pair"]),
    ],
    "--ranker rules (OnDemandRuleRanker)": [
        _opt("--max-rule-size", "max_rule_size", "rules", "most items in a rule's antecedent",
             type=int),
        _opt("--min-support", "min_support", "rules", "least training documents a rule holds",
             type=int),
        _opt("--min-confidence", "min_confidence", "rules", "least confidence of a rule",
             type=float),
        _opt("--discretization", "discretization", "rules",
             "entropy / MDL cuts or count-balanced bins", choices=["mdl", "quantile"]),
        _opt("--n-bins", "n_bins", "rules",
             "most intervals per feature (None: quantile 10, mdl no cap)", type=int),
    ],
}


def _ranker_class(name):
    import importlib  # noqa: PLC0415

    module, cls = _TRAIN_RANKERS[name]
    return getattr(importlib.import_module(module, "skltr.ranking"), cls)


def _ranker_defaults(option) -> str:
    """``option``'s default for each of its rankers, read from the estimators."""
    words = {True: "on", False: "off"} if option.param == "early_stopping" else {}
    values = [(name, _ranker_class(name)().get_params()[option.param])
              for name in option.rankers]
    shown = [(name, words.get(v, v) if isinstance(v, bool) else v) for name, v in values]
    if len({repr(v) for _, v in shown}) == 1:
        return str(shown[0][1])
    return ", ".join(f"{v} for {name}" for name, v in shown)


class _TrainHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """``skltr train --help``: the rankers' options show the estimators' defaults, read when
    the help is printed (so ``skltr`` starts without importing the estimators)."""

    def _get_help_string(self, action):
        option = getattr(action, "ranker_option", None)
        if option is not None:
            return f"{action.help} (default: {_ranker_defaults(option)})"
        if action.default is None or action.default is False or (
                action.default is argparse.SUPPRESS):
            return action.help
        return f"{action.help} (default: %(default)s)"


def _add_train_command(sub) -> None:
    train = sub.add_parser(
        "train", formatter_class=_TrainHelpFormatter,
        help="train a ranker (GPUHistGBDTRanker, RankBoostRanker or OnDemandRuleRanker) on a "
             "LETOR/SVMlight file",
        description="Train a ranker on a LETOR/SVMlight file and save its JSON model; print\n"
                    "the NDCG@10 of the files asked for (--valid, --test, --score-train).\n"
                    "A ranker option left out takes the estimator's default, as in Python:\n"
                    "skltr train --ranker rankboost trains RankBoostRanker().")
    train.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the full traceback of an error instead of one line")
    train.add_argument("data", help="training file (qid: tokens, or a query file)")
    train.add_argument("-o", "--output", required=True, help="output JSON model path")
    train.add_argument("--ranker", default="gbdt", choices=list(_TRAIN_RANKERS),
                       help="GPUHistGBDTRanker (gbdt), RankBoostRanker (rankboost) or "
                            "OnDemandRuleRanker (rules); each takes the options of its group "
                            "below")
    train.add_argument("--valid", default=None, metavar="FILE",
                       help="validation file (LightGBM's valid=): the boosted rankers record "
                            "its NDCG@10 every round and stop early on it with "
                            "--early-stopping on; its NDCG@10 is printed")
    train.add_argument("--test", default=None, metavar="FILE",
                       help="test file: its NDCG@10 is printed")
    train.add_argument("--score-train", action="store_true",
                       help="also print the NDCG@10 of the training file (scores every "
                            "training document: slow for --ranker rules, which mines rules "
                            "per document)")
    train.add_argument("--zero-based", default="auto", choices=list(_ZERO_BASED),
                       help="feature indices of the files: true = index k is column k (as "
                            "LightGBM and XGBoost read them), false = index 1 is the first "
                            "column, auto = zero-based only if some index is 0; recorded in "
                            "the model for skltr predict")
    train.add_argument("--query-file", default=None,
                       help="group sizes, one per line, when DATA has no qid: tokens "
                            "(unset: DATA.query when it exists)")
    train.add_argument("--n-jobs", type=int, default=None, help="threads (unset: all)")
    train.add_argument("--seed", type=int, default=0, help="random seed (random_state)")
    train.add_argument("--device", default="cpu", help=_DEVICE_HELP)
    train.add_argument("--quiet", action="store_true",
                       help="no progress bars or progress lines")
    for title, options in _TRAIN_OPTIONS.items():
        group = train.add_argument_group(title)
        for option in options:
            action = group.add_argument(option.flag, default=None, help=option.help,
                                        **option.kwargs)
            action.ranker_option = option
    train.set_defaults(func=run_train)


def _ranker_params(args) -> dict:
    """The estimator parameters given on the command line for ``--ranker``; an option of
    another ranker is refused, naming the ranker it belongs to."""
    params = {}
    for options in _TRAIN_OPTIONS.values():
        for option in options:
            value = getattr(args, option.param)
            if value is None:
                continue
            if args.ranker not in option.rankers:
                owners = " or ".join(f"--ranker {r}" for r in option.rankers)
                why = (" (the rule ranker learns no rounds)"
                       if args.ranker == "rules" and "rankboost" in option.rankers else "")
                raise CommandError(
                    f"{option.flag} is an option of {owners}, not of --ranker {args.ranker} "
                    f"({_TRAIN_RANKERS[args.ranker][1]}){why}; skltr train --help lists each "
                    f"ranker's options.")
            if option.param == "early_stopping":
                if value == "auto" and args.ranker != "gbdt":
                    raise CommandError("--early-stopping auto is for --ranker gbdt; use on "
                                       "or off")
                value = _EARLY_STOPPING[value]
            params[option.param] = value
    return params


def _score_files(ranker, files, *, rules: bool, quiet: bool) -> dict:
    """NDCG@10 of each ``(name, path, (X, y, qid))`` in ``files``, printed with the time the
    scoring took. The rule ranker mines rules per document at predict time (tens of
    milliseconds a document on 2 cores), so it scores in blocks with a progress bar."""
    from .metrics import ndcg_score  # noqa: PLC0415

    result = {}
    for name, path, (X, y, qid) in files:
        n = X.shape[0]
        if rules and not quiet:
            print(f"scoring the {n:,} documents of {path} (the rule ranker mines rules per "
                  f"document) ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        if rules:
            block = 64
            starts = range(0, n, block)
            scores = np.concatenate([ranker.predict(X[a:a + block]) for a in _progress(
                starts, quiet=quiet, desc=f"scoring {name}", total=len(starts))] or [
                np.zeros(0)])
        else:
            scores = ranker.predict(X)
        elapsed = time.perf_counter() - t
        try:  # the model is saved: labels NDCG cannot use (regression's) only cost the line
            result[name] = ndcg_score(y, scores, qid=qid, k=10)
        except ValueError as exc:
            print(f"NDCG@10 {name}: not computed ({' '.join(str(exc).split())})")
        else:
            print(f"NDCG@10 {name}: {result[name]:.4f} ({n:,} documents scored in "
                  f"{elapsed:.2f} s)")
    return result


def run_train(args) -> dict:
    """Train a ranker (``--ranker``) on a LETOR file; save it; return (and print) the NDCG@10
    of the files asked for (``--valid``, ``--test``, ``--score-train``).

    The ranker's options left out take the estimator's defaults. The files are read as CSR
    (absent entries 0.0; the model equals the dense fit's), the validation and test files
    with the indexing the training file was read with, which the model records
    (``source["file_zero_based"]``) so that ``skltr predict`` reads files the same way.
    """
    started = time.perf_counter()
    params = _ranker_params(args)
    _output_path(args.output, "output model")  # before the work the model costs
    zero_based = _ZERO_BASED[args.zero_based]
    why = f"--zero-based {args.zero_based}"
    cls = _ranker_class(args.ranker)
    rules = args.ranker == "rules"
    n_bins = params.get("max_bins", cls().get_params().get("max_bins", 255))

    def width(n):
        if rules:
            return "skltr train takes (the rule ranker reads dense rows)"
        return (f"skltr train takes (its rankers keep {n_bins}-bin tables per feature: "
                f"{n * n_bins * 8 / 2**30:,.0f} GiB of bin edges alone at that width)")

    X, y, qid, used, lines = _read_letor(args.data, zero_based=zero_based, why=why,
                                         query_file=args.query_file,
                                         max_features=MAX_TRAIN_FEATURES, width_words=width)
    others = {}
    for name in ("valid", "test"):
        path = getattr(args, name)
        if path is not None:
            others[name] = (path, _read_letor(path, zero_based=used, n_features=X.shape[1],
                                              why="as the training file was read",
                                              model_words="the training file's "))
    for path, (X_f, y_f, _, _, lines_f) in [(args.data, (X, y, qid, used, lines))] + list(
            others.values()):
        bad = _bad_label(path, y_f, lines_f)
        if bad is not None:
            raise CommandError(f"{bad}; relevance labels are numbers such as 0, 1, 2.")
        _refuse_inf(path, X_f, lines_f, used, "skltr's rankers")
    if rules:  # the rule ranker reads dense rows (its training sets are small); absent 0.0
        X = X.toarray()
    others = {name: (path, ((F.toarray() if rules else F), y_f, q_f))
              for name, (path, (F, y_f, q_f, _, _)) in others.items()}
    verbose = 0 if args.quiet or not sys.stderr.isatty() else 1
    ranker = cls(**params, device=args.device, n_jobs=args.n_jobs, random_state=args.seed,
                 verbose=verbose)
    fit_params = {}
    if "valid" in others and not rules:
        fit_params["eval_set"] = [others["valid"][1]]
    t = time.perf_counter()
    ranker.fit(X, y, qid=qid, **fit_params)
    fit_s = time.perf_counter() - t
    # the model records how the file was read, so that skltr predict reads files the same way
    if rules:
        from .utils._model_io import save_document  # noqa: PLC0415

        what = (f"{ranker.used_features_.size} features used, {ranker.n_items_} items, "
                f"rules of up to {ranker.max_rule_size} items")
        doc = ranker._document()
        doc["meta"]["source"] = {"library": "skltr", "estimator": type(ranker).__name__,
                                 "file_zero_based": bool(used)}
        save_document(doc, args.output)
    else:
        ranker.ensemble_.source["file_zero_based"] = bool(used)
        what = f"{ranker.n_estimators_} {'stumps' if args.ranker == 'rankboost' else 'trees'}"
        ranker.save_model(args.output)
    print(f"{args.data}: {X.shape[0]} rows x {X.shape[1]} features, "
          f"{len(np.unique(qid))} queries; {type(ranker).__name__}: {what}, fitted in "
          f"{fit_s:.2f} s -> {args.output}")
    files = ([("train", args.data, (X, y, qid))] if args.score_train else []) + [
        (name, path, data) for name, (path, data) in others.items()]
    result = _score_files(ranker, files, rules=rules, quiet=args.quiet)
    print(f"total {time.perf_counter() - started:.2f} s (reading the files, fitting"
          + (", scoring" if files else "") + ")")
    return result


#: The top-level ``--help`` text: plain text (the module docstring is reStructuredText).
_DESCRIPTION = """\
skltr: learning to rank with scikit-learn estimators, on the CPU or a GPU.

Run "skltr COMMAND --help" for a command's options. Errors are one line on stderr with exit
status 2; --debug shows the traceback instead."""

_DEVICE_HELP = "cpu, cuda, cuda:N, or auto (a GPU when one is visible, else the CPU)"


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                     argparse.RawDescriptionHelpFormatter):
    """Every option's default shown (unless there is none to show: None, a flag's False);
    descriptions kept as written."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or (
                action.default is argparse.SUPPRESS):
            return action.help
        return super()._get_help_string(action)


def _sub(sub, name, help_text):
    parser = sub.add_parser(name, help=help_text, formatter_class=_HelpFormatter,
                            description=help_text[0].upper() + help_text[1:] + ".")
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the full traceback of an error instead of one line")
    return parser


def build_parser() -> argparse.ArgumentParser:
    from . import __version__  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="skltr", description=_DESCRIPTION,
                                     formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"skltr {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of one line")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = _sub(sub, "demo", "train every ranker, and LightGBM and XGBoost when installed, on "
                             "built-in synthetic ranking data")
    demo.add_argument("--device", default="cpu", help=_DEVICE_HELP)
    demo.add_argument("--n-queries", type=int, default=2000, help="queries to generate")
    demo.add_argument("--docs-per-query", type=int, default=50, help="documents per query")
    demo.add_argument("--n-features", type=int, default=136, help="features per document")
    demo.add_argument("--seed", type=int, default=0, help="seed of the data and the models")
    demo.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    demo.add_argument("--plot", default=None, metavar="FILE",
                      help="write a PNG: NDCG@10 per round and quality / fit time per model")
    demo.set_defaults(func=run_demo)

    convert = _sub(sub, "convert", "convert a model file to skltr's JSON format")
    convert.add_argument("model", help="XGBoost .json/.ubj, LightGBM text, or skltr JSON model")
    convert.add_argument("-o", "--output", required=True, help="output .json path")
    convert.set_defaults(func=run_convert)

    predict = _sub(sub, "predict", "score a LETOR/SVMlight file with a model file")
    predict.add_argument("model", help="XGBoost .json/.ubj, LightGBM text, or skltr JSON model")
    predict.add_argument("data", help="LETOR/SVMlight file (qid: tokens, or a query file)")
    predict.add_argument("-o", "--output", default=None,
                         help="scores file, one score per line (unset: standard output)")
    predict.add_argument("--zero-based", default=None, choices=list(_ZERO_BASED),
                         help="feature indices of DATA: true = index k is column k, false = "
                              "index 1 is the first column, auto = zero-based only if some "
                              "index is 0; unset: as the model's library reads files "
                              "(LightGBM, XGBoost: true; skltr: as skltr train read its file)")
    predict.add_argument("--query-file", default=None,
                         help="group sizes, one per line, when DATA has no qid: tokens "
                              "(unset: DATA.query when it exists)")
    predict.add_argument("--backend", default="auto", choices=["auto", "quickscorer",
                                                               "traversal"],
                         help="scoring backend; auto picks per model")
    predict.add_argument("--device", default="cpu", help=_DEVICE_HELP)
    predict.set_defaults(func=run_predict)

    _add_train_command(sub)
    _add_export_command(sub)
    return parser


# ---------------------------------------------------------------- skltr export (issue #32)
_EXPORT_TARGETS = ("lightgbm", "lightgbm-json", "xgboost", "xgboost-dump", "onnx")


def run_export(args) -> None:
    """``skltr export MODEL --to TARGET -o OUT``: write a model file (XGBoost, LightGBM or
    skltr) in the format a serving system loads (docs/user_guide/export.rst). A refused export
    (a model the target cannot represent) writes nothing."""
    from .convert import load_model  # noqa: PLC0415

    ensemble = load_model(args.model)
    names = args.feature_names.split(",") if args.feature_names else None
    if names is not None and args.to != "xgboost-dump":
        raise CommandError("--feature-names applies to --to xgboost-dump only")
    if args.to == "lightgbm":
        ensemble.to_lightgbm(args.output)
    elif args.to == "lightgbm-json":
        ensemble.to_lightgbm(args.output, format="json")
    elif args.to == "xgboost":
        ensemble.to_xgboost(args.output)
    elif args.to == "xgboost-dump":
        ensemble.to_xgboost_dump(args.output, base_score=args.base_score,
                                 feature_names=names)
    else:
        ensemble.to_onnx(args.output, input_type=args.input_type)
    print(f"{args.model} -> {args.output} ({args.to}): {ensemble.n_trees} trees, "
          f"{ensemble.n_features} features")


def _add_export_command(sub) -> None:
    export = _sub(sub, "export", "write a model file in the format of a serving system "
                                 "(LightGBM, XGBoost, the XGBoost JSON dump of the OpenSearch / "
                                 "Elasticsearch LTR plugin and Vespa, ONNX)")
    export.add_argument("model", help="XGBoost .json/.ubj, LightGBM text, or skltr JSON model")
    export.add_argument("--to", required=True, choices=_EXPORT_TARGETS,
                        help="target format: LightGBM text model, LightGBM dump_model() JSON, "
                             "XGBoost JSON model, XGBoost JSON dump, ONNX")
    export.add_argument("-o", "--output", required=True, help="output path")
    export.add_argument("--base-score", default="fold", choices=["fold", "drop"],
                        help="xgboost-dump: add the base score to the first tree's leaves, "
                             "or leave it out (a constant shift keeps the ranking)")
    export.add_argument("--feature-names", default=None,
                        help="xgboost-dump: comma-separated feature names, as the LTR "
                             "feature set names them (unset: the model's, else f0, f1, ...)")
    export.add_argument("--input-type", default="float32", choices=["float32", "float64"],
                        help="onnx: element type of the model's input")
    export.set_defaults(func=run_export)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, (CommandError, ValueError)) else (
        f"{type(exc).__name__}: {text}")


def main(argv=None) -> int:
    """Run the command; return its exit status.

    Errors are one line on stderr (``skltr CMD: error: ...``) and exit status 2; ``--debug``
    raises them with their traceback. Warnings are one line each. A closed output pipe
    (``skltr predict ... | head``) ends the command quietly.
    """
    import warnings  # noqa: PLC0415

    args = build_parser().parse_args(argv)
    name = f"skltr {args.command}"
    if not args.debug:
        def show(message, category, *_rest, **_kw):
            print(f"{name}: warning: {' '.join(str(message).split())}", file=sys.stderr)

        warnings.showwarning = show
    try:
        if getattr(args, "device", None) is not None:
            from ._device import resolve_device  # noqa: PLC0415

            args.device = str(resolve_device(args.device))
        args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (head, less): stop writing, say nothing, as other tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - every error becomes one line
        if args.debug:
            raise
        print(f"{name}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
