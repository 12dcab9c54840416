#!/bin/bash
# Session 44 call 5: the GPU tests of the fp16 default's shuffled taps (the shuffled-taps test against loaded taps, the
# z producer variants, late residual, short GELU, the megakernel modes in fp16), then asv of the tip: tracked tier and
# CheriBlockSweep, peers in the same runs. Predicted: tests pass; megakernel + .eval() N=512 fp16 ~0.355 (from 0.3648
# at e69544c on an H200), bf16 level with e69544c (0.357).
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/gh-t && git clone -q .carry/repo.bundle /tmp/gh-t && (cd /tmp/gh-t && git checkout -q -B main origin/main)
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout 150 python3 -m pytest -n 4 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "shuffled_conv_taps or z_producer_variants or late_residual or short_gelu or (training_path_and_megakernel_modes and dtype2)" \
  > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
TAG=s44b DEADLINE=$((${LIMIT:-585} - 10 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" "HEAD^! CheriBlockSweep" > /dev/null 2>&1
echo "asv rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; grep -E "^===|deadline" $OUT/asv-s44b.log | head | tee -a $OUT/call.log
