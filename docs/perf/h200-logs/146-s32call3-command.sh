#!/bin/bash
# session 32 call 3: b1 by wgmma (b1_mma) in gluon_wsz: GPU tests (against the FADD kernel; large activations), then
# the sweep CLI at N=512 / 64, bf16 and fp16: default against b1_mma, and fp16 with a weight ring of 5
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 130 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "b1_by_wgmma or large_hidden" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest.log | tail -8 | cut -c1-400
Z='greyhound-megakernel[layout=gluon_wsz,block_l=64,warps=4,block_e=64'
timeout $((240 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "greyhound-megakernel,$Z,stages=4,b1_mma=1]" --no-csv > $OUT/sweep-bf16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -4 $OUT/sweep-bf16.log | cut -c1-250
timeout $((330 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype float16 --providers "greyhound-megakernel,$Z,stages=4,b1_mma=1],$Z,stages=5]" --no-csv > $OUT/sweep-fp16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -6 $OUT/sweep-fp16.log | cut -c1-250
