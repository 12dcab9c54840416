#!/bin/bash
# session 23 call 1: the GPU tests session 22 could not run (the small fp32 inference tile as a default, and three
# Cheri tests log 93 did not reach), then where the two fp32 inference tiles cross over (sweep CLI, one process).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 240 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfEs tests/nn -k "bf16x3_keeps or fp32_models_take or falls_back or rejects" > $OUT/pytest-nn.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))")
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest-nn.log | tail -10 | cut -c1-300
G='greyhound-megakernel'
P="$G,$G[layout=gluon,block_l=128,block_e=64,warps=8,stages=2],$G[layout=gluon,block_l=64,block_e=32,warps=4,stages=2]"
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((520 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 64,96,128,256 --n-filters 128 --seq-len 1024 --dtype float32 --providers "$P" --no-csv > $OUT/sweep-fp32.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+greyhound|rror|batch" $OUT/sweep-fp32.log | cut -c1-220)
