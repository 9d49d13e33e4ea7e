"""``OnDemandRuleRanker``: learning to rank with association rules generated at query time.

A thin scikit-learn front-end over :mod:`skltr._rules` (the algorithm, its choices and the
kernels are described there and in ``docs/user_guide/rule_ranker.rst``). The fitted state is
the discretisation and the training set as item codes, plain host NumPy; the bitmap inverted
lists are rebuilt from them (``RuleModel``), so pickles and JSON files hold no derived data.
"""

from __future__ import annotations

import os
import sys
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..utils._model_io import (ModelFileError, load_document, make_document,
                                model_file_errors, read_document, save_document)
from ..utils.validation import check_ranking_X
from ._base import BaseRanker, jsonable_params, ranker_from_params
from ._export import NoExportMixin
from ._fitted_state import fitted_dict, read_int, read_names, read_str

__all__ = ["OnDemandRuleRanker"]

#: ``kind`` of the model document (``docs/model_format.rst``).
DOC_KIND = "OnDemandRuleRanker"
#: The arrays of the model document: the fitted attributes they come from.
_DOC_ARRAYS = {"cut_ptr": "cut_ptr_", "cut_values": "cut_values_",
               "has_missing": "has_missing_", "used_features": "used_features_",
               "train_codes": "train_codes_", "level_doc_ptr": "level_doc_ptr_",
               "levels": "levels_"}


def kernels_for(device):
    """The rule kernels class of a resolved ``Device`` -- the one place devices branch; the
    GPU's (``skltr._rules.kernels_cuda``, CuPy) are imported only when a GPU is asked for."""
    if device.is_gpu:
        from .._rules.kernels_cuda import GPURuleKernels  # noqa: PLC0415 - CuPy on request only

        return GPURuleKernels
    from .._rules.kernels_cpu import CPURuleKernels  # noqa: PLC0415

    return CPURuleKernels


