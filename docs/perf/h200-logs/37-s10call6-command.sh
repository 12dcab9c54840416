#!/bin/bash
# session 10 call 6: every gpu test at HEAD, a host-time profile (diagnosis), then the asv tracked tier of HEAD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1 \
  && PYTHONPATH=/tmp/site:/tmp/t timeout 230 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))")
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -6
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 60 python3 $OLDPWD/.carry/host_profile.py > $OUT/host-profile.log 2>&1; echo "profile rc=$? t=$((SECONDS-S))")
head -9 $OUT/host-profile.log
TAG=s10 DEADLINE=$((560 - SECONDS + S)) bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -3
echo "asv done t=$((SECONDS-S))"
