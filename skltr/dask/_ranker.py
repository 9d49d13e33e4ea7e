"""``DaskGPUHistGBDTRanker``: the GBDT ranker trained on a Dask cluster, the same model as
one process trains.

The driver validates the per-row columns with the local ranker's checks, lays the rows out
as a one-process fit does (:mod:`skltr.dask._data`), makes the fit's decisions with the local
ranker's fit recipe (:mod:`skltr._gbdt.fit`: seed, early stopping and held-out queries,
objective, loop parameters, the initial score of the global labels), fits the recipe's bin
mapper from the global cut sample it gathers (``BinMapper.sample_rows`` / ``fit_sample``),
and starts one training task per worker that holds training rows (:mod:`skltr.dask._train`);
the tasks all-reduce through shared memory where they share a host, else through TCP
(:mod:`skltr.dask._collective_shm`, :mod:`skltr.dask._collective`). Every decision of the
boosting loop is made from exact global sums, so the trees equal those of
``GPUHistGBDTRanker`` on the same rows, for any number of workers and any partitioning.
"""

from __future__ import annotations

import time
import uuid
from urllib.parse import urlparse

import numpy as np

from .._device import names_gpu
from .._engine.rounds import split_queries, sub_group_ptr
from .._gbdt import fit as recipe
from .._gbdt.objectives import OBJECTIVES
from ..ranking import GPUHistGBDTRanker
from ..ranking._categorical import encode_eval_sets, encode_fit_frame
from ..ranking._gbdt_ranker import _learned_position_bias
from ..utils.validation import check_ranking_X, check_ranking_y
from ._data import Role, blocks_of, collect_column, place_roles
from ._train import TrainTask, train_task

__all__ = ["DaskGPUHistGBDTRanker"]

#: Fitted attributes that ``to_local`` copies.
_FITTED = ("ensemble_", "n_estimators_", "n_iter_", "best_iteration_", "evals_result_",
           "_split_gain", "_split_count", "device_", "timings_", "_layout_cache",
           "n_features_in_", "feature_names_in_", "is_categorical_", "_pandas_categories",
           "position_bias_", "position_bias_minus_")


