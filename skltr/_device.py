"""Resolve the ``device`` parameter shared by every estimator.

Accepted values are ``"cpu"``, ``"cuda"``, ``"cuda:N"`` and ``"auto"``. CuPy is imported only
here and under :mod:`skltr._gpu`, and only when a CUDA device is asked for, so that
``import skltr`` stays fast and works on machines without a GPU.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from dataclasses import dataclass

_GPU_INSTALL_HINT = 'pip install "skltr[gpu]" (CUDA 12) or "skltr[gpu-cuda13]" (CUDA 13)'
_DEVICE_RE = re.compile(r"^(cpu|cuda|auto)(?::(\d+))?$")


@dataclass(frozen=True)
class Device:
    """A resolved device: ``kind`` is ``"cpu"`` or ``"cuda"``; ``index`` is the GPU ordinal."""

    kind: str
    index: int = 0

    @property
    def is_gpu(self) -> bool:
        return self.kind == "cuda"

    def __str__(self) -> str:
        return "cpu" if self.kind == "cpu" else f"cuda:{self.index}"


def is_cupy_available() -> bool:
    """Return True when CuPy can be imported (does not import it)."""
    return importlib.util.find_spec("cupy") is not None


def _cuda_device_count() -> int:
    import cupy  # noqa: PLC0415 - imported only when a GPU is requested

    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except cupy.cuda.runtime.CUDARuntimeError:
        return 0


def resolve_device(device) -> Device:
    """Turn a ``device`` parameter into a :class:`Device`, or raise a helpful error.

    Parameters
    ----------
    device : {"cpu", "cuda", "cuda:N", "auto"} or Device
        ``"auto"`` picks the first GPU when CuPy and a GPU are present, and otherwise falls
        back to the CPU with a :class:`UserWarning`. ``"cuda"`` never falls back.

    Returns
    -------
    Device

    Examples
    --------
    >>> resolve_device("cpu")
    Device(kind='cpu', index=0)
    """
    if isinstance(device, Device):
        return device
    if not isinstance(device, str):
        raise TypeError(
            f"device must be a string such as 'cpu', 'cuda', 'cuda:1' or 'auto'; "
            f"got {device!r} of type {type(device).__name__}."
        )
    match = _DEVICE_RE.match(device.strip().lower())
    if match is None or (match.group(1) != "cuda" and match.group(2) is not None):
        raise ValueError(
            f"device={device!r} is not understood; use 'cpu', 'cuda', 'cuda:N' (N a GPU "
            f"index) or 'auto'."
        )
    kind, index = match.group(1), int(match.group(2) or 0)
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
    return Device("cuda", index)
