"""``skltr demo``: every ranker of the package, with LightGBM and XGBoost beside them.

Generates ranking data (:func:`skltr.datasets.make_ranking`), splits it by query 80/20, and
fits on the training queries, in turn: the baselines (random scores, the best single
feature), every ranker in :data:`skltr.ranking.RANKERS`, and -- when installed, labelled as
peers -- ``lightgbm.LGBMRanker()`` and ``xgboost.XGBRanker()`` with their defaults. The test
queries serve as each model's evaluation set (recorded per round, never used to stop).
Then :class:`~skltr.QuickScorerPredictor` scores each peer's fitted model and the table shows
its speed against the library's own ``predict`` and the largest difference of the scores.
Predict times are of a call after a first one on a few rows (one-off set-up left out).
``--plot FILE`` draws the NDCG@10 of every round and a bar chart of quality and time.
"""

from __future__ import annotations

import inspect
import os
import sys
import time

import numpy as np

__all__ = ["run_demo"]


def _say(args, text: str) -> None:
    if not args.quiet:
        print(text, file=sys.stderr, flush=True)


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _peers(seed):
    """(label, unfitted model, fit(model, X, y, qid, eval), curve(model)) per installed peer."""
    peers = []
    try:
        import lightgbm as lgb  # noqa: PLC0415
    except ImportError:
        lgb = None
    if lgb is not None:
        def lgb_fit(model, X, y, qid, ev):
            order = np.argsort(qid, kind="stable")  # LightGBM needs each query's rows together
            Xe, ye, qe = ev
            oe = np.argsort(qe, kind="stable")
            # LightGBM 4.7 renamed eval_set to eval_X / eval_y (and warns about the old name)
            evals = ({"eval_X": Xe[oe], "eval_y": ye[oe]}
                     if "eval_X" in inspect.signature(model.fit).parameters
                     else {"eval_set": [(Xe[oe], ye[oe])]})
            return model.fit(X[order], y[order], group=np.unique(qid, return_counts=True)[1],
                             eval_group=[np.unique(qe, return_counts=True)[1]], eval_at=[10],
                             **evals)

        peers.append(("peer: LightGBM LGBMRanker()",
                      lgb.LGBMRanker(random_state=seed, verbose=-1), lgb_fit,
                      lambda m: m.evals_result_["valid_0"]["ndcg@10"]))
    try:
        import xgboost as xgb  # noqa: PLC0415
    except ImportError:
        xgb = None
    if xgb is not None:
        def xgb_fit(model, X, y, qid, ev):
            order = np.argsort(qid, kind="stable")
            Xe, ye, qe = ev
            oe = np.argsort(qe, kind="stable")
            return model.fit(X[order], y[order], qid=qid[order],
                             eval_set=[(Xe[oe], ye[oe])], eval_qid=[qe[oe]], verbose=False)

        peers.append(("peer: XGBoost XGBRanker()",
                      xgb.XGBRanker(random_state=seed, eval_metric="ndcg@10"), xgb_fit,
                      lambda m: m.evals_result()["validation_0"]["ndcg@10"]))
    return peers, [name for name, mod in (("lightgbm", lgb), ("xgboost", xgb)) if mod is None]


