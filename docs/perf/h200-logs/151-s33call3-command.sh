#!/bin/bash
# session 33 call 3: asv tracked tier and CheriBlockSweep of c6010eb (b1 in one store, the residual under the last GEMM),
# peers in the run; then the warp-specialised bit-equality GPU tests outside gluon_wsz (their b1 fill changed too)
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s33c3 DEADLINE=$((450 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" "HEAD^! CheriBlockSweep" 2>&1 | grep -v "^WARNING: Target" | grep -E "===|deadline|exit"; echo "asv t=$((SECONDS-S))"
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main
timeout $(( 580 - (SECONDS - S) )) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "warp_specialised_kernel_matches and not gluon_wsz" > $OUT/pytest-cheri.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-cheri.log | tail -8 | cut -c1-400
