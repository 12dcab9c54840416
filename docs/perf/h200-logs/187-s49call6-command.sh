#!/bin/bash
# NOT RUN: the start failed (no machine, 180 s of device time), and the 324 s left could not start another; for a next session.
# Session 49, call 6: ncu of the megakernel's current defaults at N=512 (bf16: shuffled taps + split ring + epilogue16,
# consumers 152; fp16: the same at 160), session 43's sections, one launch each, clocks left alone. What a next change
# to the consumers' chunk should start from (session 43's profile predates the shuffled configuration). Predicted:
# the consumers bound (wgmma wait + issue + mbarrier checks), the z producer waiting on free slots, as session 43's
# shuffled variant.
S=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=uuid,name --format=csv,noheader | tee $OUT/call.log
bash scripts/carry_repo.sh unpack /tmp/gh-t && (cd /tmp/gh-t && git log --oneline -1 | tee -a $OUT/call.log)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for dt in bfloat16 float16; do
  (( SECONDS - S > ${LIMIT:-300} - 90 )) && { echo "deadline: ncu $dt not run" | tee -a $OUT/call.log; continue; }
  (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout 120 $NCU --clock-control none --kernel-name regex:cheri_block \
    --launch-skip 2 --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --import-source no -f -o /tmp/$dt \
    python3 docs/perf/h200-logs/187-s49-ncu_probe.py $dt > /tmp/ncu-$dt.log 2>&1)
  echo "ncu $dt rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; tail -2 /tmp/ncu-$dt.log | tee -a $OUT/call.log
  $NCU -i /tmp/$dt.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/$dt-sass.csv.gz
  $NCU -i /tmp/$dt.ncu-rep --page details --csv > $OUT/$dt-details.csv 2>/dev/null
done
