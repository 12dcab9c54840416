#!/bin/bash
# session 14 call 1: one-pass CE kernel GPU tests, then the sweep CLI at BT=8192 V=128256 bf16 full: default
# (two kernels) vs one-pass variants, fla in the same process
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 200 python3 -m pytest -m gpu -q -x -p no:cacheprovider tests/ops/test_cross_entropy.py -k "one_pass" > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error|assert" $OUT/pytest-gpu.log | tail -12
P='greyhound,greyhound[one_pass=1],greyhound[one_pass=1,one_pass_programs=66],greyhound[one_pass=1,one_pass_programs=100],greyhound[one_pass=1,one_pass_stages=3],greyhound[one_pass=1,one_pass_stages=6,one_pass_tile_rows=4],greyhound[one_pass=1,one_pass_warps=16,one_pass_stages=3],greyhound[one_pass=1,one_pass_tile_rows=4,one_pass_warps=4,one_pass_stages=6],fla'
timeout 200 python3 -m benchmarks cross_entropy_with_grad --mode full,forward --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))"
grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep.log | tail -24
