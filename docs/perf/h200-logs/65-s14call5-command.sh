#!/bin/bash
# session 14 call 5: CE + linear CE GPU tests with the one-pass default, then the sweep CLI: the new default against
# one_pass=0 (the two-kernel path) over vocabularies, fp32, BT=2048, and in the linear CE full mode; fla beside
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ops/test_cross_entropy.py tests/ops/test_linear_cross_entropy.py > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error|assert" $OUT/pytest-gpu.log | tail -12
timeout 120 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 4096,16384,32768,128256 --dtype bfloat16 --providers 'greyhound,greyhound[one_pass=0],fla' --no-csv > $OUT/sweep1.log 2>&1; echo "sweep1 rc=$? t=$((SECONDS-S))"
timeout 60 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 2048,8192 --vocab-size 128256 --dtype float32 --providers 'greyhound,greyhound[one_pass=0],fla' --no-csv > $OUT/sweep2.log 2>&1; echo "sweep2 rc=$? t=$((SECONDS-S))"
timeout 40 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 2048 --vocab-size 128256 --dtype bfloat16 --providers 'greyhound,greyhound[one_pass=0],fla' --no-csv > $OUT/sweep3.log 2>&1; echo "sweep3 rc=$? t=$((SECONDS-S))"
timeout 90 python3 -m benchmarks chunked_linear_cross_entropy --mode full --batch-size 8192 --d-model 4096 --vocab-size 128256 --dtype bfloat16 --providers 'greyhound,greyhound[cross_entropy_with_grad.one_pass=0]' --no-csv > $OUT/sweep4.log 2>&1; echo "sweep4 rc=$? t=$((SECONDS-S))"
grep -hE "^\s+(greyhound|fla)|rror" $OUT/sweep*.log | tail -30
