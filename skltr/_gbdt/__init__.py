"""Device-agnostic gradient boosting engine behind GPUHistGBDTRanker.

Host orchestration only (the fit recipe shared by the estimator and ``skltr.dask``,
objectives, tree growing, the boosting loop); the loops live in numba kernels under
``skltr/_cpu`` (and CuPy kernels of the same names under ``skltr/_gpu``).
The contract between the stages is ``docs/gbdt_internals.rst``.
"""
