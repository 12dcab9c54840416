#!/bin/bash
# PLANNED, NOT YET RUN (written in session 38, no device lent). After planned-next-call1-z-producer.sh (and any default
# it changes): asv of the tip, CheriBlockSweep and the tracked tier, peers in the same run. What it measures that
# session 38 changed without a device: the Cheri training step's backward with four launches fewer (CheriBlockSweep
# full mode; prediction: N=16 host-bound cells 3-6% lower for greyhound-train, N=512 level within a few us), and
# newton_schulz's normalisation in fp64 (tracked (16, 1024, 1024) bf16 forward; prediction: level within its spread).
# Then here: python -m tools.merge_results <files_at>/results-TAG.tar.gz && python -m tools.export &&
# python -m tools.plot --csv docs/data/benchmark_data.csv --out docs/public/assets && python -m tools.docs (commit
# README.md too), and python -m tools.gate bfd782c <tip>. Copy to .carry/cmd.sh and rename to the next log number when
# it runs; ~330 s.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1)
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s39 DEADLINE=$((575 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-s39.log | head -20 | cut -c1-200
