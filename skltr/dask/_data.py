"""A Dask fit's data: validated row blocks on the workers, the global layout on the driver.

Only ``X`` stays distributed. The per-row columns (``y``, ``qid``, ``sample_weight``,
``position``: 8 bytes a row each) are gathered on the driver, which checks them with the local
ranker's own checks and computes the **global layout** a one-process fit trains on: rows
grouped by a stable sort on qid, queries in sorted-qid order
(:class:`skltr.utils.validation.RankingData`). Every decision that depends on row or query
positions is then made in that layout, so the model does not depend on how the rows are
partitioned or spread over workers.

Each query is trained on one worker: the worker holding the block of its first row. Rows of a
query that straddles blocks are cut out of the other blocks (a slicing task where that block
lives) and sent to that worker -- the "shuffle by qid", which moves only the straddling rows.
Queries whose rows are contiguous within blocks (the usual layout) move nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Blocks", "Role", "RoleRows", "blocks_of", "place_roles", "collect_column"]


@dataclass
class Blocks:
    """The validated row blocks of one ``X`` on the cluster.

    Attributes
    ----------
    futures : list of distributed.Future
        One validated block each (numpy, the ranker's dtype), in row order.
    lengths : ndarray of int64
        Rows of each block.
    n_features : int
    feature_names : ndarray of str or None
    """

    futures: list
    lengths: np.ndarray
    n_features: int
    feature_names: object = None

    @property
    def n_rows(self) -> int:
        return int(self.lengths.sum())

    def block_of_row(self) -> np.ndarray:
        return np.repeat(np.arange(self.lengths.size), self.lengths)

    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)


@dataclass
class Role:
    """One set of rows of a fit in its global layout: the training rows or an eval set.

    ``order[i]`` is the input row (within ``blocks``) at global position ``i``; query ``q``
    holds positions ``group_ptr[q]:group_ptr[q + 1]``. ``shown``: the displayed position of
    each row (learning from clicks; training rows only), in the same global order.
    """

    name: str
    blocks: Blocks
    order: np.ndarray
    group_ptr: np.ndarray
    y: np.ndarray
    sample_weight: np.ndarray | None
    shown: np.ndarray | None = None
    # filled by place_roles: per rank, (row block futures, RoleRows)
    parts: list = field(default_factory=list)

    @property
    def n_queries(self) -> int:
        return self.group_ptr.size - 1


@dataclass
class RoleRows:
    """What one rank holds of a :class:`Role`: its queries' rows, in global order.

    Sent to the rank with the row blocks (``pieces``, futures of rows of ``X``; Dask
    resolves them where the task runs) kept apart, since a future inside a record is not
    resolved. ``piece_pos[k]`` gives each row of block ``k`` its global position (``-1``:
    not in this role); ``positions`` (sorted) are all the rank's positions; ``y``,
    ``sample_weight``, ``group_ptr``, ``query_index`` and ``shown`` (the displayed positions
    of clicks, or None) describe them.
    """

    name: str
    piece_pos: list
    positions: np.ndarray
    y: np.ndarray
    sample_weight: np.ndarray | None
    group_ptr: np.ndarray
    query_index: np.ndarray
    n_queries: int
    shown: np.ndarray | None = None


def collect_column(v):
    """A per-row column (dask or local) as a local array, in row order (None stays None)."""
    if v is None:
        return None
    if hasattr(v, "__dask_graph__"):
        v = v.compute()
    if hasattr(v, "to_numpy"):
        v = v.to_numpy()
    return np.asarray(v)


def _check_block(stub, X, *, reset, prefix, dtype):
    """Validate one block with the local ranker's check; returns (block, info)."""
    from ..utils.validation import check_ranking_X  # noqa: PLC0415

    try:
        Xv = check_ranking_X(stub, X, reset=reset, allow_nan=stub._allow_nan,
                             allow_inf=stub._allow_inf, dtype=dtype, ensure_min_samples=0)
    except (ValueError, TypeError) as exc:
        if not prefix:
            raise
        raise type(exc)(f"{prefix}{exc}") from exc
    names = getattr(stub, "feature_names_in_", None) if reset else None
    return Xv, (Xv.shape[0], Xv.shape[1], Xv.dtype, names)


def _block_futures(client, X, n_default):
    """Futures of the row blocks of ``X`` (dask Array / DataFrame, or local and scattered)."""
    if hasattr(X, "__dask_graph__"):
        if getattr(X, "ndim", 2) == 2 and hasattr(X, "chunks") and len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})  # whole rows in each block
        parts = X.to_delayed()
        parts = list(np.asarray(parts, dtype=object).ravel())
        return client.compute(parts)
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    bounds = np.linspace(0, n, max(min(n_default, n), 1) + 1).astype(np.int64)
    blocks = [X[a:b] if not hasattr(X, "iloc") else X.iloc[a:b]
              for a, b in zip(bounds[:-1], bounds[1:])]
    return client.scatter(blocks)


