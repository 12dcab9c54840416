#!/bin/bash
# session 26 call 2: CE held rows (target logit early; 64 KB vs 32 KB tiles) A/B, their GPU tests; then the Cheri GPU
# tests not run on the new default, and the N=16/64 A/B of the new default tile against the old one
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
g='greyhound'
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 100 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --providers "$g,$g[one_pass_hold=1],$g[one_pass_hold=1,one_pass_tile_rows=4],fla" --no-csv > $OUT/sweep-ce.log 2>&1; echo "ce sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-ce.log | cut -c1-200)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 80 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 65536,50304 --dtype bfloat16 --providers "$g,$g[one_pass_hold=1],$g[one_pass_hold=1,one_pass_tile_rows=2]" --no-csv > $OUT/sweep-ce-small.log 2>&1; echo "ce sweep small rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-ce-small.log | cut -c1-200)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 120 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py -k "held_rows" > $OUT/pytest-held.log 2>&1; echo "pytest held rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-held.log | tail -6 | cut -c1-300)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 150 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfEs tests/nn/test_cheri_block.py -k "default_inference or warp_specialised or z_from_registers" > $OUT/pytest-cheri.log 2>&1; echo "pytest cheri rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-cheri.log | tail -6 | cut -c1-300)
G='greyhound-megakernel'; O='layout=gluon,block_l=64,block_e=64,warps=4,stages=2,maxnreg=255,z_regs=0'
for dt in bfloat16 float16; do
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 90 python3 -m benchmarks cheri_block --mode forward --batch-size 16,64 --n-filters 128 --seq-len 1024 --dtype $dt --providers "$G,$G[$O]" --no-csv > $OUT/sweep-cheri-$dt.log 2>&1; echo "cheri $dt rc=$? t=$((SECONDS-S))"; grep -E "^\s+greyhound|rror" $OUT/sweep-cheri-$dt.log | cut -c1-200)
done
echo "done t=$((SECONDS-S))"
