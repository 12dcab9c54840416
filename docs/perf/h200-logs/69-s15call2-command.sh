#!/bin/bash
# session 15 call 2: the warp-specialised kernel's GPU tests (ring >= 3), then the sweep CLI at N=512 and N=64 bf16
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -x tests/nn/test_cheri_block.py -k "warp_specialised" > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -8
P='greyhound-megakernel,greyhound-megakernel[layout=lc,maxnreg=128]'
for c in "64,32,4,4" "64,32,4,8" "64,64,4,4" "64,64,4,8"; do
  IFS=, read bl be w st <<< "$c"
  P="$P,greyhound-megakernel[layout=gluon_ws,block_l=$bl,block_e=$be,warps=$w,stages=$st]"
done
P="$P,greyhound-megakernel[layout=gluon,block_l=128,block_e=16,warps=8,stages=3,maxnreg=128]"
for N in 512 64; do
timeout 170 python3 -m benchmarks cheri_block --mode forward --batch-size $N --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep$N.log 2>&1; echo "sweep $N rc=$? t=$((SECONDS-S))"
grep -E "^\s+greyhound|rror" $OUT/sweep$N.log | tail -12
done
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/gpu.log
