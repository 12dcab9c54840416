#!/bin/bash
# session 16 call 3: the paired-chunk warp-specialised Cheri kernel: GPU tests, then the sweep CLI at N=512 and N=64 bf16
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -x tests/nn/test_cheri_block.py -k "warp_specialised" > $OUT/pytest-ws.log 2>&1; rc=$?; echo "pytest ws rc=$rc t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-ws.log | tail -8
[ $rc = 0 ] || exit 3
P='greyhound-megakernel'
for c in "64,4" "64,2" "64,3" "32,8" "32,4"; do
  IFS=, read be st <<< "$c"
  P="$P,greyhound-megakernel[layout=gluon_ws,block_l=64,block_e=$be,warps=4,stages=$st]"
done
for N in 512 64; do
timeout 150 python3 -m benchmarks cheri_block --mode forward --batch-size $N --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep$N.log 2>&1; echo "sweep $N rc=$? t=$((SECONDS-S))"
grep -E "^\s+greyhound|rror" $OUT/sweep$N.log | tail -12
done
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/gpu.log
