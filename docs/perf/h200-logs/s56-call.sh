#!/bin/bash
# Session 56 (ran as logs 212 and 213; the causal_conv1d fix it times was reverted after 213, so its conv A/B now
# compares 7081646's kernels with themselves). On an H200: planned-next-call.sh PART=sweeptests (asv of the tip's CheriBlockSweep, then the GPU tests
# of the 16-bit defaults and of session 55's fixes). On any other GPU (or with AB=1): the GPU tests of session 56's
# causal_conv1d fix (non-finite x: the tiled, gather, two-pass and walk backwards) and the file's other GPU tests, then
# its A/B against 7081646's kernels (.carry/conv_old.py), sweep CLI, three rounds, order alternating: backward and full,
# B=8 D=4096 L=2048 W=4 bf16 silu, channel-last (the walk: the tracked series) and contiguous (the gather kernel).
# Predicted: the walk level to -1% (its inside groups lose the owned select, a uniform branch a group of 4 rows is
# added), the gather level (one branch a tile, 8 selects a program), within +-1% both.
S=$SECONDS
name=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader); echo "$name" | tee $OUT/call.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
[ -d /tmp/gh-t ] || bash scripts/carry_repo.sh unpack /tmp/gh-t > /dev/null
(cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log)
if [[ $name == *H200* && -z $AB ]]; then PART=sweeptests LIMIT=${LIMIT:-560} bash .carry/cmd.sh; exit; fi
(cd /tmp/gh-t && [[ -z $SKIP_TESTS ]] && PYTHONPATH=/tmp/site:/tmp/gh-t timeout 180 python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  tests/ops/test_causal_conv1d.py ${TESTS_EXTRA} > $OUT/pytest-fixes.log 2>&1; echo "pytest fixes rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest-fixes.log | tail -1 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest-fixes.log | head | tee -a $OUT/call.log
rm -rf /tmp/gh-old; cp -r /tmp/gh-t /tmp/gh-old; cp .carry/conv_old.py /tmp/gh-old/greyhound/ops/causal_conv1d.py
for r in 1 2 3; do
  for t in new old; do [[ $r == 2 ]] && t=$([[ $t == new ]] && echo old || echo new)
    d=/tmp/gh-t; [[ $t == old ]] && d=/tmp/gh-old
    (cd $d && PYTHONPATH=/tmp/site:$d timeout 120 python3 -m benchmarks causal_conv1d --mode backward,full --providers greyhound \
      --batch-size 8 --dim 4096 --seq-len 2048 --width 4 --layout channel_last,contiguous --dtype bfloat16 --no-csv 2>&1 \
      | grep -E "^  greyhound|rror" | sed -E 's/  +/ /g' | cut -c1-200 | sed "s/^/r$r $t /" | tee -a $OUT/call.log)
  done
done
echo "t=$((SECONDS-S))" | tee -a $OUT/call.log
# cross_entropy_with_grad (session 56: p from z - row max and log2 of the sum, +1 FADD an entry in each of the one-pass
# kernel's sweeps; the smoothing sum of z - row max): its GPU tests, then the A/B against 3b9904c's two files
# (.carry/ce_old.py, .carry/ce_gluon_old.py), sweep CLI, three rounds, BT=8192 V=128256 bf16, the one-pass default
# and the two-kernel path. Predicted: level to +2% (both sweeps memory-bound at ~1.1 ms; one more FADD an entry).
(cd /tmp/gh-t && [[ -z $SKIP_TESTS ]] && PYTHONPATH=/tmp/site:/tmp/gh-t timeout 170 python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/ops/test_cross_entropy.py tests/ops/test_logprobs.py tests/ops/test_linear_cross_entropy.py > $OUT/pytest-ce.log 2>&1; echo "pytest ce rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest-ce.log | tail -1 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest-ce.log | head | tee -a $OUT/call.log
cp .carry/ce_old.py /tmp/gh-old/greyhound/ops/cross_entropy.py; cp .carry/ce_gluon_old.py /tmp/gh-old/greyhound/ops/_ce_gluon.py
for r in 1 2 3; do for t in new old; do [[ $r == 2 ]] && t=$([[ $t == new ]] && echo old || echo new)
  d=/tmp/gh-t; [[ $t == old ]] && d=/tmp/gh-old
  (cd $d && PYTHONPATH=/tmp/site:$d timeout 100 python3 -m benchmarks cross_entropy_with_grad --mode full,forward \
    --providers "greyhound,greyhound[one_pass=0]" --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --no-csv 2>&1 \
    | grep -E "^  greyhound|rror" | sed -E 's/  +/ /g' | cut -c1-200 | sed "s/^/r$r $t /" | tee -a $OUT/call.log)
done; done
echo "t=$((SECONDS-S))" | tee -a $OUT/call.log
