#!/bin/bash
# Session 40, call 2, as it ran (planned in session 39 as its call 3; asv deadline 500 s, then the GPU test of the
# new default that planned-next-call-asv.sh had). Ring depth and fp16 variants around the new bf16
# default (the conv's taps in shared memory + the L2 prefetch of x), N=512 only, one process a dtype, the old default
# beside them; then asv of bfd782c's CheriBlockSweep on the GPU that ran planned-next-call-asv.sh (same machine for
# tools.gate). Predictions: bf16 ring 3 with the taps level with ring 4 within 1%; fp16 with the taps and no late
# residual level or slower (session 36's late residual paid 1.5% there).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1)
W="layout=gluon_wsz,block_l=64,warps=4,block_e=64"
sweep() {
  (cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 100 python3 -m benchmarks cheri_block --mode forward --batch-size 512 \
    --n-filters 128 --seq-len 1024 --dtype $2 --providers "$3" --no-csv > $OUT/$1.log 2>&1)
  echo "$1 rc=$? t=$((SECONDS-S))"; grep -E '^  greyhound' $OUT/$1.log | sed -E 's/  +/ /g; s/layout=gluon_wsz,block_l=64,warps=4,block_e=64,//; s/ forward batch_size=([0-9]+).*dtype=[a-z0-9]+ / N=\1 /' | cut -c1-120
}
sweep r-bf16 bfloat16 "greyhound-megakernel,greyhound-megakernel[$W,stages=3],greyhound-megakernel[$W,stages=4,ws_x_prefetch=0,ws_conv_smem=0],greyhound-megakernel[$W,stages=3,ws_x_prefetch=0]"
sweep r-fp16 float16 "greyhound-megakernel,greyhound-megakernel[$W,stages=4,ws_conv_smem=1,ws_late_residual=0],greyhound-megakernel[$W,stages=3],greyhound-megakernel[$W,stages=3,ws_conv_smem=1]"
TAG=nextb DEADLINE=$((500 - (SECONDS - S))) bash scripts/h200_asv.sh "bfd782c^! CheriBlockSweep"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-nextb.log | head -20 | cut -c1-200
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((590 - (SECONDS - S))) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE \
  tests/nn/test_cheri_block.py -k "z_producer_variants and both" > $OUT/pytest-z.log 2>&1)
echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-z.log | tail -6 | cut -c1-300
