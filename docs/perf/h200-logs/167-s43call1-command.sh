#!/bin/bash
# Session 43 call 1: host-time profile of small CheriBlock calls, then every GPU test not yet run on the current code
# (pytest-xdist, 8 workers on the one GPU), then the timing-agreement tests alone.
S=$SECONDS R=$PWD
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/gh-main && git clone -q .carry/repo.bundle /tmp/gh-main && cd /tmp/gh-main && git checkout -q -B main origin/main
git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/gh-main
timeout 90 python3 docs/perf/h200-logs/167-s43-host-profile.py > $OUT/host-profile.log 2>&1
echo "profile rc=$? t=$((SECONDS-S))"; grep "^==" $OUT/host-profile.log
skip=(); mapfile -t ids < "$R/.carry/passed-ids.txt"; for i in "${ids[@]}"; do skip+=(--deselect "$i"); done
left=$(( ${LIMIT:-580} - (SECONDS - S) - 75 ))
timeout $left python3 -m pytest -n 8 "${skip[@]}" -m gpu -v --tb=short -p no:cacheprovider -rfE --durations=20 \
  tests/ops tests/nn -k "not (shuffled_conv_taps or degree_two or short_gelu)" > $OUT/pytest-gpu.log 2>&1
echo "pytest rc=$? t=$((SECONDS-S))"; grep -c " PASSED" $OUT/pytest-gpu.log; grep -E " FAILED| ERROR" $OUT/pytest-gpu.log | head -20
tail -3 $OUT/pytest-gpu.log | cut -c1-300
left=$(( ${LIMIT:-580} - (SECONDS - S) - 5 ))
(( left > 20 )) && { timeout $left python3 -m pytest -q --tb=short -p no:cacheprovider -rfE tests/test_timing_agreement.py > $OUT/pytest-timing.log 2>&1
echo "timing rc=$? t=$((SECONDS-S))"; tail -3 $OUT/pytest-timing.log | cut -c1-300; }
