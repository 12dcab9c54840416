#!/bin/bash
# session 32 call 4: asv tracked tier and CheriBlockSweep of the tip (gluon_wsz with b1 by wgmma the bf16/fp16
# default), peers in the run; then the GPU tests of the new default (large activations, poly3, gluon_wsz bit-equality
# with b1 by wgmma off) as far as time allows
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s32c4 DEADLINE=$((450 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" "HEAD^! CheriBlockSweep" 2>&1 | grep -v "^WARNING: Target" | grep -E "===|deadline|exit"; echo "asv t=$((SECONDS-S))"
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main
timeout $(( 575 - (SECONDS - S) )) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "large_hidden or short_gelu or (warp_specialised_kernel_matches and gluon_wsz and 128-4-3-4-1024-40)" > $OUT/pytest-cheri.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-cheri.log | tail -8 | cut -c1-400
