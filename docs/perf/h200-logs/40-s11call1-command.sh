#!/bin/bash
# session 11 call 1: gpu tests of causal_conv1d + cheri at HEAD, a back-to-back full-call probe (diagnosis),
# the cheri_conv_norm sweep (causal_conv1d reuse in the Cheri Block)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/ops/test_causal_conv1d.py tests/nn/test_cheri_block.py tests/ops/test_compile.py > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
tail -3 $OUT/pytest-gpu.log
timeout 100 python3 $OLDPWD/.carry/s11_probe.py > $OUT/probe.log 2>&1; echo "probe rc=$? t=$((SECONDS-S))"
grep -v "^ *-\|^$" $OUT/probe.log | head -80
timeout 200 python3 -m benchmarks cheri_conv_norm --dtype bfloat16,float32 --batch-size 64,512 --providers greyhound,greyhound-causal-conv1d,torch-eager,torch-compile --csv $OUT/cheri-conv-norm.csv > $OUT/cheri-conv-norm.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))"
tail -60 $OUT/cheri-conv-norm.log
