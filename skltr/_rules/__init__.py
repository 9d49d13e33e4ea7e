"""The on-demand association-rule engine behind ``OnDemandRuleRanker`` (host orchestration;
numba kernels in ``skltr._cpu.rules`` and ``skltr._cpu.combinadic``, CUDA kernels in
``skltr._gpu.rules``).

``intervals``: discretisation (Fayyad & Irani's entropy / MDL cuts, or count-balanced
quantile bins) and item codes; ``model``: the training set as bitmap inverted lists (the
:class:`~skltr._rules.model.RuleModel` record both devices read); ``scoring``: the fixed-point
confidences and LRAR's equations 1 and 2, written once; ``ranking``: the kernels seam and the
predict loop; ``kernels_cpu`` and ``kernels_cuda``: the two back-ends side by side
(:class:`~skltr._rules.kernels_cpu.CPURuleKernels`,
:class:`~skltr._rules.kernels_cuda.GPURuleKernels`; the CUDA one imports CuPy and is imported
only when a GPU is asked for).
"""
