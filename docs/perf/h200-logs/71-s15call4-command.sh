#!/bin/bash
# session 15 call 4: ncu (clock control none; a diagnosis, not a timing) on one launch each of the default Gluon
# kernel and the warp-specialised one at N=512 bf16, raw metrics (stall reasons, L2 and shared-memory traffic)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/ncu_probe.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
i=0
for v in default "layout=gluon_ws,block_l=64,block_e=64,warps=4,stages=4"; do
  i=$((i+1))
  timeout 120 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section Occupancy \
    --csv --page raw python3 ncu_probe.py "$v" > $OUT/ncu$i.csv 2> $OUT/ncu$i.err; echo "ncu $i rc=$? t=$((SECONDS-S))"
done
