"""The all-reduce of training ranks that share a host: one shared-memory segment.

The TCP star (:class:`~skltr.dask._collective.SocketCommunicator`) sends every rank's array
through rank 0: ``2 (world - 1)`` copies of a histogram (557 kB for 136 features) through
the loopback TCP stack at rank 0 per all-reduce, one rank after another. Ranks of one host
instead share one segment of two sets of ``world`` regions, region ``r`` of a set being
rank ``r``'s, and an all-reduce is: every rank copies its array into its region of this
call's set; one barrier; every rank sums the set's regions **in rank order** straight into
its result (the star's order, so a float sum is the star's bit for bit). The sets alternate
from call to call: a rank writes a set again only after the next call's barrier, which every
rank reaches only once it has read that set. One barrier a call, as the star has one round
trip (a reduce-scatter, each rank summing a slice, needs two: measured on 2 busy cores, their
wake-ups cost more than the sums). Arrays larger than a region go in region-sized steps.

The barriers are the star's (:meth:`SocketCommunicator.sync`): a few bytes to rank 0 and
back, which also check that every rank reduces the same size and type. A waiting rank
polls its socket for ``_collective.SPIN_S`` (200 us), then sleeps in the kernel instead of
spinning longer on the cores the histogram kernels need, and a peer
that dies closes its socket, so the others raise ``ConnectionError`` at their next
reduction, as on the star.

:func:`connect` makes the star, then moves to shared memory when every rank is on this
host (same host name, boot id and user) and every rank could attach the segment; else the
star carries the fit. The segment (``docs/security.rst``):

* is a file of mode 0600 with an unguessable name (``secrets.token_hex``) in a folder of
  mode 0700 that rank 0 creates (``tempfile.mkdtemp``, in ``/dev/shm`` where it can);
* is reserved whole when created (``posix_fallocate``: a full ``/dev/shm`` is an error now,
  not a ``SIGBUS`` mid-fit), its size bounded and checked by every rank against the one its
  own world and region size give: a bad offer is refused with ``ValueError``;
* is opened by the other ranks only after checking that folder and file are this user's,
  not links, and not open to group or others;
* is unlinked, with its folder, as soon as every rank has answered (attached or not), and on
  every error path: it lives on only as the ranks' mappings, which close with the fit.
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import secrets
import socket
import stat
import tempfile
import time

import numpy as np

from ._collective import SocketCommunicator

__all__ = ["SharedMemoryCommunicator", "connect", "host_identity"]

#: bytes of one region at least: a 136-feature histogram (557 kB) in one step
REGION_BYTES = 1 << 20
#: at most: a leaf-wise batch of eight one-word 136-feature histograms (2.3 MB) in one step
#: (each step is a barrier)
_BATCH_REGION_BYTES = 4 << 20
#: the segment's size that the regions may grow to (/dev/shm is memory)
_GROW_SEGMENT_BYTES = 64 << 20
_MAX_REGION_BYTES = 64 << 20
_MAX_WORLD = 4096
_MAX_PATH = 1024
_PAGE = 4096
_OPS = {"sum": (1, np.add), "max": (2, np.maximum)}


def host_identity() -> bytes:
    """16 bytes naming this host, boot and user: ranks with equal identities share memory."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            boot = fh.read(64).strip()
    except OSError:
        boot = ""
    me = f"{socket.gethostname()}\0{boot}\0{os.getuid() if hasattr(os, 'getuid') else ''}"
    return hashlib.blake2b(me.encode(), digest_size=16).digest()


def region_bytes(world: int) -> int:
    """The region size for ``world`` ranks: a batch's histograms in one step while the
    segment stays within ``_GROW_SEGMENT_BYTES``, and never under ``REGION_BYTES``."""
    grown = _GROW_SEGMENT_BYTES // (2 * max(int(world), 1)) // _PAGE * _PAGE
    return max(REGION_BYTES, min(_BATCH_REGION_BYTES, grown))


def segment_bytes(world: int, region: int) -> int:
    """Bytes of the segment of ``world`` ranks with regions of ``region`` bytes."""
    return 2 * int(world) * int(region)


