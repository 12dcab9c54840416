#!/bin/bash
# session 31 call 5: gelu=poly3 and a weight ring of 5 (3 z slots) in gluon_wsz with ws_pingpong=1: GPU tests, then
# the sweep CLI at N=512 / 64 (bf16 and fp16, forward, one process each)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
timeout 150 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "short_gelu or (warp_specialised_kernel_matches and 64-5-gluon_wsz)" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest.log | tail -6 | cut -c1-300
Z='greyhound-megakernel[layout=gluon_wsz,block_l=64,warps=4,block_e=64,ws_pingpong=1'
timeout $((330 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "greyhound-megakernel,$Z,stages=4],$Z,stages=5],$Z,stages=4,gelu=poly3],$Z,stages=5,gelu=poly3]" --no-csv > $OUT/sweep-bf16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -10 $OUT/sweep-bf16.log | cut -c1-250
timeout $((570 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype float16 --providers "greyhound-megakernel,$Z,stages=4],$Z,stages=5],$Z,stages=5,gelu=poly3]" --no-csv > $OUT/sweep-fp16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -8 $OUT/sweep-fp16.log | cut -c1-250
