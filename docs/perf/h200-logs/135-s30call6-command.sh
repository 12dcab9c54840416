#!/bin/bash
# session 30 call 6: the fused kernel's ring depth, 4 stages (default) against 3, in two processes at d_model 4096 and
# 8192 (BT=8192, V=128256 bf16, forward, sweep CLI, torch.compile in each process); the fused GPU tests (with the
# TMA fallback test added since call 3)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 150 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_linear_cross_entropy.py -k "fused" > $OUT/pytest-fused.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-fused.log | tail -8 | cut -c1-400
for rep in 1 2; do
  timeout $(( 560 - (SECONDS - S) )) python3 -m benchmarks chunked_linear_cross_entropy --mode forward --batch-size 8192 --d-model 4096,8192 --vocab-size 128256 --dtype bfloat16 --providers "greyhound,greyhound[fused_stages=3],torch-compile" --no-csv > $OUT/sweep-stages-$rep.log 2>&1
  echo "sweep $rep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|torch)|rror|arning" $OUT/sweep-stages-$rep.log | cut -c1-220
done
