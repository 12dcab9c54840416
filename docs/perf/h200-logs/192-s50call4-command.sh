#!/bin/bash
# RAN on an H100 (GPU-72fb1b25, warm from call 3), asked for as an H200: log 192. (Written from 187-s49call6-command.sh.)
# Session 50, call 4 (the session's last ~600 s of device time): (1) asv of the tip's CheriBlockSweep (4c6650a's fp16
# default; on an H200 the goal's figure, on an H100 a second reading beside log 191's); (2) call 6 of session 49
# (187-s49call6-command.sh, never run): ncu of the bf16 and fp16 defaults at N=512, one launch each, clocks left alone.
# Predicted: fp16 N=512 asv ~0.344 (H100) / ~0.346 (H200); ncu: the consumers bound (wgmma wait + issue + mbarrier
# checks), the z producer waiting on free slots, as session 43's profile.
S=$SECONDS
asv() {  # asv TAG DEADLINE "RANGE REGEX"...
  local tag=$1 deadline=$2; shift 2; mkdir -p /tmp/out-$tag
  OUT=/tmp/out-$tag TAG=$tag DEADLINE=$deadline bash scripts/h200_asv.sh "$@" > /dev/null 2>&1
  echo "asv $tag rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log
  grep -E "^===|deadline" /tmp/out-$tag/asv-$tag.log | head | tee -a $OUT/call.log
  mv /tmp/out-$tag/results-$tag.tar.gz $OUT/ 2>/dev/null; tar czf $OUT/logs-$tag.tar.gz -C /tmp/out-$tag .
}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
bash scripts/carry_repo.sh unpack /tmp/gh-t && (cd /tmp/gh-t && git log --oneline -1 | cut -c1-100 | tee -a $OUT/call.log)
asv s50d $((${LIMIT:-480} - 170 - (SECONDS - S))) "HEAD^! CheriBlockSweep"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for dt in bfloat16 float16; do
  (( SECONDS - S > ${LIMIT:-480} - 90 )) && { echo "deadline: ncu $dt not run" | tee -a $OUT/call.log; continue; }
  (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout 75 $NCU --clock-control none --kernel-name regex:cheri_block \
    --launch-skip 2 --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --import-source no -f -o /tmp/$dt \
    python3 docs/perf/h200-logs/187-s49-ncu_probe.py $dt > /tmp/ncu-$dt.log 2>&1)
  echo "ncu $dt rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; tail -2 /tmp/ncu-$dt.log | tee -a $OUT/call.log
  $NCU -i /tmp/$dt.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/$dt-sass.csv.gz
  $NCU -i /tmp/$dt.ncu-rep --page details --csv > $OUT/$dt-details.csv 2>/dev/null
done
