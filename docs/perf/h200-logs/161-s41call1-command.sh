#!/bin/bash
# Session 41: the z producer's conv taps by shuffles (ws_x_shuffle, a variant). (1) Its GPU test against the loaded taps
# (bf16/fp16, K=3 d=4, K=5 d=2, K=2 d=8, whole and ragged L) and the degree-2 GELU tests of session 40. (2) Sweep CLI,
# N=512, one process a dtype, variants side by side, two rounds: bf16 default (taps in shared memory + prefetch) against
# + ws_x_shuffle, and + ws_x_shuffle without the prefetch; fp16 default against + ws_x_shuffle, + ws_x_shuffle with the
# taps in shared memory, gelu=poly2, and poly2 + ws_x_shuffle. Predicted: the z producer's x loads in one batch a tile
# instead of three (offline SASS, Triton 3.6 sm_90a: 16 LDG.128 issued together, then 32 SHFL.UP + SEL; instructions
# 7152 -> 6976 bf16, 7080 -> 6800 fp16; spills 300 -> 208 bytes bf16, 60 -> 76 fp16), so consumer 1's z waits (12% of
# its samples, session 37) mostly go: -2 to -5% at N=512 for both dtypes. (3) The CE forward A/B of session 40 (bfd782c
# against main, alternating processes) in what time is left. Copy to .carry/cmd.sh, carry [".whl", ".carry"].
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
[[ -d /tmp/gh-next ]] || { git clone -q .carry/repo.bundle /tmp/gh-next && (cd /tmp/gh-next && git checkout -q -B main origin/main); }
cd /tmp/gh-next || exit 1
export PYTHONPATH=/tmp/site:/tmp/gh-next
timeout 200 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py \
  -k "shuffled_conv_taps or degree_two or short_gelu" > $OUT/pytest.log 2>&1
echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest.log | tail -8 | cut -c1-300
W="layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4"
for dt in bfloat16 float16 bfloat16 float16; do
  if [[ $dt == bfloat16 ]]; then
    P="greyhound-megakernel,greyhound-megakernel[$W,ws_x_shuffle=1],greyhound-megakernel[$W,ws_x_shuffle=1,ws_x_prefetch=0]"
  else
    P="greyhound-megakernel,greyhound-megakernel[$W,ws_x_shuffle=1],greyhound-megakernel[$W,ws_x_shuffle=1,ws_conv_smem=1],greyhound-megakernel[$W,gelu=poly2],greyhound-megakernel[$W,gelu=poly2,ws_x_shuffle=1]"
  fi
  timeout 90 python3 -m benchmarks cheri_block --mode forward --batch-size 512 --n-filters 128 --seq-len 1024 \
    --dtype $dt --no-csv --providers "$P" 2>&1 | grep -E '^  greyhound' | sed -E 's/  +/ /g; s/layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4,//' | sed "s/^/$dt /" | cut -c1-150
  echo "t=$((SECONDS-S))"
done
cd - >/dev/null
for c in bfd782c main bfd782c main; do
  (( SECONDS - S > 400 )) && break
  rm -rf /tmp/ab && git clone -q .carry/repo.bundle /tmp/ab && (cd /tmp/ab && git checkout -q -B main origin/main && git checkout -q $c)
  (cd /tmp/ab && PYTHONPATH=/tmp/site:/tmp/ab timeout 40 python3 -m benchmarks cross_entropy_with_grad --mode forward,full \
    --providers greyhound,fla --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --no-csv 2>&1 | grep -E '^  (greyhound|fla)' | sed "s/^/$c /")
done
echo "total t=$((SECONDS-S))"
