#!/bin/bash
# PLANNED, NOT YET RUN (written in session 43). The first H200 asv with the harness's expandable segments (fb330a6):
# the tip's CheriBlockSweep and tracked tier, then the base's tracked tier on the same GPU (H200: 10d2d8c, session 42's
# tip there; H100: fb330a6, session 43's), peers in the same runs; then the two Newton-Schulz GPU tests session 43 did not
# reach (shape2, muon and polar_express; slow, so last). Predicted (H200): CE forward at the fresh-process level for both
# commits (~0.536 ms, fla ~0.76), every other series level with session 42's readings within its noise; megakernel +
# .eval() N=512 bf16 0.3665 +- 0.004. Copy to .carry/cmd.sh; git bundle create .carry/repo.bundle --all; carry
# [".whl", ".carry"]; hide docs/public and docs/perf while it travels (64 MiB).
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ $name == *H200* ]]; then base=10d2d8c; else base=fb330a6; fi
TAG=s44 DEADLINE=$((${LIMIT:-585} - 150 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" "$base^! @tracked"
echo "asv rc=$? t=$((SECONDS-S)) base=$base"; grep -E "^===|deadline|Error|error" $OUT/asv-s44.log | head -20 | cut -c1-200
cd /tmp/gh-s44 && PYTHONPATH=/tmp/site:/tmp/gh-s44 timeout $(( ${LIMIT:-585} - (SECONDS - S) - 5 )) python3 -m pytest -n 2 -v \
  --tb=short -p no:cacheprovider -rfE "tests/ops/test_newton_schulz.py::test_bf16_gram_iteration_against_fp64" \
  -k "shape2" > $OUT/pytest-ns.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed" $OUT/pytest-ns.log | tail -2
