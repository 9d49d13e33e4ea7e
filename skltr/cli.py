"""The ``skltr`` command (also ``python -m skltr``).

Sub-commands:

* ``demo``: generate ranking data, train every ranker that exists, print NDCG@10 and timings;
* ``convert MODEL -o OUT.json``: XGBoost / LightGBM / skltr model file -> skltr JSON model;
* ``predict MODEL DATA``: score a LETOR/SVMlight file with QuickScorer, write one score per
  line, and print NDCG@10 when the file has labels and query ids;
* ``train DATA -o MODEL.json``: train a ranker (``--ranker gbdt | rankboost | rules``) on a
  LETOR/SVMlight file, save the JSON model, print NDCG@10 on the training file and on an
  optional ``--test`` file.

Files are read as the model's library reads them. Feature indices: LightGBM
(``lgb.Dataset(path)``) and XGBoost (``DMatrix(path + "?format=libsvm")``: dmlc's LibSVM
parser, ``indexing_mode`` 0 by default) number columns by the index as written (index 1 is
column 1, column 0 stays empty), so ``predict`` reads files zero-based for their models; a
skltr model records how ``skltr train`` read its training file and is read the same way
(models without the record: "auto", scikit-learn's rule -- zero-based only when some index
is 0); ``--zero-based`` overrides. Absent entries: a file is scored as a sparse matrix, so an
entry a line leaves out means what it means to the model's library (0.0 for LightGBM and
skltr, missing for XGBoost, whose loader keeps a written ``k:0`` as the value 0).

``bench`` arrives with the estimators.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

#: ``--zero-based`` choices.
_ZERO_BASED = {"auto": "auto", "true": True, "false": False}


class CommandError(Exception):
    """A mistake in a command's input, reported as one line (``skltr CMD: error: ...``)."""


def _indexing_words(zero_based) -> str:
    return ("zero-based (index k is column k)" if zero_based is True else
            "one-based (index k is column k-1)" if zero_based is False else
            "'auto' (zero-based only if some index is 0)")


def model_file_indexing(ensemble):
    """How ``skltr predict`` reads a data file for ``ensemble``: ``(zero_based, why)``.

    As the model's library reads LibSVM files when it trains from one: LightGBM and XGBoost
    number columns by the index as written; a skltr model is read as ``skltr train`` read
    its training file (``source["file_zero_based"]``), else with "auto".
    """
    source = ensemble.source or {}
    library = source.get("library")
    if library == "lightgbm":
        return True, "as LightGBM reads LibSVM files"
    if library == "xgboost":
        return True, "as XGBoost reads LibSVM files (indexing_mode=0)"
    if library == "skltr" and isinstance(source.get("file_zero_based"), bool):
        return source["file_zero_based"], "as skltr train read the model's training file"
    return "auto", "scikit-learn's load_svmlight_file rule"


def _read_letor(path, *, zero_based, why, n_features=None, query_file=None, model_words=""):
    """``load_letor`` as CSR plus the indexing used; index errors become one-line advice."""
    from .datasets._svmlight import (  # noqa: PLC0415
        LetorIndexError, MissingQidError, _load_letor)

    try:
        return _load_letor(path, n_features=n_features, dense=False, query_file=query_file,
                           zero_based=zero_based)
    except MissingQidError as exc:
        raise CommandError(
            f"{exc.where}; pass --query-file with the group sizes (one integer per line), "
            f"or write qid:<id> after each label.") from None
    except LetorIndexError as exc:
        if exc.index == 0:
            raise CommandError(
                f"{exc.where}: feature index 0, but the file is read one-based ({why}); pass "
                f"--zero-based true if this file is zero-based.") from None
        other = "false" if exc.zero_based else "true"
        raise CommandError(
            f"{exc.where}: feature index {exc.index} does not fit {model_words}"
            f"{exc.n_features} features when the file is read "
            f"{'zero' if exc.zero_based else 'one'}-based ({why}); if the file is "
            f"{'one' if exc.zero_based else 'zero'}-based, pass --zero-based {other}, else "
            f"the file does not belong to this model.") from None


def _progress(iterable, *, quiet: bool, desc: str, total: int | None = None):
    """tqdm progress bar, off with --quiet or when stderr is not a terminal."""
    from tqdm.auto import tqdm  # noqa: PLC0415

    disable = quiet or not sys.stderr.isatty()
    colour = None if os.environ.get("NO_COLOR") else "green"
    return tqdm(iterable, desc=desc, total=total, disable=disable, colour=colour,
                file=sys.stderr, leave=False)


def run_demo(args) -> list[dict]:
    """``skltr demo``: see :mod:`skltr._demo`."""
    from ._demo import run_demo as demo  # noqa: PLC0415

    return demo(args)


