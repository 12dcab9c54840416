#!/bin/bash
# session 11 call 4: every gpu test at HEAD (FastLaunch on every op), then the asv tracked tier of HEAD and the
# cheri_conv_norm sweep suite (the Cheri Block's reuse of causal_conv1d) through asv
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1 \
  && PYTHONPATH=/tmp/site:/tmp/t timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))")
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -8
TAG=s11c DEADLINE=$((575 - SECONDS + S)) bash scripts/h200_asv.sh "HEAD^! @tracked" "HEAD^! CheriConvNormSweep" 2>&1 | grep -v "^WARNING" | tail -4
echo "done t=$((SECONDS-S))"
