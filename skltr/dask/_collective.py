"""The all-reduce of a Dask fit: a star of TCP connections between the training tasks.

One training task runs on each worker; rank 0 listens on a port of its worker (found by the
driver, as LightGBM's Dask interface does), the others connect to it. An all-reduce sends
every rank's array to rank 0, which combines them **in rank order** and sends the result
back. The histograms are int64 (exact in any order); the one float reduction the loop makes
(:class:`~skltr._engine.shard.ShardEvaluator`) has one non-zero term per element, so it is
exact too. A peer that dies closes its sockets, and the others raise ``ConnectionError`` at
their next reduction instead of hanging.

GPU training tasks sum their histograms GPU to GPU through NCCL
(:class:`skltr.dask._collective_cuda.GPUCommunicator`) where CuPy has it and each has a GPU
of its own; the star carries the rest.

Measured on the GPU machine's 16 cores (``benchmarks/train_dask.py``): see
``docs/user_guide/dask.rst``. A star costs ``2 (world - 1)`` messages per reduction at rank
0; for the few workers of one machine it is faster than a ring, whose ``2 (world - 1)``
steps are sequential.
"""

from __future__ import annotations

import socket
import struct
import time

import numpy as np

__all__ = ["SocketCommunicator", "free_port"]

_HEADER = struct.Struct("<q")
_SYNC = struct.Struct("<qqq")
_GO, _OUT_OF_STEP = b"\x01", b"\x00"
_BUFFER_BYTES = 4 << 20
_CLOSED = "a training worker closed its connection mid-fit (it died or failed)"


