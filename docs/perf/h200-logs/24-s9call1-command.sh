#!/bin/bash
# session 9 call 1: all gpu tests on committed main; causal_conv1d two-pass backward; linear CE vocab schedule; CE full
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.log
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider -rs -s tests/ops/test_cross_entropy.py -k split > $OUT/pytest-split.log 2>&1; split_rc=$?; echo "split pytest rc=$split_rc t=$((SECONDS-S))"; tail -3 $OUT/pytest-split.log
K=""; [[ $split_rc == 0 ]] || K="not split"
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rs -s tests -k "$K" > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -8
run() { echo "+ $*" >> $OUT/sweep.log; timeout ${T:-90} python3 -m benchmarks "$@" --csv $OUT/sweep.csv >> $OUT/sweep.log 2>&1; echo "rc=$? t=$((SECONDS-S)) $1"; }
T=100 run causal_conv1d --mode backward,full --providers 'greyhound,greyhound[bwd_two_pass=1]' --batch-size 8 --dim 4096 --seq-len 2048 --width 4 --layout channel_last,contiguous --dtype bfloat16
T=120 run chunked_linear_cross_entropy --mode forward --providers 'greyhound,greyhound[vocab_schedule=1],greyhound[vocab_schedule=1,vocab_chunk=8192],greyhound[vocab_schedule=1,vocab_chunk=2048]' --batch-size 8192 --d-model 4096 --vocab-size 128256 --dtype bfloat16
[[ $split_rc == 0 ]] && T=120 run cross_entropy_with_grad --mode full --providers 'greyhound,greyhound[split_block_v=8192],greyhound[split_block_v=8192,split_programs_per_sm=1],greyhound[split_block_v=16384],greyhound[split_block_v=4096],greyhound[split_block_v=4096,split_warps=8],greyhound[split_block_v=16384,split_warps=8]' --batch-size 8192 --vocab-size 128256 --dtype bfloat16
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv >> $OUT/gpu.log
echo "done t=$((SECONDS-S))"
