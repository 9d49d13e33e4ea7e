"""The RankBoost engine behind ``RankBoostRanker``, on the shared layer of ``skltr._engine``:
the loop (``boosting``) and its two back-ends side by side, ``kernels_cpu`` (numba, kernels in
``skltr._cpu.rankboost``) and ``kernels_cuda`` (CuPy, kernels in ``skltr._gpu.rankboost``;
imported only when a GPU is asked for)."""
