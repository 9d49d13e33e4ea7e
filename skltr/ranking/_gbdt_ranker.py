"""``GPUHistGBDTRanker``: histogram gradient-boosted trees for learning to rank (LambdaMART).

A thin scikit-learn front-end: parameters, input validation, fitted attributes and
persistence. What a fit decides from the parameters (early stopping, the held-out queries,
the objective, the loop's parameters, the device's loop) is the fit recipe
:mod:`skltr._gbdt.fit`, shared with :mod:`skltr.dask` so that both train the same model; the
stages beneath it are described in ``docs/gbdt_internals.rst``.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._device import resolve_device
from .._gbdt.objectives import OBJECTIVES
from .._gbdt.position_bias import MODES as POSITION_BIAS_MODES
from ..utils.validation import check_ranking_y
from ._categorical import (check_categorical_columns, encode_eval_sets, encode_fit_frame,
                           encode_frame, jsonable_categories, read_categories)
from ._ensemble_ranker import EnsembleRanker
from ._position import check_position

__all__ = ["GPUHistGBDTRanker"]


class GPUHistGBDTRanker(EnsembleRanker):
    """Gradient-boosted decision trees on binned features, trained for ranking (LambdaMART).

    Each round computes per-document gradients of a ranking objective over the queries, grows
    one histogram tree on features binned once into at most ``max_bins`` bins (missing values
    get their own bin and a learned direction) and adds it to the scores. The fitted model is
    one :class:`~skltr.trees.TreeEnsemble`, scored with QuickScorer.

    Parameters
    ----------
    objective : {"lambdarank", "rank_pairwise", "rank_xendcg", "yetirank", "regression"}, \