def connect(rank, world, host, port, timeout=120.0, *, shared_memory=True, folder=None):
    """The communicator of one training rank: shared memory where it can, else the star.

    Parameters
    ----------
    rank, world, host, port, timeout
        As for :class:`~skltr.dask._collective.SocketCommunicator` (made first: the
        set-up's messages and the barriers go through it).
    shared_memory : bool
        False keeps the star (the benchmarks' comparison).
    folder : str or None
        Where rank 0 makes the segment's private folder; None: ``/dev/shm`` where it is a
        writable folder, else the temporary folder. Every rank must pass the same.

    Returns
    -------
    SharedMemoryCommunicator or SocketCommunicator
        Decided alike by every rank; ``kind`` says which.
    """
    star = SocketCommunicator(rank, world, host, port, timeout)
    try:
        if not shared_memory or star.world == 1 or not _one_host(star):
            return star
        segment = _share_segment(star, folder)
        return star if segment is None else SharedMemoryCommunicator(star, *segment)
    except BaseException:
        star.close()
        raise


def _one_host(star):
    """Whether every rank has this rank's :func:`host_identity` (one exchange on the star)."""
    ids = np.zeros((star.world, 2), np.int64)
    ids[star.rank] = np.frombuffer(host_identity(), np.int64)
    ids = star.allreduce_sum(ids)  # one non-zero term per element: exact
    return bool((ids == ids[0]).all())


def _share_segment(star, folder):
    """Rank 0 makes the segment and offers it; every rank attaches it or says it could not.

    Returns ``(mmap, region bytes)`` on every rank, or None on every rank when one could not
    (then the star carries the fit). Rank 0 unlinks the file and its folder once every rank
    has answered, and on any error.
    """
    offer = np.zeros(3 + _MAX_PATH, np.int64)  # region bytes, segment bytes, path, path bytes
    made = None
    try:
        if star.rank == 0:
            region = region_bytes(star.world)
            made = _create(star.world, region, folder)
            if made is not None:
                path = made[1].encode()
                offer[:3] = region, segment_bytes(star.world, region), len(path)
                offer[3:3 + len(path)] = np.frombuffer(path, np.uint8)
        offer = star.allreduce_sum(offer)  # rank 0's offer to all (zeros from the others)
        if offer[0] == 0:  # rank 0 could not make it
            return None
        region = _check_offer(offer, star.world)
        mm = made[0] if made is not None else _attach(
            bytes(offer[3:3 + offer[2]].astype(np.uint8)).decode(), int(offer[1]))
        try:
            failed = star.allreduce_sum(np.array([mm is None], np.int64))[0]
        except BaseException:
            if mm is not None:
                mm.close()
            raise
        if failed:
            if mm is not None:
                mm.close()
            return None
        return mm, region
    finally:
        if made is not None:
            _remove(made[1])


def _check_offer(offer, world):
    """The region size of rank 0's offer; ``ValueError`` when the offer is not this rank's
    own arithmetic (a peer of another version, or a bug)."""
    region, size, n_path = (int(v) for v in offer[:3])
    if not (0 < region <= _MAX_REGION_BYTES and region % _PAGE == 0 and 0 < world <= _MAX_WORLD
            and size == segment_bytes(world, region) and 0 < n_path <= _MAX_PATH
            and ((offer[3:3 + n_path] >= 1) & (offer[3:3 + n_path] <= 255)).all()):
        raise ValueError(f"refused the shared-memory segment offered by the rank-0 training "
                         f"worker: regions of {region} bytes, {size} bytes for {world} ranks, "
                         f"a path of {n_path} bytes (regions must be whole pages of at most "
                         f"{_MAX_REGION_BYTES} bytes and the size 2 x world x region)")
    return region


def _default_folder():
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return tempfile.gettempdir()


def _create(world, region, folder):
    """``(mmap, path)`` of a new segment, or None where it cannot be made here."""
    size = segment_bytes(world, region)
    try:
        private = tempfile.mkdtemp(prefix="skltr-allreduce-", dir=folder or _default_folder())
    except OSError:
        return None
    path = os.path.join(private, secrets.token_hex(16))
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise  # full: ENOSPC now rather than SIGBUS at a page touched mid-fit
                os.ftruncate(fd, size)
            mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
    except OSError:
        _remove(path)
        return None
    if len(path.encode()) > _MAX_PATH:
        mm.close()
        _remove(path)
        return None
    return mm, path


def _remove(path):
    """Unlink the segment's file and its private folder (each may be gone already)."""
    for remove, target in ((os.unlink, path), (os.rmdir, os.path.dirname(path))):
        try:
            remove(target)
        except OSError:
            pass


