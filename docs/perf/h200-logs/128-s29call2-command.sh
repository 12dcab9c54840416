#!/bin/bash
# session 29 call 2: the GPU tests of the cross-entropy family on the new default (two held tiles), then the asv
# tracked tier of the tip
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
nvidia-smi --query-gpu=uuid --format=csv,noheader
PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1 timeout 330 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py tests/ops/test_linear_cross_entropy.py tests/ops/test_logprobs.py --durations=5 > $OUT/pytest-ce.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|ERROR|Timeout" $OUT/pytest-ce.log | tail -12 | cut -c1-300
cd - > /dev/null
TAG=s29 DEADLINE=$((580 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked"; echo "asv t=$((SECONDS-S))"
