#!/bin/bash
# session 22 call 3: the CE GPU tests (the one-pass reuse change), then small-N Cheri megakernel tiles (sweep CLI).
S=$SECONDS
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 220 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py tests/ops/test_linear_cross_entropy.py > $OUT/pytest-ce.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|ERROR" $OUT/pytest-ce.log | tail -8 | cut -c1-300)
G='greyhound-megakernel'
P32="$G,$G[layout=gluon,block_l=128,block_e=64,warps=8,stages=2],$G[layout=gluon,block_l=128,block_e=32,warps=8,stages=2]"
P16="$G,$G[layout=gluon,block_l=128,block_e=64,warps=8,stages=2],$G[layout=gluon,block_l=64,block_e=64,warps=4,stages=3]"
for spec in "float32|$P32" "bfloat16|$P16"; do
  d=${spec%%|*}; p=${spec#*|}
  (cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((500 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 16,64 --n-filters 128 --seq-len 1024 --dtype $d --providers "$p" --no-csv > $OUT/sweep-$d.log 2>&1; echo "sweep $d rc=$? t=$((SECONDS-S))"; grep -E "^\s+greyhound|rror" $OUT/sweep-$d.log | cut -c1-220)
done
