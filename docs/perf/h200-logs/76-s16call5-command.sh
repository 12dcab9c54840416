#!/bin/bash
# session 16 call 5: the GPU tests outside tests/nn at HEAD (CE and linear CE first), with the device time left
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout ${T:-240} python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/ops/test_cross_entropy.py tests/ops/test_linear_cross_entropy.py tests/ops/test_causal_conv1d.py tests/ops/test_logprobs.py tests/ops/test_newton_schulz.py tests/ops/test_compile.py tests/test_launch.py tests/test_library.py tests/benchmarks > $OUT/pytest-gpu.txt 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.txt | tail -10
tail -c 600 $OUT/pytest-gpu.txt