def run_convert(args) -> None:
    """Convert a model file to a skltr JSON model."""
    from .convert import load_model  # noqa: PLC0415

    ensemble = load_model(args.model)
    ensemble.save(args.output)
    print(f"{args.model} -> {args.output}: {ensemble.n_trees} trees, {ensemble.n_nodes} nodes, "
          f"{ensemble.n_features} features, transform {ensemble.output_transform}")


def run_predict(args) -> None:
    """Score a LETOR file with a model file through QuickScorerPredictor.

    The file is read as a CSR matrix with the model's indexing (:func:`model_file_indexing`,
    or ``--zero-based``); absent entries mean what the model's library reads them as.
    """
    from .metrics import ndcg_score  # noqa: PLC0415
    from .ranking._quickscorer_predictor import QuickScorerPredictor  # noqa: PLC0415

    predictor = QuickScorerPredictor.from_file(args.model, backend=args.backend,
                                               device=args.device)
    if args.zero_based is None:
        zero_based, why = model_file_indexing(predictor.ensemble_)
    else:
        zero_based, why = _ZERO_BASED[args.zero_based], f"--zero-based {args.zero_based}"
    X, y, qid, used = _read_letor(args.data, zero_based=zero_based, why=why,
                                  n_features=predictor.n_features_in_,
                                  query_file=args.query_file, model_words="the model's ")
    print(f"read {args.data} {_indexing_words(used)}, {why}", file=sys.stderr)
    t = time.perf_counter()
    scores = predictor.predict(X)
    elapsed = time.perf_counter() - t
    out = sys.stdout if args.output in (None, "-") else open(args.output, "w", encoding="utf-8")
    try:
        # 17 significant digits round-trip every double (and so every float32) exactly.
        np.savetxt(out, np.asarray(scores).reshape(X.shape[0], -1), fmt="%.17g")
    finally:
        if out is not sys.stdout:
            out.close()
    first_column = np.asarray(scores).reshape(X.shape[0], -1)[:, 0]
    print(f"scored {X.shape[0]} rows in {elapsed:.3f} s with backend {predictor.backend_}; "
          f"NDCG@10 {ndcg_score(y, first_column, qid=qid, k=10):.4f}", file=sys.stderr)


