#!/bin/bash
# RAN on an H100 (GPU-72fb1b25, warm from call 4), asked for as an H200: log 193. Given inline to the device tool.
# Session 50, call 5: asv of 4b77769's CheriBlockSweep (session 49's fp16 default: consumers 160, weight producer 40, z
# producer 152) on the same GPU as a6bb47f's (call 4), for a same-GPU asv pair; the carried tree of call 4.
S=$SECONDS; nvidia-smi --query-gpu=uuid,name --format=csv,noheader | tee $OUT/call.log; mkdir -p /tmp/out-s50e; OUT=/tmp/out-s50e TAG=s50e DEADLINE=280 bash scripts/h200_asv.sh "4b77769^! CheriBlockSweep" > /dev/null 2>&1; echo "asv s50e rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; grep -E "^===|deadline" /tmp/out-s50e/asv-s50e.log | head | tee -a $OUT/call.log; mv /tmp/out-s50e/results-s50e.tar.gz $OUT/; tar czf $OUT/logs-s50e.tar.gz -C /tmp/out-s50e .
