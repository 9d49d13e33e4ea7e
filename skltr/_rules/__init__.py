"""The on-demand association-rule engine behind ``OnDemandRuleRanker`` (host orchestration;
numba kernels in ``skltr._cpu.rules`` and ``skltr._cpu.combinadic``).

``intervals``: discretisation (Fayyad & Irani's entropy / MDL cuts, or count-balanced
quantile bins) and item codes; ``model``: the training set as bitmap inverted lists (the
:class:`~skltr._rules.model.RuleModel` record both devices read); ``scoring``: the fixed-point
confidences and LRAR's equations 1 and 2, written once; ``ranking``: the kernels seam
(:class:`~skltr._rules.ranking.CPURuleKernels`) and the predict loop.
"""
