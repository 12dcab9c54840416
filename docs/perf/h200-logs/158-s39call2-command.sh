#!/bin/bash
# Session 39, call 2, as it ran at last (five failed machine starts had left 276 device-seconds): asv of the tip's tracked
# tier only, peers in the same run (the N=512 bf16/fp32 Cheri cells with torch.compile, newton_schulz, CE, linear CE).
# The planned call (ring 3 under the new bf16 default, CheriBlockSweep of the tip, bfd782c's tracked tier on the same
# GPU, the GPU test of the new default against the kernel with both variants off) did not fit and waits for a session
# with device time: `planned-next-call-asv.sh`. Predictions: N=512 bf16 megakernel about 0.364 ms (from 0.373 at bfd782c
# on an H200; call 1 read 0.3632 in the sweep CLI on an H100); newton_schulz (16, 1024, 1024) bf16 level within its
# spread (session 38's fp64 norm and host path).
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s39 DEADLINE=$((${LIMIT:-170} - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-s39.log | head -20 | cut -c1-200
