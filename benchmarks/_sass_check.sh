#!/bin/sh
# Which shared-memory atomics the histogram kernel compiles to on this GPU (sm_90).
python3 - <<'PY'
from skltr._gpu._compile import COMMON
from skltr._gpu.histogram import _SOURCE
open("/tmp/hist.cu", "w").write("#define FPB 12\n" + COMMON + _SOURCE)
PY
nvcc -cubin -arch=sm_90 -O3 --fmad=false -o /tmp/hist.cubin /tmp/hist.cu && cuobjdump -sass /tmp/hist.cubin | grep -oE "ATOMS?\.[A-Z0-9.]+|ATOMG\.[A-Z0-9.]+|RED\.[A-Z0-9.]+" | sort | uniq -c