class DaskGPUHistGBDTRanker(GPUHistGBDTRanker):
    """:class:`~skltr.GPUHistGBDTRanker` trained on a Dask cluster: the same trees.

    Takes every ``GPUHistGBDTRanker`` parameter and ``client``. ``fit`` takes dask Arrays or
    DataFrames (or numpy / pandas, scattered over the workers); each worker that holds rows
    trains on its whole queries and the workers all-reduce exact integer histograms, so the
    fitted trees equal those of ``GPUHistGBDTRanker(**same params).fit`` on the same rows --
    bit for bit, for any number of workers and any partitioning
    (:ref:`dask_training`). ``predict`` of a dask collection is lazy and partition-aligned.

    Parameters
    ----------
    client : distributed.Client or None, default=None
        The cluster; None uses the current client (``distributed.default_client()``).
    **params
        The parameters of :class:`~skltr.GPUHistGBDTRanker`. ``hist_mode="quantised"`` (the
        default) is required: float histograms are not sums that agree across workers.
        ``n_jobs`` is the threads of each worker's task. ``device="cuda"`` trains on the
        GPU of every worker that holds rows: give each worker its own device (dask-cuda's
        ``LocalCUDACluster``, or ``CUDA_VISIBLE_DEVICES`` set per worker); workers that
        share a GPU give the same model, more slowly. ``growth="symmetric"`` (with
        ``random_strength``) trains on CPU workers (the one-process model too); GPU
        workers refuse it (ValueError).

    Attributes
    ----------
    The fitted attributes of :class:`~skltr.GPUHistGBDTRanker`. ``timings_`` adds
    ``"dask_s"`` (seconds from ``fit`` to the trees on the driver), ``"prepare_s"`` (of
    which before the training tasks start: checks, layout, cut sample, row placement), and
    rank 0's ``"workers"``, ``"communicator"`` (``"shared-memory"`` when every training
    worker is on one host, else ``"tcp-star"``), ``"allreduce_s"``, ``"allreduce_calls"``,
    ``"rank0_rows"`` (and on GPU workers ``"nccl"``: whether histograms went GPU to GPU),
    and ``"ranks"``: per rank its ``fit_s`` (from its first all-reduce on), ``boosting_s``
    (the rounds), ``allreduce_s``, ``barrier_s`` (of that,
    waiting at the shared-memory barriers for the slowest rank), ``allreduce_calls`` and
    ``barriers``.

    Examples
    --------
    >>> from distributed import Client, LocalCluster          # doctest: +SKIP
    >>> import dask.array as da                               # doctest: +SKIP
    >>> from skltr.dask import DaskGPUHistGBDTRanker          # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2))            # doctest: +SKIP
    >>> ranker = DaskGPUHistGBDTRanker(n_estimators=50).fit(
    ...     da.from_array(X, chunks=1000), y, qid=qid)         # doctest: +SKIP
    >>> ranker.predict(da.from_array(X, chunks=1000))         # doctest: +SKIP
    dask.array<...>
    """

    _parameter_constraints = {**GPUHistGBDTRanker._parameter_constraints,
                              "client": "no_validation"}
    #: False keeps the TCP star between workers of one host (``benchmarks/train_dask.py``
    #: compares the two); not a parameter: the model is the same either way
    _shared_memory = True

    def __init__(self, *, client=None, objective="lambdarank", n_estimators=100,
                 learning_rate=0.1, max_leaves=31, max_depth=None, growth="leafwise",
                 min_child_weight=1e-3, min_samples_leaf=20, min_samples_leaf_counts="hessian",
                 reg_lambda=0.0, reg_alpha=0.0, min_split_gain=0.0, max_bins=255,
                 hist_mode="quantised", subsample=1.0, colsample_bytree=1.0,
                 random_strength=0.0, gain="exp2",
                 eval_at=10, lambdarank_truncation_level=None, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=10, device="cpu", n_jobs=None,
                 random_state=None, verbose=0, warm_start=False, importance_type="gain",
                 monotone_constraints=None, monotone_constraints_method="basic",
                 interaction_constraints=None, categorical_features="from_dtype",
                 max_cat_to_onehot=4, max_cat_threshold=32, cat_smooth=10.0, cat_l2=10.0,
                 min_data_per_group=100, position_bias=None, lambdarank_num_positions=None,
                 lambdarank_bias_norm=1.0, lambdarank_position_bias_regularization=0.0,
                 yetirank_permutations=10, yetirank_decay=0.85):
        super().__init__(
            objective=objective, n_estimators=n_estimators, learning_rate=learning_rate,
            max_leaves=max_leaves, max_depth=max_depth, growth=growth,
            min_child_weight=min_child_weight, min_samples_leaf=min_samples_leaf,
            min_samples_leaf_counts=min_samples_leaf_counts, reg_lambda=reg_lambda,
            reg_alpha=reg_alpha, min_split_gain=min_split_gain, max_bins=max_bins,
            hist_mode=hist_mode, subsample=subsample, colsample_bytree=colsample_bytree,
            random_strength=random_strength, gain=gain, eval_at=eval_at,
            lambdarank_truncation_level=lambdarank_truncation_level,
            early_stopping=early_stopping, validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change, device=device, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose, warm_start=warm_start,
            importance_type=importance_type, monotone_constraints=monotone_constraints,
            monotone_constraints_method=monotone_constraints_method,
            interaction_constraints=interaction_constraints,
            categorical_features=categorical_features, max_cat_to_onehot=max_cat_to_onehot,
            max_cat_threshold=max_cat_threshold, cat_smooth=cat_smooth, cat_l2=cat_l2,
            min_data_per_group=min_data_per_group, position_bias=position_bias,
            lambdarank_num_positions=lambdarank_num_positions,
            lambdarank_bias_norm=lambdarank_bias_norm,
            lambdarank_position_bias_regularization=lambdarank_position_bias_regularization,
            yetirank_permutations=yetirank_permutations, yetirank_decay=yetirank_decay)
        self.client = client

    # ------------------------------------------------------------------ conversion
    def _local_params(self) -> dict:
        params = self.get_params()
        params.pop("client")
        return params

    def to_local(self) -> GPUHistGBDTRanker:
        """The fitted model as a plain :class:`~skltr.GPUHistGBDTRanker` (no Dask needed)."""
        from sklearn.utils.validation import check_is_fitted  # noqa: PLC0415

        check_is_fitted(self, "ensemble_")
        local = GPUHistGBDTRanker(**self._local_params())
        for name in _FITTED:
            if hasattr(self, name):
                setattr(local, name, getattr(self, name))
        return local

    def __getstate__(self):
        state = super().__getstate__()
        state["client"] = None  # a client is a connection, not a model parameter
        return state

    def save_model(self, path) -> None:
        """Save as :meth:`GPUHistGBDTRanker.save_model` does (``client`` is not stored)."""
        client, self.client = self.client, None
        try:
            super().save_model(path)
        finally:
            self.client = client

    # ------------------------------------------------------------------ prediction
    def predict(self, X, *, iteration_range=None):
        """Scores of ``X``: a lazy dask Array / Series for dask input, else numpy.

        Dask input is scored block by block on the workers (:func:`skltr.dask.predict`),
        the model sent once; the output's blocks are the input's. ``iteration_range``: as
        :meth:`GPUHistGBDTRanker.predict` (checked here, before any block is scored).
        """
        if hasattr(X, "__dask_graph__"):
            from ._predict import RoundsOf, predict  # noqa: PLC0415

            model = self.to_local()
            if iteration_range is not None:
                model._trees_in(iteration_range)  # refuses a bad range now
                model = RoundsOf(model, tuple(iteration_range))
            return predict(model, X, client=self._client())
        return super().predict(X, iteration_range=iteration_range)

    def score(self, X, y, *, qid=None, sample_weight=None):
        """Mean NDCG at the first ``eval_at`` cut-off, as :meth:`GPUHistGBDTRanker.score`.

        Dask input is scored on the workers; the scores and the columns are then gathered.
        """
        if not hasattr(X, "__dask_graph__"):
            return super().score(X, y, qid=qid, sample_weight=sample_weight)
        if qid is None:
            return super().score(X, y, qid=qid)  # the local error: qid is required
        scores = np.asarray(self.predict(X).compute())
        return self._score_predictions(scores, collect_column(y), collect_column(qid),
                                       collect_column(sample_weight))

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y, *, qid=None, sample_weight=None, eval_set=None, init_model=None,
            position=None):
        """Fit on the cluster; the arguments are those of :meth:`GPUHistGBDTRanker.fit`
        (``init_model`` and ``warm_start`` continue a model as there: the same trees).

        ``X`` is a dask Array (chunked by rows) or DataFrame, or numpy / pandas (scattered in
        one block per worker); ``y``, ``qid``, ``sample_weight`` and ``position`` are dask or
        local columns in the same row order (they are gathered on the driver: 8 bytes a
        row); ``eval_set`` items take the same kinds. With ``position_bias``
        (:ref:`learning_from_clicks`) the workers all-reduce exact per-position sums every
        round: ``position_bias_`` and the trees are the local fit's. A failed fit leaves
        the estimator as it was.
        """
        saved = dict(self.__dict__)
        try:
            self._validate_params()
            # pandas / dask category columns -> codes, as the local fit does
            X, spec, categories = encode_fit_frame(X, self.categorical_features,
                                                   self._start_categories(init_model))
            eval_set = encode_eval_sets(eval_set, categories)
            self._fit_dask(X, y, qid, sample_weight, eval_set, init_model,
                           (spec, categories), position)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        return self

    def _client(self):
        if self.client is not None:
            return self.client
        from distributed import default_client  # noqa: PLC0415

        return default_client()

    def _fit_dask(self, X, y, qid, sample_weight, eval_set, init_model, categorical, position):
        from sklearn.utils.validation import _check_sample_weight  # noqa: PLC0415

        from ..utils._qid import group_by_qid  # noqa: PLC0415

        t0 = time.perf_counter()
        client = self._client()
        self._check_gain()
        eval_at = self._eval_at_list()
        if self.hist_mode != "quantised":
            raise ValueError(
                f"DaskGPUHistGBDTRanker needs hist_mode='quantised' (exact integer "
                f"histograms, whose sums over workers do not depend on the order); got "
                f"hist_mode={self.hist_mode!r}.")
        is_gpu = names_gpu(self.device)  # the driver may have no GPU: read the string
        hp = self._local_params()
        recipe.check_device(hp, is_gpu)
        recipe.check_growth(hp, is_gpu=is_gpu, distributed=True)
        for name in ("n_features_in_", "feature_names_in_"):
            self.__dict__.pop(name, None)
        stub = GPUHistGBDTRanker(**hp)
        n_workers = max(len(_workers(client)), 1)
        blocks = blocks_of(client, X, stub, reset=True, dtype=list(self._fit_X_dtypes),
                           n_default=n_workers)
        n = blocks.n_rows
        n_features = blocks.n_features
        if n == 0:  # the local check's message
            check_ranking_X(stub, np.zeros((0, n_features)), reset=True)
        self.n_features_in_ = n_features
        if blocks.feature_names is not None:
            self.feature_names_in_ = blocks.feature_names
        # the per-row columns, checked in the local ranker's order (X, y, qid,
        # sample_weight, then position), before the model to continue
        y = check_ranking_y(collect_column(y), n)
        groups = group_by_qid(collect_column(qid), n)
        w = collect_column(sample_weight)
        if w is not None:
            w = _check_sample_weight(w, np.empty((n, 0)), dtype=np.float64,
                                     ensure_non_negative=True)
        position = self._check_position(collect_column(position), n, init_model, above=3)
        continuation, n_rounds = self._continuation(n_features, init_model, above=2)
        if n_rounds == 0:
            return
        hp["n_estimators"] = n_rounds  # a continued fit runs the rounds still to come
        hp["categorical_features"], pandas_categories = categorical  # "from_dtype" resolved
        graded = OBJECTIVES[self.objective].graded
        if graded:
            check_ranking_y(y, n, integer_labels=True)
        evals = self._eval_roles(client, eval_set, graded)
        order, gptr = groups.order, groups.group_ptr
        y_g, w_g = y[order], None if w is None else w[order]
        shown_g = None if position is None else position[order]  # grouped, as the local fit
        plan = recipe.plan_fit(
            hp, n_rows=n, n_queries=groups.n_queries, has_eval_sets=bool(evals),
            eval_at=eval_at, feature_names=getattr(self, "feature_names_in_", None),
            reject_inf=not self._allow_inf and is_gpu, n_features=n_features)
        train = Role("train", blocks, order, gptr, y_g, w_g, shown_g)
        if plan.hold_out:
            keep, val = split_queries(gptr, self.validation_fraction, plan.seed)
            train = Role("train", blocks, order[keep], sub_group_ptr(gptr, keep), y_g[keep],
                         None if w_g is None else w_g[keep],
                         None if shown_g is None else shown_g[keep])
            evals = [Role("validation", blocks, order[val], sub_group_ptr(gptr, val),
                          y_g[val], None if w_g is None else w_g[val])]
            recipe.warn_auto_hold_out(hp, gptr, val, above=2)
        init = recipe.start_score(plan.objective, train.y, train.group_ptr,
                                  train.sample_weight)
        mapper = plan.params.bin_mapper()
        # the sample the local fit draws (CPU or GPU: the same cuts), from the global layout
        mapper.fit_sample(_cut_sample(client, train, mapper.sample_rows(train.order.size)))

        workers = _training_workers(client, blocks)
        roles = place_roles(client, [train, *evals],
                            {addr: r for r, addr in enumerate(workers)})
        spec = getattr(plan.objective, "position_bias", None)
        # the positions tracked, from all training rows: the local fit's rule
        n_positions = None if train.shown is None else spec.n_tracked(
            train.shown, plan.objective.truncation_level)
        tasks = [TrainTask(plan.objective, plan.params, mapper, init, str(self.device),
                           [role.parts[r][1] for role in roles], n_features,
                           shared_memory=self._shared_memory, continuation=continuation,
                           n_positions=n_positions)
                 for r in range(len(workers))]
        prepare_s = time.perf_counter() - t0  # checks, layout, cut sample, placement
        futures = _launch(client, workers, tasks,
                          [[role.parts[r][0] for role in roles] for r in range(len(workers))])
        result, device, estimate = _wait(client, futures, workers)
        recipe.warn_if_no_split(result, above=2)
        self._set_fitted(result, device)
        self.position_bias_, self.position_bias_minus_ = _learned_position_bias(spec, estimate)
        cat = plan.params.tree.categorical
        self.is_categorical_ = None if cat is None else cat.mask(n_features)
        self._pandas_categories = pandas_categories
        self.timings_ = {**result.timings, "prepare_s": prepare_s,
                         "dask_s": time.perf_counter() - t0}

    def _eval_roles(self, client, eval_set, graded):
        """The eval sets as :class:`Role` s, checked as the local ranker checks them."""
        from ..utils._qid import group_by_qid  # noqa: PLC0415

        if eval_set is None:
            return []
        if not isinstance(eval_set, (list, tuple)) or any(
                not isinstance(item, (list, tuple)) or len(item) != 3 or item[2] is None
                for item in eval_set):
            self._check_eval_set(eval_set)  # raises the local message
        stub = GPUHistGBDTRanker(**self._local_params())
        stub.n_features_in_ = self.n_features_in_
        if hasattr(self, "feature_names_in_"):
            stub.feature_names_in_ = self.feature_names_in_
        roles = []
        for i, (X_e, y_e, qid_e) in enumerate(eval_set):
            prefix = f"eval_set[{i}]: "
            blocks = blocks_of(client, X_e, stub, reset=False, dtype=np.float64, prefix=prefix)
            try:
                y_e = check_ranking_y(collect_column(y_e), blocks.n_rows,
                                      integer_labels=graded)
                groups = group_by_qid(collect_column(qid_e), blocks.n_rows)
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"{prefix}{exc}") from exc
            roles.append(Role(f"valid_{i}", blocks, groups.order, groups.group_ptr,
                              y_e[groups.order], None))
        return roles


