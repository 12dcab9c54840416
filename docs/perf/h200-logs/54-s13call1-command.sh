#!/bin/bash
# session 13 call 1: the Gluon Cheri megakernel (layout=gluon): GPU correctness tests, then the sweep CLI at N=512
# bf16 forward: the default tl kernel against seven Gluon configs (one process)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/nn/test_cheri_block.py -k "gluon or real_bf16" > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -8
P='greyhound-megakernel'
for c in "128,64,8,4" "128,64,8,3" "128,32,8,4" "64,32,4,3" "64,32,4,4" "64,64,4,3" "64,32,4,3,168"; do
  IFS=, read bl be w st r <<< "$c"
  v="layout=gluon,block_l=$bl,block_e=$be,warps=$w,stages=$st"; [ -n "$r" ] && v="$v,maxnreg=$r"
  P="$P,greyhound-megakernel[$v]"
done
timeout 300 python3 -m benchmarks cheri_block --mode forward --batch-size 512 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))"
grep -E "^\s+greyhound|rror" $OUT/sweep.log | tail -12
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/gpu.log
