#!/bin/bash
# session 27 call 2: the looped chunk schedule (loop=1): its GPU bit-equality tests, then the sweep CLI at N=512 and
# N=64 (bf16, forward, one process) against the default and the unrolled kernel with the same ring
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/*.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
timeout 240 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "chunk_loop" > $OUT/pytest-loop.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-loop.log | tail -6 | cut -c1-300
G='greyhound-megakernel[layout=gluon,block_l=64,warps=4'
timeout $((570 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "greyhound-megakernel,$G,block_e=32,stages=3,maxnreg=168,z_regs=0,loop=1],$G,block_e=32,stages=3,maxnreg=200,loop=1],$G,block_e=32,stages=3,maxnreg=168,z_regs=0],$G,block_e=32,stages=4,maxnreg=168,z_regs=0,loop=1],$G,block_e=16,stages=4,maxnreg=168,z_regs=0,loop=1],$G,block_e=64,stages=3,loop=1],$G,block_e=32,stages=3,loop=1]" --no-csv > $OUT/sweep-bf16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -20 $OUT/sweep-bf16.log | cut -c1-250
