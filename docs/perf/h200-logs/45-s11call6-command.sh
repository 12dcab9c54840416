#!/bin/bash
# session 11 call 6: the Cheri megakernel's gelu=tanh variant: gpu tests of the form and of the variant, then the
# sweep CLI at N=512 (bf16 and fp16), default (poly) vs tanh, twice in alternation (one process)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 90 python3 -m pytest -m gpu -q -p no:cacheprovider tests/nn/test_cheri_block.py -k "tanh or gelu" > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -4
timeout 150 python3 -m benchmarks cheri_block --mode forward --batch-size 512 --dtype bfloat16,float16 --providers 'greyhound-megakernel,greyhound-megakernel[gelu=tanh],greyhound-megakernel[gelu=poly],greyhound-megakernel[gelu=tanh,block_e=128]' --no-csv > $OUT/sweep.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))"
grep -E "^\s+greyhound|rror" $OUT/sweep.log | tail -12
