#!/bin/bash
# Session 49, call 2: the 16-bit megakernel's knobs not yet timed in the configuration the defaults took in 013b576 /
# 23c21b3 (shuffled taps, ws_split_ring + ws_epilogue16): thread release, the consumers' register share (the z
# producer gets the rest: 152 -> 168 by default), the weight ring's depth. Sweep CLI, N=512, C=128, L=1024, one process
# a round, rounds alternating the order. EXPL is the default spelled out (a control: it must read as the default).
# Predicted: every variant within +-1% of the default; maxnreg 160/168 may lose (the z producer at 152/136 spills).
S=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
git log --oneline -1 | tee -a $OUT/call.log
T="greyhound-megakernel[layout=gluon_wsz,block_l=64,block_e=64,warps=4,stages"
V=("greyhound-megakernel" "$T=4]" "greyhound-megakernel[ws_thread_release=1]" "$T=4,maxnreg=144]" "$T=4,maxnreg=160]"
   "$T=4,maxnreg=168]" "$T=3]" "$T=5]")
for r in 1 2 3; do
  for dt in bfloat16 float16; do
    LEFT=$(( ${LIMIT:-570} - (SECONDS - S) - 5 )); (( LEFT < 30 )) && break 2
    if (( r % 2 )); then P=$(IFS=,; echo "${V[*]}"); else P=$(printf '%s\n' "${V[@]}" | tac | paste -sd,); fi
    PYTHONPATH=/tmp/site:. timeout $(( LEFT < 200 ? LEFT : 200 )) python3 -m benchmarks cheri_block --mode forward \
      --providers "$P" --batch-size 512 --n-filters 128 --seq-len 1024 --dtype $dt --no-csv > /tmp/r$r-$dt.log 2>&1
    echo "r$r $dt rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log
    grep -E '^  greyhound|rror' /tmp/r$r-$dt.log | sed -E 's/  +/ /g; s/, n_filters=128, seq_len=1024//; s/layout=gluon_wsz,block_l=64,block_e=64,warps=4,//' \
      | sed "s/^/r$r /" | cut -c1-200 | tee -a $OUT/call.log
  done
done
tar czf $OUT/sweep-logs.tar.gz -C /tmp $(cd /tmp && ls r*-*.log)
