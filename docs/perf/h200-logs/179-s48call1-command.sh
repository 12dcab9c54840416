#!/bin/bash
# PLANNED, NOT YET RUN (session 47's budget ended after an H100 call). On an H200: (1) the GPU tests of the defaults
# changed in 013b576 and 23c21b3 (every 16-bit model whose conv taps the shuffles take: shuffled taps, ws_split_ring +
# ws_epilogue16, no taps in shared memory, no x prefetch): each default against the kernel with all of them off, the
# shuffled taps against loaded taps, late residual, the megakernel modes; (2) asv of the tip, tracked tier then
# CheriBlockSweep, peers in the same runs; (3) where time is left, the sweep CLI, bf16 default against the old
# configuration (taps in shared memory + prefetch), N=512 and 64, two rounds.
# Predicted (H200, asv): megakernel + .eval() N=512 bf16 0.347-0.350 ms (0.3577 at d2a9ecd, log 176; -2.4 to -3.2% on
# one H100 in the sweep CLI), fp16 0.349-0.351 (0.3544); without .eval() the same; N=64 bf16 0.054-0.055 (0.0572).
# Copy to .carry/cmd.sh; git bundle create .carry/repo.bundle --all; carry [".whl", ".carry"]; docs/public and docs/perf
# hidden while it travels. PART=1 then PART=2, or PART=all in one call: CheriBlockSweep asv, tests, tracked asv, sweeps (LIMIT: the seconds a call may take).
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/gh-t && git clone -q .carry/repo.bundle /tmp/gh-t && (cd /tmp/gh-t && git checkout -q -B main origin/main)
(cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log)
if [[ ${PART:-1} == all ]]; then  # CheriBlockSweep's asv first (the goals' cells), then the tests, then the tracked tier
TAG=s48a DEADLINE=$((${LIMIT:-585} - 190 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" > /dev/null 2>&1
echo "asv rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; grep -E "^===|deadline" $OUT/asv-s48a.log | head | tee -a $OUT/call.log
fi
if [[ ${PART:-1} == 1 || ${PART:-1} == all ]]; then
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( ${LIMIT:-585} - (SECONDS - S) - 30 < 240 ? ${LIMIT:-585} - (SECONDS - S) - 30 : 240 )) python3 -m pytest -n 4 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "shuffled_conv_taps or z_producer_variants or late_residual or (training_path_and_megakernel_modes and (dtype1 or dtype2))" \
  > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
if [[ ${PART:-1} == all ]] && (( ${LIMIT:-585} - (SECONDS - S) > 80 )); then
TAG=s48b DEADLINE=$((${LIMIT:-585} - 10 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" > /dev/null 2>&1
echo "asv rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; grep -E "^===|deadline" $OUT/asv-s48b.log | head | tee -a $OUT/call.log
fi
OLD="greyhound-megakernel[ws_conv_smem=1,ws_epilogue16=0,ws_split_ring=0,ws_x_prefetch=1,ws_x_shuffle=0]"
for r in 1 2; do
  LEFT=$(( ${LIMIT:-585} - (SECONDS - S) - 5 )); (( LEFT < 25 )) && break
  (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 90 ? LEFT : 90 )) python3 -m benchmarks cheri_block \
    --mode forward --providers "greyhound-megakernel,$OLD" --batch-size 512,64 --n-filters 128 --seq-len 1024 \
    --dtype bfloat16 --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g' | sed -E 's/, n_filters=128, seq_len=1024//' \
    | sed "s/^/r$r /" | cut -c1-260 | tee -a $OUT/call.log)
done
else
TAG=s48 DEADLINE=$((${LIMIT:-585} - 20 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" "HEAD^! CheriBlockSweep" > /dev/null 2>&1
echo "asv rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; grep -E "^===|deadline" $OUT/asv-s48.log | head | tee -a $OUT/call.log
fi
