"""The training task that runs on every worker of a Dask fit: one boosting loop per rank.

The driver (:class:`skltr.dask.DaskGPUHistGBDTRanker`) sends each rank a :class:`TrainTask`
and the row blocks of its queries; the rank puts its rows in global order, finishes the bin
mapper (which features have NaN: an all-reduce, ``BinMapper.set_has_missing``), and runs
the boosting loop of its device (the fit recipe's :func:`~skltr._gbdt.fit.boost_on`: the CPU,
or the worker's GPU) with the communicator of :func:`~skltr.dask._collective_shm.connect`
(shared memory between the ranks of one host, else a TCP star; on GPUs with more than one
rank, a :class:`~skltr.dask._collective_cuda.GPUCommunicator` over it) and a
:class:`~skltr._engine.shard.Shard`. Every rank grows the same trees; rank 0 returns them.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np

from .._engine.rounds import EvalData
from .._engine.shard import Shard
from .._gbdt.fit import boost_on
from ._collective_shm import connect
from ._malloc import reuse_freed_memory

__all__ = ["TrainTask", "train_task"]


@dataclass
class TrainTask:
    """Everything a rank needs besides its row blocks (the same for every rank but ``roles``).

    ``roles`` (:class:`~skltr.dask._data.RoleRows`): the training set first, then the eval
    sets in order.
    """

    objective: object
    params: object
    mapper: object
    init_score: float
    device: str
    roles: list
    n_features: int
    timeout: float = 120.0
    #: False: the TCP star even where the ranks share a host (the benchmarks' comparison)
    shared_memory: bool = True
    #: the model the fit continues (init_model, warm_start), or None
    continuation: object = None
    #: learning from clicks: the positions tracked, from all training rows (the training
    #: role's ``shown`` holds this rank's displayed positions); None without position_bias
    n_positions: int | None = None


def _rows(role, pieces, n_features):
    """The rank's rows of ``role`` in global order (C-contiguous)."""
    if not pieces:  # none of this eval set's queries are here
        return np.zeros((0, n_features), dtype=np.float64)
    blocks, pos = [], []
    for block, p in zip(pieces, role.piece_pos):
        keep = p >= 0
        blocks.append(block if keep.all() else block[keep])
        pos.append(p[keep])
    pos = np.concatenate(pos) if pos else np.zeros(0, np.int64)
    X = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
    order = np.argsort(pos, kind="stable")
    if not np.array_equal(pos[order], role.positions):
        raise RuntimeError("a training worker received rows that do not match its layout; "
                           "this is a bug in skltr.dask")
    if not np.array_equal(order, np.arange(order.size)):
        X = X[order]
    return _writable(np.ascontiguousarray(X))


def _writable(a):
    """``a``, copied if it is read-only (a block Dask deserialised): numba compiles its
    kernels once per array type, and a read-only array is another type (measured: a 1.1 s
    compile inside the first timed GPU fit of a worker)."""
    return a if a is None or a.flags.writeable else a.copy()


def train_task(rank, world, host, port, task, pieces):
    """Run the boosting loop of rank ``rank`` (a Dask task); rank 0 returns the result.

    ``pieces[i]`` are the row blocks of ``task.roles[i]``. Returns ``(BoostingResult,
    device, estimate)`` on rank 0 and ``(None, device, None)`` elsewhere; ``estimate`` is the
    learned :class:`~skltr._gbdt.position_bias.PositionEstimate` (None without
    ``position_bias``), the same on every rank.
    """
    with reuse_freed_memory():  # a Dask worker's malloc settings: see skltr.dask._malloc
        return _train(rank, world, host, port, task, pieces)


def _train(rank, world, host, port, task, pieces):
    from .._device import resolve_device  # noqa: PLC0415

    data = [(role, _rows(role, p, task.n_features)) for role, p in zip(task.roles, pieces)]
    (train, X), evals = data[0], data[1:]
    device = resolve_device(task.device, estimator="DaskGPUHistGBDTRanker")
    for role in task.roles:
        role.y, role.sample_weight, role.group_ptr, role.query_index, role.shown = (
            _writable(a) for a in (role.y, role.sample_weight, role.group_ptr,
                                   role.query_index, role.shown))
    eval_data = [EvalData(role.name, Xe, role.y, role.group_ptr, role.sample_weight)
                 for role, Xe in evals]
    p = task.params
    with connect(rank, world, host, port, task.timeout,
                 shared_memory=task.shared_memory) as comm:
        t_fit = time.perf_counter()
        mapper = copy.copy(task.mapper)
        mapper.n_threads = p.n_jobs
        has_nan = np.isnan(X).any(axis=0).astype(np.uint8)
        mapper.set_has_missing(comm.allreduce_max(has_nan) > 0)
        shard = Shard(mapper, task.init_score, train.query_index, train.n_queries,
                      tuple(role.query_index for role, _ in evals),
                      tuple(role.n_queries for role, _ in evals))
        # the worker's visible GPU (one per worker: LocalCUDACluster) sums its histograms GPU
        # to GPU where it can
        communicator = comm
        if device.is_gpu and world > 1:
            from ._collective_cuda import GPUCommunicator  # noqa: PLC0415 - imports CuPy

            communicator = GPUCommunicator(comm, device.index)
        objective = task.objective
        if task.n_positions is not None:
            # learning from clicks: this rank's displayed positions; every round's sums per
            # position are all-reduced, so every rank updates the same estimate
            objective = objective.at_positions(train.shown, n_tracked=task.n_positions,
                                               communicator=communicator)
        result = boost_on(device, X, train.y, train.group_ptr, train.sample_weight,
                          objective, p, eval_data, communicator=communicator,
                          shard=shard, continuation=task.continuation)
        if communicator is not comm:
            result.timings.update(nccl=communicator.nccl,
                                  device_allreduce_calls=communicator.device_calls)
        result.timings["fit_s"] = time.perf_counter() - t_fit
        # time in the all-reduces includes waiting for slower ranks (load imbalance)
        result.timings.update(workers=world, communicator=comm.kind,
                              allreduce_s=comm.seconds, allreduce_calls=comm.calls,
                              rank0_rows=int(X.shape[0]),
                              ranks=_rank_timings(comm, rank, world, result.timings))
    if rank != 0:
        return None, str(device), None
    return result, str(device), getattr(objective, "estimate", None)


#: per-rank figures gathered once a fit (``timings_["ranks"]``)
_RANK_FIGURES = ("fit_s", "boosting_s", "allreduce_s", "barrier_s", "allreduce_calls",
                 "barriers")


def _rank_timings(comm, rank, world, timings):
    """Every rank's boosting and all-reduce seconds, in one all-reduce after the fit.

    ``barrier_s`` (shared memory only) is the part of ``allreduce_s`` spent at barriers:
    waiting for the slowest rank. ``fit_s``: the rank's fit from its first all-reduce on
    (binning included; ``boosting_s``: the rounds), so ``fit_s - allreduce_s`` is its own
    work, and the ranks' figures side by side tell load imbalance from the reduction's own
    cost. (The all-reduces before the rounds, binning's, count in ``allreduce_s``: on a small
    fit it can exceed ``boosting_s``.)
    """
    mine = (timings["fit_s"], timings["boosting_s"], comm.seconds,
            getattr(comm, "barrier_seconds", 0.0), comm.calls, getattr(comm, "barriers", 0))
    table = np.zeros((world, len(_RANK_FIGURES)), np.float64)
    table[rank] = mine
    table = comm.allreduce_sum(table)  # one non-zero term per element: exact
    return [dict(zip(_RANK_FIGURES, map(float, r))) for r in table]
