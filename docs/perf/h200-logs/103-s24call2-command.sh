#!/bin/bash
# session 24 call 2: the new Gluon-kernel GPU tests, then the sweep CLI, one process per commit on one GPU: the commit
# before (8c83c5a) and 48219e2+ (L2 prefetch of x, early residual, optional deeper W1 ring) with its variants.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t /tmp/base && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
git clone -q .carry/repo.bundle /tmp/base && (cd /tmp/base && git checkout -q 8c83c5a && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 200 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfEs tests/nn/test_cheri_block.py -k "prefetch_and_w1 or gluon_kernel_matches or fp32_models_take" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))")
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest.log | tail -8 | cut -c1-300
G='greyhound-megakernel'; T='layout=gluon,block_l=64,block_e=64,warps=4,stages=2'
sweep() {  # dir, log, args...
  local d=$1 log=$2; shift 2
  (cd $d && PYTHONPATH=/tmp/site:$d timeout 150 python3 -m benchmarks cheri_block --mode forward --n-filters 128 --seq-len 1024 --no-csv "$@" > $OUT/$log 2>&1; echo "$log rc=$? t=$((SECONDS-S))"; grep -E "^\s+greyhound|rror" $OUT/$log | cut -c1-200)
}
sweep /tmp/base base-bf16.log --batch-size 512,64 --dtype bfloat16 --providers "$G"
sweep /tmp/t new-bf16-512.log --batch-size 512 --dtype bfloat16 --providers "$G,$G[$T],$G[$T,x_prefetch=0],$G[$T,x_prefetch=132],$G[$T,x_prefetch=528],$G[$T,w1_stages=3],$G[$T,w1_stages=3,x_prefetch=0]"
sweep /tmp/t new-bf16-64.log --batch-size 64 --dtype bfloat16 --providers "$G,$G[$T,x_prefetch=0],$G[$T,w1_stages=3]"
sweep /tmp/base base-fp32.log --batch-size 512 --dtype float32 --providers "$G,greyhound-train"
sweep /tmp/t new-fp32.log --batch-size 512 --dtype float32 --providers "$G,$G[layout=gluon,block_l=64,block_e=32,warps=4,stages=2,x_prefetch=0],greyhound-train,greyhound-train[layout=gluon,block_l=128,block_e=64,warps=8,stages=2,x_prefetch=0]"
sweep /tmp/base base-bf16-again.log --batch-size 512 --dtype bfloat16 --providers "$G"
echo "done t=$((SECONDS-S))"
