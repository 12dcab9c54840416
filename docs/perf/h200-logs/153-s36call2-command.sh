#!/bin/bash
# Session 36 call 2: (1) the new gluon_wsz defaults (bf16: degree-2 GELU + lone last-round tiles; fp16: lone tiles)
# against the old default and each change alone, and the residual loaded late (ws_late_residual: fp16 at d06a75b
# was 1.4% faster in call 1), one process a dtype (sweep CLI, forced variants beside the default);
# (2) asv of the tip: CheriBlockSweep, tracked tier, CausalConv1dUpdateSweep, under one deadline (scripts/h200_asv.sh, TAG s36).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1)
W="layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4"
sweep() {  # log name, dtype, providers
  (cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1 timeout 100 python3 -m benchmarks cheri_block --mode forward \
    --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype $2 --providers "$3" --no-csv > $OUT/$1.log 2>&1)
  echo "$1 rc=$? t=$((SECONDS-S))"; grep -E '^  greyhound' $OUT/$1.log | sed -E 's/  +/ /g; s/layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4,//; s/ forward batch_size=([0-9]+).*dtype=[a-z0-9]+ / N=\1 /' | cut -c1-110
}
sweep defaults-bf16 bfloat16 "greyhound-megakernel,greyhound-megakernel[$W,gelu=poly3,ws_balance=0],greyhound-megakernel[$W,gelu=poly2,ws_balance=0],greyhound-megakernel[$W,gelu=poly3,ws_balance=1],greyhound-megakernel[$W,ws_late_residual=1]"
sweep defaults-fp16 float16 "greyhound-megakernel,greyhound-megakernel[$W,ws_balance=0],greyhound-megakernel[$W,ws_late_residual=1],greyhound-megakernel[$W,ws_balance=0,ws_late_residual=1]"
TAG=s36 DEADLINE=$((500 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" "HEAD^! CausalConv1dUpdateSweep"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-s36.log | head -20 | cut -c1-200
