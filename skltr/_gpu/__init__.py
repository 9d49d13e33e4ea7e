"""CuPy kernels of the GPU training path (``GPUHistGBDTRanker(device="cuda")``).

Every module here imports CuPy at its top (but ``tree_walk``, a CUDA source string shared by
the scoring kernels), so nothing under ``skltr._gpu`` is imported unless a CUDA device was
asked for (``skltr._device.resolve_device``). RankBoost's and the rule ranker's modules
(``rankboost``, ``rules``) are kernels only, CUDA sources and thin launch functions; their
back-ends are the engines' ``kernels_cuda`` modules (``skltr._rankboost``,
``skltr._rules``). Module names follow
``skltr._cpu``: ``binning``, ``histogram``, ``split``, ``partition``, ``predict_binned``,
``objectives``; ``grower`` and ``boosting`` are the device-side orchestration, and
``_config`` holds every launch size. Kernels come from factories cached per device
(``@cupy.memoize(for_each_device=True)``) and are compiled by NVRTC for the GPU they run on,
with ``--fmad=false`` so that float64 formulas round as the CPU kernels' (no fused
multiply-adds), which keeps split gains and leaf values bit-equal to the CPU engine's.

Fitted state never holds CuPy arrays: the grower returns host NumPy ``GrownTree`` objects and
the model is the same host ``TreeEnsemble`` the CPU path builds.
"""
