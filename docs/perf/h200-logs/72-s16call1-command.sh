#!/bin/bash
# session 16 call 1: the one-pass CE kernel with resident tiles (GPU tests, then the sweep CLI against the ring-only
# design and fla), then the looped warp-specialised Cheri kernel (GPU tests; the sweep only if they pass)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ops/test_cross_entropy.py -k "one_pass" > $OUT/pytest-ce.log 2>&1; echo "pytest ce rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error |assert" $OUT/pytest-ce.log | tail -12
P='greyhound,greyhound[one_pass_tile_rows=8,one_pass_stages=3,one_pass_resident=0],greyhound[one_pass_stages=3,one_pass_resident=4],greyhound[one_pass_tile_rows=2,one_pass_stages=3,one_pass_resident=10],greyhound[one_pass_tile_rows=2,one_pass_stages=2,one_pass_resident=11],greyhound[one_pass=0],fla'
timeout 100 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep-ce1.log 2>&1; echo "sweep ce1 rc=$? t=$((SECONDS-S))"
timeout 70 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256 --dtype float32 --providers 'greyhound,greyhound[one_pass=0],greyhound[one_pass=1,one_pass_tile_rows=4,one_pass_stages=3,one_pass_resident=0],fla' --no-csv > $OUT/sweep-ce2.log 2>&1; echo "sweep ce2 rc=$? t=$((SECONDS-S))"
timeout 60 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 32768,65536 --dtype bfloat16 --providers 'greyhound,greyhound[one_pass_tile_rows=8,one_pass_stages=3,one_pass_resident=0],greyhound[one_pass=0],fla' --no-csv > $OUT/sweep-ce3.log 2>&1; echo "sweep ce3 rc=$? t=$((SECONDS-S))"
grep -hE "^\s+(greyhound|fla)|rror" $OUT/sweep-ce*.log | tail -30
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -x tests/nn/test_cheri_block.py -k "warp_specialised" > $OUT/pytest-ws.log 2>&1; rc=$?; echo "pytest ws rc=$rc t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-ws.log | tail -8
if [ $rc = 0 ]; then
P='greyhound-megakernel'
P="$P,greyhound-megakernel[layout=gluon_ws,block_l=64,block_e=64,warps=4,stages=2]"
P="$P,greyhound-megakernel[layout=gluon_ws,block_l=64,block_e=64,warps=4,stages=3]"
P="$P,greyhound-megakernel[layout=gluon_ws,block_l=64,block_e=32,warps=4,stages=4]"
P="$P,greyhound-megakernel[layout=gluon_ws3,block_l=64,block_e=32,warps=4,stages=4]"
P="$P,greyhound-megakernel[layout=gluon_ws3,block_l=64,block_e=64,warps=4,stages=2]"
left=$((570 - (SECONDS - S)))
timeout $left python3 -m benchmarks cheri_block --mode forward --batch-size 512 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep-cheri.log 2>&1; echo "sweep cheri rc=$? t=$((SECONDS-S))"
grep -E "^\s+greyhound|rror" $OUT/sweep-cheri.log | tail -12
fi
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/gpu.log
