#!/bin/bash
# session 10 call 3: grouped walk kernels: gpu tests, variants vs tiled vs fla
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.log
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/ops/test_causal_conv1d.py -k "walk or carry" > $OUT/pytest-walk.log 2>&1; echo "pytest walk rc=$? t=$((SECONDS-S))"
tail -3 $OUT/pytest-walk.log
V='greyhound,greyhound[walk=1],greyhound[walk=1,walk_group=4],greyhound[walk=1,walk_group=2],greyhound[walk=1,walk_block_d=64],greyhound[walk=1,walk_block_d=64,walk_group=4],greyhound[walk=1,walk_block_d=256,walk_warps=2],greyhound[walk=1,walk_block_d=256,walk_warps=2,walk_group=4],greyhound[walk=1,walk_steps=128],greyhound[walk=1,walk_steps=32,walk_group=4],greyhound[walk=1,walk_block_d=128,walk_warps=2,walk_group=4],fla'
timeout 330 python3 -m benchmarks causal_conv1d --mode forward,backward,full --providers "$V" --batch-size 8 --dim 4096 --seq-len 2048,8192 --width 4 --layout channel_last --dtype bfloat16 --csv $OUT/walk.csv > $OUT/walk.log 2>&1; echo "walk rc=$? t=$((SECONDS-S))"
grep -c FAILED $OUT/walk.log
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/nvidia-smi.log
