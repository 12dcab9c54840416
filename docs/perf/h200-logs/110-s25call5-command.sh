#!/bin/bash
# session 25 call 5: z from registers as the first GEMMs' A operand (z_regs): GPU tests, then the sweep CLI, forward,
# one process, bf16 N=512/64 and fp16 N=512, beside the default and the three-programs-an-SM tiles of call 4.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 150 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "z_from_registers or w1_ring_depth or errors_name" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest.log | tail -6 | cut -c1-300)
G='greyhound-megakernel'; T='layout=gluon,block_l=64,warps=4,stages=2'
sweep() {  # log, args...
  local log=$1; shift
  (cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 200 python3 -m benchmarks cheri_block --mode forward --n-filters 128 --seq-len 1024 --no-csv "$@" > $OUT/$log 2>&1; echo "$log rc=$? t=$((SECONDS-S))"; grep -E "^\s+greyhound|rror" $OUT/$log | cut -c1-200)
}
sweep bf16.log --batch-size 512,64 --dtype bfloat16 --providers "$G,$G[$T,block_e=64,z_regs=1],$G[$T,block_e=32,z_regs=1],$G[$T,block_e=32,maxnreg=168,z_regs=1],$G[$T,block_e=16,z_regs=1],$G[$T,block_e=32,maxnreg=160],$G[$T,block_e=64,z_regs=1,w1_stages=3]"
sweep fp16.log --batch-size 512,64 --dtype float16 --providers "$G,$G[$T,block_e=64,z_regs=1],$G[$T,block_e=32,maxnreg=168,z_regs=1],$G[$T,block_e=32,maxnreg=160]"
echo "done t=$((SECONDS-S))"
