#!/bin/bash
# session 10 call 5: walk as the channel-last default: backward walk variants at L=2048/8192, then L and D sweeps with fla
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.log
V='greyhound,greyhound[walk=0],greyhound[walk_bwd_group=8],greyhound[walk_bwd_group=2],greyhound[walk_bwd_block_d=128,walk_bwd_warps=2],greyhound[walk_bwd_block_d=128,walk_bwd_warps=2,walk_bwd_group=2],greyhound[walk_bwd_block_d=32],greyhound[walk_bwd_block_d=64,walk_bwd_warps=2],greyhound[walk_steps=128],greyhound[walk_steps=32],fla'
timeout 200 python3 -m benchmarks causal_conv1d --mode backward,full --providers "$V" --batch-size 8 --dim 4096 --seq-len 2048,8192 --width 4 --layout channel_last --dtype bfloat16 --csv $OUT/bwd.csv > $OUT/bwd.log 2>&1; echo "bwd rc=$? t=$((SECONDS-S))"
timeout 150 python3 -m benchmarks causal_conv1d --mode forward,backward,full --providers 'greyhound,fla' --batch-size 8 --dim 4096 --seq-len 512,2048,8192 --width 2,4 --layout channel_last --dtype bfloat16 --csv $OUT/lsweep.csv > $OUT/lsweep.log 2>&1; echo "lsweep rc=$? t=$((SECONDS-S))"
timeout 100 python3 -m benchmarks causal_conv1d --mode forward,backward,full --providers 'greyhound' --batch-size 8 --dim 1024,8192 --seq-len 2048 --width 4 --layout channel_last --dtype bfloat16 --csv $OUT/dsweep.csv > $OUT/dsweep.log 2>&1; echo "dsweep rc=$? t=$((SECONDS-S))"
grep -c FAILED $OUT/*.log
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/nvidia-smi.log
