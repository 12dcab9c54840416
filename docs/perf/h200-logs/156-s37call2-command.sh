#!/bin/bash
# Session 37 call 2 (log 156): ring depth and the consumers' phase at the new defaults (no code change): the default
# against ring 3 / ring 5 and strict turns (ws_schedule=turns, no lone tiles), sweep CLI, one process a dtype, N=512/64.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1)
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
W="layout=gluon_wsz,block_l=64,warps=4,block_e=64"
sweep() {  # log name, dtype, providers
  (cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1 timeout 200 python3 -m benchmarks cheri_block --mode forward \
    --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype $2 --providers "$3" --no-csv > $OUT/$1.log 2>&1)
  echo "$1 rc=$? t=$((SECONDS-S))"; grep -E '^  greyhound' $OUT/$1.log | sed -E 's/  +/ /g; s/layout=gluon_wsz,block_l=64,warps=4,block_e=64,//; s/ forward batch_size=([0-9]+).*dtype=[a-z0-9]+ / N=\1 /' | cut -c1-120
}
sweep ring-bf16 bfloat16 "greyhound-megakernel,greyhound-megakernel[$W,stages=3],greyhound-megakernel[$W,stages=5],greyhound-megakernel[$W,stages=4,ws_schedule=turns],greyhound-megakernel[$W,stages=4,ws_balance=0]"
sweep ring-fp16 float16 "greyhound-megakernel,greyhound-megakernel[$W,stages=3],greyhound-megakernel[$W,stages=4,ws_schedule=turns]"
