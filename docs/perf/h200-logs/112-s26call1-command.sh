#!/bin/bash
# session 26 call 1: CE rows held on chip (one_pass_hold): GPU tests, sweep CLI A/B beside the default and fla, then the
# ring path's one-pass tests (its epilogue was refactored)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 170 python3 -m pytest -m gpu -q -x --tb=short -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py -k "held_rows" > $OUT/pytest-held.log 2>&1; echo "pytest held rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-held.log | tail -6 | cut -c1-300)
g='greyhound'
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 120 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --providers "$g,$g[one_pass_hold=1],fla" --no-csv > $OUT/sweep-ce.log 2>&1; echo "ce sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-ce.log | cut -c1-200)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 90 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 65536,50304 --dtype bfloat16 --providers "$g,$g[one_pass_hold=1],fla" --no-csv > $OUT/sweep-ce-small.log 2>&1; echo "ce sweep small rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror|vocab" $OUT/sweep-ce-small.log | cut -c1-200)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((560 - (SECONDS - S))) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py -k "one_pass and not held" > $OUT/pytest-ring.log 2>&1; echo "pytest ring rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-ring.log | tail -6 | cut -c1-300)
echo "done t=$((SECONDS-S))"
