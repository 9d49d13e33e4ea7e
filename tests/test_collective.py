"""The CPU all-reduces of a Dask fit: the shared-memory one equals the TCP star bit for bit.

Ranks are threads of this process (each with its own sockets and mapping, as processes
have) and, for a peer that dies, a child process. The segment's security rules
(``docs/security.rst``) are checked on its files: private, unlinked once every rank has
answered and on error paths, refused when open to others or of the wrong size.
"""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from skltr._gbdt.grower_cpu import TreeGrower
from skltr.dask import _collective_shm as shm
from skltr.dask._collective import free_port

TIMEOUT = 60.0


def _ranks(world, body, **connect_kw):
    """Run ``body(comm)`` on ``world`` thread ranks; returns their results (or exceptions)."""
    port, out = free_port(), [None] * world

    def rank(r):
        try:
            with shm.connect(r, world, "127.0.0.1", port, 20.0, **connect_kw) as comm:
                out[r] = body(comm)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out[r] = exc

    threads = [threading.Thread(target=rank, args=(r,), name=f"rank{r}")
               for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "an all-reduce hung"
    return out


def _arrays(world, seed):
    """Per rank: int64 histograms of several sizes (one over several regions) and floats of
    every magnitude (their sum depends on the order: it must be the star's)."""
    rng = np.random.default_rng(seed)
    big = shm.region_bytes(world) // 8 * 2 + 37  # three regions' steps, the last partial
    ints = [rng.integers(-(1 << 50), 1 << 50, (world, *s)) for s in
            [(0,), (1,), (7,), (136, 256, 2), (big,)]]
    floats = [rng.standard_normal((world, *s)) * 10.0 ** rng.integers(-12, 12, (world, *s))
              for s in [(1,), (3, 5), (1000,), (big,)]]
    small = [rng.integers(0, 2, (world, 9)).astype(np.uint8), rng.random((world, 3)) > 0.5]
    return ints + floats + small


@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.parametrize("spin", [0.0, 200e-6], ids=["sleep", "poll"])
def test_shared_memory_equals_the_star_bit_for_bit(monkeypatch, world, spin):
    from skltr.dask import _collective

    monkeypatch.setattr(_collective, "SPIN_S", spin)  # barriers that poll first, or not
    arrays = _arrays(world, seed=world)

    def body(comm):
        r = comm.rank
        return (comm.kind, [comm.allreduce_sum(a[r]) for a in arrays],
                [comm.allreduce_max(a[r]) for a in arrays], comm.calls)

    fast, star = _ranks(world, body), _ranks(world, body, shared_memory=False)
    for r in range(world):
        assert fast[r][0] == ("shared-memory" if world > 1 else "tcp-star")
        assert star[r][0] == "tcp-star"
        assert fast[r][3] == star[r][3] == (2 * len(arrays) if world > 1 else 0)
        for got, want in zip(fast[r][1] + fast[r][2], star[0][1] + star[0][2]):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes()
    # the star sums in rank order: so does the shared memory, floats included
    for a, got in zip(arrays, star[0][1]):
        want = a[0].copy()
        for part in a[1:]:
            want += part
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_reduce_rows_is_each_ranks_rows_of_the_star_sum(world):
    # every rank sums its own rows (none, some, all), int64 and floats (rank order), and
    # an array larger than a region (the all-reduce's steps)
    from skltr._cpu.collective import reduce_rows

    rng = np.random.default_rng(20 + world)
    arrays = [rng.integers(-(1 << 50), 1 << 50, (world, *s))
              for s in [(136, 256, 2), (7, 3), (1,), (1100, 600)]]
    arrays.append(rng.standard_normal((world, 5, 4)) * 10.0 ** rng.integers(-12, 12, (5, 4)))

    def ranges(r, n):
        return (r * n // world, (r + 1) * n // world) if r < world - 1 else (0, n)

    def body(comm):
        return [reduce_rows(comm, a[comm.rank], *ranges(comm.rank, a.shape[1]))
                for a in arrays]

    for shared_memory in (True, False):
        for r, got in enumerate(_ranks(world, body, shared_memory=shared_memory)):
            assert not isinstance(got, BaseException), got
            for a, part in zip(arrays, got):
                lo, hi = ranges(r, a.shape[1])
                want = a[0, lo:hi].copy()
                for other in a[1:]:
                    want += other[lo:hi]
                assert part.dtype == want.dtype and part.tobytes() == want.tobytes()


@pytest.mark.parametrize("n_features", [1, 7])
@pytest.mark.parametrize("growth", ["leafwise", "depthwise"])
@pytest.mark.parametrize("counts", ["rows", "hessian"])  # two-word / one-word (deferred) bins
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "driver"])
def test_distributed_grower_on_shared_memory_grows_the_local_tree(n_features, growth, counts,
                                                                  compiled):
    # three thread ranks, each with a third of the rows: the tree is the one-process tree,
    # node for node, whether a leaf-wise tree grows in one call a worker (each rank
    # searching its share of the features: rank 0 and 1 own none of a single feature) or
    # through the driver (a batch's histograms in one all-reduce)

    world, n = 3, 900
    rng = np.random.default_rng(n_features)
    X = rng.integers(0, 8, (n, n_features)).astype(np.uint8)
    X[rng.random((n, n_features)) < 0.1] = 9  # the missing bin
    grad = (rng.standard_normal(n) + X[:, 0] * 0.3).astype(np.float32)
    hess = rng.uniform(0.5, 1.5, n).astype(np.float32)
    kw = dict(n_bins=np.full(n_features, 8), missing_bin=9,
              has_missing=np.ones(n_features, bool), growth=growth, max_leaves=12,
              max_depth=None if growth == "leafwise" else 4, min_samples_leaf=5,
              min_samples_leaf_counts=counts, hist_mode="quantised")
    local = TreeGrower(X, grad, hess, **kw).grow()
    shards = np.array_split(np.arange(n), world)

    def body(comm):
        rows = shards[comm.rank]
        return comm.kind, TreeGrower(np.ascontiguousarray(X[rows]), grad[rows], hess[rows],
                                     communicator=comm, compiled=compiled, **kw).grow()

    for kind, tree in _ranks(world, body):
        assert kind == "shared-memory"
        for name in ("feature", "bin_threshold", "default_left", "left", "right", "value",
                     "gain", "count"):
            np.testing.assert_array_equal(getattr(tree, name), getattr(local, name), name)
    assert local.n_leaves > 3


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("case", ["depth-limit", "rows-and-features", "threads", "leaves"])
@pytest.mark.parametrize("share", [True, False], ids=["feature-share", "all-features"])
def test_compiled_distributed_tree_is_the_local_one(monkeypatch, world, case, share):
    # grow_leafwise_distributed on uneven shards (one empty): children the depth limit
    # stops (their counts summed at the end), a query subsample and a column sample, the
    # parallel kernels, a tree stopped by max_leaves; every rank's rows land in the leaves
    # the one-process tree puts them in
    import skltr._gbdt.grower_cpu as grower_mod

    monkeypatch.setattr(grower_mod, "DISTRIBUTED_FEATURE_SHARE", share)
    calls = []
    real = grower_mod.grow_leafwise_distributed
    monkeypatch.setattr(grower_mod, "grow_leafwise_distributed",
                        lambda *a: calls.append(1) or real(*a))
    n, n_features = 3000, 12
    rng = np.random.default_rng(world)
    X = rng.integers(0, 16, (n, n_features)).astype(np.uint8)
    X[rng.random((n, n_features)) < 0.05] = 17  # the missing bin
    grad = (rng.standard_normal(n) + X[:, 0] * 0.2 - X[:, 5] * 0.1).astype(np.float32)
    hess = rng.uniform(0.5, 1.5, n).astype(np.float32)
    kw = dict(n_bins=np.full(n_features, 16), missing_bin=17,
              has_missing=np.ones(n_features, bool), max_leaves=24, min_samples_leaf=10,
              hist_mode="quantised")
    rows = None
    if case == "depth-limit":
        kw["max_depth"] = 3
    elif case == "rows-and-features":
        rows = np.sort(rng.choice(n, 2000, replace=False))
        kw["feature_mask"] = rng.random(n_features) < 0.6
    elif case == "threads":
        kw["n_threads"] = 2
    else:
        kw.update(max_leaves=6, min_samples_leaf_counts="rows")
    local = TreeGrower(X, grad, hess, rows=rows, **kw).grow()
    cuts = [0, 0, *sorted(rng.choice(np.arange(1, n), world - 2, replace=False)), n]
    shards = [np.arange(a, b) for a, b in zip(cuts[:-1], cuts[1:])]  # rank 0's empty

    def body(comm):
        mine = shards[comm.rank]
        sub = None if rows is None else np.flatnonzero(np.isin(mine, rows))
        return TreeGrower(np.ascontiguousarray(X[mine]), grad[mine], hess[mine], rows=sub,
                          communicator=comm, **kw).grow()

    for r, tree in enumerate(_ranks(world, body)):
        assert not isinstance(tree, BaseException), tree
        for name in ("feature", "bin_threshold", "default_left", "left", "right", "value",
                     "gain", "count"):
            np.testing.assert_array_equal(getattr(tree, name), getattr(local, name), name)
        mine = shards[r] if rows is None else np.intersect1d(shards[r], rows)
        want = local.leaf_of_row[mine if rows is None else np.searchsorted(rows, mine)]
        np.testing.assert_array_equal(tree.leaf_of_row, want)
    assert len(calls) == world and local.n_leaves >= (6 if case == "leaves" else 8)


