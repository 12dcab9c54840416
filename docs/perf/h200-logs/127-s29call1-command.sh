#!/bin/bash
# session 29 call 1: the CE one-pass kernel holding 2 or 3 of a row's tiles in registers (one_pass_held_tiles): the
# GPU correctness tests of the held path, then the sweep CLI (full mode, one process, peers in it) at BT=8192
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
timeout 200 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py -k "held" > $OUT/pytest-held.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-held.log | tail -6 | cut -c1-300
H='greyhound[one_pass_held_tiles'
sweep() {  # name vocab dtype providers deadline
  timeout $(( $5 - (SECONDS - S) )) python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size $2 --dtype $3 --providers "$4" --no-csv > $OUT/sweep-$1.log 2>&1
  echo "$1 rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-$1.log | cut -c1-200
}
sweep v128k 128256 bfloat16 "greyhound,$H=2],$H=3],fla,$H=2],greyhound" 400
sweep v64k 65536 bfloat16 "greyhound,$H=2],$H=3],fla" 480
sweep v64k-fp32 65536 float32 "greyhound,$H=2],fla" 560