def run_train(args) -> dict:
    """Train a ranker (``--ranker``) on a LETOR file; save it; return (and print) NDCG@10.

    The files are read as CSR (absent entries 0.0; the model equals the dense fit's), the
    test file with the indexing the training file was read with, which the model records
    (``source["file_zero_based"]``) so that ``skltr predict`` reads files the same way.
    """
    from .metrics import ndcg_score  # noqa: PLC0415

    zero_based = _ZERO_BASED[args.zero_based]
    why = f"--zero-based {args.zero_based}"
    X, y, qid, used = _read_letor(args.data, zero_based=zero_based, why=why,
                                  query_file=args.query_file)
    test = None
    if args.test is not None:
        test = _read_letor(args.test, zero_based=used, n_features=X.shape[1],
                           why="as the training file was read",
                           model_words="the training file's ")[:3]
    verbose = 0 if args.quiet or not sys.stderr.isatty() else 1
    if args.ranker == "rules":
        from .ranking._rule_ranker import OnDemandRuleRanker  # noqa: PLC0415

        if args.early_stopping != "off":
            raise ValueError("--early-stopping is for the boosted rankers; --ranker rules "
                             "learns no rounds")
        ranker = OnDemandRuleRanker(
            max_rule_size=args.max_rule_size, min_support=args.min_support,
            min_confidence=args.min_confidence, discretization=args.discretization,
            n_bins=args.n_bins, device=args.device, n_jobs=args.n_jobs,
            random_state=args.seed, verbose=verbose)
        # the rule ranker reads dense rows (its training sets are small); absent entries 0.0
        X = X.toarray()
        if test is not None:
            test = (test[0].toarray(), *test[1:])
    elif args.ranker == "rankboost":
        from .ranking._rankboost_ranker import RankBoostRanker  # noqa: PLC0415

        if args.early_stopping == "auto":
            raise ValueError("--early-stopping auto is for --ranker gbdt; use on or off")
        ranker = RankBoostRanker(
            n_estimators=args.n_estimators, n_thresholds=args.max_bins,
            pair_weighting=args.pair_weighting, early_stopping=args.early_stopping == "on",
            device=args.device, n_jobs=args.n_jobs, random_state=args.seed, verbose=verbose)
    else:
        from .ranking._gbdt_ranker import GPUHistGBDTRanker  # noqa: PLC0415

        ranker = GPUHistGBDTRanker(
            objective=args.objective, n_estimators=args.n_estimators,
            learning_rate=args.learning_rate, max_leaves=args.max_leaves,
            max_depth=args.max_depth, min_samples_leaf=args.min_samples_leaf,
            reg_lambda=args.reg_lambda, max_bins=args.max_bins, subsample=args.subsample,
            colsample_bytree=args.colsample_bytree,
            early_stopping={"auto": "auto", "on": True, "off": False}[args.early_stopping],
            device=args.device, n_jobs=args.n_jobs, random_state=args.seed, verbose=verbose)
    t = time.perf_counter()
    ranker.fit(X, y, qid=qid)
    fit_s = time.perf_counter() - t
    if args.ranker == "rules":
        what = (f"{ranker.used_features_.size} features used, {ranker.n_items_} items, "
                f"rules of up to {args.max_rule_size} items")
    else:
        ranker.ensemble_.source["file_zero_based"] = bool(used)  # read test files the same way
        what = f"{ranker.n_estimators_} {'stumps' if args.ranker == 'rankboost' else 'trees'}"
    ranker.save_model(args.output)
    result = {"train": ndcg_score(y, ranker.predict(X), qid=qid, k=10)}
    if test is not None:
        result["test"] = ndcg_score(test[1], ranker.predict(test[0]), qid=test[2], k=10)
    print(f"{args.data}: {X.shape[0]} rows x {X.shape[1]} features, "
          f"{len(np.unique(qid))} queries; {what} in {fit_s:.2f} s -> {args.output}")
    for name, value in result.items():
        print(f"NDCG@10 {name}: {value:.4f}")
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

    train = _sub(sub, "train", "train a ranker (GPUHistGBDTRanker, RankBoostRanker or "
                               "OnDemandRuleRanker) on a LETOR/SVMlight file")
    train.add_argument("data", help="training file (qid: tokens, or a query file)")
    train.add_argument("-o", "--output", required=True, help="output JSON model path")
    train.add_argument("--test", default=None, help="test file: its NDCG@10 is printed")
    train.add_argument("--zero-based", default="auto", choices=list(_ZERO_BASED),
                       help="feature indices of the files: true = index k is column k (as "
                            "LightGBM and XGBoost read them), false = index 1 is the first "
                            "column, auto = zero-based only if some index is 0; recorded in "
                            "the model for skltr predict")
    train.add_argument("--query-file", default=None,
                       help="group sizes, one per line, when DATA has no qid: tokens "
                            "(unset: DATA.query when it exists)")
    train.add_argument("--ranker", default="gbdt", choices=["gbdt", "rankboost", "rules"],
                       help="GPUHistGBDTRanker (gbdt), RankBoostRanker (rankboost; uses "
                            "--n-estimators, --max-bins as its thresholds, --pair-weighting) "
                            "or OnDemandRuleRanker (rules; uses --max-rule-size, "
                            "--min-support, --min-confidence, --discretization, --n-bins)")
    train.add_argument("--max-rule-size", type=int, default=3,
                       help="rules: most items in a rule's antecedent")
    train.add_argument("--min-support", type=int, default=1,
                       help="rules: least training documents a rule holds")
    train.add_argument("--min-confidence", type=float, default=0.001,
                       help="rules: least confidence of a rule")
    train.add_argument("--discretization", default="mdl", choices=["mdl", "quantile"],
                       help="rules: entropy / MDL cuts or count-balanced bins")
    train.add_argument("--n-bins", type=int, default=None,
                       help="rules: most intervals per feature (unset: quantile 10, mdl no "
                            "cap)")
    train.add_argument("--pair-weighting", default="query", choices=["query", "pair"],
                       help="rankboost: equal weight per query, or per crucial pair")
    train.add_argument("--objective", default="lambdarank",
                       choices=["lambdarank", "rank_pairwise", "rank_xendcg", "regression"],
                       help="training objective")
    train.add_argument("--n-estimators", type=int, default=100, help="boosting rounds")
    train.add_argument("--learning-rate", type=float, default=0.1, help="shrinkage")
    train.add_argument("--max-leaves", type=int, default=31, help="leaves per tree")
    train.add_argument("--max-depth", type=int, default=None,
                       help="depth limit (unset: none)")
    train.add_argument("--min-samples-leaf", type=int, default=20, help="rows per leaf")
    train.add_argument("--reg-lambda", type=float, default=0.0, help="L2 penalty on leaves")
    train.add_argument("--max-bins", type=int, default=255, help="bins per feature (2-255)")
    train.add_argument("--subsample", type=float, default=1.0,
                       help="fraction of queries per tree")
    train.add_argument("--colsample-bytree", type=float, default=1.0,
                       help="fraction of features per tree")
    train.add_argument("--early-stopping", default="off", choices=["auto", "on", "off"],
                       help="on / auto hold out --validation-fraction of the training "
                            "queries and stop when their NDCG stalls (auto: above 10,000 "
                            "rows; a warning says so)")
    train.add_argument("--n-jobs", type=int, default=None, help="threads (unset: all)")
    train.add_argument("--seed", type=int, default=0, help="random seed")
    train.add_argument("--device", default="cpu", help=_DEVICE_HELP)
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(func=run_train)
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
