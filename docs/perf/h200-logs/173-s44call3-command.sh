#!/bin/bash
# Session 44 call 3: the tip's defaults against existing gluon_wsz variants whose trade-offs may have moved with call
# 1's change (fewer consumer spills, no b2 load a tile): the z producer's taps by shuffles, ring 3, the residual loaded
# late (bf16) / early (fp16), every thread releasing the ring slots, the L2 prefetch off; megakernel + .eval(), N=512,
# C=128, L=1024, sweep CLI, one process a dtype and round (bf16 twice). Call 2's first run of two of these was lost
# (its output went to stdout behind asv's). Predicted: all within +-1% of the default; a variant that wins by more in
# both bf16 rounds becomes the default.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/sweep.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/gh-new && git clone -q .carry/repo.bundle /tmp/gh-new && cd /tmp/gh-new && git checkout -q -B main origin/main
F="layout=gluon_wsz,block_l=64,warps=4,block_e=64"
B="greyhound-megakernel,greyhound-megakernel[ws_x_shuffle=1],greyhound-megakernel[$F,stages=3]"
B="$B,greyhound-megakernel[ws_late_residual=1],greyhound-megakernel[ws_thread_release=1],greyhound-megakernel[ws_x_prefetch=0]"
H="greyhound-megakernel,greyhound-megakernel[ws_x_shuffle=1],greyhound-megakernel[$F,stages=3],greyhound-megakernel[ws_late_residual=0]"
sweep() {  # $1 dtype, $2 providers, $3 label
  (( SECONDS - S > ${LIMIT:-585} - 100 )) && { echo "deadline: $3" | tee -a $OUT/sweep.log; return; }
  PYTHONPATH=/tmp/site:/tmp/gh-new timeout 150 python3 -m benchmarks cheri_block --mode forward --providers "$2" \
    --batch-size 512 --n-filters 128 --seq-len 1024 --dtype $1 --no-csv > $OUT/sweep-$3.raw 2>&1
  grep -E '^  greyhound|rror' $OUT/sweep-$3.raw | sed -E 's/  +/ /g' | sed "s/^/$3 /" | cut -c1-240 | tee -a $OUT/sweep.log
  echo "t=$((SECONDS-S))" | tee -a $OUT/sweep.log
}
sweep bfloat16 "$B" bf16-r1; sweep float16 "$H" fp16-r1; sweep bfloat16 "$B" bf16-r2
