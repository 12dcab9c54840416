#!/bin/bash
# session 24 call 1: ncu source-level stall sampling (a diagnosis, not a timing; clock control none) of one launch of
# the default bf16 megakernel (Gluon) at N=512: which SASS instructions the warps wait on.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/ncu_probe.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); echo "ncu: $NCU"; $NCU --version | tail -1
timeout 150 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section SchedulerStats --import-source no -f -o $OUT/mk python3 ncu_probe.py default > $OUT/ncu.log 2>&1
echo "ncu rc=$? t=$((SECONDS-S))"; tail -3 $OUT/ncu.log
$NCU -i $OUT/mk.ncu-rep --page source --csv --print-source sass > $OUT/mk-sass.csv 2> $OUT/mk-sass.err; echo "sass rc=$? lines=$(wc -l < $OUT/mk-sass.csv)"; head -c 600 $OUT/mk-sass.err
$NCU -i $OUT/mk.ncu-rep --page details --csv > $OUT/mk-details.csv 2>/dev/null; echo "details lines=$(wc -l < $OUT/mk-details.csv) t=$((SECONDS-S))"
# the same for the fp32 (bf16x3) default at N=512 is not taken: one kernel at a time
$NCU -i $OUT/mk.ncu-rep --page raw --csv > $OUT/mk-raw.csv 2>/dev/null; echo "raw lines=$(wc -l < $OUT/mk-raw.csv) t=$((SECONDS-S))"
# then the whole tests/nn GPU suite on the tip (not run in full since d9d9b92), as far as the call's time allows
nvidia-smi --query-gpu=uuid --format=csv,noheader
PYTHONPATH=/tmp/site:/tmp/t timeout $((575 - (SECONDS - S))) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfEs tests/nn --durations=15 > $OUT/pytest-nn.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest-nn.log | tail -10 | cut -c1-300
