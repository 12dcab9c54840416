#!/bin/bash
# Session 37 call 1 (log 155): ncu of the default gluon_wsz kernel at N=512 bf16 (source-level stall samples by
# partition, warp states, speed of light), then asv of the tip (fp16's late residual; the fp32 N=16 train cell again).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1)
L=/tmp/t/docs/perf/h200-logs
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for name in default; do
  (cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 150 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --import-source no -f -o /tmp/$name \
    python3 $L/120-s27-ncu_probe.py default > $OUT/ncu-$name.log 2>&1)
  echo "ncu rc=$? t=$((SECONDS-S))"; tail -3 $OUT/ncu-$name.log
  $NCU -i /tmp/$name.ncu-rep --page source --csv --print-source sass > $OUT/$name-sass.csv 2>/dev/null
  $NCU -i /tmp/$name.ncu-rep --page details --csv > $OUT/$name-details.csv 2>/dev/null
  PYTHONPATH=/tmp/site python3 $L/123-s28-sass_top.py $OUT/$name-sass.csv > $OUT/sass-top-$name.txt 2>&1
  PYTHONPATH=/tmp/site python3 $L/140-s31-partitions.py $OUT/$name-sass.csv '{}' > $OUT/markers-$name.txt 2>&1
  echo "$name t=$((SECONDS-S))"; head -3 $OUT/sass-top-$name.txt | cut -c1-250; cat $OUT/markers-$name.txt
done
gzip -f $OUT/*-sass.csv
TAG=s37 DEADLINE=$((575 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-s37.log | head -20 | cut -c1-200