default="lambdarank"
        ``"lambdarank"``: pairwise logistic loss weighted by the NDCG change of swapping a
        pair (LambdaMART). ``"rank_pairwise"``: the same without the NDCG weight (RankNet).
        ``"rank_xendcg"``: the cross-entropy NDCG surrogate of Bruch (2021), LightGBM's
        ``rank_xendcg`` (randomised; its stream derives from ``random_state`` and the round).
        ``"yetirank"``: YetiRank (Gulin et al. 2011), CatBoost's ``YetiRank``: each round,
        every query's scores get random noise ``yetirank_permutations`` times; neighbours in
        each noisy order form pairs weighted by ``0.15 * yetirank_decay**k`` (``k`` their
        0-based rank) times their label difference, and the pairwise logistic loss of those
        pairs is averaged over the orders (randomised from ``random_state`` and the round;
        the CPU and the GPU give the same model). See :ref:`gbdt_ranker`.
        ``"regression"``: squared error on the grades (pointwise baseline).
        ``"lambdarank"`` and ``"rank_xendcg"`` need whole, non-negative grades.
    n_estimators : int, default=100
        Maximum number of boosting rounds (one tree per round).
    learning_rate : float, default=0.1
        Shrinkage of every leaf value.
    max_leaves : int or None, default=31
        Maximum leaves per tree (None: unlimited, then ``max_depth`` bounds the tree).
        Ignored by ``growth="symmetric"``.
    max_depth : int or None, default=None
        Maximum depth (splits on a root-to-leaf path); None: no limit, or 6 with
        ``growth="symmetric"`` (CatBoost's default ``depth``).
    growth : {"leafwise", "depthwise", "symmetric"}, default="leafwise"
        ``"leafwise"`` splits the leaf of largest gain first (LightGBM);
        ``"depthwise"`` grows level by level (XGBoost's default);
        ``"symmetric"`` grows CatBoost's oblivious trees (its default
        ``grow_policy="SymmetricTree"``): every node of a level splits on the same
        feature, threshold and missing direction, the one of the highest sum of the
        nodes' gains, so a tree is ``max_depth`` questions asked of every row and has
        ``2**max_depth`` leaves (fewer levels only when no split gains more than
        ``min_split_gain``). A node whose child would hold fewer than
        ``min_samples_leaf`` rows (or less than ``min_child_weight`` hessian) at the
        level's split adds no gain and every leaf below it takes its value (CatBoost
        leaves empty leaves at 0). CPU, GPU and Dask's CPU workers; not with categorical
        features, monotone or interaction constraints. See :ref:`gbdt_growth`.
    min_child_weight : float, default=1e-3
        Minimum hessian sum in a leaf.
    min_samples_leaf : int, default=20
        Minimum number of training rows in a leaf (see ``min_samples_leaf_counts``).
    min_samples_leaf_counts : {"hessian", "rows"}, default="hessian"
        How ``min_samples_leaf`` counts a candidate child's rows. ``"hessian"``: as
        LightGBM's ``min_data_in_leaf``, from the hessians -- each bin of the node's
        histogram counts ``int(h_bin * node_rows / node_hessian + 0.5)`` rows, the right
        child the sum over its bins, the left child the node's rows minus that -- so with
        unequal hessians (lambdarank) a child may hold a few rows fewer (or must hold a few
        more) than ``min_samples_leaf``; rows whose gradient and hessian are both zero
        (lambdarank: every row of a query with equal labels) are then invisible, as in
        LightGBM, whose histograms hold no counts. ``"rows"``: exact row counts
        (scikit-learn's ``min_samples_leaf``). The default matches LightGBM's models,
        measured better on held-out queries (:ref:`gbdt_ranker`), and lets quantised
        histograms pack gradient and hessian into one 8-byte word (faster training).
    reg_lambda : float, default=0.0
        L2 penalty on leaf values.
    reg_alpha : float, default=0.0
        L1 penalty on leaf values.
    min_split_gain : float, default=0.0
        Minimum loss reduction of a split.
    max_bins : int, default=255
        Bins per feature for non-missing values (2..255); missing values get one more bin,
        so binned features stay one byte.
    hist_mode : {"quantised", "float"}, default="quantised"
        How histograms sum gradients. ``"quantised"``: each round, gradients and hessians
        are scaled by a power of two to integers of up to 30 bits and summed in int64, so
        sums are exact in any order (the model does not depend on the thread count) and
        histograms build faster (16-byte bins instead of 24). ``"float"``: float64 sums of
        the float32 gradients. The rounding error of ``"quantised"`` is ~1e-9 of the largest
        gradient, far below LightGBM's ``use_quantized_grad`` (2-8 bits, stochastic
        rounding), its closest equivalent. Measurements: :ref:`gbdt_ranker`. The GPU
        (``device="cuda"``) always sums quantised gradients: ``"float"`` with a CUDA device
        raises NotImplementedError.
    subsample : float, default=1.0
        Fraction of the *queries* each tree is grown on (whole queries: the ranking gradients
        of a query need all its documents). Drawn anew every round, deterministic given
        ``random_state`` and the round.
    colsample_bytree : float, default=1.0
        Fraction of the features each tree may split on, drawn anew per tree.
    random_strength : float, default=0.0
        ``growth="symmetric"`` only: normal noise added to every candidate split's score,
        of standard deviation ``random_strength * sqrt(mean(gradient**2)) * m / (1 + m)``
        with ``m = n_rows * exp(-round * learning_rate)`` (CatBoost's ``random_strength``,
        default 1 there; the noise fades over the rounds). 0: no noise. Deterministic given
        ``random_state``, for any ``n_jobs``.
    gain : {"exp2", "linear"}, default="exp2"
        Gain of a grade in the NDCG the objective optimises and the eval metric reports:
        ``2**label - 1`` (LightGBM, XGBoost) or ``label``.
    eval_at : int or list of int, default=10
        NDCG cut-offs recorded per round in ``evals_result_``; the first one is monitored by
        early stopping and is the cut-off of :meth:`score`. As LightGBM's ``eval_at``, it
        does not change the gradients (``lambdarank_truncation_level`` does).
    lambdarank_truncation_level : int or None, default=None
        Only pairs with at least one document in the top this-many positions of the current
        ranking get gradients, and lambdarank's ideal DCG is cut there (LightGBM's
        ``lambdarank_truncation_level``). None: LightGBM's default, 30, for
        ``"lambdarank"``; all pairs for ``"rank_pairwise"``. Ignored by the other
        objectives.
    yetirank_permutations : int, default=10
        ``objective="yetirank"``: noisy orders of every query per round whose pairs are
        averaged (CatBoost's YetiRank ``permutations``, default 10). More permutations
        smooth the gradients and cost proportionally more time. Ignored by the other
        objectives.
    yetirank_decay : float, default=0.85
        ``objective="yetirank"``: in [0, 1], the weight of a pair of neighbours relative to
        the pair one position above it in the noisy order (CatBoost's YetiRank ``decay``,
        default 0.85): lower values concentrate the gradients on the top of the ranking.
        Ignored by the other objectives.
    position_bias : {"unbiased", "unbiased_paper", "additive"} or None, default=None
        Learn from clicks biased by the position each row was shown at
        (``fit(..., position=...)``; ``objective="lambdarank"`` only, ``y`` the clicks).
        ``"unbiased"``: Unbiased LambdaMART (Hu et al., WWW 2019) as XGBoost's
        ``lambdarank_unbiased=True`` computes it: pairs are reweighted by the inverse
        propensities of their positions, estimated jointly with the trees
        (``position_bias_``: the examination propensity of each position relative to
        position 0).
        ``"unbiased_paper"``: the same with the paper's pair cost in the propensity update
        (the pair's own logistic loss; XGBoost takes the reversed pair's, measured the
        better estimate: :ref:`learning_from_clicks`).
        ``"additive"``: LightGBM 4.x's ``Dataset(position=...)``: a learned score per
        position is added while the gradients are computed, so the trees learn what is left
        (``position_bias_``: those scores). None: ``y`` are graded labels. See
        :ref:`learning_from_clicks`.
    lambdarank_num_positions : int or None, default=None
        Positions whose bias is estimated (0 .. this - 1); rows shown lower get none
        (the unbiased modes: their pairs are neither reweighted nor counted, as XGBoost).
        None: ``min(lambdarank_truncation_level, largest position + 1)`` for the
        unbiased modes (XGBoost's top-k rule), every position shown for ``"additive"``
        (LightGBM).
    lambdarank_bias_norm : float, default=1.0
        The unbiased modes: the regularisation exponent ``p`` of the propensities
        (XGBoost's ``lambdarank_bias_norm``): each is a cost ratio to the power
        ``1 / (1 + p)``; larger values pull them towards 1.
    lambdarank_position_bias_regularization : float, default=0.0
        ``"additive"``: L2 penalty on the position scores (LightGBM's
        ``lambdarank_position_bias_regularization``).
    early_stopping : bool or "auto", default=False
        Stop when the monitored NDCG has not improved for ``n_iter_no_change`` rounds, and
        keep the trees up to the best round. The monitored set is the first ``eval_set``
        given to :meth:`fit`, or else a held-out ``validation_fraction`` of the training
        queries (not trained on). ``"auto"``: on when the training set has more than 10,000
        rows (as scikit-learn's HistGradientBoosting) and at least 2 queries; it then warns
        when it holds queries out. The default, ``False``, trains ``n_estimators`` rounds on
        every query, as LightGBM's defaults do: holding out 10 % of the queries and stopping
        on their noisy NDCG cost up to 0.06 test NDCG@10 (:ref:`gbdt_defaults`).
    validation_fraction : float, default=0.1
        Fraction of the queries held out for early stopping when no ``eval_set`` is given
        (rounded up, at least one query); the split is deterministic given ``random_state``.
        Unused without early stopping.
    n_iter_no_change : int, default=10
        Rounds without strict improvement before stopping (LightGBM's
        ``early_stopping_rounds``).
    device : {"cpu", "cuda", "cuda:N", "auto"}, default="cpu"
        ``"cuda"`` / ``"cuda:N"`` train on that GPU (CuPy needed): histograms of quantised
        gradients (exact integer sums, so GPU training is deterministic), the model is the
        same host ``TreeEnsemble``. Leaf-wise and depth-wise growth run there (leaf-wise
        growth expands several leaves a step and grows the same trees); symmetric growth
        too (the level's split found on the host from a copy of its histograms).
        ``hist_mode="float"`` raises NotImplementedError
        on the GPU. ``"auto"`` uses the GPU when one is visible and falls back to the CPU
        with a warning otherwise.
    n_jobs : int or None, default=None
        Threads for training and prediction (None: all of numba's threads, -1: all cores).
    random_state : int, RandomState instance or None, default=None
        Seed of the binning sample, the query and feature subsamples, the validation split
        and the draws of ``rank_xendcg`` and ``yetirank``. An int gives the identical model
        on every fit, for any
        ``n_jobs``.
    verbose : int, default=0
        > 0 shows a progress bar with the monitored validation NDCG.
    warm_start : bool, default=False
        When True, ``fit`` on a fitted ranker continues its model: it adds
        ``n_estimators - n_estimators_`` rounds to the trees it has (scikit-learn's
        ``warm_start``), starting from their scores; with the same ``random_state`` and
        data and deterministic settings, the model equals one fit of ``n_estimators``
        rounds bit for bit.
    importance_type : {"gain", "split"}, default="gain"
        What ``feature_importances_`` sums: split gains or split counts (LightGBM's
        scikit-learn ``importance_type``).
    monotone_constraints : array-like of int or dict, default=None
        Per feature 1 (the score may only rise with it), -1 (only fall) or 0 (free), or a
        dict ``{column name: direction}`` of the constrained ones (X a DataFrame). The
        model is monotone along each constrained feature whatever the other features
        (LightGBM's ``monotone_constraints``, XGBoost's).
    monotone_constraints_method : {"basic", "intermediate"}, default="basic"
        LightGBM's methods (:mod:`skltr._gbdt.constraints`): ``"basic"`` (XGBoost's too)
        bounds leaf outputs by the mid-points of the constrained splits above them;
        ``"intermediate"`` by the neighbouring leaves' outputs, updated after every split
        (less constraining, often more accurate; leaf-wise growth, one leaf at a time).
    interaction_constraints : list of lists, default=None
        Feature sets (indices or column names), XGBoost's form: a branch of a tree only
        splits on features that share a set; a feature in no set is used alone.
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        Features split by category rather than by value (scikit-learn's
        ``HistGradientBoosting*`` forms): ``"from_dtype"`` the pandas ``category`` columns of
        a DataFrame ``X``, or feature indices, a boolean mask, or column names; None: none.
        Values of a categorical feature must be whole numbers >= 0 (or NaN); a pandas
        ``category`` column's categories are stored at fit and a DataFrame's are matched to
        them at predict (a category unknown at fit counts as missing). A split sends a set of
        categories left: one against the rest for few categories, LightGBM's many-vs-many
        partition for more (the categories of at most ``max_bins`` bins, the most frequent;
        the others, NaN and unseen categories go right). See :ref:`categorical_features`.
    max_cat_to_onehot : int, default=4
        A feature with fewer categories than this splits one category against the rest
        (LightGBM's ``max_cat_to_onehot``, which counts its "other" bin).
    max_cat_threshold : int, default=32
        Most categories on the left side of a many-vs-many split.
    cat_smooth : float, default=10.0
        Smoothing of the gradient-ratio order of the categories, and the least rows of a
        category in a node for it to take part in a many-vs-many split.
    cat_l2 : float, default=10.0
        L2 regularisation added to ``reg_lambda`` for many-vs-many splits (their gains and
        their children's values).
    min_data_per_group : int, default=100
        Least rows between two candidates of a many-vs-many split, and on its right side.

    Attributes
    ----------
    ensemble_ : TreeEnsemble
        The fitted trees (``to_tree_ensemble()`` returns it).
    n_estimators_ : int
        Number of trees kept.
    n_iter_ : int
        Number of rounds run (more than ``n_estimators_`` when early stopping cut back).
    best_iteration_ : int or None
        With early stopping, the 1-based number of the best round: the model keeps exactly
        that many trees (LightGBM's scikit-learn ``best_iteration_``). None without early
        stopping.
    evals_result_ : dict
        ``{set name: {"ndcg@k": [value per round]}}`` for every eval set (``"valid_0"``,
        ``"valid_1"``, ... as given to ``fit``, or ``"validation"`` for the held-out
        queries), LightGBM's ``evals_result_`` layout. Empty when nothing was evaluated.
    feature_importances_ : ndarray of shape (``n_features_in_``,)
        Total split gain (``importance_type="split"``: number of splits) of each feature
        over the kept trees, normalised to sum to 1 (all zeros when no tree splits), as
        scikit-learn's tree ensembles. A continued model adds its starting model's; a
        starting ``TreeEnsemble`` stores no gains (its splits count, its gains are zero).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Present when ``X`` was a DataFrame with string column names.
    is_categorical_ : ndarray of bool of shape (``n_features_in_``,) or None
        Which features were categorical (None: none), as scikit-learn's.
    device_ : str
        The device that was used.
    timings_ : dict
        ``{"binning_s", "boosting_s"}`` of the last fit, in seconds.
    position_bias_ : ndarray of shape (n_positions,) or None
        With ``position_bias="unbiased"`` (or ``"unbiased_paper"``): the estimated
        propensities of clicked documents per displayed position, relative to position 0
        (Unbiased LambdaMART's ``t+``, XGBoost's ``ti+``); with ``"additive"``: the
        learned score of each position.
        None without ``position_bias``. The estimate after the last round run.
    position_bias_minus_ : ndarray of shape (n_positions,) or None
        With the unbiased modes: the propensities of unclicked documents
        (``t-``, XGBoost's ``tj-``); None otherwise.

    See Also
    --------
    skltr.QuickScorerPredictor : Fast scoring of LightGBM / XGBoost / skltr tree models.

    Notes
    -----
    Equivalent parameters in LightGBM and XGBoost (``-`` where there is none):

    ===========================  ===============================  ===========================
    skltr                        LightGBM                         XGBoost
    ===========================  ===============================  ===========================
    objective="lambdarank"       objective="lambdarank"           objective="rank:ndcg"
    objective="rank_pairwise"    -                                objective="rank:pairwise"
    objective="rank_xendcg"      objective="rank_xendcg"          -
    objective="yetirank"         -                                -
    n_estimators                 num_iterations / n_estimators    num_boost_round
    learning_rate                learning_rate                    eta / learning_rate
    max_leaves                   num_leaves                       max_leaves
    max_depth=None               max_depth=-1                     max_depth=0
    growth="leafwise"            (always leaf-wise)               grow_policy="lossguide"
    growth="depthwise"           -                                grow_policy="depthwise"
    growth="symmetric"           -                                -
    min_child_weight             min_sum_hessian_in_leaf          min_child_weight
    min_samples_leaf             min_data_in_leaf                 -
    min_samples_leaf_counts      (always "hessian")               -
    reg_lambda                   lambda_l2 / reg_lambda           lambda / reg_lambda
    reg_alpha                    lambda_l1 / reg_alpha            alpha / reg_alpha
    min_split_gain               min_gain_to_split                gamma
    max_bins                     max_bin                          max_bin
    hist_mode="quantised"        use_quantized_grad=True          -
    subsample (by query)         bagging_fraction (by row)        subsample (by row)
    colsample_bytree             feature_fraction                 colsample_bytree
    gain="exp2"                  label_gain=[2**i - 1, ...]       ndcg_exp_gain=True
    eval_at                      eval_at                          eval_metric="ndcg@k"
    lambdarank_truncation_level  lambdarank_truncation_level      lambdarank_num_pair_per_sample
    position_bias="unbiased"     -                                lambdarank_unbiased=True
    position_bias="additive"     Dataset(position=...)            -
    lambdarank_bias_norm         -                                lambdarank_bias_norm
    n_iter_no_change             early_stopping_rounds            early_stopping_rounds
    random_state                 seed                             seed
    n_jobs                       num_threads                      nthread
    ===========================  ===============================  ===========================

    ``lambdarank_position_bias_regularization`` is LightGBM's parameter of the same name.

    LightGBM's ``label_gain`` table covers grades 0..30 by default; skltr computes
    ``2**label - 1`` for any grade, so grades above 30 need ``label_gain`` set explicitly in
    LightGBM to compare.

    Examples
    --------
    >>> from skltr import GPUHistGBDTRanker
    >>> from skltr.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=60, docs_per_query=20, n_features=8,
    ...                          n_informative=4, random_state=0)
    >>> ranker = GPUHistGBDTRanker(n_estimators=20, max_leaves=7, min_samples_leaf=5,
    ...                            eval_at=[5, 10], random_state=0)
    >>> ranker = ranker.fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    >>> ranker.n_estimators_
    20
    >>> sorted(ranker.evals_result_["valid_0"])
    ['ndcg@10', 'ndcg@5']
    >>> bool(ranker.score(X, y, qid=qid) > 0.5)
    True
    """

    _parameter_constraints = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_leaves": [Interval(Integral, 2, None, closed="left"), None],
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "growth": [StrOptions({"leafwise", "depthwise", "symmetric"})],
        "min_child_weight": [Interval(Real, 0, None, closed="left")],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "min_samples_leaf_counts": [StrOptions({"hessian", "rows"})],
        "reg_lambda": [Interval(Real, 0, None, closed="left")],
        "reg_alpha": [Interval(Real, 0, None, closed="left")],
        "min_split_gain": [Interval(Real, 0, None, closed="left")],
        "max_bins": [Interval(Integral, 2, 255, closed="both")],
        "hist_mode": [StrOptions({"quantised", "float"})],
        "subsample": [Interval(Real, 0, 1, closed="right")],
        "colsample_bytree": [Interval(Real, 0, 1, closed="right")],
        "random_strength": [Interval(Real, 0, None, closed="left")],
        "gain": [StrOptions({"exp2", "linear"})],
        "eval_at": [Interval(Integral, 1, None, closed="left"), list, tuple],
        "lambdarank_truncation_level": [Interval(Integral, 1, None, closed="left"), None],
        "yetirank_permutations": [Interval(Integral, 1, None, closed="left")],
        "yetirank_decay": [Interval(Real, 0, 1, closed="both")],
        "position_bias": [StrOptions(set(POSITION_BIAS_MODES)), None],
        "lambdarank_num_positions": [Interval(Integral, 1, None, closed="left"), None],
        "lambdarank_bias_norm": [Interval(Real, 0, None, closed="left")],
        "lambdarank_position_bias_regularization": [Interval(Real, 0, None, closed="left")],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "device": [str],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "importance_type": [StrOptions({"gain", "split"})],
        "monotone_constraints": ["array-like", dict, None],
        "monotone_constraints_method": [StrOptions({"basic", "intermediate", "advanced"})],
        "interaction_constraints": [list, tuple, None],
        "categorical_features": [StrOptions({"from_dtype"}), "array-like", None],
        "max_cat_to_onehot": [Interval(Integral, 1, None, closed="left")],
        "max_cat_threshold": [Interval(Integral, 1, None, closed="left")],
        "cat_smooth": [Interval(Real, 0, None, closed="left")],
        "cat_l2": [Interval(Real, 0, None, closed="left")],
        "min_data_per_group": [Interval(Integral, 1, None, closed="left")],
    }
    # position is metadata per row, as qid: routed (and split per fold) by Pipelines and
    # searches under scikit-learn's metadata routing
    __metadata_request__fit = {"qid": True, "position": True}

    # ±inf is refused (the base class's default): the binned trees put +inf in the last
    # bin, but a "non-missing vs missing" split exports the threshold DBL_MAX, which +inf
    # would not pass, so training and prediction could disagree on it.
    _allow_inf = False
    # float32 X is binned as it is (a float32 value and a float64 cut compare exactly), so fit
    # makes no float64 copy of X: at 500k x 136 that copy was the largest allocation (544 MB).
    _fit_X_dtypes = (np.float64, np.float32)
    # scipy CSR / CSC X (what load_letor(dense=False) returns) is binned without a dense copy,
    # bin for bin as X.toarray() (absent entries are 0.0), and scored a block of rows at a
    # time; the model is the one the dense matrix gives.
    _accept_sparse = True

    def __init__(self, *, objective="lambdarank", n_estimators=100, learning_rate=0.1,
                 max_leaves=31, max_depth=None, growth="leafwise", min_child_weight=1e-3,
                 min_samples_leaf=20, min_samples_leaf_counts="hessian", reg_lambda=0.0,
                 reg_alpha=0.0, min_split_gain=0.0, max_bins=255, hist_mode="quantised",
                 subsample=1.0, colsample_bytree=1.0, random_strength=0.0, gain="exp2",
                 eval_at=10,
                 lambdarank_truncation_level=None, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=10, device="cpu", n_jobs=None,
                 random_state=None, verbose=0, warm_start=False, importance_type="gain",
                 monotone_constraints=None, monotone_constraints_method="basic",
                 interaction_constraints=None, categorical_features="from_dtype",
                 max_cat_to_onehot=4, max_cat_threshold=32, cat_smooth=10.0, cat_l2=10.0,
                 min_data_per_group=100, position_bias=None, lambdarank_num_positions=None,
                 lambdarank_bias_norm=1.0, lambdarank_position_bias_regularization=0.0,
                 yetirank_permutations=10, yetirank_decay=0.85):
        self.objective = objective
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_leaves = max_leaves
        self.max_depth = max_depth
        self.growth = growth
        self.min_child_weight = min_child_weight
        self.min_samples_leaf = min_samples_leaf
        self.min_samples_leaf_counts = min_samples_leaf_counts
        self.reg_lambda = reg_lambda
        self.reg_alpha = reg_alpha
        self.min_split_gain = min_split_gain
        self.max_bins = max_bins
        self.hist_mode = hist_mode
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.random_strength = random_strength
        self.gain = gain
        self.eval_at = eval_at
        self.lambdarank_truncation_level = lambdarank_truncation_level
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.importance_type = importance_type
        self.monotone_constraints = monotone_constraints
        self.monotone_constraints_method = monotone_constraints_method
        self.interaction_constraints = interaction_constraints
        self.categorical_features = categorical_features
        self.max_cat_to_onehot = max_cat_to_onehot
        self.max_cat_threshold = max_cat_threshold
        self.cat_smooth = cat_smooth
        self.cat_l2 = cat_l2
        self.min_data_per_group = min_data_per_group
        self.position_bias = position_bias
        self.lambdarank_num_positions = lambdarank_num_positions
        self.lambdarank_bias_norm = lambdarank_bias_norm
        self.lambdarank_position_bias_regularization = lambdarank_position_bias_regularization
        self.yetirank_permutations = yetirank_permutations
        self.yetirank_decay = yetirank_decay

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y, *, qid=None, sample_weight=None, eval_set=None, init_model=None,
            position=None):
        """Fit the ranker.

        Parameters
        ----------
        X : array-like or scipy CSR / CSC matrix of shape (n_samples, n_features)
            Features; NaN marks a missing value. ±inf is refused: use NaN or a large finite
            value. In a sparse matrix an absent entry is 0.0 (a stored NaN is missing): the
            model is identical to the one ``X.toarray()`` gives, and no dense copy of ``X``
            is made.
        y : array-like of shape (n_samples,)
            Relevance grade of each row (higher is more relevant); whole numbers >= 0 for
            ``objective="lambdarank"`` and ``"rank_xendcg"``.
        qid : array-like of shape (n_samples,)
            Query id of each row, in any order (see :meth:`RankerMixin.fit
            <skltr.ranking.RankerMixin.fit>`). A query with one document has no pairs and
            contributes no gradient to the ranking objectives.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights, passed to the objective.
        eval_set : list of (X, y, qid) tuples, optional
            Sets scored after every round, recorded in ``evals_result_`` as ``"valid_0"``,
            ``"valid_1"``, ...; with early stopping on, the first one is monitored. Their
            ``X`` may be CSR / CSC too.
        init_model : GPUHistGBDTRanker, TreeEnsemble or str, optional
            Continue this model (a fitted ranker, its ``to_tree_ensemble()``, the path of
            its saved JSON model, or a LightGBM or XGBoost model: a ``Booster``, a fitted
            ``LGBMRanker`` / ``XGBRanker`` or their :func:`skltr.convert.to_tree_ensemble`)
            for ``n_estimators`` more rounds, as LightGBM's ``init_model``: the rounds start
            from its scores of ``X`` (and of the eval sets), the fitted model holds its
            trees then the new ones, and the rounds are numbered on from its own
            (``best_iteration_`` and ``n_iter_`` count them all; ``evals_result_`` holds the
            new rounds). Same features and objective needed. An XGBoost model's trees are
            rewritten to skltr's rule with the same routing of every input (its
            ``float32(x) < t`` becomes ``x <= d``); the rounds start from XGBoost's own
            scores, and the fitted model sums its trees in float64 (its scores of the
            XGBoost rounds then differ from XGBoost's by float32 rounding, ~1e-7). It needs
            a dense ``X`` and ``missing=NaN``; categorical XGBoost models are refused.
            Not with ``position_bias`` (its estimate would restart).
        position : array-like of shape (n_samples,), optional
            The 0-based position at which each row was displayed when its click (``y``) was
            logged; needs ``position_bias``. Routed like ``qid`` through Pipelines and
            searches (requested by default under metadata routing). Not needed at predict.

        Returns
        -------
        self
        """
        X, y, qid, sample_weight, position = (_to_host(a) for a in (X, y, qid, sample_weight,
                                                                   position))
        # pandas category columns -> codes, their categories kept (the eval sets' coded
        # against them); "from_dtype" resolved to indices
        X, spec, categories = encode_fit_frame(X, self.categorical_features,
                                               self._start_categories(init_model))
        eval_set = encode_eval_sets(eval_set, categories, convert=_to_host)
        return super().fit(X, y, qid=qid, sample_weight=sample_weight, eval_set=eval_set,
                           init_model=init_model, categorical=(spec, categories),
                           position=position)

    def _fit_checks_inf(self):
        # On the GPU the binning kernels flag +-inf while they read X (boost(reject_inf=True)),
        # which spares validation a host pass over X (~80 ms at 1M x 136 float32).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "auto" falling back warns once, in _fit
            try:
                return resolve_device(self.device, estimator=type(self).__name__).is_gpu
            except (ImportError, RuntimeError, TypeError, ValueError):
                return False  # _fit raises the device error with its message

    def _continuation(self, n_features, init_model, *, above):
        """The model a fit on ``n_features`` features (names: ``feature_names_in_``, set)
        continues and its rounds to run: ``(None, n_estimators)`` for a fresh fit. With
        ``warm_start`` and nothing to add it warns (``above``: frames between the fitting
        method and the user's call) and the rounds are 0: the caller returns."""
        from .._gbdt.continuation import continuation_from  # noqa: PLC0415

        check = dict(n_features=n_features, objective=self.objective,
                     feature_names=getattr(self, "feature_names_in_", None))
        fitted = hasattr(self, "ensemble_")
        if init_model is not None:
            if self.warm_start and fitted:
                raise ValueError("init_model is given and warm_start=True would continue this "
                                 "fitted ranker's own model: pass one or the other.")
            return continuation_from(init_model, **check), self.n_estimators
        if not (self.warm_start and fitted):
            return None, self.n_estimators
        if self.n_estimators < self.n_estimators_:
            raise ValueError(f"warm_start=True continues the {self.n_estimators_} trees this "
                             f"ranker has; n_estimators={self.n_estimators} is fewer. Raise "
                             f"n_estimators, or set warm_start=False to fit anew.")
        n_rounds = self.n_estimators - self.n_estimators_
        if n_rounds == 0:
            warnings.warn(f"warm_start=True and n_estimators={self.n_estimators} equals the "
                          f"trees this ranker has: no round was added. Raise n_estimators to "
                          f"continue.", UserWarning, stacklevel=2 + above)
        return continuation_from(self, what="warm_start", **check), n_rounds

    def _start_categories(self, init_model):
        """The pandas categories of the model a fit continues (its trees read their codes):
        this ranker's under ``warm_start``, a fitted ranker's given as ``init_model``; None
        otherwise (a TreeEnsemble, a file or a LightGBM model: the frame's own order)."""
        if init_model is None:
            return getattr(self, "_pandas_categories", None) if self.warm_start else None
        return getattr(init_model, "_pandas_categories", None)

    def _predict_X(self, X):
        X = super()._predict_X(encode_frame(X, getattr(self, "_pandas_categories", None)))
        self._check_categories(X)
        return X

    def _explain_inputs(self, X):
        inputs = super()._explain_inputs(
            encode_frame(X, getattr(self, "_pandas_categories", None)))
        self._check_categories(inputs[1])
        return inputs

    def _extra_fitted_state(self):
        mask = getattr(self, "is_categorical_", None)
        return {"is_categorical_": None if mask is None else [bool(v) for v in mask],
                "pandas_categories": jsonable_categories(
                    getattr(self, "_pandas_categories", {}),
                    getattr(self, "feature_names_in_", None)),
                "position_bias_": _jsonable(getattr(self, "position_bias_", None)),
                "position_bias_minus_": _jsonable(getattr(self, "position_bias_minus_", None))}

    def _read_extra_fitted_state(self, fitted, path):
        from ..utils._model_io import ModelFileError  # noqa: PLC0415

        n = self.n_features_in_
        mask = fitted.get("is_categorical_")
        try:
            if mask is not None and (not isinstance(mask, list) or len(mask) != n
                                     or not all(isinstance(v, bool) for v in mask)):
                raise ValueError(f"is_categorical_ must be a list of {n} booleans")
            self.is_categorical_ = None if mask is None else np.asarray(mask, dtype=bool)
            self._pandas_categories = read_categories(fitted.get("pandas_categories"), n)
            # absent from files of an skltr without position bias: none learned
            for key in ("position_bias_", "position_bias_minus_"):
                setattr(self, key, _read_floats(fitted.get(key), key))
        except ValueError as exc:
            raise ModelFileError(path, f"invalid fitted state: {exc}") from None

    def _check_categories(self, X):
        """A validated X's categorical columns hold category codes (or NaN)."""
        if getattr(self, "is_categorical_", None) is not None:
            check_categorical_columns(X, np.flatnonzero(self.is_categorical_))

    def _fit(self, data, eval_set=None, init_model=None, categorical=(None, None),
             position=None):
        from .._engine.rounds import EvalData, hold_out  # noqa: PLC0415
        from .._gbdt import fit as recipe  # noqa: PLC0415
        from .._numba_cache import announce_first_compile  # noqa: PLC0415

        self._check_gain()
        position = self._check_position(position, data.X.shape[0], init_model, above=4)
        announce_first_compile()
        device = resolve_device(self.device, estimator=type(self).__name__)
        hp = self.get_params(deep=False)
        recipe.check_device(hp, device.is_gpu)
        recipe.check_growth(hp, is_gpu=device.is_gpu)
        eval_at = self._eval_at_list()  # checked before any work
        continuation, n_rounds = self._continuation(data.X.shape[1], init_model, above=3)
        if n_rounds == 0:
            return self
        hp["n_estimators"] = n_rounds  # a continued fit runs the rounds still to come
        hp["categorical_features"], pandas_categories = categorical
        if OBJECTIVES[self.objective].graded:
            # The shared label check with the graded-relevance rules, on the caller's row
            # order so that its message names the caller's row.
            y_caller = np.empty_like(data.y)
            y_caller[data.groups.order] = data.y
            check_ranking_y(y_caller, y_caller.shape[0], integer_labels=True)
        evals = [EvalData(f"valid_{i}", *parts)
                 for i, parts in enumerate(self._check_eval_set(
                     eval_set, integer_labels=OBJECTIVES[self.objective].graded))]
        plan = recipe.plan_fit(
            hp, n_rows=data.X.shape[0], n_queries=data.groups.n_queries,
            has_eval_sets=bool(evals), eval_at=eval_at,
            feature_names=getattr(self, "feature_names_in_", None),
            reject_inf=not self._allow_inf and device.is_gpu, n_features=data.X.shape[1])
        X, y, w, group_ptr = data.X, data.y, data.sample_weight, data.group_ptr
        shown = None if position is None else position[data.groups.order]  # grouped order
        if plan.hold_out:
            (X, y, w, group_ptr), evals, val = hold_out(X, y, w, group_ptr,
                                                        self.validation_fraction, plan.seed)
            recipe.warn_auto_hold_out(hp, data.group_ptr, val, above=3)
            shown = None if shown is None else shown[~val]
        objective = plan.objective if shown is None else plan.objective.at_positions(shown)
        result = recipe.boost_on(device, X, y, group_ptr, w, objective, plan.params, evals,
                                 continuation=continuation)
        recipe.warn_if_no_split(result, above=3)
        cat = plan.params.tree.categorical
        self.is_categorical_ = None if cat is None else cat.mask(data.X.shape[1])
        self._pandas_categories = pandas_categories or {}
        self.position_bias_, self.position_bias_minus_ = _learned_position_bias(
            getattr(objective, "position_bias", None), getattr(objective, "estimate", None))
        return self._set_fitted(result, device)

    def _check_position(self, position, n_rows, init_model, *, above):
        """``fit(position=...)`` checked (:func:`~skltr.ranking._position.check_position`):
        int64 in the caller's row order, or None; refused with a continued model.
        ``above``: frames between this method and the user's call (for the warning)."""
        position = check_position(position, n_rows, objective=self.objective,
                                  position_bias=self.position_bias, above=above)
        if position is not None and (init_model is not None or (
                self.warm_start and hasattr(self, "ensemble_"))):
            raise ValueError("position_bias does not continue a model (init_model or "
                             "warm_start): the position estimate would restart from "
                             "scratch. Fit anew, or continue with position_bias=None.")
        return position

    def _check_gain(self):
        if self.gain not in OBJECTIVES[self.objective].gains:
            raise ValueError(f"objective={self.objective!r} only has the gain(s) "
                             f"{OBJECTIVES[self.objective].gains}; got gain={self.gain!r}. Use "
                             f"gain='exp2', or objective='lambdarank' for gain='linear'.")


def _jsonable(values):
    return None if values is None else [float(v) for v in values]


def _read_floats(values, key):
    """A saved list of finite floats as an array, or None."""
    if values is None:
        return None
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"{key} must be null or a list of numbers")
    arr = np.asarray(values, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{key} must hold finite numbers")
    return arr


def _learned_position_bias(spec, estimate):
    """``(position_bias_, position_bias_minus_)`` of a fit's position-bias model ``spec``
    (:class:`~skltr._gbdt.position_bias.PositionBias`) and its final ``estimate`` (None:
    graded labels)."""
    if estimate is None:
        return None, None
    if spec.unbiased:
        return estimate.tplus.copy(), estimate.tminus.copy()
    return estimate.bias.copy(), None


def _to_host(a):
    """A CuPy (or any ``.get()``-able CUDA) array as NumPy; anything else unchanged.

    CuPy inputs are accepted everywhere; validation and the binning sample run on the host,
    so they are copied there once (the GPU path sends the binned rows back).
    """
    if hasattr(a, "__cuda_array_interface__") and hasattr(a, "get"):
        return a.get()
    return a