def blocks_of(client, X, stub, *, reset, dtype, prefix="", n_default=1) -> Blocks:
    """Validate ``X``'s blocks on the workers; the blocks stay there (:class:`Blocks`).

    ``stub`` is an unfitted (``reset=True``) or fitted (``reset=False``: the column count and
    names are checked) copy of the local ranker; errors are the local ranker's, with
    ``prefix`` (``"eval_set[0]: "``).
    """
    if getattr(X, "ndim", 2) != 2:
        # the local check's message for 1-D input
        _check_block(stub, np.asarray(X) if not hasattr(X, "__dask_graph__") else X.compute(),
                     reset=reset, prefix=prefix, dtype=dtype)
    from distributed import wait  # noqa: PLC0415

    raw = _block_futures(client, X, n_default)
    wait(raw)
    # Each block is checked, and stays, where it is: where the blocks live decides the ranks
    # (``client.who_has``), and no block moves to be validated.
    where = {key: list(addrs[:1]) or None for key, addrs in client.who_has(raw).items()}
    checked, futures, infos = [], [], []
    for f in raw:
        at = {"workers": where.get(f.key), "allow_other_workers": False}
        c = client.submit(_check_block, stub, f, reset=reset, prefix=prefix, dtype=dtype,
                          pure=False, **at)
        checked.append(c)
        infos.append(client.submit(_item, c, 1, pure=False, **at))
        futures.append(client.submit(_item, c, 0, pure=False, **at))
    infos = client.gather(infos)
    wait(futures)
    del raw, checked
    n_features = {i[1] for i in infos if i[0]} or {infos[0][1]}
    dtypes = {np.dtype(i[2]) for i in infos if i[0]} or {np.dtype(infos[0][2])}
    if len(n_features) > 1 or len(dtypes) > 1:
        raise ValueError(f"{prefix}X's blocks differ in their number of columns "
                         f"{sorted(n_features)} or dtype {sorted(map(str, dtypes))}; give "
                         f"every block the same columns and dtype.")
    lengths = np.array([i[0] for i in infos], dtype=np.int64)
    return Blocks(futures, lengths, n_features.pop(), infos[0][3])


def _item(obj, i):
    return obj[i]


def _take(block, rows):
    return block[rows]


def place_roles(client, roles, ranks_of_workers):
    """Decide which rank trains each query of every role, and fill ``role.parts``.

    A query goes to the rank of the worker holding the block of its first row; a block on a
    worker that is not a rank (eval data only) sends its queries to rank ``block % world``.
    Rows outside that block are sliced out where their block lives and sent (``_take``).
    """
    world = len(ranks_of_workers)
    for role in roles:
        blocks = role.blocks
        who = client.who_has(blocks.futures)
        rank_of_block = np.array([
            ranks_of_workers.get(next(iter(who.get(f.key, ())), None), b % world)
            for b, f in enumerate(blocks.futures)], dtype=np.int64)
        block = blocks.block_of_row()[role.order]          # block of each position
        sizes = np.diff(role.group_ptr)
        # the first row in *input* order is in the lowest block (blocks are row ranges)
        first_block = np.minimum.reduceat(block, role.group_ptr[:-1])
        rank_of_query = rank_of_block[first_block]
        rank_of_pos = np.repeat(rank_of_query, sizes)
        query_of_pos = np.repeat(np.arange(role.n_queries), sizes)
        starts = blocks.starts()
        role.parts = []
        for r in range(world):
            positions = np.flatnonzero(rank_of_pos == r)
            # the rank's positions grouped by block (a stable sort keeps each group sorted)
            by_block = positions[np.argsort(block[positions], kind="stable")]
            blocks_here, first = np.unique(block[by_block], return_index=True)
            pieces, piece_pos = [], []
            for b, mine in zip(blocks_here, np.split(by_block, first[1:])):
                local_rows = role.order[mine] - starts[b]
                fut = blocks.futures[b]
                if rank_of_block[b] == r:  # here already: the whole block, no copy
                    pos = np.full(blocks.lengths[b], -1, dtype=np.int64)
                    pos[local_rows] = mine
                    pieces.append(fut)
                else:  # only the rows this rank needs travel
                    keep = np.sort(local_rows)
                    pos = np.full(keep.size, -1, dtype=np.int64)
                    pos[np.searchsorted(keep, local_rows)] = mine
                    pieces.append(client.submit(_take, fut, keep, pure=False))
                piece_pos.append(pos)
            qi = np.unique(query_of_pos[positions])
            gptr = np.concatenate([[0], np.cumsum(sizes[qi])]).astype(np.int64)
            w, shown = role.sample_weight, role.shown
            role.parts.append((pieces, RoleRows(
                role.name, piece_pos, positions, role.y[positions],
                None if w is None else w[positions], gptr, qi.astype(np.int64),
                role.n_queries, None if shown is None else shown[positions])))
    return roles
