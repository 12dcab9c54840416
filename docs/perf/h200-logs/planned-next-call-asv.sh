#!/bin/bash
# PLANNED, NOT YET RUN (written in session 40, after its three calls ran on an H100). For an H200 (results filed under
# nvidia-h200, whose history has bfd782c): asv of the tip (CheriBlockSweep and the tracked tier, peers in the same run),
# then bfd782c's tracked tier on the same GPU. Predictions: N=512 bf16 megakernel + .eval() 0.360 +- 0.004 ms on the
# H200 (0.373 at bfd782c; the kernel is SM-bound, the H100 read 0.373 -> 0.359); fp16 level at 0.382. Then, on the
# same warm machine, planned-next-call-ab.sh. Copy to .carry/cmd.sh, carry [".whl", ".carry"]; hide docs/public and
# docs/perf while it travels (64 MiB).
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=next DEADLINE=$((${LIMIT:-585} - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" "bfd782c^! @tracked"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-next.log | head -20 | cut -c1-200
