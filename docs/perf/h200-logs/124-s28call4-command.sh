#!/bin/bash
# session 28 call 4: the whole tests/nn GPU suite (the Cheri Block: default, Gluon, warp-specialised and pipelined
# kernels, training, accuracy) on this session's code
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
timeout 570 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn --durations=10 > $OUT/pytest-nn.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|ERROR|Timeout" $OUT/pytest-nn.log | tail -12 | cut -c1-300
