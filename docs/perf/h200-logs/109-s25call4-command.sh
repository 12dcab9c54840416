#!/bin/bash
# session 25 call 4: three or four bf16 megakernel programs an SM: Gluon tiles whose register counts allow it
# (offline, Triton 3.6: (64,32,4,2) 180 regs, at maxnreg 168 8 B stack; (64,16,4,2) 162 regs; (64,16,4,3) 168),
# sweep CLI, forward, one process, N=512 and 64.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
G='greyhound-megakernel'; T='layout=gluon,block_l=64,warps=4'
sweep() {  # log, args...
  local log=$1; shift
  (cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 200 python3 -m benchmarks cheri_block --mode forward --n-filters 128 --seq-len 1024 --no-csv "$@" > $OUT/$log 2>&1; echo "$log rc=$? t=$((SECONDS-S))"; grep -E "^\s+greyhound|rror" $OUT/$log | cut -c1-200)
}
sweep bf16.log --batch-size 512,64 --dtype bfloat16 --providers "$G,$G[$T,block_e=32,stages=2],$G[$T,block_e=32,stages=2,maxnreg=168],$G[$T,block_e=32,stages=2,maxnreg=160],$G[$T,block_e=16,stages=2],$G[$T,block_e=16,stages=3,maxnreg=168],$G[$T,block_e=16,stages=2,maxnreg=128],$G[$T,block_e=64,stages=2]"
sweep fp16.log --batch-size 512 --dtype float16 --providers "$G,$G[$T,block_e=32,stages=2,maxnreg=168],$G[$T,block_e=16,stages=2]"
echo "done t=$((SECONDS-S))"
