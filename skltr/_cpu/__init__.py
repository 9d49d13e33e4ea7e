"""skltr._cpu: numba kernels (their on-disk caches live outside the package)."""

from .. import _numba_cache  # noqa: F401
