#!/bin/bash
# session 10 call 4: walk kernels with scalar positions and hoisted taps: variants at L=2048 (the harness gate checks each against the reference)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.log
V='greyhound'
for c in 64,1,4 64,1,8 128,1,4 128,1,8 128,2,4 128,2,8 256,1,4 256,2,4 256,4,4 64,2,4; do IFS=, read bd w g <<< "$c"; V="$V,greyhound[walk=1,walk_block_d=$bd,walk_warps=$w,walk_group=$g]"; done
V="$V,greyhound[walk=1,walk_block_d=128,walk_warps=1,walk_group=4,walk_steps=128],greyhound[walk=1,walk_block_d=64,walk_warps=1,walk_group=4,walk_steps=32]"
timeout 300 python3 -m benchmarks causal_conv1d --mode forward,backward,full --providers "$V" --batch-size 8 --dim 4096 --seq-len 2048 --width 4 --layout channel_last --dtype bfloat16 --csv $OUT/walk.csv > $OUT/walk.log 2>&1; echo "walk rc=$? t=$((SECONDS-S))"
grep -c FAILED $OUT/walk.log
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/nvidia-smi.log
