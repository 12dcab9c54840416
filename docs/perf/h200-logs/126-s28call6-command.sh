#!/bin/bash
# session 28 call 6: the tests/nn GPU tests after the first 122 (call 4 ran those, all passed, before its time limit),
# as far as this call's time allows
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
python3 -m pytest -m gpu -q -p no:cacheprovider --collect-only tests/nn 2>/dev/null | grep "::" > /tmp/ids.txt; echo "collected $(wc -l < /tmp/ids.txt)"
tail -n +123 /tmp/ids.txt > /tmp/rest.txt; echo "to run $(wc -l < /tmp/rest.txt)"
timeout 380 python3 -m pytest -m gpu -v --tb=short -p no:cacheprovider -rfE $(cat /tmp/rest.txt) > $OUT/pytest-nn-rest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -cE " PASSED" $OUT/pytest-nn-rest.log; grep -E "FAILED|ERROR|passed|failed" $OUT/pytest-nn-rest.log | tail -8 | cut -c1-300
