#!/bin/bash
# session 31 call 6: the asv tracked tier of the tip (bf16/fp16 Cheri inference now gluon_wsz), peers in the run; then
# the Cheri GPU tests (the megakernel's and the warp-specialised kernels') on that default, as far as time allows
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s31c6 DEADLINE=$((330 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING: Target"; echo "asv t=$((SECONDS-S))"
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main
timeout $(( 575 - (SECONDS - S) )) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "not compiles and not bf16x3" > $OUT/pytest-cheri.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-cheri.log | tail -8 | cut -c1-400
