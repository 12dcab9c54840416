#!/bin/bash
# session 30 call 4: the asv tracked tier of the tip (the fused GEMM + lse loss pass the default), peers in the run
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s30 DEADLINE=$((585 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING: Target"; echo "asv t=$((SECONDS-S))"
grep -E "inearCross|chunked_linear" $OUT/asv-s30.log | tail -20 | cut -c1-220
