#!/bin/bash
# session 9 call 7: causal_conv1d gpu tests (with the bwd_gather variants), then the backward variants at the tracked shape
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.log
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
timeout 100 python3 -m pytest -q -p no:cacheprovider -x tests/ops/test_causal_conv1d.py -k "gather" > $OUT/pytest-gather.log 2>&1; rc=$?; echo "pytest rc=$rc t=$((SECONDS-S))"; tail -2 $OUT/pytest-gather.log
run() { echo "+ $*" >> $OUT/sweep.log; timeout ${T:-90} python3 -m benchmarks "$@" --csv $OUT/sweep.csv >> $OUT/sweep.log 2>&1; echo "rc=$? t=$((SECONDS-S)) $1"; }
[[ $rc == 0 ]] && T=150 run causal_conv1d --mode backward,full --providers 'greyhound,greyhound[bwd_gather=1],greyhound[bwd_gather=1,bwd_gather_scratch=1],greyhound[bwd_gather=1,bwd_gather_scratch=1,bwd_gather_block_l=32],greyhound[bwd_gather=1,bwd_gather_block_l=32],fla' --batch-size 8 --dim 4096 --seq-len 2048,8192 --width 4 --layout channel_last,contiguous --dtype bfloat16
echo "done t=$((SECONDS-S))"
