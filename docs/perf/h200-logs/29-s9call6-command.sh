#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.log
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
timeout 60 python3 $OLDPWD/.carry/prof.py > $OUT/prof.log 2>&1; head -3 $OUT/prof.log
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/ops/test_causal_conv1d.py > $OUT/pytest-cc1d.log 2>&1; echo "pytest rc=$?"; tail -2 $OUT/pytest-cc1d.log
run() { echo "+ $*" >> $OUT/sweep.log; timeout ${T:-90} python3 -m benchmarks "$@" --csv $OUT/sweep.csv >> $OUT/sweep.log 2>&1; echo "rc=$? t=$((SECONDS-S)) $1"; }
T=120 run causal_conv1d --mode forward,full,backward --providers greyhound,fla --batch-size 8 --dim 4096 --seq-len 512,2048,8192 --width 4 --layout channel_last,contiguous --dtype bfloat16
echo "done t=$((SECONDS-S))"