def run_demo(args) -> list[dict]:
    """Fit, score and tabulate every model; return the table rows (also printed)."""
    from ._numba_cache import announce_first_compile  # noqa: PLC0415
    from .datasets import make_ranking  # noqa: PLC0415
    from .metrics import NDCGEvaluator, ndcg_score  # noqa: PLC0415
    from .model_selection import train_test_split_by_query  # noqa: PLC0415
    from .ranking import RANKERS  # noqa: PLC0415
    from .ranking._quickscorer_predictor import QuickScorerPredictor  # noqa: PLC0415

    # Said before anything compiles: the metrics compile first here, and a ranker's own
    # notice finds their cached kernels and stays quiet (issue #33).
    announce_first_compile()
    (X, y, qid), gen_s = _timed(lambda: make_ranking(
        n_queries=args.n_queries, docs_per_query=args.docs_per_query,
        n_features=args.n_features, n_informative=min(20, args.n_features),
        random_state=args.seed))
    X_tr, X_te, y_tr, y_te, q_tr, q_te = train_test_split_by_query(
        X, y, qid=qid, test_size=0.2, random_state=args.seed)
    print(f"data: {X.shape[0]} rows x {X.shape[1]} features, {len(np.unique(qid))} queries "
          f"(train {len(np.unique(q_tr))}, test {len(np.unique(q_te))}); generated in "
          f"{gen_s:.2f} s; device={args.device}")

    def ndcg(scores):
        return ndcg_score(y_te, scores, qid=q_te, k=10)

    rows, curves = [], {}
    rng = np.random.default_rng(args.seed)
    rows.append({"model": "baseline: random scores", "fit_s": 0.0, "predict_s": 0.0,
                 "ndcg@10": ndcg(rng.random(len(y_te)))})
    # Best single feature, chosen on the training queries (either sign); the evaluator groups
    # the training labels once for the 2 x n_features scorings (ndcg_score's values)
    train_ndcg = NDCGEvaluator(y_tr, qid=q_tr, eval_at=[10])
    _, j, sign = max((train_ndcg(s * np.nan_to_num(X_tr[:, f], nan=0.0))[0], f, s)
                     for f in range(X.shape[1]) for s in (1.0, -1.0))
    rows.append({"model": f"baseline: best feature ({'+' if sign > 0 else '-'}x{j})",
                 "fit_s": 0.0, "predict_s": 0.0,
                 "ndcg@10": ndcg(sign * np.nan_to_num(X_te[:, j], nan=0.0))})

    for name in RANKERS:
        _say(args, f"fitting {name} ...")
        ranker = RANKERS[name](args.device)
        # boosted rankers record the test queries' NDCG per round; a lazy learner (the
        # rule ranker) has no rounds and no eval_set
        evals = ({"eval_set": [(X_te, y_te, q_te)]}
                 if "eval_set" in inspect.signature(ranker.fit).parameters else {})
        _, fit_s = _timed(lambda: ranker.fit(X_tr, y_tr, qid=q_tr, **evals))
        ranker.predict(X_te[:64])  # one-off set-up (scoring tables) outside the timing
        pred, predict_s = _timed(lambda: ranker.predict(X_te))
        rows.append({"model": name, "fit_s": fit_s, "predict_s": predict_s,
                     "ndcg@10": ndcg(pred)})
        result = getattr(ranker, "evals_result_", {}) or {}
        if result:
            curves[name] = next(iter(next(iter(result.values())).values()))

    peers, missing = _peers(args.seed)
    if args.device != "cpu" and peers:
        _say(args, "peers run on the CPU with their defaults")
    for label, model, fit, curve in peers:
        _say(args, f"fitting {label} ...")
        _, fit_s = _timed(lambda: fit(model, X_tr, y_tr, q_tr, (X_te, y_te, q_te)))
        model.predict(X_te[:64])
        pred, predict_s = _timed(lambda: model.predict(X_te))
        rows.append({"model": label, "fit_s": fit_s, "predict_s": predict_s,
                     "ndcg@10": ndcg(pred)})
        curves[label] = list(curve(model))
        # the same fitted model, scored by skltr
        fast = QuickScorerPredictor.from_model(model)
        fast.predict(X_te[:64])  # compile / load the kernels outside the timing
        fast_pred, fast_s = _timed(lambda: fast.predict(X_te))
        rows.append({"model": "  scored by QuickScorerPredictor", "fit_s": 0.0,
                     "predict_s": fast_s, "ndcg@10": ndcg(fast_pred),
                     "speedup": predict_s / fast_s if fast_s > 0 else float("inf"),
                     "max_abs_diff": float(np.max(np.abs(np.asarray(fast_pred, np.float64)
                                                         - np.asarray(pred, np.float64))))})
    for name in missing:
        print(f"({name} is not installed: its peer row is left out; pip install {name})")

    print(f"\n{'model':<36} {'NDCG@10':>8} {'fit s':>8} {'predict s':>10}")
    print("-" * 65)
    for r in rows:
        extra = ""
        if "speedup" in r:
            extra = (f"   {r['speedup']:.1f}x the library's predict, max abs diff "
                     f"{r['max_abs_diff']:.3g}")
        print(f"{r['model']:<36} {r['ndcg@10']:>8.4f} {r['fit_s']:>8.3f} "
              f"{r['predict_s']:>10.4f}{extra}")
    if getattr(args, "plot", None):
        _plot(args.plot, rows, curves)
        print(f"\nplot written to {args.plot}")
    return rows


def _plot(path, rows, curves) -> None:
    """NDCG@10 per round (left) and quality and fit time per model (right), as a PNG."""
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError as exc:
        raise ImportError("--plot needs matplotlib: pip install matplotlib") from exc
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, values in curves.items():
        ax1.plot(np.arange(1, len(values) + 1), values, label=label)
    ax1.set_xlabel("boosting round")
    ax1.set_ylabel("NDCG@10 on the test queries")
    ax1.set_title("quality per round")
    if curves:
        ax1.legend(fontsize=8)
    models = [r for r in rows if not r["model"].startswith("  ")]
    names = [r["model"].replace("baseline: ", "").replace("peer: ", "") for r in models]
    pos = np.arange(len(models))
    ax2.barh(pos, [r["ndcg@10"] for r in models], color="tab:blue")
    ax2.set_yticks(pos, names, fontsize=8)
    ax2.invert_yaxis()
    ax2.set_xlabel("NDCG@10 (bars); fit seconds in the labels")
    for k, r in enumerate(models):
        if r["fit_s"] > 0:
            ax2.text(r["ndcg@10"], k, f" {r['fit_s']:.1f} s", va="center", fontsize=8)
    ax2.set_title("quality and fit time")
    fig.tight_layout()
    from .utils._atomic import atomic_write  # noqa: PLC0415

    fmt = os.path.splitext(os.fspath(path))[1][1:].lower() or "png"  # as savefig(path)
    try:
        with atomic_write(path, "wb") as fh:  # a failed write keeps the old picture
            fig.savefig(fh, dpi=100, format=fmt)
    finally:
        plt.close(fig)
