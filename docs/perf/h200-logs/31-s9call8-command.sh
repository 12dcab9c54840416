#!/bin/bash
# session 9 call 8: every gpu test on main, then the tracked tier of main's HEAD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1 \
  && PYTHONPATH=/tmp/site:/tmp/t timeout 140 python3 -m pytest -m gpu -q -p no:cacheprovider -rs -s tests > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))")
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -6
TAG=s9b DEADLINE=$((370 - SECONDS)) bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -3
echo "asv done t=$((SECONDS-S))"
