"""The typed parameters of a GBDT fit: :class:`TreeParams` (one tree) and :class:`BoostParams`.

The fit recipe (:mod:`skltr._gbdt.fit`) fills them from the estimator's hyper-parameters; the
boosting loop and both growers read them and never edit them (frozen), so that the CPU and the
CUDA back-ends grow from the very same record. The estimator has validated every value
(``_parameter_constraints``); ``TreeParams`` only asserts invariants.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._engine.binning import BinMapper
from .._engine.rounds import binning_seed
from .categorical import CategoricalParams

__all__ = ["TreeParams", "BoostParams"]


@dataclass(frozen=True)
class TreeParams:
    """How one tree grows (both devices).

    Attributes
    ----------
    max_leaves : int >= 2
    max_depth : int >= 1 or None
    growth : {"leafwise", "depthwise", "symmetric"}
        The growth policy (:mod:`skltr._gbdt.growth`); ``"symmetric"`` needs ``max_depth``.
    min_child_weight : float
        Least hessian sum of a child.
    min_samples_leaf : int >= 1
        Least rows of a child.
    min_samples_leaf_counts : {"rows", "hessian"}
        What ``min_samples_leaf`` counts: rows, or LightGBM's estimate of them from the
        hessians (``int(h_bin * node_rows / node_hessian + 0.5)`` per bin; its
        ``min_data_in_leaf`` rule, ``skltr._cpu.split``). Nodes with fewer than
        ``2 * min_samples_leaf`` rows are not split either way.
    reg_lambda, reg_alpha : float >= 0
        L2 and L1 regularisation of leaf values.
    min_split_gain : float >= 0
        A split needs a gain strictly above it.
    learning_rate : float
        Multiplies leaf values.
    hist_mode : {"quantised", "float"}
        Integer histograms of quantised gradients (both devices;
        :mod:`skltr._gbdt.quantisation`), or float64 sums (CPU only).
    monotone : tuple of int or None
        Per feature -1, 0 or +1: the tree's output may only fall, is free, or may only rise
        with the feature (:mod:`skltr._gbdt.constraints`).
    monotone_method : {"basic", "intermediate"}
        LightGBM's methods of enforcing ``monotone``.
    interaction : tuple of tuple of int or None
        Feature sets; a branch only uses features that share one of them (features in no
        set are sets of their own).
    categorical : CategoricalParams or None
        The categorical features and their split controls (:mod:`skltr._gbdt.categorical`).
    random_strength : float >= 0
        Symmetric growth: scale of the normal noise on each candidate's level score
        (CatBoost's ``random_strength``; :mod:`skltr._cpu.split_symmetric`). 0: none.
    """

    max_leaves: int = 31
    max_depth: int | None = None
    growth: str = "leafwise"
    min_child_weight: float = 1e-3
    min_samples_leaf: int = 20
    min_samples_leaf_counts: str = "rows"
    reg_lambda: float = 0.0
    reg_alpha: float = 0.0
    min_split_gain: float = 0.0
    learning_rate: float = 0.1
    hist_mode: str = "float"
    monotone: tuple | None = None
    monotone_method: str = "basic"
    interaction: tuple | None = None
    categorical: CategoricalParams | None = None
    random_strength: float = 0.0

    def __post_init__(self):
        assert self.growth in ("leafwise", "depthwise", "symmetric"), self.growth
        assert self.growth != "symmetric" or self.max_depth is not None
        assert self.random_strength >= 0 and (self.random_strength == 0
                                              or self.growth == "symmetric")
        assert self.hist_mode in ("float", "quantised"), self.hist_mode
        assert self.min_samples_leaf_counts in ("rows", "hessian")
        assert self.monotone_method in ("basic", "intermediate")
        assert int(self.max_leaves) >= 2 and (self.max_depth is None or int(self.max_depth) >= 1)
        assert int(self.min_samples_leaf) >= 1
        assert min(self.min_child_weight, self.reg_lambda, self.reg_alpha,
                   self.min_split_gain) >= 0
        # fixed Python types: the split kernels' records are built from them
        for name, kind in (("max_leaves", int), ("min_samples_leaf", int),
                           ("min_child_weight", float), ("reg_lambda", float),
                           ("reg_alpha", float), ("min_split_gain", float),
                           ("learning_rate", float), ("random_strength", float)):
            object.__setattr__(self, name, kind(getattr(self, name)))
        if self.max_depth is not None:
            object.__setattr__(self, "max_depth", int(self.max_depth))

    @property
    def hessian_counts(self) -> bool:
        """Whether ``min_samples_leaf`` is checked on hessian-estimated counts."""
        return self.min_samples_leaf_counts == "hessian"


@dataclass(frozen=True)
class BoostParams:
    """Everything a boosting loop needs besides the data (the fit recipe fills it).

    Attributes
    ----------
    objective_name : str
        Recorded in the ensemble's ``source``.
    n_estimators : int
        Maximum number of rounds (one tree per round).
    max_bins : int
        Non-missing bins per feature (2..255).
    tree : TreeParams
        How each tree grows.
    subsample, colsample_bytree : float
        Fractions of the *queries* each tree is grown on, and of the features it may use.
    eval_at : tuple of int
        NDCG cut-offs recorded per round; the first is monitored.
    gain : {"exp2", "linear"}
        Gain of the recorded NDCG.
    n_iter_no_change : int or None
        Stop after this many rounds without a strict improvement of the monitored score
        (LightGBM's ``early_stopping_rounds``); None runs all rounds.
    seed : int
        Seed of every random draw.
    verbose : int
        > 0 shows a tqdm progress bar with the monitored score.
    feature_names : list of str or None
    n_jobs : int or None
        Threads of every kernel (``n_jobs`` semantics); each stage sets numba's thread
        count itself. On the GPU: the bin mapper's host threads.
    reject_inf : bool
        Raise ValueError when ``X`` or an eval set's ``X`` holds +inf or -inf (otherwise they
        bin as the largest / smallest values). The estimator asks for it when it skipped its
        own host check of X's values: the GPU loop checks while binning, for free.
    """

    objective_name: str
    n_estimators: int
    max_bins: int
    tree: TreeParams = field(default_factory=TreeParams)
    subsample: float = 1.0
    colsample_bytree: float = 1.0
    eval_at: tuple = (10,)
    gain: str = "exp2"
    n_iter_no_change: int | None = None
    seed: int = 0
    verbose: int = 0
    feature_names: list | None = None
    n_jobs: int | None = None
    reject_inf: bool = False

    def bin_mapper(self):
        """The unfitted, seeded bin mapper of this fit (one process fits it on its rows; a
        distributed fit's driver on the gathered sample, with
        :meth:`~skltr._engine.binning.BinMapper.sample_rows` and ``fit_sample``: the same
        cuts)."""
        cat = self.tree.categorical
        return BinMapper(max_bins=self.max_bins, random_state=binning_seed(self.seed),
                         n_threads=self.n_jobs,
                         categorical=None if cat is None else cat.features)

    @property
    def source(self) -> dict:
        """The fitted ensemble's provenance record."""
        return {"library": "skltr", "estimator": "GPUHistGBDTRanker",
                "objective": self.objective_name}
