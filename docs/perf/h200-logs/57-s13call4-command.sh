#!/bin/bash
# session 13 call 4: ncu (clock control none) on one launch of the tl megakernel and of two Gluon configs, N=512 bf16
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/ncu_probe.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1); echo "ncu: $NCU"
i=0
for v in default "layout=gluon,block_l=64,block_e=32,warps=4,stages=3,maxnreg=168" "layout=gluon,block_l=128,block_e=64,warps=8,stages=3"; do
  i=$((i+1))
  timeout 150 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats --csv --page details \
    python3 ncu_probe.py "$v" > $OUT/ncu$i.csv 2> $OUT/ncu$i.err; echo "ncu $i rc=$? t=$((SECONDS-S))"
  grep -E "Duration|Issue Slots Busy|Eligible Warps|No Eligible|Achieved Occupancy|Registers Per|Stall|Compute \(SM\) Throughput|L2 Cache Throughput|Executed Ipc Active" $OUT/ncu$i.csv | awk -F'","' '{print $(NF-2), $(NF-1), $NF}' | head -24
done
