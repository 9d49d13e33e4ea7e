"""LightGBM and XGBoost names for skltr's parameters: one table, read by the docs and the errors.

:data:`PEER_NAMES` is the only place where a LightGBM or XGBoost parameter (or ``fit``
argument) is matched with skltr's. The "Coming from XGBoost or LightGBM" page renders it
(``docs/conf.py``'s ``skltr-peer-names`` directive), and the rankers read it to answer a
peer's name with the skltr one: ``GPUHistGBDTRanker(num_leaves=63)`` raises a ``TypeError``
that says "use max_leaves", ``fit(X, y, group=sizes)`` one that says how to turn group sizes
into ``qid``, and ``objective="rank:ndcg"`` an error that names ``objective="lambdarank"``.

Each entry of a row is ``name`` (a parameter), ``name=value`` (a parameter at a value, the
value written as Python source) or ``fit(name=...)`` (an argument of ``fit``).
"""

from __future__ import annotations

import ast
import difflib
from typing import NamedTuple

__all__ = ["PEER_NAMES", "PeerName", "unknown_argument_message", "invalid_value_hint"]


class PeerName(NamedTuple):
    """One row: skltr's parameter, the peers' equivalents, and what differs."""

    skltr: str
    lightgbm: tuple = ()
    xgboost: tuple = ()
    note: str = ""


