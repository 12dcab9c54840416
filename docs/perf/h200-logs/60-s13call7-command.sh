#!/bin/bash
# session 13 call 7: Gluon GPU tests (incl. the FastLaunch path), then the sweep CLI at N=16/64/512, bf16 and fp16:
# the new default (Gluon) against the old one (the Triton kernel, layout=lc, maxnreg=128), one process
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 80 python3 -m pytest -m gpu -q -p no:cacheprovider tests/nn/test_cheri_block.py -k "gluon" > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -6
timeout 110 python3 -m benchmarks cheri_block --mode forward --batch-size 16,64,512 --n-filters 128 --seq-len 1024 --dtype bfloat16,float16 --providers 'greyhound-megakernel,greyhound-megakernel[layout=lc,maxnreg=128]' --no-csv > $OUT/sweep.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))"
grep -E "^\s+greyhound|rror" $OUT/sweep.log | tail -14