def _workers(client):
    """The cluster's worker addresses, asked of the scheduler now. (Not
    ``client.scheduler_info()["workers"]``: in distributed 2026.8 a periodic refresh that
    carries no per-worker entries can land between its fetch and its return, so it may say
    there are no workers -- which read as "every worker left mid-fit".)"""
    return list(client.nthreads())


def _training_workers(client, blocks):
    """Addresses of the workers that hold training rows, sorted: rank ``r`` is entry ``r``."""
    who = client.who_has(blocks.futures)
    held = {who[f.key][0] for f, size in zip(blocks.futures, blocks.lengths)
            if size and who.get(f.key)}
    return sorted(held) or sorted(_workers(client))[:1]


def _launch(client, workers, tasks, pieces):
    """Start rank ``r``'s training task on ``workers[r]``; returns the futures."""
    from distributed import wait  # noqa: PLC0415

    from ._collective import free_port  # noqa: PLC0415

    # Every row block exists before a training task starts: a task blocks its worker's
    # thread in the all-reduce, so a slice still to be cut there would never be.
    wait([p for rank_pieces in pieces for role_pieces in rank_pieces for p in role_pieces])
    host = urlparse(workers[0]).hostname
    port = client.run(free_port, workers=[workers[0]])[workers[0]]
    key = f"skltr-train-{uuid.uuid4().hex}"
    return [client.submit(train_task, r, len(workers), host, port, task, rank_pieces,
                          key=f"{key}-{r}", workers=[addr], allow_other_workers=False,
                          pure=False, retries=0)
            for r, (addr, task, rank_pieces) in enumerate(zip(workers, tasks, pieces))]


