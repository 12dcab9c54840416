#!/bin/bash
# session 21 call 1: diagnosis of the Gluon bf16x3 / training failures (per config errors and where they sit), the
# Gluon training-forward GPU test with messages, and a sweep-CLI A/B of the training forward now that a variant runs
# with grad on. At most 5 files under $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
cp .carry/s21diag.py /tmp/t/
nvidia-smi --query-gpu=uuid --format=csv,noheader
(cd /tmp/t && PYTHONPATH=/tmp/site timeout 170 python3 s21diag.py > $OUT/diag.log 2>&1; echo "diag rc=$? t=$((SECONDS-S))")
cat $OUT/diag.log | cut -c1-400
(cd /tmp/t && PYTHONPATH=/tmp/site timeout 140 python3 -m pytest -q --tb=line -p no:cacheprovider tests/nn/test_cheri_block.py -k "gluon_training_forward" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; tail -20 $OUT/pytest.log | cut -c1-300)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((560 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512 --n-filters 128 --seq-len 1024 --dtype bfloat16,float32 --providers 'greyhound-train,greyhound-train[layout=gluon,block_l=64,block_e=64,warps=4,stages=2],greyhound-train[layout=gluon,block_l=64,block_e=32,warps=4,stages=3],greyhound-train[layout=gluon,block_l=128,block_e=64,warps=8,stages=2],greyhound-train[layout=gluon,block_l=64,block_e=16,warps=4,stages=4]' --no-csv > $OUT/sweep.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))")
grep -E "^\s+greyhound|rror" $OUT/sweep.log | cut -c1-250 | head -20
