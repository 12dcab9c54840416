#!/bin/bash
# session 11 call 2: FastLaunch + one-launch parameter-gradient sums: gpu tests, host probe (diagnosis), sweep CLI
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/ops/test_causal_conv1d.py tests/ops/test_compile.py > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.log | tail -8
timeout 100 python3 $OLDPWD/.carry/s11_probe2.py > $OUT/probe.log 2>&1; echo "probe rc=$? t=$((SECONDS-S))"
grep -v "^ *-\|^$" $OUT/probe.log | grep -v "^ *[0-9.]*%" | head -40
grep -A30 "^GPU:" $OUT/probe.log
timeout 150 python3 -m benchmarks causal_conv1d --mode full,forward,backward --providers greyhound,fla --csv $OUT/cc1d.csv > $OUT/cc1d.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))"
tail -8 $OUT/cc1d.log
