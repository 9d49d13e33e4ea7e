"""The GPU communicator of a Dask fit's training ranks: NCCL sums of CuPy arrays.

The CUDA back-end of :mod:`skltr.dask._collective` (imported by a GPU rank only: it imports
CuPy).
"""

from __future__ import annotations

import hashlib
import socket

import cupy
import numpy as np

__all__ = ["GPUCommunicator"]


class GPUCommunicator:
    """A :class:`SocketCommunicator` plus ``allreduce_sum_device``: NCCL sums of CuPy arrays.

    The GPU grower sums its histograms with ``allreduce_sum_device`` where the communicator
    has it (in place, on the current stream: GPU to GPU, no host copy), and through the host
    otherwise. NCCL is used when CuPy has it and every rank has a GPU of its own (NCCL
    refuses two ranks on one GPU); the ranks decide together, so all take the same path.
    ``self.nccl`` says which. Histograms are int64, so the sums are exact in NCCL's order.

    Parameters
    ----------
    host : SocketCommunicator
        The ranks' host communicator (small sums, and the exchange of NCCL's unique id).
    device_index : int
        This rank's GPU.
    """

    def __init__(self, host, device_index):
        self.host, self.world, self.rank = host, host.world, host.rank
        self.device_calls = 0
        self._comm = None
        nccl = _nccl_module()
        # every rank's GPU (host name and PCI bus id) and whether it has NCCL, so that all
        # ranks decide alike
        gpu = f"{socket.gethostname()}/{cupy.cuda.Device(int(device_index)).pci_bus_id}"
        ids = np.zeros((self.world, 17), np.int64)
        ids[self.rank, :16] = np.frombuffer(
            hashlib.blake2b(gpu.encode(), digest_size=16).digest(), np.uint8)
        ids[self.rank, 16] = nccl is not None
        ids = host.allreduce_sum(ids)
        self.nccl = bool(ids[:, 16].all()) and len({r.tobytes() for r in ids[:, :16]}) == \
            self.world
        if not self.nccl:
            return
        # rank 0's unique id (NCCL_UNIQUE_ID_BYTES = 128) to every rank; CuPy gives it as
        # bytes or as a tuple of signed chars, and takes it back in the same form
        uid = np.zeros(129, np.int64)
        if self.rank == 0:
            made = nccl.get_unique_id()
            as_bytes = isinstance(made, (bytes, bytearray))
            uid[0] = as_bytes
            uid[1:] = np.frombuffer(bytes(made), np.uint8) if as_bytes else \
                np.asarray(made, np.int64) & 0xFF
        uid = host.allreduce_sum(uid)
        raw = uid[1:].astype(np.uint8)
        made = raw.tobytes() if uid[0] else tuple(int(v) for v in raw.view(np.int8))
        with cupy.cuda.Device(int(device_index)):
            self._comm = nccl.NcclCommunicator(self.world, made, self.rank)
        self._nccl = nccl

    @property
    def calls(self):
        return self.host.calls

    @property
    def seconds(self):
        return self.host.seconds

    def allreduce_sum(self, arr):
        return self.host.allreduce_sum(arr)

    def allreduce_max(self, arr):
        return self.host.allreduce_max(arr)

    def allreduce_sum_device(self, arr):
        """Sum the C-contiguous int64 CuPy array ``arr`` over the ranks, in place."""
        assert arr.dtype == np.int64 and arr.flags.c_contiguous
        self.device_calls += 1
        if self._comm is None:  # through the host
            arr[...] = cupy.asarray(self.host.allreduce_sum(arr.get()))
            return
        nccl = self._nccl
        self._comm.allReduce(arr.data.ptr, arr.data.ptr, arr.size, nccl.NCCL_INT64,
                             nccl.NCCL_SUM, cupy.cuda.get_current_stream().ptr)


def _nccl_module():
    """CuPy's NCCL bindings, or None where CuPy was built without them or NCCL is missing."""
    try:
        from cupy.cuda import nccl  # noqa: PLC0415 - CuPy may be built without it
    except ImportError:
        return None
    return nccl if getattr(nccl, "available", False) else None
