#!/bin/bash
# Session 41: asv of the tip (fp16's degree-2 GELU default; bf16 as session 39) -- CheriBlockSweep and the tracked
# tier, peers in the same run -- then the previous asv'd commit of this card's history as baseline (H200: bfd782c,
# H100: e238aa7), its CheriBlockSweep. Predicted: N=512 fp16 megakernel 0.382 -> 0.367 (-4%), bf16 level.
S=$SECONDS
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$name"
if [[ $name == *H200* ]]; then base=bfd782c; else base=e238aa7; fi
TAG=s41 DEADLINE=$((${LIMIT:-560} - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" "$base^! CheriBlockSweep"
echo "asv rc=$? t=$((SECONDS-S)) base=$base"; grep -E "^===|deadline|Error|error" $OUT/asv-s41.log | head -20 | cut -c1-200
