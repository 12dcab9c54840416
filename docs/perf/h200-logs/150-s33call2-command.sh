#!/bin/bash
# session 33 call 2: 38eef64 (residual under the last GEMM) against d8b0ac1 (+ producer 24 / consumers 160 registers),
# alternating processes, bf16 and fp16; then the GPU tests of the changed paths on d8b0ac1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t /tmp/w-* && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
for c in 38eef64 d8b0ac1; do git worktree add -q /tmp/w-$c $c; done
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
sweep() {  # commit, log name, dtype
  (cd /tmp/w-$1 && PYTHONPATH=/tmp/site:/tmp/w-$1 timeout 60 python3 -m benchmarks cheri_block --mode forward \
    --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype $3 --providers greyhound-megakernel --no-csv > $OUT/$2.log 2>&1)
  echo "$2 rc=$? t=$((SECONDS-S)) $(grep -E '^  greyhound' $OUT/$2.log | sed 's/  */ /g' | awk '{print $NF, $(NF-2), $(NF-1)}' | tr '\n' ' ')"
}
for i in 1 2; do for d in bfloat16 float16; do for c in 38eef64 d8b0ac1; do sweep $c $i-$c-$d $d; done; done; done
cd /tmp/w-d8b0ac1 && PYTHONPATH=/tmp/site:/tmp/w-d8b0ac1 timeout $((580 - (SECONDS - S))) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "b1_by_wgmma or large_hidden or short_gelu or (warp_specialised_kernel_matches and gluon_wsz)" > $OUT/pytest-cheri.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-cheri.log | tail -8 | cut -c1-400
