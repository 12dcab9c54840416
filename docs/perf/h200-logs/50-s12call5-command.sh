#!/bin/bash
# session 12 call 5: the asv tracked tier of HEAD (4064-entry vocab chunks), then the CE / linear CE gpu tests
S=$SECONDS
TAG=s12e DEADLINE=210 bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -3
echo "asv t=$((SECONDS-S))"
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/ops/test_cross_entropy.py tests/ops/test_linear_cross_entropy.py tests/test_tuning.py > $OUT/pytest-gpu.txt 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.txt | tail -8
echo "done t=$((SECONDS-S))"
