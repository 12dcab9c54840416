#!/bin/bash
# Session 42 call 1: asv of the tip (CheriBlockSweep + tracked tier, peers in the same run), then a baseline's tracked
# tier on the same GPU: H200 -> bfd782c (its history), H100 -> 936ace0 (session 41's asv on the H100). The tip adds the
# NVML readings to the harness (read after the calls are queued: predicted no change to any figure) and fp16's
# degree-2 GELU (936ace0). Predictions (H200): N=512 megakernel + .eval() bf16 0.360 +- 0.006, fp16 0.370 +- 0.006.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ $name == *H200* ]]; then base=bfd782c; else base=936ace0; fi
TAG=s42 DEADLINE=$((${LIMIT:-585} - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" "$base^! @tracked"
echo "asv rc=$? t=$((SECONDS-S)) base=$base"; grep -E "^===|deadline|Error|error" $OUT/asv-s42.log | head -20 | cut -c1-200
