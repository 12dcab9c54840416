#!/bin/bash
# session 29 call 3: the held-rows GPU tests whose setup assertion failed in call 2 (the held flag is now a count),
# then the asv ChunkedLinearCrossEntropy2DSweep (d_model 4096/8192 x V 65536/128256, every provider in one run)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
nvidia-smi --query-gpu=uuid --format=csv,noheader
PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1 timeout 150 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py -k "held_rows" > $OUT/pytest-held-rows.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|ERROR|Timeout" $OUT/pytest-held-rows.log | tail -8 | cut -c1-300
cd - > /dev/null
TAG=s29c3 DEADLINE=$((585 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! ChunkedLinearCrossEntropy2DSweep" 2>&1 | grep -v "^WARNING: Target"; echo "asv t=$((SECONDS-S))"
grep -E "^\[|greyhound|torch|liger" $OUT/asv-s29c3.log | tail -30 | cut -c1-220
