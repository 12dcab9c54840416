#!/bin/bash
# session 21 call 3: sweep-CLI A/B of fp32 (bf16x3) Gluon tiles at N=512 (inference, training forward), the GPU tests
# of the accuracy fix and the new fp32 defaults, then (only if those pass) asv CheriBlockSweep on HEAD.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 100 python3 -m benchmarks cheri_block --mode forward --batch-size 512 --n-filters 128 --seq-len 1024 --dtype float32 --providers 'greyhound-megakernel,greyhound-megakernel[layout=lc,block_l=128,block_e=64,warps=8,stages=2],greyhound-megakernel[layout=gluon,block_l=128,block_e=64,warps=8,stages=2],greyhound-megakernel[layout=gluon,block_l=128,block_e=32,warps=8,stages=2],greyhound-train,greyhound-train[layout=lc,block_l=128,block_e=64,warps=8,stages=2],greyhound-train[layout=gluon,block_l=128,block_e=32,warps=8,stages=2]' --no-csv > $OUT/sweep.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))")
grep -E "^\s+greyhound|rror" $OUT/sweep.log | cut -c1-250 | head -20
(cd /tmp/t && PYTHONPATH=/tmp/site timeout 170 python3 -m pytest -q --tb=line -p no:cacheprovider tests/nn/test_cheri_block.py -k "bf16x3_keeps or gluon_training_forward or fp32_models_take" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; tail -8 $OUT/pytest.log | cut -c1-300)
if grep -qE "^[0-9]+ passed" <(tail -1 $OUT/pytest.log) && ! grep -q failed <(tail -1 $OUT/pytest.log); then
  TAG=s21 DEADLINE=$((575 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep"
  echo "asv t=$((SECONDS-S))"
else
  echo "GPU tests did not all pass: no asv run"
fi
