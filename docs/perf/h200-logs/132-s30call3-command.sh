#!/bin/bash
# session 30 call 3: the fused GEMM + lse loss pass now the default (fused_lse, 8 vocabulary tiles a group): the GPU
# tests of the linear cross-entropy and logprobs files, then the sweep CLI (forward, one process, torch.compile in it):
# ring/grouping tunables at BT=8192, H=4096, V=128256 bf16, then d_model 4096/8192 x V 65536/128256 against the cuBLAS
# vocab schedule (fused_lse=0)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 240 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_linear_cross_entropy.py tests/ops/test_logprobs.py > $OUT/pytest-lce.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout|Warning" $OUT/pytest-lce.log | tail -12 | cut -c1-400
F='greyhound[fused'
timeout $(( 420 - (SECONDS - S) )) python3 -m benchmarks chunked_linear_cross_entropy --mode forward --batch-size 8192 --d-model 4096 --vocab-size 128256 --dtype bfloat16 --providers "greyhound,${F}_lse=0],torch-compile,${F}_stages=3],${F}_group_n=6],${F}_group_n=12],${F}_group_n=10],greyhound" --no-csv > $OUT/sweep-tunables.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|torch)|rror|arning" $OUT/sweep-tunables.log | cut -c1-220
timeout $(( 570 - (SECONDS - S) )) python3 -m benchmarks chunked_linear_cross_entropy --mode forward --batch-size 8192 --d-model 4096,8192 --vocab-size 65536,128256 --dtype bfloat16 --providers "greyhound,${F}_lse=0],torch-compile" --no-csv > $OUT/sweep-shapes.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|torch)|rror|arning" $OUT/sweep-shapes.log | cut -c1-220
