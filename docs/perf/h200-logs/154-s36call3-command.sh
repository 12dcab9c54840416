#!/bin/bash
# Session 36 call 3: the GPU tests of this session's changes: the new gluon_wsz defaults (bf16 poly2 + lone tiles,
# fp16 poly3 + lone tiles) within the half bounds and one ulp of the degree-6 form; ws_late_residual bit-equal.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
PYTHONPATH=/tmp/site:/tmp/t timeout 400 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py \
  -k "short_gelu_stays_within_half_bounds or late_residual_changes_no_bit" > $OUT/pytest-cheri.log 2>&1
echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-cheri.log | tail -8 | cut -c1-300
