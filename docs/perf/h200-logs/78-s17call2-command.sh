#!/bin/bash
# session 17 call 2: the low-memory linear CE schedule (grad_schedule="vocab"): the asv d_model x vocab sweep with
# every provider in one process, then the GPU tests of the linear CE and CE files (the gradient kernel changed)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
export PYTHONUNBUFFERED=1
TAG=s17b DEADLINE=470 bash scripts/h200_asv.sh "HEAD^! ChunkedLinearCrossEntropy2DSweep" 2>&1 | grep -v "^WARNING" | tail -3
echo "asv t=$((SECONDS-S))"
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main)
cd /tmp/t && git log --oneline -1
left=$((585 - (SECONDS - S)))
PYTHONPATH=/tmp/site:/tmp/t timeout $left python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/ops/test_linear_cross_entropy.py tests/ops/test_cross_entropy.py > $OUT/pytest-gpu.txt 2>&1; rc=$?; echo "pytest rc=$rc t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.txt | tail -8
