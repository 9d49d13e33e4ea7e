"""Resolve the ``device`` parameter shared by every estimator.

Accepted values are ``"cpu"``, ``"cuda"``, ``"cuda:N"`` and ``"auto"``, and ``"cuda:all"``
(every visible GPU) for the estimators that split their work over GPUs (they pass
``allow_all=True``; the others refuse it with a ``ValueError`` that names them). One resolver
for every estimator, so that a device string means the same everywhere and its errors read the
same. CuPy is imported only here and by the CUDA back-ends (:mod:`skltr._gpu`, the engines'
``kernels_cuda`` modules), and only when a CUDA device is asked for, so that ``import skltr``
stays fast and works on machines without a GPU.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from dataclasses import dataclass

# skltr installs from a clone of its repository (it is not on PyPI): the extra is named on
# the folder, ".[gpu]", not "skltr[gpu]"
_GPU_INSTALL_HINT = ('pip install ".[gpu]" (CUDA 12) or ".[gpu-cuda13]" (CUDA 13) from a clone '
                     'of skltr')
_DEVICE_RE = re.compile(r"^(cpu|cuda|auto)(?::(\d+|all))?$")
_ACCEPTED = "'cpu', 'cuda', 'cuda:N' (N a GPU index) or 'auto'"
_ACCEPTED_ALL = "'cpu', 'cuda', 'cuda:N' (N a GPU index), 'cuda:all' (every visible GPU) or 'auto'"


@dataclass(frozen=True)
class Device:
    """A resolved device: ``kind`` is ``"cpu"`` or ``"cuda"``; ``index`` is the GPU ordinal;
    ``all_gpus``: every visible GPU (``"cuda:all"``; ``index`` is then 0, the first of them).

    ``str(device)`` is the device string it was resolved from, in canonical form (``"cpu"``,
    ``"cuda:N"``, ``"cuda:all"``): estimators store it as ``device_`` and resolve it again
    after unpickling or loading a model file.
    """

    kind: str
    index: int = 0
    all_gpus: bool = False

    @property
    def is_gpu(self) -> bool:
        return self.kind == "cuda"

    def __str__(self) -> str:
        if self.kind == "cpu":
            return "cpu"
        return "cuda:all" if self.all_gpus else f"cuda:{self.index}"


def is_cupy_available() -> bool:
    """Return True when CuPy can be imported (does not import it)."""
    return importlib.util.find_spec("cupy") is not None


def _cuda_device_count() -> int:
    import cupy  # noqa: PLC0415 - imported only when a GPU is requested

    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except cupy.cuda.runtime.CUDARuntimeError:
        return 0


def names_gpu(device) -> bool:
    """Whether ``device`` asks for a GPU (``"cuda"``, ``"cuda:N"``, ``"cuda:all"`` or a GPU
    :class:`Device`), read from the string alone: neither CuPy nor a GPU is looked for, and
    nothing is raised (``"auto"``, ``"cpu"`` and anything not understood: False).

    For code that must decide before it can resolve the device, or without resolving it: a
    front-end whose GPUs are on other machines, a fitted ``device_`` that may name a GPU this
    machine lacks.
    """
    if isinstance(device, Device):
        return device.is_gpu
    if not isinstance(device, str):
        return False
    match = _DEVICE_RE.match(device.strip().lower())
    return match is not None and match.group(1) == "cuda"


def resolve_device(device, *, allow_all=False, estimator=None) -> Device:
    """Turn a ``device`` parameter into a :class:`Device`, or raise a helpful error.

    Parameters
    ----------
    device : {"cpu", "cuda", "cuda:N", "cuda:all", "auto"} or Device
        ``"auto"`` picks the first GPU when CuPy and a GPU are present, and otherwise falls
        back to the CPU with a :class:`UserWarning`. ``"cuda"`` never falls back.
        ``"cuda:all"`` (every visible GPU) needs CuPy and a GPU as ``"cuda"`` does.
    allow_all : bool, default=False
        Whether the caller accepts ``"cuda:all"``; when False, ``"cuda:all"`` (or a
        :class:`Device` with ``all_gpus``) raises a ``ValueError``.
    estimator : str, optional
        Named in that ``ValueError`` (the estimator that refuses ``"cuda:all"``).

    Returns
    -------
    Device

    Examples
    --------
    >>> resolve_device("cpu")
    Device(kind='cpu', index=0, all_gpus=False)
    """
    if isinstance(device, Device):
        if device.all_gpus and not allow_all:
            raise ValueError(_all_refused(device, estimator))
        return device
    if not isinstance(device, str):
        raise TypeError(
            f"device must be a string such as 'cpu', 'cuda', 'cuda:1' or 'auto'; "
            f"got {device!r} of type {type(device).__name__}."
        )
    match = _DEVICE_RE.match(device.strip().lower())
    if match is None or (match.group(1) != "cuda" and match.group(2) is not None):
        raise ValueError(
            f"device={device!r} is not understood; use "
            f"{_ACCEPTED_ALL if allow_all else _ACCEPTED}."
        )
    all_gpus = match.group(2) == "all"
    if all_gpus and not allow_all:
        raise ValueError(_all_refused(device, estimator))
    kind, index = match.group(1), 0 if all_gpus else int(match.group(2) or 0)
    if kind == "cpu":
        return Device("cpu")
    if kind == "auto":
        if is_cupy_available() and _cuda_device_count() > 0:
            return Device("cuda", 0)
        reason = "CuPy is not installed" if not is_cupy_available() else "no CUDA GPU is visible"
        warnings.warn(
            f"device='auto' fell back to the CPU because {reason}.", UserWarning, stacklevel=3
        )
        return Device("cpu")
    if not is_cupy_available():
        raise ImportError(
            f"device={device!r} needs CuPy, which is not installed. Install the GPU extra: "
            f"{_GPU_INSTALL_HINT}; or use device='cpu' (or 'auto' to fall back)."
        )
    n_gpus = _cuda_device_count()
    if n_gpus == 0:
        raise RuntimeError(
            f"device={device!r} was requested but CuPy sees no CUDA GPU (check the NVIDIA "
            f"driver and CUDA_VISIBLE_DEVICES); use device='cpu' or 'auto'."
        )
    if index >= n_gpus:
        raise ValueError(
            f"device={device!r} asks for GPU {index}, but only {n_gpus} GPU(s) are visible "
            f"(valid: cuda:0 .. cuda:{n_gpus - 1})."
        )
    return Device("cuda", index, all_gpus)


def _all_refused(device, estimator) -> str:
    """The message of a ``"cuda:all"`` that the caller does not accept."""
    what = f"device={str(device)!r} (every visible GPU)"
    refused = f"{estimator} does not support {what}" if estimator else \
        f"{what} is not supported here"
    return f"{refused}; use {_ACCEPTED}."
