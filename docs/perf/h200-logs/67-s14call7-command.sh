#!/bin/bash
# session 14 call 7: the GPU tests call 6's 230 s limit cut off (linear CE, logprobs, newton_schulz, timing
# agreement) and the CE tests (one-pass default, its variants), at HEAD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/ops/test_linear_cross_entropy.py tests/ops/test_logprobs.py tests/ops/test_newton_schulz.py tests/test_timing_agreement.py tests/ops/test_cross_entropy.py > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error|SKIP" $OUT/pytest-gpu.log | tail -12
