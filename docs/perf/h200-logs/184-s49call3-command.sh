#!/bin/bash
# Session 49, call 3: call 2 (log 183, one H100) read fp16 at maxnreg=160 (the z producer then 152) -1.1% in three
# rounds at N=512, bf16 +0.8%, every other knob level or slower. This call: the same at N=64 too, with thread release
# beside it, and two untried tiles of the ping-pong kernel: 128 hidden columns a chunk with a ring of 2 (the same
# weight bytes), and ws_balance off. Sweep CLI, N=512 and 64, C=128, L=1024, one process a round, order alternating.
# Predicted: fp16 maxnreg=160 -1% at N=512 and level at N=64; block_e=128 slower (twice the accumulator registers a
# chunk); ws_balance=0 +1 to +3% at N=512 (session 36).
S=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
git log --oneline -1 | tee -a $OUT/call.log
T="greyhound-megakernel[layout=gluon_wsz,block_l=64,block_e=64,warps=4,stages"
V=("greyhound-megakernel" "$T=4,maxnreg=160]" "$T=4,maxnreg=160,ws_thread_release=1]"
   "greyhound-megakernel[layout=gluon_wsz,block_l=64,block_e=128,warps=4,stages=2]" "greyhound-megakernel[ws_balance=0]")
for r in 1 2 3; do
  for dt in bfloat16 float16; do
    LEFT=$(( ${LIMIT:-570} - (SECONDS - S) - 5 )); (( LEFT < 30 )) && break 2
    if (( r % 2 )); then P=$(IFS=,; echo "${V[*]}"); else P=$(printf '%s\n' "${V[@]}" | tac | paste -sd,); fi
    PYTHONPATH=/tmp/site:. timeout $(( LEFT < 200 ? LEFT : 200 )) python3 -m benchmarks cheri_block --mode forward \
      --providers "$P" --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype $dt --no-csv > /tmp/r$r-$dt.log 2>&1
    echo "r$r $dt rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log
    grep -E '^  greyhound|rror' /tmp/r$r-$dt.log | sed -E 's/  +/ /g; s/, n_filters=128, seq_len=1024//; s/block_e=64,block_l=64,layout=gluon_wsz,//; s/,warps=4\]/]/' \
      | sed "s/^/r$r /" | cut -c1-200 | tee -a $OUT/call.log
  done
done
tar czf $OUT/sweep-logs.tar.gz -C /tmp $(cd /tmp && ls r*-*.log)