def free_port() -> int:
    """A TCP port that is free on this host now (run on rank 0's worker by the driver)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


#: seconds a barrier polls its socket before it sleeps in the kernel (:meth:`SocketCommunicator.
#: sync`): a wake-up costs tens of microseconds, and a distributed tree meets at a barrier
#: twice a split. Measured on 4 workers x 4 threads of a 16-core host, 1M x 136, 200 trees
#: (``benchmarks/results/train_dask-h200-host-4x4-variants-d246141-2026-11-28.json``,
#: interleaved): 18.03 / 19.03 s polling against 19.92 / 18.87 s sleeping at once, and
#: 19.23 s against 22.82 s in an earlier run (``...-8c68a10-...``). 0: sleep at once.
SPIN_S = 200e-6


def _recv_into(sock, view, spin=0.0):
    """Fill ``view`` from ``sock``; first poll it for ``spin`` seconds (no data yet: keep
    polling), then block."""
    got = 0
    if spin > 0 and hasattr(socket, "MSG_DONTWAIT"):
        deadline = time.perf_counter() + spin
        while got < len(view) and time.perf_counter() < deadline:
            try:
                n = sock.recv_into(view[got:], 0, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            if n == 0:
                raise ConnectionError(_CLOSED)
            got += n
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError(_CLOSED)
        got += n


class SocketCommunicator:
    """``allreduce_sum`` / ``allreduce_max`` between the ``world`` training tasks of a fit.

    Parameters
    ----------
    rank, world : int
        This task's rank and the number of tasks.
    host, port : str, int
        Rank 0's address.
    timeout : float
        Seconds to wait for the connections to be made.

    Use as a context manager: leaving it closes the connections.
    """

    #: which all-reduce this is (``timings_["communicator"]``)
    kind = "tcp-star"

    def __init__(self, rank, world, host, port, timeout=120.0):
        #: workers in all (the grower reads it: more than one means a distributed fit)
        self.rank, self.world = int(rank), int(world)
        self.peers = []
        self.calls, self.seconds = 0, 0.0  # all-reduces made, seconds spent in them
        if self.world == 1:
            return
        if self.rank == 0:
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("", int(port)))
            server.listen(self.world)
            server.settimeout(timeout)
            peers = {}
            try:
                while len(peers) < self.world - 1:
                    conn, _ = server.accept()
                    conn.settimeout(None)
                    buf = bytearray(_HEADER.size)
                    _recv_into(conn, memoryview(buf))
                    peers[_HEADER.unpack(buf)[0]] = conn
            except socket.timeout as exc:
                raise TimeoutError(
                    f"{self.world - 1 - len(peers)} of the {self.world - 1} other training "
                    f"workers did not connect within {timeout} s") from exc
            finally:
                server.close()
            self.peers = [peers[r] for r in range(1, self.world)]
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    sock = socket.create_connection((host, int(port)), timeout=5.0)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"could not connect to the rank-0 training worker "
                                           f"at {host}:{port} within {timeout} s") from None
                    time.sleep(0.05)
            sock.settimeout(None)
            sock.sendall(_HEADER.pack(self.rank))
            self.peers = [sock]
        for sock in self.peers:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            # room for a whole histogram (136 features: 280 kB) in flight, so that every
            # rank's send completes while rank 0 still reads another's
            for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
                sock.setsockopt(socket.SOL_SOCKET, opt, _BUFFER_BYTES)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for sock in self.peers:
            try:
                sock.close()
            except OSError:
                pass
        self.peers = []

    def sync(self, a=0, b=0, c=0):
        """A barrier over the star that also checks that every rank passed the same words.

        Each rank sends its three words to rank 0 and waits for its answer: the barrier of
        :class:`~skltr.dask._collective_shm.SharedMemoryCommunicator` (two messages of a few
        bytes a rank, and the kernel wakes a waiting rank after :data:`SPIN_S` seconds of
        polling). A peer that died closes its socket: ``ConnectionError``, not a hang.
        """
        if self.world == 1:
            return
        mine = _SYNC.pack(a, b, c)
        if self.rank == 0:
            theirs, same = bytearray(_SYNC.size), True
            for sock in self.peers:
                _recv_into(sock, memoryview(theirs), SPIN_S)
                same &= theirs == mine
            for sock in self.peers:
                sock.sendall(_GO if same else _OUT_OF_STEP)
        else:
            sock = self.peers[0]
            sock.sendall(mine)
            answer = bytearray(1)
            _recv_into(sock, memoryview(answer), SPIN_S)
            same = bytes(answer) == _GO
        if not same:
            raise RuntimeError("the training workers are out of step (an all-reduce of "
                               "different sizes or types); this is a bug in skltr.dask")

    def allreduce_sum(self, arr):
        """Element-wise sum over all ranks (rank order)."""
        return self._allreduce(arr, np.add)

    def allreduce_max(self, arr):
        """Element-wise maximum over all ranks."""
        return self._allreduce(arr, np.maximum)

    def _allreduce(self, arr, op):
        arr = np.ascontiguousarray(arr)
        if self.world == 1:
            return arr
        t0 = time.perf_counter()
        try:
            return self._exchange(arr, op)
        finally:
            self.calls += 1
            self.seconds += time.perf_counter() - t0

    def _exchange(self, arr, op):
        header = _HEADER.pack(arr.nbytes)
        if self.rank == 0:
            out = arr.copy()
            buf = np.empty_like(arr)
            for sock in self.peers:
                self._recv_array(sock, buf, arr.nbytes)
                op(out, buf, out=out)
            for sock in self.peers:
                sock.sendall(header)
                sock.sendall(memoryview(out).cast("B"))
            return out
        sock = self.peers[0]
        sock.sendall(header)
        sock.sendall(memoryview(arr).cast("B"))
        out = np.empty_like(arr)
        self._recv_array(sock, out, arr.nbytes)
        return out

    @staticmethod
    def _recv_array(sock, out, nbytes):
        head = bytearray(_HEADER.size)
        _recv_into(sock, memoryview(head))
        if _HEADER.unpack(head)[0] != nbytes:
            raise RuntimeError("the training workers are out of step (an all-reduce of "
                               "different sizes); this is a bug in skltr.dask")
        if nbytes:
            _recv_into(sock, memoryview(out).cast("B"))