def _private(st, kind):
    """Whether ``st`` (of ``os.lstat`` / ``os.fstat``) is a ``kind`` this user owns, closed
    to group and others."""
    return kind(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _attach(path, size):
    """This rank's mapping of the segment at ``path``, or None where it cannot be opened or
    is not a private file of ``size`` bytes in a private folder."""
    if not os.path.isabs(path) or os.path.normpath(path) != path:
        return None
    try:
        if not _private(os.lstat(os.path.dirname(path)), stat.S_ISDIR):
            return None
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if not _private(st, stat.S_ISREG) or st.st_size != size:
                return None
            return mmap.mmap(fd, size)
        finally:
            os.close(fd)
    except OSError:
        return None


class SharedMemoryCommunicator:
    """``allreduce_sum`` / ``allreduce_max`` of the ranks of one host through one segment.

    Made by :func:`connect`; takes over the star ``star`` (its barriers) and closes it.

    Parameters
    ----------
    star : SocketCommunicator
    mm : mmap.mmap
        The segment: two sets of ``world`` regions of ``region`` bytes.
    region : int
    """

    #: which all-reduce this is (``timings_["communicator"]``)
    kind = "shared-memory"

    def __init__(self, star, mm, region):
        self.star, self.rank, self.world = star, star.rank, star.world
        self.calls, self.seconds = 0, 0.0  # all-reduces made, seconds spent in them
        # of those: barriers passed and seconds in them (waiting for the slowest rank)
        self.barriers, self.barrier_seconds = 0, 0.0
        self._mm, self._region = mm, int(region)
        self._set = 0  # the set of regions of the next step
        whole = np.frombuffer(mm, np.uint8)
        # per region a uint8 view; typed views are cut from these per call
        self._regions = [whole[r * self._region:(r + 1) * self._region]
                         for r in range(2 * self.world)]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Close the star (so that waiting peers raise) and the mapping."""
        self._regions = []  # the views first: a mapping with views cannot close
        mm, self._mm = self._mm, None
        try:
            if mm is not None:
                mm.close()
        except BufferError:
            pass  # a view lives on in the traceback of a failed reduction: unmapped when freed
        finally:
            self.star.close()

    def allreduce_sum(self, arr):
        """Element-wise sum over all ranks (rank order)."""
        return self._allreduce(arr, "sum")

    def allreduce_max(self, arr):
        """Element-wise maximum over all ranks."""
        return self._allreduce(arr, "max")

    def reduce_rows_sum(self, arr, lo, hi):
        """``arr[lo:hi]`` (rows of the first axis) summed over all ranks, in rank order.

        A reduce-scatter's half, one barrier: every rank copies its whole ``arr`` into its
        region and sums only its own rows of every region (ranks pass their own ``lo``,
        ``hi``; the same ``arr`` shape). The distributed split search of
        :mod:`skltr._cpu.grow_distributed` takes each rank's features this way: a quarter
        of the sums on four ranks. An ``arr`` larger than a region takes the all-reduce.
        """
        arr = np.ascontiguousarray(arr)
        if arr.nbytes > self._region:
            return self._allreduce(arr, "sum")[lo:hi]
        if self._mm is None:
            raise ConnectionError("the all-reduce is closed")
        t0 = time.perf_counter()
        try:
            out = np.empty_like(arr[lo:hi])
            row = arr[:1].nbytes
            self._step(arr.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8),
                       arr.dtype, "sum", lo * row)
            return out
        finally:
            self.calls += 1
            self.seconds += time.perf_counter() - t0

    def _allreduce(self, arr, op):
        arr = np.ascontiguousarray(arr)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"the all-reduce takes numbers, not {arr.dtype}")
        if self._mm is None:
            raise ConnectionError("the all-reduce is closed")
        t0 = time.perf_counter()
        try:
            out = np.empty_like(arr)
            src, dst = arr.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8)
            step = self._region - self._region % arr.itemsize
            for lo in range(0, max(arr.nbytes, 1), step):
                self._step(src[lo:lo + step], dst[lo:lo + step], arr.dtype, op)
            return out
        finally:
            self.calls += 1
            self.seconds += time.perf_counter() - t0

    def _step(self, src, dst, dtype, op, at=0):
        """All-reduce the bytes ``src`` (at most a region): ``dst`` gets the reduction of
        bytes ``at`` .. ``at + dst.size`` of every rank's ``src``."""
        code, ufunc = _OPS[op]
        n = src.size
        regions = self._regions[self._set * self.world:(self._set + 1) * self.world]
        self._set ^= 1
        regions[self.rank][:n] = src
        t0 = time.perf_counter()
        self.star.sync(n, dtype.num, code)  # every rank's part is written; same sizes
        self.barriers += 1
        self.barrier_seconds += time.perf_counter() - t0
        if dst.size:
            parts = [r[at:at + dst.size].view(dtype) for r in regions]
            result = dst.view(dtype)
            ufunc(parts[0], parts[1], out=result)
            for part in parts[2:]:  # rank order, as the star sums
                ufunc(result, part, out=result)
