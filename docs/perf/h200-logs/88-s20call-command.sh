#!/bin/bash
# session 20 short call: GPU tests of the bf16x3 / training Gluon kernels, then sweep CLI A/B at N=512 (fp32 megakernel
# default vs the Triton tile; fp32/bf16 training forward default vs Gluon). At most 4 files under $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
(cd /tmp/t && PYTHONPATH=/tmp/site timeout 150 python3 -m pytest -q -p no:cacheprovider tests/nn/test_cheri_block.py -k "bf16x3_keeps or fp32_inference_takes or gluon_training_forward" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; tail -3 $OUT/pytest.log)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 70 python3 -m benchmarks cheri_block --mode forward --batch-size 512 --n-filters 128 --seq-len 1024 --dtype float32 --providers 'greyhound-megakernel,greyhound-megakernel[layout=lc,block_l=128,block_e=64,warps=8,stages=2],greyhound-train,greyhound-train[layout=gluon,block_l=64,block_e=32,warps=4,stages=2],greyhound-train[layout=gluon,block_l=128,block_e=32,warps=8,stages=2]' --no-csv > $OUT/sweep32.log 2>&1; echo "sweep32 rc=$? t=$((SECONDS-S))")
grep -E "^\s+greyhound|rror" $OUT/sweep32.log | head -20
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 60 python3 -m benchmarks cheri_block --mode forward --batch-size 512 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers 'greyhound-megakernel,greyhound-train,greyhound-train[layout=gluon,block_l=64,block_e=64,warps=4,stages=2],greyhound-train[layout=gluon,block_l=64,block_e=32,warps=4,stages=3]' --no-csv > $OUT/sweep16.log 2>&1; echo "sweep16 rc=$? t=$((SECONDS-S))")
grep -E "^\s+greyhound|rror" $OUT/sweep16.log | head -20
