#!/bin/bash
# session 18 call 5: fp16 models on fp16 dots (0e96517). GPU tests first (the new fp16 Gluon test, the Gluon/Triton
# agreement, the default-inference fallback, the half-model bounds, plans); if they pass, asv CheriBlockSweep at
# 0e96517 (every published cell, peers in one process). At most 6 files under $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q 0e96517)
(cd /tmp/t && PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -p no:cacheprovider tests/nn/test_cheri_block.py -k "fp16_models or gluon_kernel_matches or default_inference or half_models or plan or dtype_change or eval_cache or gpu_training_path" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; tail -3 $OUT/pytest.log)
if ! grep -q " passed" $OUT/pytest.log || grep -q "failed" $OUT/pytest.log; then echo "tests did not pass: no asv"; exit 0; fi
left=$(( 570 - (SECONDS - S) )); echo "asv with ${left}s"
CHECKOUT=0e96517 TAG=fp16 DEADLINE=$left bash scripts/h200_asv.sh "0e96517^! CheriBlockSweep" > /dev/null 2>&1; echo "asv t=$((SECONDS-S))"
grep -E "^=== " $OUT/asv-fp16.log
grep -E "^\s+greyhound-megakernel[a-z-]*\s+forward\s+(16|64|512)\s+128\s+1024\s+float16" $OUT/asv-fp16.log
