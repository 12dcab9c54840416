#!/bin/bash
# Session 47's call 3 (after calls 1-2, logs 175-176), in order: (1) bf16 with fp16's whole configuration (shuffled
# taps, no taps in shared memory, no prefetch, ws_split_ring + ws_epilogue16) and with the pair and shuffled taps beside
# bf16's own, N=512: predicted level with fp16's 0.351 ms if only the configuration differs (bf16 default 0.3578);
# (2) asv CheriBlockSweep of the tip with the fp16 default of 013b576 (the pair where an fp16 model's taps come by
# shuffles; its gate checks every output against fp64): predicted fp16 N=512 0.349-0.351 ms with and without .eval()
# (0.3544 / 0.3548 at d2a9ecd, log 176), N=64 level (0.0541), bf16 unchanged (0.3577); (3) the pair's bit-equality
# against the kernel with both off (fp16, K=3 and 5, L=1024 and 1000); (4) where time is left, the sweep CLI, new fp16
# default against the old, N=512 and 64, two rounds. LIMIT: the seconds the call may take.
# Copy to .carry/cmd.sh; git bundle create .carry/repo.bundle --all; carry [".whl", ".carry"]; docs/public and docs/perf
# hidden while it travels.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/gh-t && git clone -q .carry/repo.bundle /tmp/gh-t && (cd /tmp/gh-t && git checkout -q -B main origin/main)
(cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log)
B="greyhound-megakernel,greyhound-megakernel[ws_conv_smem=0,ws_epilogue16=1,ws_split_ring=1,ws_x_prefetch=0,ws_x_shuffle=1]"
B="$B,greyhound-megakernel[ws_epilogue16=1,ws_split_ring=1,ws_x_shuffle=1]"
LEFT=$(( ${LIMIT:-420} - (SECONDS - S) - 5 ))
(( LEFT >= 25 )) && (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 60 ? LEFT : 60 )) python3 -m benchmarks \
  cheri_block --mode forward --providers "$B" --batch-size 512 --n-filters 128 --seq-len 1024 --dtype bfloat16 --no-csv \
  2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g' | sed "s/^/bfloat16 /" | cut -c1-230 | tee -a $OUT/call.log)
TAG=s47 DEADLINE=$((${LIMIT:-420} - 10 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" > /dev/null 2>&1
echo "asv rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; grep -E "^===|deadline" $OUT/asv-s47.log | head | tee -a $OUT/call.log
LEFT=$(( ${LIMIT:-420} - (SECONDS - S) - 5 )); (( LEFT < 5 )) && LEFT=1
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $LEFT python3 -m pytest -n 4 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "z_producer_variants and dtype1 and (epilogue16_split_ring or x_prefetch1)" \
  > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
V="greyhound-megakernel,greyhound-megakernel[ws_epilogue16=0,ws_split_ring=0]"
for r in 1 2; do
  LEFT=$(( ${LIMIT:-420} - (SECONDS - S) - 5 )); (( LEFT < 25 )) && break
  (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 60 ? LEFT : 60 )) python3 -m benchmarks cheri_block \
    --mode forward --providers "$V" --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype float16 --no-csv 2>&1 \
    | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g' | sed "s/^/float16-r$r /" | cut -c1-230 | tee -a $OUT/call.log)
done
