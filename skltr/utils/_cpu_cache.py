"""The CPU's per-core L2 cache size, which the CPU scoring kernels size their work by."""

from __future__ import annotations

import functools
import os
from pathlib import Path

__all__ = ["DEFAULT_L2_BYTES", "l2_cache_bytes"]

#: L2 per core assumed where the operating system does not tell.
DEFAULT_L2_BYTES = 1 << 20


@functools.lru_cache(maxsize=1)
def l2_cache_bytes() -> int:
    """Bytes of L2 cache per core: Linux sysfs, else ``sysconf``, else ``DEFAULT_L2_BYTES``."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for index in sorted(base.glob("index*")):
            if ((index / "level").read_text().strip() == "2"
                    and (index / "type").read_text().strip() in ("Unified", "Data")):
                size = (index / "size").read_text().strip().upper()
                scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1:], 1)
                return int(size.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    try:
        size = os.sysconf("SC_LEVEL2_CACHE_SIZE")
        if size > 0:
            return int(size)
    except (ValueError, OSError, AttributeError):
        pass
    return DEFAULT_L2_BYTES
