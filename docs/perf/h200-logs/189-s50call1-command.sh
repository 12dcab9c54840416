#!/bin/bash
# Session 50, call 1: RAN with PART=all on an H200 (GPU-c4f24185): log 189. (A copy of planned-next-call.sh at 4b77769.)
# On an H200: (1) asv of the tip's CheriBlockSweep, peers in the same run; (2) the GPU tests of the 16-bit defaults
# (013b576, 23c21b3, and 9b3b8d4's fp16 consumers at 160 registers): each variant and default against the kernel with
# all of them off and the taps from the same source, the shuffled taps against loaded taps, the registers changing no
# bit, late residual, the megakernel modes; (3) asv of the tip's tracked tier; (4) where time is left, the sweep CLI,
# bf16 and fp16 defaults against the consumers at 160 beside a weight producer of 24 registers, N=512 and 64, three
# rounds (the old bf16 configuration against the new: logs 182 and 183, on H100s).
# Predicted (H200, asv): megakernel + .eval() N=512 bf16 ~0.352 ms (0.3577 at d2a9ecd, log 176; H100 asv 0.3442-0.3477
# at fc36cd9 / 9545175, logs 182 and 185, against 2416008's 0.3505, and the H200 read ~2% above the H100 on the same
# code), fp16 ~0.351 (0.3544; H100 asv 0.3455 with the 160 registers); without .eval() the same; N=64 bf16 ~0.055.
# Copy to .carry/cmd.sh; bash scripts/carry_repo.sh pack; carry [".whl", ".carry"]; docs/public and docs/perf (34 MB)
# hidden while it travels: with them the tree (45 MB), wheels (10) and bundle (16) pass 64 MiB. PART=all in one call, or
# PART=1 (tests, sweeps) then PART=2 (asv); LIMIT: the seconds a call may take.
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
if [[ ${PART:-1} == all ]]; then  # CheriBlockSweep's asv first (the goals' cells), then the tests, then the tracked tier
asv s50a $((${LIMIT:-585} - 190 - (SECONDS - S))) "HEAD^! CheriBlockSweep"
fi
if [[ ${PART:-1} == 1 || ${PART:-1} == all ]]; then
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( ${LIMIT:-585} - (SECONDS - S) - 30 < 240 ? ${LIMIT:-585} - (SECONDS - S) - 30 : 240 )) python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "consumer_registers or shuffled_conv_taps or z_producer_variants or late_residual or (training_path_and_megakernel_modes and (dtype1 or dtype2))" \
  > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
if [[ ${PART:-1} == all ]] && (( ${LIMIT:-585} - (SECONDS - S) > 80 )); then
asv s50b $((${LIMIT:-585} - 15 - (SECONDS - S))) "HEAD^! @tracked"
fi
# the weight producer at 24 registers (ws_producer_regs, session 49, not yet timed): bf16's consumers at 160 with the z producer
# keeping its 168, fp16's (already 160) with it back at 168; predicted -0.5 to -1% for bf16, level to -0.5% for fp16
F="greyhound-megakernel[layout=gluon_wsz,block_l=64,block_e=64,warps=4,stages=4,maxnreg=160,ws_producer_regs=24]"
for r in 1 2 3; do
  for dt in bfloat16 float16; do
    LEFT=$(( ${LIMIT:-585} - (SECONDS - S) - 5 )); (( LEFT < 25 )) && break 2
    P="greyhound-megakernel,$F"; (( r % 2 )) || P="$F,greyhound-megakernel"
    (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 90 ? LEFT : 90 )) python3 -m benchmarks cheri_block \
      --mode forward --providers "$P" --batch-size 512,64 --n-filters 128 --seq-len 1024 \
      --dtype $dt --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g; s/, n_filters=128, seq_len=1024//' \
      | sed -E 's/block_e=64,block_l=64,layout=gluon_wsz,//; s/,warps=4//' | sed "s/^/r$r /" | cut -c1-260 | tee -a $OUT/call.log)
  done
done
else
asv s50 $((${LIMIT:-585} - 20 - (SECONDS - S))) "HEAD^! @tracked" "HEAD^! CheriBlockSweep"
fi
