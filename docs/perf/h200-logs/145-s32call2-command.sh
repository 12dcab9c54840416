#!/bin/bash
# session 32 call 2: the asv tracked tier of the tip (the clamped degree-3 GELU on the bf16/fp16 default), peers in the
# run; then the Cheri GPU tests that did not run on sessions 31-32's kernels (log 142 stopped at its time limit): the
# default dispatch and fallbacks, fp32 models, the chunk loop, the training forwards, poly3 at fp16, the z_regs kernels
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s32c2 DEADLINE=$((300 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING: Target"; echo "asv t=$((SECONDS-S))"
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main
timeout $(( 580 - (SECONDS - S) )) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "default_inference or fp32_models or chunk_loop or training_forward_saves or (short_gelu and dtype1) or rejects_what or z_regs" > $OUT/pytest-cheri.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-cheri.log | tail -8 | cut -c1-400
