#!/bin/bash
# session 16 call 4: the Gluon Cheri kernels' new tile layout (2034301): the Cheri GPU tests; the sweep CLI at N=512,
# 64, 16 bf16 from the previous commit and from this one, one after the other on this GPU; then the asv tracked tier
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
for c in 3bd1f46 main; do rm -rf /tmp/t-$c && git clone -q .carry/repo.bundle /tmp/t-$c && (cd /tmp/t-$c && git checkout -q -B main origin/main && git checkout -q $c); done
cd /tmp/t-main && git log --oneline -1
PYTHONPATH=/tmp/site:/tmp/t-main timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/nn -k "gluon or warp_specialised or megakernel_modes" > $OUT/pytest-nn.txt 2>&1; rc=$?; echo "pytest rc=$rc t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-nn.txt | tail -8
[ $rc = 0 ] || exit 3
for c in 3bd1f46 main; do
PYTHONPATH=/tmp/site:/tmp/t-$c timeout 60 python3 -m benchmarks cheri_block --mode forward --batch-size 512,64,16 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers greyhound-megakernel --no-csv > $OUT/sweep-$c.log 2>&1; echo "sweep $c rc=$? t=$((SECONDS-S))"
grep -E "^\s+greyhound|rror" $OUT/sweep-$c.log | tail -4
done
cd - >/dev/null
left=$((520 - (SECONDS - S)))
TAG=s16a DEADLINE=$left bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -3
echo "asv t=$((SECONDS-S))"
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/gpu.log
