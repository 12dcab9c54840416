#!/bin/bash
# RAN on an H100 (GPU-72fb1b25, warm from call 6), asked for as an H200: log 195. Given inline to the device tool.
# Session 50, call 7: asv of 4b77769's CheriBlockSweep again (a second reading on the same GPU, A/B/A/B with calls 4-6;
# its result file is kept here, 195-...-result.json.gz, results/ keeps call 5's).
S=$SECONDS; nvidia-smi --query-gpu=uuid,name --format=csv,noheader | tee $OUT/call.log; mkdir -p /tmp/out-s50g; OUT=/tmp/out-s50g TAG=s50g DEADLINE=200 bash scripts/h200_asv.sh "4b77769^! CheriBlockSweep" > /dev/null 2>&1; echo "asv s50g rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; grep -E "^===|deadline" /tmp/out-s50g/asv-s50g.log | head | tee -a $OUT/call.log; mv /tmp/out-s50g/results-s50g.tar.gz $OUT/; tar czf $OUT/logs-s50g.tar.gz -C /tmp/out-s50g .
