"""The gradient boosting engine behind GPUHistGBDTRanker, one for every device.

Host orchestration only: the fit recipe shared by the estimator and ``skltr.dask``
(``fit``), typed parameters (``params``), one boosting loop (``boosting``) over a device
back-end (``backend_cpu`` | ``backend_cuda``), one growth driver (``growth``) over a grower
back-end (``grower_cpu`` | ``grower_cuda``), one quantisation rule (``quantisation``) and the
objectives (``objectives`` | ``objectives_cuda``). The loops live in numba kernels under
``skltr/_cpu`` and CUDA kernels under ``skltr/_gpu``. The contract between the stages is
``docs/gbdt_internals.rst``.
"""
