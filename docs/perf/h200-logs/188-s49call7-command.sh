#!/bin/bash
# NOT RUN: too little device time was left to start a machine (324 s after call 6's failed start); planned-next-call.sh covers it.
# Session 49, call 7 (the session's last ~320 s of device time, an H200 only after a failed start): asv of the tip's
# CheriBlockSweep alone, peers in the same run, everything else of planned-next-call.sh left for later.
# Predicted (H200): megakernel + .eval() N=512 bf16 ~0.352 ms, fp16 ~0.351 (d2a9ecd: 0.3577 / 0.3544).
S=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
bash scripts/carry_repo.sh unpack /tmp/gh-t; (cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log)
mkdir -p /tmp/out-s50a
OUT=/tmp/out-s50a TAG=s50a DEADLINE=$(( ${LIMIT:-300} - 5 - (SECONDS - S) )) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" > /dev/null 2>&1
echo "asv s50a rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log
grep -E "^===|deadline" /tmp/out-s50a/asv-s50a.log | head | tee -a $OUT/call.log
mv /tmp/out-s50a/results-s50a.tar.gz $OUT/ 2>/dev/null; tar czf $OUT/logs-s50a.tar.gz -C /tmp/out-s50a .
