#!/bin/bash
# Session 49, call 4: 9b3b8d4 (an fp16 model's consumers at 160 registers in the shuffled configuration): (1) asv of
# its CheriBlockSweep, peers in the same run; (2) GPU tests: the registers change no bit (new), the fp16 variants and
# default against the all-off kernel, shuffled against loaded taps; (3) sweep CLI, fp16 default against the same
# kernel at 152 registers (the old default), N=512 and 64, two rounds.
# Predicted (this H100, asv): fp16 N=512 0.3467 -> ~0.344 ms (-0.9%), N=64 level; bf16 unchanged.
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
asv s49c $((${LIMIT:-585} - 150 - (SECONDS - S))) "HEAD^! CheriBlockSweep"
fi
if [[ ${PART:-1} == 1 || ${PART:-1} == all ]]; then
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( ${LIMIT:-585} - (SECONDS - S) - 30 < 240 ? ${LIMIT:-585} - (SECONDS - S) - 30 : 240 )) python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "consumer_registers or shuffled_conv_taps or (z_producer_variants and dtype1)" \
  > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
OLD="greyhound-megakernel[layout=gluon_wsz,block_l=64,block_e=64,warps=4,stages=4,maxnreg=152]"
for r in 1 2; do
  LEFT=$(( ${LIMIT:-585} - (SECONDS - S) - 5 )); (( LEFT < 25 )) && break
  (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 90 ? LEFT : 90 )) python3 -m benchmarks cheri_block \
    --mode forward --providers "greyhound-megakernel,$OLD" --batch-size 512,64 --n-filters 128 --seq-len 1024 \
    --dtype float16 --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g' | sed -E 's/, n_filters=128, seq_len=1024//' \
    | sed "s/^/r$r /" | cut -c1-260 | tee -a $OUT/call.log)
done
else
asv s49 $((${LIMIT:-585} - 20 - (SECONDS - S))) "HEAD^! @tracked" "HEAD^! CheriBlockSweep"
fi
