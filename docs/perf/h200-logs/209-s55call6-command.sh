#!/bin/bash
# Session 55: on an H200, planned-next-call.sh PART=all (asv of the tip's CheriBlockSweep + tracked tier, the Cheri
# GPU tests). On any GPU first (~60 s): the GPU tests of this session's two fixes (cross_entropy's +inf row on the
# one-pass Gluon kernel, causal_conv1d's inf tap on the compiled kernels, the walk among them) and the two files'
# GPU tests of those kernels.
S=$SECONDS
name=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader); echo "$name" | tee $OUT/call.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
bash scripts/carry_repo.sh unpack /tmp/gh-t
(cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log
 PYTHONPATH=/tmp/site:/tmp/gh-t timeout 150 python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  tests/ops/test_cross_entropy.py tests/ops/test_causal_conv1d.py -k "inf or gpu_one_pass_matches or gpu_bf16 or gpu_vocab" \
  > $OUT/pytest-fixes.log 2>&1; echo "pytest fixes rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest-fixes.log | tail -1 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest-fixes.log | head | tee -a $OUT/call.log
case $name in *H200*) PART=${PART:-all} LIMIT=$((575 - (SECONDS - S))) bash .carry/cmd.sh ;; *) echo "not an H200: stopped" ;; esac