#: skltr's parameters (of :class:`~skltr.GPUHistGBDTRanker` unless the row says otherwise)
#: and their LightGBM (``LGBMRanker`` and ``lgb.train`` params, aliases included) and
#: XGBoost (``XGBRanker`` and ``xgb.train`` params) equivalents. An empty peer entry: no
#: equivalent.
PEER_NAMES: tuple[PeerName, ...] = (
    PeerName("fit(qid=...)", ("fit(group=...)",), ("fit(qid=...)", "fit(group=...)"),
             "one query id per row, in any order (skltr sorts stably inside and answers in "
             "your row order); LightGBM's group sizes become qid with "
             "skltr.utils.group_sizes_to_qid(group); XGBoost needs rows sorted by qid, "
             "skltr does not"),
    PeerName("fit(eval_set=...)", ("fit(eval_set=...)", "fit(eval_group=...)"),
             ("fit(eval_set=...)", "fit(eval_qid=...)"),
             "(X, y, qid) triples: eval_set=[(X_val, y_val, qid_val)]"),
    PeerName('objective="lambdarank"', ('objective="lambdarank"',), ('objective="rank:ndcg"',)),
    PeerName('objective="rank_pairwise"', (), ('objective="rank:pairwise"',)),
    PeerName('objective="rank_xendcg"', ('objective="rank_xendcg"', 'objective="xendcg"'), ()),
    PeerName('objective="regression"', ('objective="regression"',),
             ('objective="reg:squarederror"',)),
    PeerName("n_estimators=100", ("n_estimators", "num_iterations", "num_boost_round",
                                  "num_trees", "num_rounds"),
             ("n_estimators", "num_boost_round"),
             "XGBoost's xgb.train default is 10 rounds, XGBRanker's 100"),
    PeerName("learning_rate=0.1", ("learning_rate", "shrinkage_rate"), ("learning_rate", "eta"),
             "XGBoost's default is 0.3"),
    PeerName("max_leaves=31", ("num_leaves", "num_leaf", "max_leaves"), ("max_leaves",),
             "XGBoost's default 0 is no limit: max_leaves=None"),
    PeerName("max_depth=None", ("max_depth=-1",), ("max_depth=0",),
             "None is no limit; XGBoost's default depth is 6"),
    PeerName('growth="leafwise"', (), ('grow_policy="lossguide"',),
             "LightGBM always grows leaf-wise"),
    PeerName('growth="depthwise"', (), ('grow_policy="depthwise"',),
             "XGBoost's default; the fast growth on a GPU"),
    PeerName('growth="symmetric"', (), (),
             'CatBoost\'s default grow_policy="SymmetricTree" (oblivious trees: one split a '
             "level); max_depth 6 when None, as CatBoost's depth; CPU only"),
    PeerName("random_strength=0.0", (), (),
             "CatBoost's random_strength (1 by default there): noise on the split scores, "
             'growth="symmetric" only'),
    PeerName("min_samples_leaf=20", ("min_child_samples", "min_data_in_leaf"), (),
             "rows per leaf, counted from the hessian as LightGBM counts them "
             '(min_samples_leaf_counts="hessian")'),
    PeerName("min_child_weight=1e-3", ("min_child_weight", "min_sum_hessian_in_leaf"),
             ("min_child_weight",), "XGBoost's default is 1"),
    PeerName("reg_lambda=0.0", ("reg_lambda", "lambda_l2"), ("reg_lambda", "lambda"),
             "XGBoost's default is 1"),
    PeerName("reg_alpha=0.0", ("reg_alpha", "lambda_l1"), ("reg_alpha", "alpha")),
    PeerName("min_split_gain=0.0", ("min_split_gain", "min_gain_to_split"),
             ("gamma", "min_split_loss")),
    PeerName("max_bins=255", ("max_bin",), ("max_bin",),
             "at most 255 (one byte a bin, the missing bin included); XGBoost's default is "
             "256"),
    PeerName('hist_mode="quantised"', ("use_quantized_grad",), (),
             "skltr's default: integer histograms of quantised gradients, so a model does not "
             'depend on the thread count; hist_mode="float" sums floats'),
    PeerName("subsample=1.0", ("subsample", "bagging_fraction"), ("subsample",),
             "skltr draws whole queries every round; the peers draw rows (LightGBM only "
             "with subsample_freq / bagging_freq > 0)"),
    PeerName("colsample_bytree=1.0", ("colsample_bytree", "feature_fraction"),
             ("colsample_bytree",)),
    PeerName('gain="exp2"', ("label_gain",), ("ndcg_exp_gain=True",),
             "2**label - 1 for every grade, LightGBM's default label_gain; "
             'gain="linear" is the label itself (XGBoost\'s ndcg_exp_gain=False); other '
             "gain lists are not supported"),
    PeerName("lambdarank_truncation_level=None", ("lambdarank_truncation_level",),
             ("lambdarank_num_pair_per_sample",),
             "None: 30 for lambdarank, as LightGBM"),
    PeerName('fit(position=...)', ("fit(position=...)",), (),
             "the display position of each row when its click was logged, routed like qid; "
             "XGBoost reads positions from the row order within each query instead"),
    PeerName('position_bias="unbiased"', (), ("lambdarank_unbiased=True",),
             "Unbiased LambdaMART with XGBoost's pair cost; needs fit(position=...); "
             '"unbiased_paper" takes the paper\'s cost'),
    PeerName('position_bias="additive"', ("fit(position=...)",), (),
             "LightGBM's learned additive score per position (its Dataset(position=...))"),
    PeerName("lambdarank_bias_norm=1.0", (), ("lambdarank_bias_norm",)),
    PeerName("lambdarank_position_bias_regularization=0.0",
             ("lambdarank_position_bias_regularization",), ()),
    PeerName("eval_at=10", ("eval_at", "ndcg_eval_at", "fit(eval_at=...)"),
             ('eval_metric="ndcg@10"',),
             "a parameter of the ranker, not of fit; also score()'s cut-off"),
    PeerName("early_stopping=False", ("fit(callbacks=...)",), (),
             'True: stop when n_iter_no_change rounds do not improve the first eval_set '
             '(or validation_fraction of the training queries); "auto": on above 10,000 '
             "rows"),
    PeerName("n_iter_no_change=10", ("early_stopping_round", "early_stopping_rounds",
                                     "n_iter_no_change"),
             ("early_stopping_rounds",), "with early_stopping=True"),
    PeerName('device="cuda"', ("device_type", 'device="cuda"'), ('device="cuda"',),
             '"cpu" (default), "cuda", "cuda:N" or "auto"'),
    PeerName("n_jobs=None", ("n_jobs", "num_threads", "nthread"), ("n_jobs", "nthread")),
    PeerName("random_state=None", ("random_state", "seed"), ("random_state", "seed")),
    PeerName("verbose=0", ("verbose", "verbosity"), ("verbosity",)),
    PeerName("fit(init_model=...)", ("fit(init_model=...)",), ("fit(xgb_model=...)",),
             "continue a fitted skltr ranker, its TreeEnsemble or saved model, or a "
             "LightGBM or XGBoost model, for n_estimators more rounds"),
    PeerName("warm_start=False", (), (),
             "scikit-learn's: True continues this ranker's own model up to n_estimators"),
    PeerName("monotone_constraints=None", ("monotone_constraints", "mc",
                                           "monotone_constraint"),
             ("monotone_constraints",),
             "per feature -1 / 0 / 1, or a dict {feature: direction}"),
    PeerName('monotone_constraints_method="basic"',
             ("monotone_constraints_method", "mc_method"), (),
             '"basic" or "intermediate" ("advanced": not implemented)'),
    PeerName("interaction_constraints=None", ("interaction_constraints",),
             ("interaction_constraints",),
             "a list of feature lists (indices or names)"),
    PeerName('categorical_features="from_dtype"',
             ("categorical_feature", "cat_feature", "categorical_column", "cat_column",
              "fit(categorical_feature=...)"),
             ("enable_categorical",),
             'scikit-learn\'s HistGradientBoosting form: "from_dtype" (pandas category '
             'columns), indices, a boolean mask or column names'),
    PeerName("max_cat_to_onehot=4", ("max_cat_to_onehot",), ("max_cat_to_onehot",)),
    PeerName("max_cat_threshold=32", ("max_cat_threshold",), ("max_cat_threshold",)),
    PeerName("cat_smooth=10.0", ("cat_smooth",), ()),
    PeerName("cat_l2=10.0", ("cat_l2",), ()),
    PeerName("min_data_per_group=100", ("min_data_per_group",), ()),
    PeerName('importance_type="gain"', ("importance_type",), ("importance_type",),
             'what the feature importances sum, "gain" or "split" (LightGBM\'s default is '
             '"split")'),
)


