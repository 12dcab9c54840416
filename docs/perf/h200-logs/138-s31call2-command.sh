#!/bin/bash
# session 31 call 2: the ping-pong consumers (ws_pingpong 1 / 2, with and without the z producer): GPU bit-equality
# tests against the Gluon kernel, then the sweep CLI at N=512 and N=64 (bf16, forward, one process)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
timeout 240 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "warp_specialised_kernel_matches and (gluon_wsz or 3-gluon_ws-2)" > $OUT/pytest-pingpong.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-pingpong.log | tail -6 | cut -c1-300
Z='greyhound-megakernel[layout=gluon_wsz,block_l=64,warps=4'
W='greyhound-megakernel[layout=gluon_ws,block_l=64,warps=4'
timeout $((570 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "greyhound-megakernel,$Z,block_e=64,stages=3],$Z,block_e=64,stages=3,ws_pingpong=1],$Z,block_e=64,stages=3,ws_pingpong=2],$Z,block_e=64,stages=4,ws_pingpong=2],$Z,block_e=32,stages=6,ws_pingpong=2],$W,block_e=64,stages=3,ws_pingpong=2],$W,block_e=64,stages=3,ws_pingpong=1]" --no-csv > $OUT/sweep-bf16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -20 $OUT/sweep-bf16.log | cut -c1-250
