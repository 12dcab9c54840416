#!/bin/bash
# session 11 call 7: FastLaunch with typed keys (1c96658): the fast-launch gpu tests and a cross-op sample
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader > $OUT/gpu.log
timeout 110 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ops/test_causal_conv1d.py tests/nn/test_cheri_block.py tests/ops/test_cross_entropy.py -k "fast_launch or cached_compiled or tracked_shape or bf16_options or cross_entropy" > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -6
