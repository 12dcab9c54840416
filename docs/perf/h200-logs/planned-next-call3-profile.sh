#!/bin/bash
# PLANNED, NOT YET RUN (written in session 35, revised in session 36, which ran out of device time before it). A
# diagnosis call (not a timing): ncu source-level stall samples of the gluon_wsz kernel at N=512, one launch each,
# split by partition, bf16 (the probe, 120-s27-ncu_probe.py, is bf16): the default (poly2 + lone tiles), the default
# with the late residual (2.6% slower for bf16, 1.5% faster for fp16: why?) and the tail schedule (13% slower in session 36 against a predicted -5%: where do its
# cycles go?). Question (perf notes, sessions 34 and 36): of a ~2900-cycle chunk, how much is the consumers' own
# chain and how much their wait on the shared weight ring. Copy to .carry/cmd.sh and rename to the next log number
# when it runs; ~250 s. Run first in that call (or in the call before it) the asv of the tip, which has fp16's late
# residual that session 36's asv (e17fd12) did not: TAG=.. DEADLINE=.. bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep"
# "HEAD^! @tracked" (that also re-measures greyhound-train fp32 N=16, whose e17fd12 samples stepped 0.056 -> 0.13 ms
# mid-run).
# Reuses the committed helpers: 120-s27-ncu_probe.py (3 launches of one variant), 123-s28-sass_top.py (top stalled
# SASS rows), 140-s31-partitions.py (samples by partition: pass the row ranges its "marker" lines print).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
L=docs/perf/h200-logs
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
W="layout=gluon_wsz,block_l=64,warps=4,block_e=64"
for spec in "default:default" "late_bf16:$W,stages=4,ws_late_residual=1" "tail:$W,stages=3,ws_schedule=tail"; do
  name=${spec%%:*}; opt=${spec#*:}
  timeout 100 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -f -o /tmp/$name \
    python3 $L/120-s27-ncu_probe.py "$opt" > $OUT/ncu-$name.log 2>&1
  $NCU -i /tmp/$name.ncu-rep --page source --csv --print-source sass > $OUT/$name-sass.csv 2>/dev/null
  $NCU -i /tmp/$name.ncu-rep --page details --csv > $OUT/$name-details.csv 2>/dev/null
  python3 $L/123-s28-sass_top.py $OUT/$name-sass.csv > $OUT/sass-top-$name.txt 2>&1
  python3 $L/140-s31-partitions.py $OUT/$name-sass.csv '{}' > $OUT/markers-$name.txt 2>&1
  echo "$name t=$((SECONDS-S))"; head -3 $OUT/sass-top-$name.txt | cut -c1-250; grep -c marker $OUT/markers-$name.txt
done
rm -f $OUT/*-sass.csv.gz; gzip -f $OUT/*-sass.csv
