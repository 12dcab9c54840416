#!/bin/bash
# RAN on an H100 (GPU-72fb1b25), asked for as an H200: log 191.
# Session 50, call 3: 4c6650a's fp16 default (the weight producer at 24 registers beside the consumers' 160, the z
# producer at 168). (1) asv of the tip's CheriBlockSweep, peers in the same run; (2) the GPU tests of the fp16 default
# (registers change no bit; shuffled against loaded taps; the z producer's variants; the megakernel modes in fp16);
# (3) the sweep CLI, fp16, N=512 and 64, three rounds, order alternating: the default against session 49's (the
# consumers' cap of 160 given, so the weight producer at its 40 and the z producer at 152).
# Predicted: fp16 N=512 -1.1% against session 49's in the same process (log 190 on an H100); H200 asv fp16 N=512
# ~0.344 / 0.343 with / without .eval() (0.3475 / 0.3464 at 4b77769, log 189), bf16 unchanged (~0.350 / 0.351).
S=$SECONDS
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
(cd /tmp/gh-t && git log --oneline -1 | cut -c1-100 | tee -a $OUT/call.log)
asv s50c $((${LIMIT:-540} - 200 - (SECONDS - S))) "HEAD^! CheriBlockSweep"
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout 150 python3 -m pytest -n 8 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "consumer_registers or shuffled_conv_taps or z_producer_variants or (training_path_and_megakernel_modes and dtype2)" \
  > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
A="greyhound-megakernel[layout=gluon_wsz,block_l=64,block_e=64,warps=4,stages=4,maxnreg=160]"
for r in 1 2 3; do
  LEFT=$(( ${LIMIT:-540} - (SECONDS - S) - 5 )); (( LEFT < 20 )) && break
  P="greyhound-megakernel,$A"; (( r % 2 )) || P="$A,greyhound-megakernel"
  (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 60 ? LEFT : 60 )) python3 -m benchmarks cheri_block \
    --mode forward --providers "$P" --batch-size 512,64 --n-filters 128 --seq-len 1024 \
    --dtype float16 --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g; s/, n_filters=128, seq_len=1024//' \
    | sed -E 's/block_e=64,block_l=64,layout=gluon_wsz,//; s/,warps=4//; s/,stages=4//' | sed "s/^/r$r /" | cut -c1-200 | tee -a $OUT/call.log)
  echo "r$r t=$((SECONDS-S))" | tee -a $OUT/call.log
done
