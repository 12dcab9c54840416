#!/bin/bash
# Session 57. On an H200: planned-next-call.sh PART=sweeptests (asv of the tip's CheriBlockSweep under a 340 s deadline,
# then the GPU tests of the 16-bit defaults, of session 55's fixes and of the cross-entropy family). On any other GPU:
# the cross-entropy family's GPU tests alone (cross_entropy_with_grad, logprobs, chunked_linear_cross_entropy): the
# last two have not run on a GPU since session 56's large-logit change (7f19910), which their rows schedule takes.
S=$SECONDS
name=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader); echo "$name" | tee $OUT/call.log
if [[ $name == *H200* && -z $AB ]]; then PART=sweeptests LIMIT=${LIMIT:-560} bash .carry/cmd.sh; exit; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
[ -d /tmp/gh-t ] || bash scripts/carry_repo.sh unpack /tmp/gh-t > /dev/null
(cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log)
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout ${TEST_LIMIT:-300} python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider \
  -rfE -m gpu tests/ops/test_cross_entropy.py tests/ops/test_logprobs.py tests/ops/test_linear_cross_entropy.py ${TESTS_EXTRA} \
  > $OUT/pytest-ce.log 2>&1; echo "pytest ce rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest-ce.log | tail -1 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest-ce.log | head | tee -a $OUT/call.log
echo "t=$((SECONDS-S))" | tee -a $OUT/call.log
