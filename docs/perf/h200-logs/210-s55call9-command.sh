#!/bin/bash
# Session 55: on an H200, planned-next-call.sh PART=all at once (asv of the tip's CheriBlockSweep + tracked tier, the
# Cheri GPU tests; LIMIT default 560). On any other GPU: the GPU tests of this session's two fixes (cross_entropy's
# +inf row on the one-pass Gluon kernel, causal_conv1d's inf tap on the compiled kernels, the walk among them) and the
# two files' GPU tests of those kernels (SKIP_TESTS=1 skips them), then cross_entropy's A/B against 055b559.
S=$SECONDS
name=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader); echo "$name" | tee $OUT/call.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
bash scripts/carry_repo.sh unpack /tmp/gh-t
(cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log)
case $name in *H200*) PART=${PART:-all} LIMIT=${LIMIT:-560} bash .carry/cmd.sh; exit ;; esac  # the asv first
(cd /tmp/gh-t && [[ -z $SKIP_TESTS ]] && PYTHONPATH=/tmp/site:/tmp/gh-t timeout 150 python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  tests/ops/test_cross_entropy.py tests/ops/test_causal_conv1d.py -k "inf or gpu_one_pass_matches or gpu_bf16 or gpu_vocab" \
  > $OUT/pytest-fixes.log 2>&1; echo "pytest fixes rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest-fixes.log | tail -1 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest-fixes.log | head | tee -a $OUT/call.log
# on another GPU: cross_entropy's +inf change (per-row scalars) against 055b559's kernels, sweep CLI, three rounds
rm -rf /tmp/gh-old; cp -r /tmp/gh-t /tmp/gh-old
cp .carry/ce_old.py /tmp/gh-old/greyhound/ops/cross_entropy.py; cp .carry/ce_gluon_old.py /tmp/gh-old/greyhound/ops/_ce_gluon.py
for r in 1 2 3; do for t in new old; do [[ $r == 2 ]] && t=$([[ $t == new ]] && echo old || echo new)
  d=/tmp/gh-t; [[ $t == old ]] && d=/tmp/gh-old
  (cd $d && PYTHONPATH=/tmp/site:$d timeout 100 python3 -m benchmarks cross_entropy_with_grad --mode full,forward \
    --providers "greyhound,greyhound[one_pass=0]" --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --no-csv 2>&1 \
    | grep -E "^  greyhound|rror" | sed -E 's/  +/ /g' | cut -c1-200 | sed "s/^/r$r $t /" | tee -a $OUT/call.log)
done; done
