"""skltr: GPU-accelerated, scikit-learn compatible learning-to-rank.

Importing skltr is cheap: it imports no CuPy and compiles no numba kernel. Kernels compile on
first use; the GPU path is imported only when an estimator is given ``device="cuda"``.
"""

from ._version import __version__

__all__ = ["__version__"]
