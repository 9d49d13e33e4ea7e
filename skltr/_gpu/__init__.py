"""CuPy kernels: CUDA sources and their launch functions, below the engines.

The modules import CuPy at their top (but ``tree_walk`` and ``libm``, CUDA source strings,
``forest_layout``, host arrays, and ``_config``), and nothing under ``skltr._gpu`` is
imported unless a CUDA device was asked for
(``skltr._device.resolve_device``). The engines' CUDA back-ends drive them: the GBDT's
``skltr._gbdt.backend_cuda`` / ``grower_cuda`` / ``objectives_cuda``, RankBoost's and the rule
ranker's ``kernels_cuda``; nothing here imports an engine (``setup.cfg``'s contracts). Module
names follow ``skltr._cpu``: ``binning``, ``histogram``, ``split``, ``partition``,
``predict_binned``, ``objectives``, ``quantise``, ``rankboost``, ``rules``, ``treeshap``,
``yetirank``;
``binned`` holds a binned matrix on the device, ``arrays`` the front-ends' few CuPy calls, and
``_config`` every launch size. Kernels come from factories cached per device
(``@cupy.memoize(for_each_device=True)``) and are compiled by NVRTC for the GPU they run on,
with ``--fmad=false`` so that float64 formulas round as the CPU kernels' (no fused
multiply-adds), which keeps gradients, split gains and leaf values bit-equal to the CPU's.

Fitted state never holds CuPy arrays: growers return host NumPy ``GrownTree`` objects and the
model is the same host ``TreeEnsemble`` the CPU path builds.
"""