class OnDemandRuleRanker(NoExportMixin, BaseRanker):
    """Learning to rank with association rules generated on demand (LRAR; PROFL's kernels).

    ``fit`` discretises every feature into intervals (an *item* is a feature's interval) and
    stores the training documents as bitmap inverted lists: one bitmap over the training
    documents per item, documents grouped by relevance level. ``predict`` then, for each
    document, enumerates the itemsets ``X`` of its items (one item per feature) up to
    ``max_rule_size`` and keeps the rules ``X -> r`` with ``count(X, r) >= min_support`` and
    confidence ``count(X, r) / count(X) >= min_confidence``; a level's score is the mean
    confidence of the rules predicting it (LRAR's equation 1) and the document's score the
    expected relevance under the normalised level scores (equation 2). A document without
    rules gets the training prior, the mean training label. Veloso et al., "Learning to rank
    at query-time using association rules", SIGIR 2008; Freitas et al., "Parallel rule-based
    selective sampling and on-demand learning to rank" (PROFL), 2018.

    The work is done at ``predict`` time and grows as ``C(features, max_rule_size)`` per
    document: keep the training set small (LRAR and PROFL reduce it by sampling) and
    ``max_rule_size`` at 2-3 with many features. ``max_itemsets_per_document`` bounds it:
    ``fit`` warns when documents like the training documents would exceed it, ``predict``
    refuses them; a running ``predict`` stops within about a second of Ctrl-C.

    Parameters
    ----------
    max_rule_size : int, default=3
        Most items in a rule's antecedent.
    min_support : int, default=1
        Least training documents a rule ``X -> r`` must hold (of level ``r``, containing
        ``X``). Itemsets below it are pruned with all their supersets, which is exact:
        supports only shrink as items are added.
    min_confidence : float in [0, 1], default=0.001
        Least confidence of a rule.
    discretization : {"mdl", "quantile"}, default="mdl"
        ``"mdl"``: Fayyad & Irani's supervised entropy / minimum-description-length cuts,
        with the relevance levels as classes (as LRAR); ``"quantile"``: count-balanced
        bins of the feature values (the GBDT's binning), which ignore the labels.
    n_bins : int in [2, 254] or None, default=None
        Most intervals of a feature. ``"quantile"``: the number of bins (None: 10).
        ``"mdl"``: a cap on the accepted cuts, coarsest first (None: no cap, as LRAR).
    max_itemsets_per_document : int or None, default=100_000_000
        Most candidate itemsets a document may make: ``sum_{k <= max_rule_size} C(m, k)``
        for a document with ``m`` items (one per used feature; items held by fewer than
        ``min_support`` training documents do not count), what the kernel counts when
        ``min_support`` prunes nothing. ``predict`` and ``rule_stats`` refuse a call
        (``ValueError``, before any counting) in which a document has more; ``fit`` warns
        (``UserWarning``) when the training documents have more, since documents like them
        would be refused. None: no limit. The default is about 3-10 s of one core a
        document (at 30-100 ns an itemset) and admits PROFL's WEB10K shape with rules of 4
        items (136 items: 13.6 million itemsets a document) and the shapes of
        ``benchmarks/ondemand_rules.py``; 10,000 features with rules of 3 items make 1.7e11
        (hours a document). Lower ``max_rule_size``, select features, or use
        ``discretization="mdl"`` (which keeps only the features it finds informative) rather
        than raising it.
    cache_size : int or None, default=None
        Entries of each thread's itemset cache (open addressing, linear probing, keys
        verified), shared by the documents of a ``predict`` call; 0 turns it off. None
        takes the device's default: on the CPU, 65,536 entries from 1,024 bitmap words
        (65,536 training documents) up and off below, where a look-up measured slower
        than the AND + popcount it saves (see the user guide). The scores never depend
        on it. A slot takes ``9 + 8 * max_rule_size + 4 * n_levels`` bytes, a table
        ``cache_size`` rounded up to a power of two slots a thread; ``fit`` (and
        ``predict``) refuse a cache of more than half the machine's physical memory, and a
        call allocates no more slots than twice the itemsets it can put in them.
    device : {"cpu", "cuda", "cuda:N", "cuda:all", "auto"}, default="cpu"
        Where ``predict`` counts the rules; ``"cuda:all"`` splits the documents over every
        visible GPU (one contiguous share each, counted at the same time). Both devices give
        the same rule statistics, hence the same scores, bit for bit.
    n_jobs : int or None, default=None
        Threads (``None``: all of numba's threads).
    random_state : int, RandomState or None, default=None
        Seeds the row sample of ``discretization="quantile"``, which sorts at most 200,000
        training rows per feature; every other step is deterministic.
    verbose : int, default=0
        > 0 prints, at ``fit``, the features used and the items they make.

    Attributes
    ----------
    levels_ : ndarray of float64
        The relevance levels (distinct training labels), ascending.
    level_doc_ptr_ : ndarray of int64
        Training documents of level ``levels_[l]``: ``train_codes_[level_doc_ptr_[l]:
        level_doc_ptr_[l + 1]]``.
    cut_ptr_, cut_values_ : ndarray
        Feature ``f``'s interval cuts are ``cut_values_[cut_ptr_[f]:cut_ptr_[f + 1]]``; a
        value ``x <= cut`` falls below the cut.
    has_missing_ : ndarray of bool
        Features with NaN in training: NaN is an item of its own there.
    used_features_ : ndarray of int64
        Features that make items (the others had one item covering every training
        document, which adds nothing to any rule).
    train_codes_ : ndarray of uint8, shape (n_train, n_used)
        The training documents' item codes, in level order.
    n_items_ : int
        Items of the used features.
    prior_ : float
        The score of a document without rules: the mean training label.
    device_ : str
        The resolved device.

    Examples
    --------
    >>> from skltr import OnDemandRuleRanker
    >>> from skltr.datasets import make_ranking
    >>> from skltr.model_selection import train_test_split_by_query
    >>> X, y, qid = make_ranking(n_queries=200, docs_per_query=15, n_features=10,
    ...                          n_informative=5, random_state=0)
    >>> X_tr, X_te, y_tr, y_te, q_tr, q_te = train_test_split_by_query(
    ...     X, y, qid=qid, test_size=0.25, random_state=0)
    >>> ranker = OnDemandRuleRanker(max_rule_size=2).fit(X_tr, y_tr, qid=q_tr)
    >>> ranker.used_features_          # the features MDL finds informative
    array([1, 5])
    >>> n_rules, confidence_sum = ranker.rule_stats(X_te[:1])
    >>> n_rules                        # rules of 1 and 2 items, per relevance level
    array([[3, 3, 3, 3, 3]])
    >>> bool(ranker.score(X_te, y_te, qid=q_te) > 0.6)
    True
    """

    _no_export_reason = ("it has no fixed model to export: it mines rules from the training "
                         "set for each document at predict time. Export a GBDT or RankBoost "
                         "ranker instead")

    _parameter_constraints = {
        "max_rule_size": [Interval(Integral, 1, None, closed="left")],
        "min_support": [Interval(Integral, 1, None, closed="left")],
        "min_confidence": [Interval(Real, 0, 1, closed="both")],
        "discretization": [StrOptions({"mdl", "quantile"})],
        "n_bins": [Interval(Integral, 2, 254, closed="both"), None],
        "max_itemsets_per_document": [Interval(Integral, 1, None, closed="left"), None],
        "cache_size": [Interval(Integral, 0, None, closed="left"), None],
        "device": [str],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }
    _integer_labels = True  # relevance levels 0, 1, 2, ...: one bitmap each
    # float32 rows read as they are (the same intervals and item codes as their float64
    # copy's): their codes come from the map_to_bins signature the other rankers compiled
    _fit_X_dtypes = (np.float64, np.float32)

    def __init__(self, *, max_rule_size=3, min_support=1, min_confidence=0.001,
                 discretization="mdl", n_bins=None, max_itemsets_per_document=100_000_000,
                 cache_size=None, device="cpu", n_jobs=None, random_state=None, verbose=0):
        self.max_rule_size = max_rule_size
        self.min_support = min_support
        self.min_confidence = min_confidence
        self.discretization = discretization
        self.n_bins = n_bins
        self.max_itemsets_per_document = max_itemsets_per_document
        self.cache_size = cache_size
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, *, qid=None):
        """Discretise the features and store the training set.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NaN marks a missing value; +-inf is refused.
        y : array-like of shape (n_samples,)
            Relevance labels, whole numbers ``0, 1, 2, ...``; each distinct label is a
            level.
        qid : array-like of shape (n_samples,)
            Query id of each row, any order. Rules are learnt across queries, so ``qid``
            only checks and groups the input here.

        Returns
        -------
        self

        Warns
        -----
        UserWarning
            When documents like the training documents would make more candidate itemsets
            than ``max_itemsets_per_document`` (``predict`` would refuse them).
        """
        return super().fit(X, y, qid=qid)

    def _fit(self, data):
        from .._numba_cache import announce_first_compile  # noqa: PLC0415
        from .._rules.model import fit_rules  # noqa: PLC0415
        from .._device import resolve_device  # noqa: PLC0415

        self._validate_params()
        device = resolve_device(self.device, allow_all=True)  # "cuda:all": every GPU
        kernels_for(device)  # refuses a device without kernels before any work
        announce_first_compile()
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        intervals, train, model = fit_rules(
            data.X, data.y, discretization=self.discretization, n_bins=self.n_bins,
            seed=seed, n_jobs=self.n_jobs)
        self.cut_ptr_, self.cut_values_ = intervals.cut_ptr, intervals.cut_values
        self.has_missing_, self.used_features_ = intervals.has_missing, intervals.used
        self.train_codes_ = train.codes
        self.level_doc_ptr_, self.levels_ = train.level_doc_ptr, train.levels
        self.device_ = str(device)
        self._set_model(model)
        # refuses a max_rule_size with too many itemsets to score, and a cache too big for
        # this machine, at fit; warns of documents over max_itemsets_per_document
        params = self._params()
        if device.is_gpu:
            self._kernels(params)  # refuses a training set too large for the GPU kernels
        self._warn_itemsets(params)
        if self.verbose > 0:
            n_cuts = np.diff(self.cut_ptr_)[self.used_features_]
            mean = n_cuts.mean() + 1 if n_cuts.size else 0.0
            print(f"OnDemandRuleRanker: {self.used_features_.size} of {self.n_features_in_} "
                  f"features used ({self.n_items_} items, {mean:.1f} intervals each on "
                  f"average); {model.n_train} training documents in {self.levels_.size} "
                  f"levels", file=sys.stderr)
        return self

    def _set_model(self, model):
        from .._rules.scoring import prior_score  # noqa: PLC0415

        self._model = model
        self.n_items_ = int(model.item_bits.shape[0])
        self.prior_ = prior_score(model.level_doc_ptr, model.levels)

    def _params(self):
        from .._rules.ranking import make_params  # noqa: PLC0415

        cache_size = self.cache_size
        if cache_size is None:
            cache_size = self._kernels_class().default_cache_size(self._model)
        params = make_params(self._model, max_rule_size=self.max_rule_size,
                             min_support=self.min_support, min_confidence=self.min_confidence,
                             cache_size=cache_size)
        self._check_cache_memory(cache_size)
        return params

    def _check_cache_memory(self, cache_size):
        """Refuse an itemset cache of more than half this machine's physical memory."""
        from .._rules.ranking import cache_bytes, cache_slots, physical_memory  # noqa: PLC0415
        from ..utils._threads import resolve_n_jobs  # noqa: PLC0415

        n_threads = resolve_n_jobs(self.n_jobs)
        size = cache_bytes(self._model, self.max_rule_size, cache_size, n_threads)
        memory = physical_memory()
        if memory is None or size <= memory // 2:
            return
        slots = cache_slots(int(cache_size))
        default = cache_bytes(self._model, self.max_rule_size, 65536, 1)
        raise ValueError(
            f"cache_size={cache_size} makes an itemset cache of {size:,} bytes "
            f"({_bytes(size)}: {slots:,} slots of {size // (slots * n_threads)} bytes, one "
            f"table for each of {n_threads} threads), more than half of this machine's "
            f"{_bytes(memory)} of physical memory. Lower cache_size (the CPU's default, "
            f"65,536 entries, takes {_bytes(default)} a thread), set it to 0 to turn the "
            f"cache off, or lower n_jobs.")

    def _itemset_problem(self, n_items, params, what):
        """The message refusing (or warning of) documents with too many candidate itemsets
        (``n_items``: each document's usable items), or None when within the limit."""
        from .._rules.ranking import candidate_itemsets, itemset_seconds  # noqa: PLC0415

        limit = self.max_itemsets_per_document
        if limit is None or n_items.size == 0:
            return None
        counts = candidate_itemsets(n_items, params.max_rule_size)
        over = np.flatnonzero(counts > limit)
        if over.size == 0:
            return None
        first = int(over[0])
        count, m = int(counts[first]), int(n_items[first])
        seconds = itemset_seconds(count, self._model.n_words)
        hint = ("" if self.discretization == "mdl" else
                ", use discretization='mdl' (it keeps only the features it finds informative)")
        return (
            f"{what(first, over.size)} {m} items that can be in a rule (one per used feature; "
            f"min_support={self.min_support}), which makes {count:.3g} candidate itemsets of up "
            f"to max_rule_size={params.max_rule_size} items, more than "
            f"max_itemsets_per_document={limit} allows: roughly {_duration(seconds)} of one "
            f"core a document (at the ~{itemset_seconds(1, self._model.n_words) * 1e9:.0f} ns "
            f"an itemset measured on a development machine; pruning by min_support may skip "
            f"some). Lower max_rule_size, select fewer features{hint}, or raise min_support; "
            f"or raise max_itemsets_per_document (None: no limit) to count them anyway "
            f"(predict stops within about a second of Ctrl-C).")

    def _warn_itemsets(self, params):
        """Warn at fit when documents like the training documents would be refused."""
        from .._rules.ranking import n_items_per_doc  # noqa: PLC0415

        m = n_items_per_doc(self._model, self._model.train_codes, params.min_support)
        message = self._itemset_problem(
            m[:0] if m.size == 0 else m[np.argmax(m)][None], params,
            lambda i, n: ("OnDemandRuleRanker: predict will refuse documents like the "
                          "training documents, which have up to"))
        if message:
            warnings.warn(message, UserWarning, stacklevel=6)

    def _check_itemsets(self, codes, params):
        """Refuse a predict / rule_stats call with a document over the itemset limit."""
        from .._rules.ranking import n_items_per_doc  # noqa: PLC0415

        m = n_items_per_doc(self._model, codes, params.min_support)
        message = self._itemset_problem(
            m, params, lambda i, n: (f"{n} of the {m.size} rows of X would cost too much to "
                                     f"rank: row {i} has"))
        if message:
            raise ValueError(message)

    def _intervals(self):
        from .._rules.intervals import Intervals  # noqa: PLC0415

        return Intervals(self.cut_ptr_, self.cut_values_, self.has_missing_,
                         self.used_features_)

    def _device(self):
        """The fitted device; the CPU when it is a GPU this machine lacks (a model fitted on
        a GPU predicts anywhere, with the same scores)."""
        from .._device import Device, resolve_device  # noqa: PLC0415

        try:
            return resolve_device(self.device_, allow_all=True)
        except (ImportError, RuntimeError, ValueError):
            return Device("cpu")

    def _kernels_class(self):
        return kernels_for(self._device())

    def _kernels(self, params):
        """The kernels of ``params`` on the fitted device. A kernels class that says it is
        ``reusable`` (the GPU's: its tables on the device) is kept for the next call with the
        same model, parameters and device, so that a predict call does not copy the model to
        the GPU again (dropped when pickled, replaced by a refit)."""
        cls, device = self._kernels_class(), self._device()
        key = (params, device, self.n_jobs)
        kept = self.__dict__.get("_kept_kernels")
        if kept is not None and kept[0] == key and kept[1] is self._model:
            return kept[2]
        kernels = cls(self._model, params, n_jobs=self.n_jobs, device=device)
        if getattr(cls, "reusable", False):
            self._kept_kernels = (key, self._model, kernels)
        return kernels

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_kept_kernels", None)  # device arrays: made again where it is loaded
        return state

    def _predict(self, X):
        from .._rules.intervals import transform  # noqa: PLC0415
        from .._rules.ranking import predict_scores  # noqa: PLC0415

        params = self._params()
        codes = transform(X, self._intervals())
        self._check_itemsets(codes, params)
        scores, _ = predict_scores(self._model, codes, params, self._kernels(params))
        return scores

    def predict_contribs(self, X):
        """Not available: the ranker has no fixed trees to explain (TreeSHAP needs them).

        Raises
        ------
        TypeError
            Always.
        """
        raise TypeError("OnDemandRuleRanker has no fixed trees: its rules are generated for "
                        "each document at predict time, so TreeSHAP (predict_contribs, "
                        "predict_interactions, skltr.explain) does not apply. Explain a tree "
                        "ranker (GPUHistGBDTRanker, RankBoostRanker) instead, or use a "
                        "model-agnostic explainer such as shap.KernelExplainer(ranker.predict,"
                        " background).")

    predict_interactions = predict_contribs

    def rule_stats(self, X):
        """The rules of each row of ``X``: per relevance level, how many and their summed
        confidence.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        n_rules : ndarray of int64, shape (n_samples, n_levels)
            Rules ``X -> levels_[l]`` of each row.
        confidence_sum : ndarray of float64, shape (n_samples, n_levels)
            The sum of their confidences (each exact to 2**-shift, ``shift`` >= 20 bits).
        """
        from .._rules.intervals import transform  # noqa: PLC0415

        check_is_fitted(self)
        X = check_ranking_X(self, X, reset=False, allow_nan=self._allow_nan,
                            allow_inf=self._allow_inf, ensure_min_samples=0,
                            dtype=list(self._fit_X_dtypes))
        params = self._params()
        codes = transform(X, self._intervals())
        self._check_itemsets(codes, params)
        stats = self._kernels(params).rule_stats(codes)
        return stats.n_rules, stats.conf_sum / 2.0 ** params.shift

    # ------------------------------------------------------------------ persistence
    def save_model(self, path) -> None:
        """Save the fitted ranker as a versioned JSON document (kind ``OnDemandRuleRanker``,
        ``docs/model_format.rst``): its parameters, the discretisation and the training
        set's item codes. No pickle is involved; :meth:`load_model` reads it back."""
        save_document(self._document(), path)

    def _document(self) -> dict:
        """The model document :meth:`save_model` writes (``skltr train`` adds its record of
        how it read the training file, ``meta["source"]``, before saving it)."""
        check_is_fitted(self)
        names = getattr(self, "feature_names_in_", None)
        meta = {"params": jsonable_params(self.get_params()),
                "fitted": {"n_features_in_": int(self.n_features_in_),
                           "feature_names_in_": (None if names is None
                                                 else [str(n) for n in names]),
                           "device_": self.device_}}
        arrays = {key: getattr(self, attr) for key, attr in _DOC_ARRAYS.items()}
        return make_document(DOC_KIND, meta, arrays)

    @classmethod
    def load_model(cls, path) -> "OnDemandRuleRanker":
        """Load a ranker written by :meth:`save_model`.

        Raises
        ------
        ModelFileError
            A ``ValueError`` naming the file and the reason: not a skltr model, another kind
            of model, a schema version this skltr does not read, an invalid or unknown
            stored parameter, or arrays that do not fit together.
        """
        from .._rules.model import TrainingSet, build_model  # noqa: PLC0415

        path = os.fspath(path)
        with model_file_errors(path):
            meta, arrays = read_document(load_document(path), expected_kind=DOC_KIND)
            ranker = ranker_from_params(cls, meta.get("params"), path,
                                        hint="load it with the skltr that wrote it")
            fitted = fitted_dict(meta, path)
            missing = sorted(set(_DOC_ARRAYS) - set(arrays))
            if missing:
                raise ModelFileError(path, f"it lacks the arrays {missing}; the file is "
                                           f"truncated or corrupt")
            state = {attr: arrays[key] for key, attr in _DOC_ARRAYS.items()}
            n_features = read_int(fitted, "n_features_in_", path, lo=1)
            problem = _check_state(state, n_features)
            if problem:
                raise ModelFileError(path, f"its arrays do not fit together ({problem}); the "
                                           f"file is corrupt or was edited")
            for attr, value in state.items():
                setattr(ranker, attr, value)
            ranker.n_features_in_ = n_features
            names = read_names(fitted, "feature_names_in_", path, n_features)
            if names is not None:
                ranker.feature_names_in_ = np.asarray(names, dtype=object)
            ranker.device_ = read_str(fitted, "device_", path)
            train = TrainingSet(ranker.train_codes_, ranker.level_doc_ptr_, ranker.levels_)
            ranker._set_model(build_model(train, ranker._intervals()))
            ranker._params()
        return ranker


