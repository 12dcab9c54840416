#!/bin/bash
# session 32 call 1: the clamped degree-3 GELU and the z producer's two passes (consumers' maxnreg above 152): GPU
# tests (large hidden activations on every inference path, poly3, the two-pass kernel bit-equal to the Gluon kernel),
# then the sweep CLI at N=512 / 64 bf16 (default = gluon_wsz ring 4 pingpong poly3, 152 registers) against maxnreg
# 160 / 168 / 176 / 184, and fp16 default against 176
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 200 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "large_hidden or short_gelu or (warp_specialised_kernel_matches and 176-regs)" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest.log | tail -8 | cut -c1-400
Z='greyhound-megakernel[layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4'
timeout $((440 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "greyhound-megakernel,$Z,maxnreg=160],$Z,maxnreg=168],$Z,maxnreg=176],$Z,maxnreg=184]" --no-csv > $OUT/sweep-bf16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -10 $OUT/sweep-bf16.log | cut -c1-250
timeout $((570 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype float16 --providers "greyhound-megakernel,$Z,maxnreg=176]" --no-csv > $OUT/sweep-fp16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -6 $OUT/sweep-fp16.log | cut -c1-250
