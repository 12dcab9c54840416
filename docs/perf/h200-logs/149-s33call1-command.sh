#!/bin/bash
# session 33 call 1: the three kernel changes one commit at a time, each commit's default in its own process (sweep CLI,
# N=512 / 64 bf16): d06a75b (before), 6c118eb (b1 in one load and one store), 38eef64 (+ the residual's load under the
# last GEMM), d8b0ac1 (+ producer 24 / consumers 160 registers; also its consumers at 152 with the z producer at 184, and
# fp16); then d06a75b and d8b0ac1 again (drift)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
for c in d06a75b 6c118eb 38eef64 d8b0ac1; do git worktree add -q /tmp/w-$c $c; done
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
sweep() {  # commit, log name, dtype, providers
  (cd /tmp/w-$1 && PYTHONPATH=/tmp/site:/tmp/w-$1 timeout $((560 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward \
    --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype $3 --providers "$4" --no-csv > $OUT/$2.log 2>&1)
  echo "$2 rc=$? t=$((SECONDS-S))"; grep -E "^  greyhound" $OUT/$2.log | sed 's/  */ /g' | cut -c1-200
}
M=greyhound-megakernel
sweep d06a75b a-d06a75b bfloat16 $M
sweep 6c118eb b-6c118eb bfloat16 $M
sweep 38eef64 c-38eef64 bfloat16 $M
sweep d8b0ac1 d-d8b0ac1 bfloat16 "$M,$M[layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4,maxnreg=152]"
sweep d8b0ac1 d-d8b0ac1-fp16 float16 $M
sweep d06a75b a2-d06a75b bfloat16 $M
sweep d06a75b a2-d06a75b-fp16 float16 $M
sweep d8b0ac1 d2-d8b0ac1 bfloat16 $M
