"""Front-end helpers that touch CuPy: a device context, and results on the caller's device.

The front-ends (``skltr.ranking``) import no CuPy themselves (an import-linter contract in
``setup.cfg``); they call these, which exist only where a GPU was asked for.
"""

from __future__ import annotations

import cupy

__all__ = ["device_context", "to_device"]


def device_context(index: int):
    """Every launch and allocation inside the ``with`` on GPU ``index``."""
    return cupy.cuda.Device(int(index))


def to_device(host):
    """A NumPy result as a CuPy array (for a caller who passed CuPy input)."""
    return cupy.asarray(host)
