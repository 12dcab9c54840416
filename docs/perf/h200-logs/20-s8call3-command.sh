#!/bin/bash
# device call 3: newton_schulz GPU tests + goal shapes with peers; causal_conv1d tuning sweeps through the harness
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,temperature.gpu --format=csv > $OUT/gpu.txt
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -rs -s tests/ops/test_newton_schulz.py tests/ops/test_causal_conv1d.py > $OUT/pytest-gpu.log 2>&1
echo "pytest rc=$? t=$((SECONDS-S))"
CSV="--csv $OUT/sweep.csv"
NSW="python3 -m benchmarks newton_schulz --dtype bfloat16 $CSV"
timeout 80 $NSW --batch 1 --rows 4096 --cols 14336 --providers 'greyhound,greyhound[gram=0],gram-newton-schulz-torch' >> $OUT/ns.log 2>&1
timeout 70 $NSW --batch 16 --rows 1024 --cols 1024 --providers 'greyhound,gram-newton-schulz-torch,torch-compile' >> $OUT/ns.log 2>&1
timeout 70 $NSW --batch 1 --rows 4096 --cols 4096 --providers 'greyhound,torch-compile' >> $OUT/ns.log 2>&1
echo "ns rc=$? t=$((SECONDS-S))"
CONV="python3 -m benchmarks causal_conv1d --batch-size 8 --dim 4096 --seq-len 2048 --width 4 --dtype bfloat16 $CSV"
timeout 80 $CONV --mode forward --layout channel_last --providers 'greyhound,fla,greyhound[block_l=64],greyhound[block_l=16],greyhound[block_l=64,warps=8],greyhound[block_l=128,warps=8],greyhound[block_l=16,block_d=256],greyhound[block_l=64,block_d=64],greyhound[block_l=8,block_d=256,warps=2]' >> $OUT/cc.log 2>&1
echo "cc1 rc=$? t=$((SECONDS-S))"
timeout 90 $CONV --mode backward --layout channel_last --providers 'greyhound,greyhound-compiled,fla,greyhound[bwd_block_l=16],greyhound[bwd_block_l=4],greyhound[bwd_block_l=16,bwd_warps=8],greyhound[bwd_programs_per_sm=8],greyhound[bwd_programs_per_sm=2],greyhound[bwd_block_l=16,bwd_block_d=64],greyhound[bwd_block_l=4,bwd_block_d=256]' >> $OUT/cc.log 2>&1
echo "cc2 rc=$? t=$((SECONDS-S))"
timeout 80 $CONV --mode forward,backward --layout contiguous --providers 'greyhound,greyhound[block_l=512,block_d=8],greyhound[block_l=128,block_d=32],greyhound[bwd_block_l=256,bwd_block_d=4],greyhound[bwd_block_l=64,bwd_block_d=16]' >> $OUT/cc.log 2>&1
echo "cc3 rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|Error|σ|bf16 4096" $OUT/pytest-gpu.log | tail -20
cat $OUT/ns.log $OUT/cc.log | grep -v "^\s*$" | sed 's/batch_size=8, dim=4096, seq_len=2048, width=4, //; s/coefficients=muon, dtype=bfloat16//; s/merged into .*//'
