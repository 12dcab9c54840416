#!/bin/bash
# Session 40, call 1: asv of the tip (112248f: bf16's new default with the conv's taps in shared memory + L2 prefetch of x;
# the Cheri training step's backward with four launches fewer; newton_schulz's fp64 norm; CE target statistics), peers in
# the same run: CheriBlockSweep and the tracked tier of the tip, then bfd782c's tracked tier on the same GPU (tools.gate
# compares one machine's figures). Predictions: N=512 bf16 megakernel + .eval() about 0.364 ms (0.373 at bfd782c);
# N=16 full-mode greyhound-train 3-6% lower where host-bound; newton_schulz and CE level within their spread.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s40a DEADLINE=$((${LIMIT:-585} - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" "bfd782c^! @tracked"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-s40a.log | head -20 | cut -c1-200
