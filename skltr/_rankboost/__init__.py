"""The RankBoost engine behind ``RankBoostRanker`` (host orchestration; kernels in
``skltr._cpu.rankboost``), on the shared layer of ``skltr._engine``."""
