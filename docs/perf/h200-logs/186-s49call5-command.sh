#!/bin/bash
# Session 49, call 5: the corrected register test (log 185's four failures were the test's: a public config takes no
# register cap), under pytest on the carried tip.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=uuid,name --format=csv,noheader | tee $OUT/call.log
bash scripts/carry_repo.sh unpack /tmp/gh-t && (cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log)
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout 200 python3 -m pytest -n 4 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "consumer_registers" > $OUT/pytest.log 2>&1; echo "pytest rc=$?" | tee -a $OUT/call.log)
tail -3 $OUT/pytest.log | tee -a $OUT/call.log
