#!/bin/bash
# PLANNED, NOT YET RUN (written in session 40, predictions updated in session 41, whose two calls ran on an H100). For an
# H200 (results filed under nvidia-h200, whose history has bfd782c): asv of the tip (CheriBlockSweep and the tracked
# tier, peers in the same run), then bfd782c's tracked tier on the same GPU. Predictions (the kernel is SM-bound: the
# H100s read bfd782c's bf16 default at 0.373 as the H200 did): N=512 megakernel + .eval() bf16 0.360 +- 0.006 ms (0.373
# at bfd782c), fp16 0.370 +- 0.006 (0.382; the degree-2 GELU since session 41, -4% in the H100's sweep CLI). Copy to
# .carry/cmd.sh, carry [".whl", ".carry"]; hide docs/public and docs/perf while it travels (64 MiB).
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=next DEADLINE=$((${LIMIT:-585} - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" "bfd782c^! @tracked"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-next.log | head -20 | cut -c1-200
