#!/bin/bash
# device call 2: GPU tests of the changed kernels, then tuning sweeps through the harness (sweep CLI variants)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,temperature.gpu --format=csv > $OUT/gpu.txt
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider -rs -s tests/ops/test_newton_schulz.py tests/ops/test_causal_conv1d.py > $OUT/pytest-gpu.log 2>&1
echo "pytest rc=$? t=$((SECONDS-S))"
CSV="--csv $OUT/sweep.csv"
NS="python3 -m benchmarks newton_schulz --dtype bfloat16 $CSV"
timeout 100 $NS --batch 1 --rows 4096 --cols 14336 --providers 'greyhound,greyhound[gram=0],gram-newton-schulz-torch,greyhound[sym_stages=4],greyhound[sym_block_k=32,sym_stages=4],greyhound[apply_block_n=128]' >> $OUT/ns.log 2>&1
echo "ns1 rc=$? t=$((SECONDS-S))"
timeout 60 $NS --batch 1 --rows 14336 --cols 4096 --providers 'greyhound,gram-newton-schulz-torch' >> $OUT/ns.log 2>&1
echo "ns2 rc=$? t=$((SECONDS-S))"
timeout 90 $NS --batch 16 --rows 1024 --cols 1024 --providers 'greyhound,greyhound[apply_block_n=128],greyhound[sym_block=64,sym_warps=4],greyhound[apply_stages=4],greyhound[sym_stages=4],greyhound[apply_block_n=128,apply_warps=4],greyhound[gram=1]' >> $OUT/ns.log 2>&1
echo "ns3 rc=$? t=$((SECONDS-S))"
timeout 70 $NS --batch 1 --rows 4096 --cols 4096 --providers 'greyhound,greyhound[sym_stages=4],greyhound[apply_stages=4],greyhound[sym_block_k=32,sym_stages=4]' >> $OUT/ns.log 2>&1
echo "ns4 rc=$? t=$((SECONDS-S))"
CC="python3 -m benchmarks causal_conv1d --batch-size 8 --dim 4096 --seq-len 2048 --width 4 --dtype bfloat16 $CSV"
timeout 80 $CC --mode forward --layout channel_last --providers 'greyhound,greyhound[block_l=64],greyhound[block_l=16],greyhound[block_l=64,warps=8],greyhound[block_l=128,warps=8],greyhound[block_l=16,block_d=256],greyhound[block_l=64,block_d=64],greyhound[block_l=8,block_d=256,warps=2]' >> $OUT/cc.log 2>&1
echo "cc1 rc=$? t=$((SECONDS-S))"
timeout 80 $CC --mode backward --layout channel_last --providers 'greyhound,greyhound-compiled,greyhound[bwd_block_l=16],greyhound[bwd_block_l=4],greyhound[bwd_block_l=16,bwd_warps=8],greyhound[bwd_programs_per_sm=8],greyhound[bwd_programs_per_sm=2],greyhound[bwd_block_l=16,bwd_block_d=64],greyhound[bwd_block_l=4,bwd_block_d=256]' >> $OUT/cc.log 2>&1
echo "cc2 rc=$? t=$((SECONDS-S))"
timeout 80 $CC --mode forward,backward --layout contiguous --providers 'greyhound,greyhound[block_l=512,block_d=8],greyhound[block_l=128,block_d=32],greyhound[bwd_block_l=256,bwd_block_d=4],greyhound[bwd_block_l=64,bwd_block_d=16]' >> $OUT/cc.log 2>&1
echo "cc3 rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|Error|σ" $OUT/pytest-gpu.log | tail -20
cat $OUT/ns.log $OUT/cc.log | grep -v "^\s*$" | sed 's/batch_size=8, dim=4096, seq_len=2048, width=4, //; s/coefficients=muon, dtype=bfloat16//'