def _cut_sample(client, train, idx):
    """The rows of the bin mapper's cut sample (global positions ``idx``; None: all)."""
    from ._data import _take  # noqa: PLC0415

    rows = train.order if idx is None else train.order[idx]
    blocks = train.blocks
    block = blocks.block_of_row()[rows]
    local = rows - blocks.starts()[block]
    parts = [client.submit(_take, blocks.futures[b], np.sort(local[block == b]), pure=False)
             for b in np.unique(block)]
    return np.concatenate(client.gather(parts))


def _wait(client, futures, workers):
    """The rank-0 result; a failed or lost rank cancels the others and raises."""
    from distributed import wait  # noqa: PLC0415

    from distributed.utils import TimeoutError as DaskTimeoutError  # noqa: PLC0415

    try:
        while True:
            try:
                wait([f for f in futures if f.status != "finished"], timeout=1.0,
                     return_when="FIRST_COMPLETED")
            except (TimeoutError, DaskTimeoutError):
                pass
            failed = [f for f in futures if f.status == "error"]
            if failed:
                exc = failed[0].exception()
                raise RuntimeError(
                    f"Dask training failed on a worker: {type(exc).__name__}: {exc}. The "
                    f"estimator is unchanged; call fit again to retry.") from exc
            if all(f.status == "finished" for f in futures):
                return futures[0].result()
            alive = set(_workers(client))
            lost = [a for a in workers if a not in alive]
            if lost:
                raise RuntimeError(
                    f"Dask training failed: worker(s) {lost} left the cluster mid-fit. The "
                    f"estimator is unchanged; call fit again to retry (the data is "
                    f"recomputed where it was lost).")
    except BaseException:
        client.cancel(futures, force=True)
        raise
