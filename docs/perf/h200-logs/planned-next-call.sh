#!/bin/bash
# RAN on an H100 as log 201 (session 52, PART=all: both asv suites, 124 GPU tests, three sweep rounds); still the plan for an H200.
# On an H200, PART=all: (1) asv of the tip's CheriBlockSweep and tracked tier in one asv call, peers in the same run (the
# goals' cells: bf16 unchanged since 4b77769, fp16 with 4c6650a's registers, 160 / 168 / 24); (2) the GPU tests of
# the 16-bit defaults (each variant and default against the kernel with all of them off, shuffled against loaded taps,
# the registers and the conv's taps in registers changing no bit, late residual, the megakernel modes) in the time
# left; (3) where time is left, the sweep CLI, both 16-bit defaults against session 49's fp16
# configuration (`maxnreg=160`) and ws_conv_regs, three rounds. PART=2 runs both asv suites in one asv call (371 s on
# an H100 in session 51, log 198): the most a call can do for the goals' figures when only one call comes.
# Predicted (H200, asv): megakernel + .eval() N=512 fp16 ~0.345 ms, without ~0.344 (0.3475 / 0.3464 at 4b77769, log
# 189; -0.3 to -1.1% on three H100s); bf16 unchanged, 0.347-0.351 (0.3497 / 0.3509 at 4b77769; the H100s read the same
# code 0.3424-0.3510); N=64 fp16 ~0.053. ws_conv_regs: level for bf16, +0.5 to +0.9% for fp16 (logs 197, 199).
# The timer's head start sized to the host (session 51, not yet run on a GPU): host-bound series read the device's
# time in every run: the Cheri training forward N=16 ~0.027 ms bf16/fp16 and ~0.053 fp32 (their first samples; 0.067-
# 0.218 in host-behind runs), causal_conv1d full at the tracked shape ~0.26 ms (its GPU work); every profile record has
# head_start_cycles and host_seconds_per_call. A series whose host kept ahead reads as before.
# Copy to .carry/cmd.sh; bash scripts/carry_repo.sh pack; carry [".whl", ".carry"]; docs/public and docs/perf (34 MB)
# hidden while it travels: with them the tree (45 MB), wheels (10) and bundle (16) pass 64 MiB. PART=all in one call, or
# PART=1 (tests, sweeps) then PART=2 (asv); PART=3: the sweep rounds alone (a second call on the warm machine); PART=sweep:
# asv of CheriBlockSweep alone (a short budget); LIMIT: the seconds a call may take.
S=$SECONDS
# At most 8 files come back from $OUT (session 48 wrote 10 and lost both results tarballs): each asv run writes into
# its own folder, and only its results tarball and one tarball of its logs (asv, gpu, profile) land in $OUT.
asv() {  # asv TAG DEADLINE "RANGE REGEX"...
  local tag=$1 deadline=$2; shift 2; mkdir -p /tmp/out-$tag
  OUT=/tmp/out-$tag TAG=$tag DEADLINE=$deadline bash scripts/h200_asv.sh "$@" > /dev/null 2>&1
  echo "asv $tag rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log
  grep -E "^===|deadline" /tmp/out-$tag/asv-$tag.log | head | tee -a $OUT/call.log
  mv /tmp/out-$tag/results-$tag.tar.gz $OUT/ 2>/dev/null; tar czf $OUT/logs-$tag.tar.gz -C /tmp/out-$tag .
}
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
bash scripts/carry_repo.sh unpack /tmp/gh-t
(cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log)
if [[ ${PART:-1} == all ]]; then  # both asv suites first, in one asv call (the goals' cells and the tracked tier, whose
# host-bound series the head start of 81db6f9 should now read as the device's time), then the tests in what is left
asv s53a $((${LIMIT:-585} - 170 - (SECONDS - S))) "HEAD^! CheriBlockSweep" "HEAD^! @tracked"
fi
if [[ ${PART:-1} == 1 || ${PART:-1} == all || ${PART:-1} == 3 ]]; then
if [[ ${PART:-1} != 3 ]]; then
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( ${LIMIT:-585} - (SECONDS - S) - 30 < 240 ? ${LIMIT:-585} - (SECONDS - S) - 30 : 240 )) python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "consumer_registers or conv_taps_in_registers or shuffled_conv_taps or z_producer_variants or late_residual or (training_path_and_megakernel_modes and (dtype1 or dtype2))" \
  > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
fi
# fp16's default (160 / 168 / 24 since 4c6650a) against session 49's (160 / 152 / 40); bf16's default beside it as
# the control (its code unchanged); predicted fp16 -0.5 to -0.8%; and both with ws_conv_regs (G)
F="greyhound-megakernel[layout=gluon_wsz,block_l=64,block_e=64,warps=4,stages=4,maxnreg=160]"
G="greyhound-megakernel[ws_conv_regs=1]"
for r in 1 2 3; do
  for dt in bfloat16 float16; do
    LEFT=$(( ${LIMIT:-585} - (SECONDS - S) - 5 )); (( LEFT < 25 )) && break 2
    P="greyhound-megakernel,$F,$G"; (( r % 2 )) || P="$G,$F,greyhound-megakernel"
    (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 90 ? LEFT : 90 )) python3 -m benchmarks cheri_block \
      --mode forward --providers "$P" --batch-size 512,64 --n-filters 128 --seq-len 1024 \
      --dtype $dt --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g; s/, n_filters=128, seq_len=1024//' \
      | sed -E 's/block_e=64,block_l=64,layout=gluon_wsz,//; s/,warps=4//' | sed "s/^/r$r /" | cut -c1-260 | tee -a $OUT/call.log)
  done
done
elif [[ ${PART:-1} == sweep ]]; then  # CheriBlockSweep alone (163-216 s on an H100): every goal cell of the Cheri table
asv s52b $((${LIMIT:-585} - 20 - (SECONDS - S))) "HEAD^! CheriBlockSweep"
else
asv s52 $((${LIMIT:-585} - 20 - (SECONDS - S))) "HEAD^! @tracked" "HEAD^! CheriBlockSweep"
fi
