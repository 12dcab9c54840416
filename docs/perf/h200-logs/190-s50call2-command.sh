#!/bin/bash
# RAN on an H100 (GPU-8ccbfc6a), asked for as an H200: log 190.
# Session 50, call 2 (H200, after call 1 = log 189): (1) the register test with its producer cases, fixed (call 1 passed
# ws_producer_regs=None to the tuning override, which refuses it: 4 failed, the test's fault); (2) the sweep CLI, bf16 and
# fp16, N=512 and 64, three rounds in alternating order: the default against the consumers at 160 beside a weight
# producer of 24 registers (z producer 168) and at 152 beside 24 (z producer 184).
# Predicted: 160+24 bf16 -0.5 to -1% at N=512, fp16 level to -0.5%; 152+24 level for bf16 (the z producer's registers
# alone); N=64 level. Runs from the working tree (carry [".whl"]), docs/public and docs/perf hidden.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
git log --oneline -1 | tee -a $OUT/call.log
PYTHONPATH=/tmp/site:. timeout 150 python3 -m pytest -n 4 -q --tb=short -p no:cacheprovider -rfE -m gpu \
  tests/nn/test_cheri_block.py -k "consumer_registers" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log
K="greyhound-megakernel[layout=gluon_wsz,block_l=64,block_e=64,warps=4,stages=4"
A="$K,maxnreg=160,ws_producer_regs=24]"; B="$K,maxnreg=152,ws_producer_regs=24]"
for r in 1 2 3; do
  for dt in bfloat16 float16; do
    LEFT=$(( ${LIMIT:-400} - (SECONDS - S) - 5 )); (( LEFT < 25 )) && break 2
    P="greyhound-megakernel,$A,$B"; (( r % 2 )) || P="$B,$A,greyhound-megakernel"
    PYTHONPATH=/tmp/site:. timeout $(( LEFT < 100 ? LEFT : 100 )) python3 -m benchmarks cheri_block \
      --mode forward --providers "$P" --batch-size 512,64 --n-filters 128 --seq-len 1024 \
      --dtype $dt --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g; s/, n_filters=128, seq_len=1024//' \
      | sed -E 's/block_e=64,block_l=64,layout=gluon_wsz,//; s/,warps=4//; s/,stages=4//' | sed "s/^/r$r /" | cut -c1-260 | tee -a $OUT/call.log
    echo "r$r $dt t=$((SECONDS-S))" | tee -a $OUT/call.log
  done
done
