#!/bin/bash
# session 9 call 2: split-row CE kernel (tests, variants), linear CE forward default (auto=vocab) vs torch.compile
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.log
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
timeout 120 python3 -m pytest -q -p no:cacheprovider -rs -s tests/ops/test_cross_entropy.py -k "split and not sm90" > $OUT/pytest-split.log 2>&1; split_rc=$?; echo "split pytest rc=$split_rc t=$((SECONDS-S))"; tail -3 $OUT/pytest-split.log
run() { echo "+ $*" >> $OUT/sweep.log; timeout ${T:-90} python3 -m benchmarks "$@" --csv $OUT/sweep.csv >> $OUT/sweep.log 2>&1; echo "rc=$? t=$((SECONDS-S)) $1"; }
T=150 run cross_entropy_with_grad --mode full --providers 'greyhound,greyhound[split_block_v=8192],greyhound[split_block_v=8192,split_programs_per_sm=1],greyhound[split_block_v=16384],greyhound[split_block_v=4096],greyhound[split_block_v=4096,split_warps=8],greyhound[split_block_v=16384,split_warps=8],greyhound[split_block_v=8192,split_warps=4],fla,liger' --batch-size 8192 --vocab-size 128256 --dtype bfloat16

nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv >> $OUT/gpu.log
echo "done t=$((SECONDS-S))"
