#!/bin/bash
# session 30 call 2: the fused GEMM + lse loss pass of the linear cross-entropy (greyhound/ops/_lce_gluon.py, tunable
# fused_lse, off by default): its GPU tests, then the sweep CLI (forward, one process, torch.compile in it) at
# BT=8192, H=4096, V=128256 bf16 over its ring and grouping tunables. Since call 1: the k loop alone carries the
# accumulator (ptxas had injected a wgmma wait at the loop's back edge), fp16 rounding by integer arithmetic
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 240 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_linear_cross_entropy.py -k "fused" > $OUT/pytest-fused.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout|Warning" $OUT/pytest-fused.log | tail -12 | cut -c1-400
F='greyhound[fused_lse=1'
timeout $(( 540 - (SECONDS - S) )) python3 -m benchmarks chunked_linear_cross_entropy --mode forward --batch-size 8192 --d-model 4096 --vocab-size 128256 --dtype bfloat16 --providers "greyhound,$F],torch-compile,$F,fused_stages=3],$F,fused_group_n=8],$F,fused_group_n=4],$F,fused_group_n=1],$F],greyhound" --no-csv > $OUT/sweep-fwd.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|torch)|rror|arning" $OUT/sweep-fwd.log | cut -c1-220
