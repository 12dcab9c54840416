#!/bin/bash
# session 30 call 7: the asv tracked tier of the tip (the fused kernel's ring now 3 stages), peers in the run; then the
# fused GPU tests on that default
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s30c7 DEADLINE=$((400 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING: Target"; echo "asv t=$((SECONDS-S))"
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main
timeout $(( 470 - (SECONDS - S) )) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_linear_cross_entropy.py -k "fused or vocab_schedule or lm_head" > $OUT/pytest-fused.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-fused.log | tail -8 | cut -c1-400
