#!/bin/bash
# Session 43 call 4: asv of the tip's tracked tier (fb330a6: the harness's expandable segments), then the base's
# tracked tier on the same GPU (H100: 936ace0, session 41's asv there; H200: 10d2d8c, session 42's tip), peers in the
# same runs. Both run the tip's benchmark suite (asv's benchmark_dir), so both measure with expandable segments.
# Predicted: CE forward at the fresh-process level for both commits (H100 ~0.73 ms in the sweep CLI), every other
# series level with its last asv reading on that card type within its noise.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ $name == *H200* ]]; then base=10d2d8c; else base=936ace0; fi
TAG=s43 DEADLINE=$((${LIMIT:-560} - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" "$base^! @tracked"
echo "asv rc=$? t=$((SECONDS-S)) base=$base"; grep -E "^===|deadline|Error|error" $OUT/asv-s43.log | head -20 | cut -c1-200
