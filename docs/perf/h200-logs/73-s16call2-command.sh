#!/bin/bash
# session 16 call 2: the CE tuning-variants test and the CE sweeps again (call 1 refused one_pass_resident=0)
# design and fla), then the looped warp-specialised Cheri kernel (GPU tests; the sweep only if they pass)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ops/test_cross_entropy.py -k "tuning_variants or rereads_fit" > $OUT/pytest-ce.log 2>&1; echo "pytest ce rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error |assert" $OUT/pytest-ce.log | tail -12
P='greyhound,greyhound[one_pass_tile_rows=8,one_pass_stages=3,one_pass_resident=0],greyhound[one_pass_stages=3,one_pass_resident=4],greyhound[one_pass_tile_rows=2,one_pass_stages=3,one_pass_resident=10],greyhound[one_pass_tile_rows=2,one_pass_stages=2,one_pass_resident=11],greyhound[one_pass=0],fla'
timeout 100 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep-ce1.log 2>&1; echo "sweep ce1 rc=$? t=$((SECONDS-S))"
timeout 70 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256 --dtype float32 --providers 'greyhound,greyhound[one_pass=0],greyhound[one_pass=1,one_pass_tile_rows=4,one_pass_stages=3,one_pass_resident=0],fla' --no-csv > $OUT/sweep-ce2.log 2>&1; echo "sweep ce2 rc=$? t=$((SECONDS-S))"
timeout 60 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 32768,65536 --dtype bfloat16 --providers 'greyhound,greyhound[one_pass_tile_rows=8,one_pass_stages=3,one_pass_resident=0],greyhound[one_pass=0],fla' --no-csv > $OUT/sweep-ce3.log 2>&1; echo "sweep ce3 rc=$? t=$((SECONDS-S))"
grep -hE "^\s+(greyhound|fla)|rror" $OUT/sweep-ce*.log | tail -30
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/gpu.log
