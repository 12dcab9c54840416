#!/bin/bash
# session 15 call 3: the asv tracked tier of HEAD, then the Cheri GPU tests in full
S=$SECONDS
TAG=s15a DEADLINE=230 bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -3
echo "asv t=$((SECONDS-S))"
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/nn > $OUT/pytest-gpu.txt 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.txt | tail -8