def _bytes(n):
    """``n`` bytes in binary units, e.g. ``'3.2 MiB'``."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "bytes" else f"{int(n)} bytes"
        n /= 1024


def _duration(seconds):
    """A rough duration in words: '40 ms', '3.5 s', '12 min', '1.9 hours', '5.1 days'."""
    for limit, unit, scale in ((1, "ms", 1e-3), (90, "s", 1), (5400, "min", 60),
                               (172800, "hours", 3600), (np.inf, "days", 86400)):
        if seconds < limit:
            value = seconds / scale
            return f"{value:.0f} {unit}" if value >= 10 else f"{value:.2g} {unit}"


def _check_state(s, n_features):
    """What is wrong with loaded fitted arrays (an empty string when nothing)."""
    dtypes = {"cut_ptr_": np.int64, "cut_values_": np.float64, "has_missing_": np.bool_,
              "used_features_": np.int64, "train_codes_": np.uint8,
              "level_doc_ptr_": np.int64, "levels_": np.float64}
    for attr, dtype in dtypes.items():
        if s[attr].dtype != dtype:
            return f"{attr[:-1]} has dtype {s[attr].dtype}, not {np.dtype(dtype)}"
    cut_ptr, used, codes = s["cut_ptr_"], s["used_features_"], s["train_codes_"]
    ldp, levels = s["level_doc_ptr_"], s["levels_"]
    if cut_ptr.shape != (n_features + 1,) or s["has_missing_"].shape != (n_features,):
        return f"cut_ptr / has_missing do not match n_features_in_={n_features}"
    if cut_ptr[0] != 0 or np.any(np.diff(cut_ptr) < 0) or cut_ptr[-1] != s["cut_values_"].size:
        return "cut_ptr does not index cut_values"
    if np.any(np.diff(cut_ptr) > 253):
        return "a feature has more than 254 intervals"
    cuts = s["cut_values_"]
    if cuts.ndim != 1 or not np.all(np.isfinite(cuts)):
        return "cut_values holds NaN or infinite cuts"
    # Within a feature the cuts increase strictly (the binary search needs it); where one
    # feature's cuts end and the next one's begin, anything goes.
    rises = np.diff(cuts) > 0
    starts = cut_ptr[1:-1][(cut_ptr[1:-1] > 0) & (cut_ptr[1:-1] < cuts.size)] - 1
    rises[starts] = True
    if not rises.all():
        return "the cuts of a feature do not increase strictly"
    if not np.all(np.isfinite(levels)) or np.any(np.diff(levels) <= 0) or np.any(
            levels < 0) or np.any(levels != np.floor(levels)):
        return ("levels are not whole numbers >= 0 in strictly increasing order (fit takes "
                "them from the labels)")
    if used.ndim != 1 or np.any(np.diff(used) <= 0) or (used.size and (
            used[0] < 0 or used[-1] >= n_features)):
        return "used_features is not an increasing list of features"
    if codes.ndim != 2 or codes.shape[1] != used.size:
        return "train_codes does not have one column per used feature"
    if levels.ndim != 1 or ldp.shape != (levels.size + 1,) or ldp[0] != 0 or np.any(
            np.diff(ldp) <= 0) or ldp[-1] != codes.shape[0]:  # fit makes no empty level
        return "level_doc_ptr does not split train_codes into the levels"
    limit = np.diff(cut_ptr)[used] + 1 + s["has_missing_"][used]
    if np.any(codes >= limit[None, :]):
        return "train_codes holds a code beyond its feature's items"
    return ""
