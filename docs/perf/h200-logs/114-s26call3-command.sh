#!/bin/bash
# session 26 call 3: the new defaults (CE rows held on chip; Cheri tiny calls on the (64, 64) tile): CE one-pass GPU
# tests, then asv of HEAD (tracked tier, then CheriBlockSweep; peers in the same run) with the time left
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 190 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py -k "one_pass and not held_rows" > $OUT/pytest-ce.log 2>&1; echo "pytest ce rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-ce.log | tail -6 | cut -c1-300)
TAG=s26 DEADLINE=$((585 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" "HEAD^! CheriBlockSweep" 2>&1 | grep -v "^WARNING" | tail -6
echo "done t=$((SECONDS-S))"
