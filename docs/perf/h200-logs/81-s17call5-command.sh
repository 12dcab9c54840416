#!/bin/bash
# session 17 call 5: the Cheri Block at small N (16, 64; fp32/bf16/fp16), greyhound's three forward providers by the
# sweep CLI on another machine: host-bound as in call 3's asv run, or not?
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main)
cd /tmp/t && git log --oneline -1
PYTHONPATH=/tmp/site:/tmp/t timeout 140 python3 -m benchmarks cheri_block --mode forward --batch-size 16,64 --n-filters 128 --seq-len 1024 --dtype float32,bfloat16,float16 --providers greyhound-train,greyhound-megakernel,greyhound-megakernel-noeval --no-csv > $OUT/sweep.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))"
grep -E "^\s+greyhound|rror" $OUT/sweep.log | tail -20
