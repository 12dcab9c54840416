#!/bin/bash
# session 22 call 1: the whole GPU test suite (`pytest -m gpu tests`), then a sweep-CLI A/B of the one-pass CE
# kernel's sweep 2 taking the row's last tile from the ring (one_pass_reuse, default on) against loading it again.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 420 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfEs --durations=15 tests > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))")
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest-gpu.log | tail -14 | cut -c1-300
P='greyhound,greyhound[one_pass_reuse=0],greyhound[one_pass=0]'
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((570 - (SECONDS - S))) python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256,32768 --dtype bfloat16 --providers "$P,fla" --no-csv > $OUT/sweep-ce.log 2>&1; echo "ce sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-ce.log | cut -c1-200)