def _parse(entry: str):
    """``(kind, name, value)``: kind "fit" or "param"; value None when not given."""
    kind = "param"
    if entry.startswith("fit(") and entry.endswith(")"):
        kind, entry = "fit", entry[4:-1]
    name, sep, value = entry.partition("=")
    if not sep or value == "...":
        return kind, name, None
    return kind, name, ast.literal_eval(value)


def _skltr_words(row: PeerName) -> str:
    """How a hint names the row's skltr side: ``max_leaves``, ``objective="lambdarank"``,
    ``fit(qid=...)``."""
    kind, name, value = _parse(row.skltr)
    if kind == "fit":
        return f"fit({name}=...)"
    return row.skltr if isinstance(value, str) or name == "growth" else name


def _matches(name: str, *, kind: str):
    """Rows where a peer uses ``name`` (any value) in ``kind``: ``[(library, row)]``."""
    out = []
    for row in PEER_NAMES:
        for library, entries in (("LightGBM", row.lightgbm), ("XGBoost", row.xgboost)):
            if any(_parse(e)[:2] == (kind, name) for e in entries):
                out.append((library, row))
    return out


def unknown_argument_message(owner: str, name: str, known, *, kind: str = "param") -> str:
    """The ``TypeError`` text for an unexpected keyword argument ``name`` of ``owner``'s
    constructor (``kind="param"``) or ``fit`` (``kind="fit"``), whose accepted names are
    ``known``: the skltr name when ``name`` is a LightGBM or XGBoost one, else the closest
    accepted names."""
    call = f"{owner}()" if kind == "param" else f"{owner}.fit()"
    hints, rows = [], {}
    for library, row in _matches(name, kind=kind):
        target_kind, target, _ = _parse(row.skltr)
        if target in known or (target_kind == "param" and kind == "fit"):
            rows.setdefault(row, []).append(library)
    for row, libraries in rows.items():
        target_kind, target, _ = _parse(row.skltr)
        peer = next(e for e in row.lightgbm + row.xgboost if _parse(e)[:2] == (kind, name))
        whose = " and ".join(f"{lib}'s" for lib in dict.fromkeys(libraries))
        if _parse(peer)[2] is not None:
            use = f"{peer} is {row.skltr}"
        elif target_kind == kind:
            use = f"use {_skltr_words(row)}"
        else:  # a fit argument of the peer that is a parameter of the ranker in skltr
            use = f"skltr sets it on the ranker: {owner}({target}=...)"
        hints.append(f"{name} is {whose} name; {use}" + (f" ({row.note})" if row.note
                                                          and len(rows) == 1 else ""))
    if hints:
        hints.append("the user guide's 'Coming from XGBoost or LightGBM' page maps their "
                     "names")
    else:
        close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
        if close:
            hints.append("did you mean " + " or ".join(close) + "?")
        else:
            hints.append(("its parameters are " if kind == "param" else "it takes ")
                         + ", ".join(sorted(known)))
    return f"{call} got an unexpected keyword argument {name!r}; " + "; ".join(hints)


def invalid_value_hint(name: str, value) -> str:
    """A sentence naming skltr's value when ``name=value`` is a LightGBM or XGBoost setting
    skltr spells otherwise (``objective="rank:ndcg"``), else ``""``."""
    for row in PEER_NAMES:
        for library, entries in (("LightGBM", row.lightgbm), ("XGBoost", row.xgboost)):
            for entry in entries:
                kind, peer_name, peer_value = _parse(entry)
                if (kind, peer_name) == ("param", name) and peer_value is not None and (
                        type(peer_value) is type(value) and peer_value == value):
                    return (f"{entry} is {library}'s setting; skltr's is {row.skltr}"
                            + (f" ({row.note})" if row.note else "") + ".")
    return ""
