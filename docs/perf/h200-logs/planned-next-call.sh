#!/bin/bash
# Session 59: PART=tracked (new: the tracked tier alone); PART=lce (through s59-call.sh on an H200): asv of the linear cross-entropy's d_model x V sweep (ChunkedLinearCrossEntropy2DSweep,
# every provider in one process; last run at 4311716, before the full mode reached 38.8 ms at d_model 4096), for issue
# 14's "faster than torch.compile at d_model 4096 and 8192"; tags s59*. (Not yet run: update the tags each session.)
# Session 58: tags s58*, the same PART=sweeptests call as session 57; it ran as log 215 (the Cheri sweep of 23a23eb).
# Session 57: tags s57*; PART=sweeptests also runs the linear cross-entropy's and logprobs' GPU tests (none since 7f19910).
# Session 56: the same call, tags s56*; PART=sweeptests: CheriBlockSweep (deadline 340 s), then GPU tests.
# Session 55: the same call, tags s55*; PART=all on an H200 through h200-only.sh (ws_first_z A/B after the tests).
# Session 54: on an H200, PART=all: (1) asv of the tip's CheriBlockSweep and tracked tier in one asv call, peers in
# the same run (the goals' cells; the 16-bit defaults unchanged since 4c6650a); (2) the GPU tests of ws_first_z and
# of the 16-bit defaults and variants in the time left; (3) where time is left, the A/B: ws_first_z against the
# default, sweep CLI, three rounds, N=512 / 64 / 16, bf16 and fp16. PART=ab: (2) for ws_first_z alone, then (3).
# The staircase this file ran first in session 54 (log 205, an H100): 0bb98f8's version of it. PART=ab RAN on an H100
# as log 206 (59bf99f's version); PART=all and PART=sweep found no H200 in session 54.
# Predicted (H200 asv): megakernel + .eval() N=512 bf16 0.343-0.351 ms (0.3497 at 4b77769; the H100s read the same
# code 0.3424-0.3510), fp16 ~0.345 (0.3475 at 4b77769). ws_first_z: N=16 -10 to -20%, N=64 -4 to -8%, N=512 -0.5 to
# -1.2% (one z tile's conv + LayerNorm, ~2-4 us, off each call's start), bit-equal (its GPU test).
# Copy to .carry/cmd.sh; bash scripts/carry_repo.sh pack; carry [".whl", ".carry"]; docs/public and docs/perf (34 MB)
# hidden while it travels: with them the tree (45 MB), wheels (10) and bundle (16) pass 64 MiB. PART=all in one call,
# PART=ab (ws_first_z's tests and A/B); PART=sweep: asv of CheriBlockSweep alone (a short budget); PART=quick: the 16-bit defaults by the sweep CLI; LIMIT: the seconds a call may
# take. docs/perf/h200-logs/by-gpu.sh runs PART=all on an H200 and PART=ab on any other GPU.
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
asv s59a $((${LIMIT:-585} - 170 - (SECONDS - S))) "HEAD^! CheriBlockSweep" "HEAD^! @tracked"
fi
if [[ ${PART:-1} == all || ${PART:-1} == ab ]]; then
# the GPU tests: ws_first_z's bit-equality (PART=ab), with the 16-bit defaults' and variants' (PART=all)
T="first_z"
[[ ${PART:-1} == all ]] && T="first_z or bf16_shifts or consumer_registers or conv_taps_in_registers or shuffled_conv_taps or z_producer_variants or late_residual or (training_path_and_megakernel_modes and (dtype1 or dtype2))"
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( ${LIMIT:-585} - (SECONDS - S) - 30 < 240 ? ${LIMIT:-585} - (SECONDS - S) - 30 : 240 )) python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "$T" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
# the A/B (session 54): ws_first_z against the default, sweep CLI, one process a round and dtype, order alternating,
# N=512, 64, 16 (the staircase put ~10-14 us of a call outside its rounds; the variant takes one z tile off the start)
A="greyhound-megakernel[ws_first_z=1]"
for r in 1 2 3; do
  for dt in bfloat16 float16; do
    LEFT=$(( ${LIMIT:-585} - (SECONDS - S) - 5 )); (( LEFT < 25 )) && break 2
    P="greyhound-megakernel,$A"; (( r % 2 )) || P="$A,greyhound-megakernel"
    (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 90 ? LEFT : 90 )) python3 -m benchmarks cheri_block \
      --mode forward --providers "$P" --batch-size 512,64,16 --n-filters 128 --seq-len 1024 \
      --dtype $dt --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g; s/, n_filters=128, seq_len=1024//' \
      | cut -c1-260 | sed "s/^/r$r $dt /" | tee -a $OUT/call.log)
  done
done
elif [[ ${PART:-1} == quick ]]; then  # (a short budget, an H200) the 16-bit defaults through the sweep CLI, two rounds
for r in 1 2; do
  for dt in bfloat16 float16; do
    LEFT=$(( ${LIMIT:-585} - (SECONDS - S) - 5 )); (( LEFT < 25 )) && break 2
    (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 90 ? LEFT : 90 )) python3 -m benchmarks cheri_block \
      --mode forward --providers greyhound-megakernel,greyhound-megakernel-noeval --batch-size 512,64 --n-filters 128 \
      --seq-len 1024 --dtype $dt --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g; s/, n_filters=128, seq_len=1024//' \
      | cut -c1-260 | sed "s/^/r$r $dt /" | tee -a $OUT/call.log)
  done
done
elif [[ ${PART:-1} == tracked ]]; then  # the tracked tier alone (178 s on session 55's H200): the tip's H200 figures and
# the gate's pair against the last tracked run of this GPU model; an H100 needs more than 200 s (log 219: cut off)
asv s59t $((${LIMIT:-585} - 15 - (SECONDS - S))) "HEAD^! @tracked"
elif [[ ${PART:-1} == lce ]]; then  # the lm-head sweep alone (d_model 4096 / 8192 x V 65536 / 128256, full/forward/backward)
asv s59l $((${LIMIT:-585} - 20 - (SECONDS - S))) "HEAD^! ChunkedLinearCrossEntropy2DSweep"
elif [[ ${PART:-1} == sweep || ${PART:-1} == sweeptests ]]; then  # CheriBlockSweep alone (163-216 s on an H100, 262 s
# on session 50's H200): every goal cell of the Cheri table; PART=sweeptests: then the GPU tests in what is left (the
# Cheri defaults' and session 55's two fixes': CE's +inf row, causal_conv1d's inf tap; none ran on an H200 since)
D=$((${LIMIT:-585} - 20 - (SECONDS - S))); [[ ${PART:-1} == sweeptests ]] && (( D > 340 )) && D=340
asv s59b $D "HEAD^! CheriBlockSweep"
if [[ ${PART:-1} == sweeptests ]]; then  # the defaults' tests (the off-by-default variants' bit-equality ran on H100s)
T="consumer_registers or shuffled_conv_taps or late_residual or training_path_and_megakernel_modes or default_inference or large_hidden or tuning_variants"
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( ${LIMIT:-585} - (SECONDS - S) - 10 )) python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/ops/test_cross_entropy.py tests/ops/test_causal_conv1d.py tests/nn/test_cheri_block.py tests/ops/test_logprobs.py tests/ops/test_linear_cross_entropy.py \
  -k "inf or gpu_one_pass_matches or gpu_bf16 or gpu_vocab or logprobs or linear or $T" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
fi
else
asv s59 $((${LIMIT:-585} - 20 - (SECONDS - S))) "HEAD^! @tracked" "HEAD^! CheriBlockSweep"
fi
