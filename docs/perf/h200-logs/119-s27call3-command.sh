#!/bin/bash
# session 27 call 3: asv tracked tier of HEAD (peers in the same run), the chunk-loop GPU tests not reached in call 2
# (training forwards), then the GPU tests outside tests/ops and tests/nn with the time left
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
TAG=s27 DEADLINE=230 bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -4
echo "asv done t=$((SECONDS-S))"
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 200 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "chunk_loop and True" > $OUT/pytest-loop-training.log 2>&1; echo "pytest loop-training rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-loop-training.log | tail -6 | cut -c1-300)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((580 - (SECONDS - S))) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests --ignore=tests/ops --ignore=tests/nn > $OUT/pytest-rest.log 2>&1; echo "pytest rest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-rest.log | tail -6 | cut -c1-300)