def test_a_rank_failing_inside_the_compiled_tree_raises_on_every_rank():
    # a rank fails at its third reduction inside grow_leafwise_distributed (an objmode
    # call): its error leaves the numba call, and the others raise ConnectionError there
    # instead of waiting for it
    n, n_features = 900, 4
    rng = np.random.default_rng(0)
    X = rng.integers(0, 8, (n, n_features)).astype(np.uint8)
    grad = rng.standard_normal(n).astype(np.float32)
    kw = dict(n_bins=np.full(n_features, 8), missing_bin=9,
              has_missing=np.ones(n_features, bool), max_leaves=8, hist_mode="quantised")

    class Failing:
        def __init__(self, comm):
            self.comm, self.world, self.rank, self.calls = comm, comm.world, comm.rank, 0

        def allreduce_sum(self, arr):
            return self.comm.allreduce_sum(arr)

        def allreduce_max(self, arr):
            return self.comm.allreduce_max(arr)

        def reduce_rows_sum(self, arr, lo, hi):
            self.calls += 1
            if self.calls == 3:
                self.comm.close()
                raise RuntimeError("this rank failed")
            return self.comm.reduce_rows_sum(arr, lo, hi)

    def body(comm):
        rows = slice(comm.rank, None, 3)
        return TreeGrower(np.ascontiguousarray(X[rows]), grad[rows], np.ones(300, np.float32),
                          communicator=Failing(comm) if comm.rank == 2 else comm, **kw).grow()

    out = _ranks(3, body)
    assert isinstance(out[2], RuntimeError) and "this rank failed" in str(out[2])
    assert all(isinstance(e, ConnectionError) for e in out[:2]), out


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("shared_memory", [True, False], ids=["shared-memory", "tcp-star"])
def test_position_sums_over_ranks_are_the_one_process_sums(world, shared_memory):
    # learning from clicks on Dask: each rank sums its rows' costs per position exactly and
    # the accumulators are all-reduced; the rounded sums are the one-process bits. Rank 0
    # holds only the tiny values and rank 1 only the huge ones (their limbs differ: the
    # reduction spans both), the last rank holds no row.
    from skltr._gbdt.position_bias import position_sums

    rng = np.random.default_rng(world)
    n, k = 4000, 7
    position = rng.integers(0, k + 2, n)  # some rows shown below the tracked positions
    scale = np.where(np.arange(n) < n // 2, 1e-200, 1e200)
    li = rng.standard_normal(n) * scale
    grad = rng.standard_normal(n).astype(np.float32)
    local, local_count = position_sums((li, grad), position, k)
    shards = np.array_split(np.arange(n), world - 1) + [np.arange(0)]

    def body(comm):
        rows = shards[comm.rank]
        return position_sums((li[rows], grad[rows]), position[rows], k, comm)

    for sums, count in _ranks(world, body, shared_memory=shared_memory):
        for got, want in zip(sums, local):
            assert got.tobytes() == want.tobytes()
        np.testing.assert_array_equal(count, local_count)
    np.testing.assert_array_equal(local_count, np.bincount(position, minlength=k + 2)[:k])


def test_the_segment_is_private_and_unlinked_once_every_rank_attached(tmp_path):
    seen = {}
    real_attach = shm._attach

    def attach(path, size):
        st = os.stat(path)
        seen.update(mode=st.st_mode & 0o777, folder=os.stat(os.path.dirname(path)).st_mode
                    & 0o777, name=os.path.basename(path))
        return real_attach(path, size)

    def body(comm):
        total = comm.allreduce_sum(np.arange(5) + comm.rank)  # rank 0 is past connect
        return comm.kind, os.listdir(tmp_path), total  # nothing left to find

    shm._attach, real = attach, shm._attach
    try:
        out = _ranks(3, body, folder=str(tmp_path))
    finally:
        shm._attach = real
    for kind, listing, total in out:
        assert kind == "shared-memory" and listing == []
        np.testing.assert_array_equal(total, 3 * np.arange(5) + 3)
    assert seen["mode"] == 0o600 and seen["folder"] == 0o700 and len(seen["name"]) == 32
    assert os.listdir(tmp_path) == []


def test_a_rank_that_cannot_attach_keeps_everyone_on_the_star(tmp_path, monkeypatch):
    real = shm._attach
    monkeypatch.setattr(shm, "_attach", lambda path, size: None if
                        threading.current_thread().name == "rank2" else real(path, size))
    out = _ranks(3, lambda c: (c.kind, c.allreduce_sum(np.ones(4) * c.rank)),
                 folder=str(tmp_path))
    for kind, total in out:
        assert kind == "tcp-star"
        np.testing.assert_array_equal(total, np.full(4, 3.0))
    assert os.listdir(tmp_path) == []


def test_a_bad_offer_is_refused_and_the_segment_removed(tmp_path, monkeypatch):
    real = shm._check_offer

    def check(offer, world):
        if threading.current_thread().name == "rank1":
            offer = offer.copy()
            offer[1] += shm._PAGE  # a size that is not 2 x world x region
        return real(offer, world)

    monkeypatch.setattr(shm, "_check_offer", check)
    out = _ranks(2, lambda c: c.kind, folder=str(tmp_path))
    assert isinstance(out[1], ValueError) and "refused" in str(out[1])
    assert isinstance(out[0], ConnectionError)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("bad", [
    dict(region=shm._MAX_REGION_BYTES + shm._PAGE), dict(region=1000), dict(region=0),
    dict(size=-1), dict(n_path=0), dict(n_path=shm._MAX_PATH + 1), dict(path_byte=0),
    dict(path_byte=256), dict(world=0)])
def test_check_offer_refuses_bad_sizes(bad):
    region = bad.get("region", shm.REGION_BYTES)
    world = bad.get("world", 3)
    offer = np.zeros(3 + shm._MAX_PATH, np.int64)
    n_path = bad.get("n_path", 5)
    offer[:3] = region, bad.get("size", shm.segment_bytes(world, region)), n_path
    offer[3:3 + min(max(n_path, 0), shm._MAX_PATH)] = bad.get("path_byte", ord("a"))
    with pytest.raises(ValueError, match="refused"):
        shm._check_offer(offer, world)


def test_attach_refuses_what_is_not_a_private_file_of_the_right_size(tmp_path):
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    path = folder / "segment"
    path.write_bytes(bytes(8192))
    path.chmod(0o600)
    mm = shm._attach(str(path), 8192)
    assert mm is not None
    mm.close()
    assert shm._attach(str(path), 4096) is None  # another size than the offer's
    assert shm._attach(str(folder / ".." / "private" / "segment"), 8192) is None
    assert shm._attach("segment", 8192) is None  # not absolute
    link = folder / "link"
    link.symlink_to(path)
    assert shm._attach(str(link), 8192) is None
    path.chmod(0o644)
    assert shm._attach(str(path), 8192) is None
    path.chmod(0o600)
    folder.chmod(0o755)
    assert shm._attach(str(path), 8192) is None
    folder.chmod(0o700)
    assert shm._attach(str(folder / "missing"), 8192) is None


@pytest.mark.parametrize("spin", [0.0, 0.05], ids=["sleep", "poll"])
def test_a_closed_peer_raises_connection_error_not_a_hang(monkeypatch, spin):
    # the barrier's polling sees a closed peer as its sleeping wait does
    from skltr.dask import _collective

    monkeypatch.setattr(_collective, "SPIN_S", spin)

    def body(comm):
        comm.allreduce_sum(np.ones(3))
        if comm.rank == 2:
            return "left"  # closes its communicator, as a task that fails does
        comm.allreduce_sum(np.ones(3))

    out = _ranks(3, body)
    assert out[2] == "left"
    assert all(isinstance(e, ConnectionError) for e in out[:2])


def test_a_dead_process_raises_connection_error_at_the_next_reduction():
    port = free_port()
    child = textwrap.dedent(f"""
        import os
        import numpy as np
        from skltr.dask._collective_shm import connect
        comm = connect(1, 2, "127.0.0.1", {port}, 20.0)
        comm.allreduce_sum(np.ones(10, np.int64))
        os._exit(0)  # dies: no close
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", child], env=env)
    try:
        out = _ranks_one(port)
    finally:
        proc.wait(TIMEOUT)
    assert out[0] == "shared-memory"
    np.testing.assert_array_equal(out[1], np.full(10, 2))
    assert isinstance(out[2], ConnectionError)


def _ranks_one(port):
    """Rank 0 of a world of 2 in a thread: kind, the first sum, the second's exception."""
    out = []

    def rank0():
        with shm.connect(0, 2, "127.0.0.1", port, 20.0) as comm:
            out.extend([comm.kind, comm.allreduce_sum(np.ones(10, np.int64))])
            try:
                comm.allreduce_sum(np.ones(10, np.int64))
            except ConnectionError as exc:
                out.append(exc)

    t = threading.Thread(target=rank0)
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive(), "the all-reduce hung on a dead peer"
    return out
