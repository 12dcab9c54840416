#!/bin/bash
# Session 44 call 2: on the new tip, two variants whose premise changed with call 1's faster consumers (ws_x_shuffle:
# the z producer's taps by shuffles, level in session 41 while the consumers set the pace; ring 3: -1.3% bf16 in
# session 37), then the first H200 asv with the harness's expandable segments: the tip's tracked tier, 0c7309a's
# (session 43's tip) on the same GPU, then the tip's CheriBlockSweep; peers in the same runs.
# Predicted: variants level (+-0.5%; the consumers still set the pace); asv megakernel + .eval() N=512 bf16 ~0.361
# at the tip against ~0.367 at 0c7309a, the gate flagging that series as faster; CE forward ~0.536 at both.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/gh-new && git clone -q .carry/repo.bundle /tmp/gh-new && (cd /tmp/gh-new && git checkout -q -B main origin/main)
V="greyhound-megakernel,greyhound-megakernel[ws_x_shuffle=1]"
V="$V,greyhound-megakernel[layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=3]"
V="$V,greyhound-megakernel[layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=3,ws_x_shuffle=1]"
for d in bfloat16 float16; do
  (cd /tmp/gh-new && PYTHONPATH=/tmp/site:/tmp/gh-new timeout 100 python3 -m benchmarks cheri_block --mode forward \
    --providers "$V" --batch-size 512 --n-filters 128 --seq-len 1024 --dtype $d --no-csv 2>&1 \
    | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g' | cut -c1-230)
done
echo "t=$((SECONDS-S))"
TAG=s44 DEADLINE=$((${LIMIT:-585} - 10 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" "0c7309a^! @tracked" \
  "HEAD^! CheriBlockSweep"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-s44.log | head -20 | cut -c1-200
