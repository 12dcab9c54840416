#!/bin/bash
# session 14 call 3: ncu (clock control none) on one launch of the one-pass CE kernel (two configs) and of the
# two-kernel path's gradient kernel, BT=8192 V=128256 bf16: DRAM bytes, L2 hit rate, stall reasons. A diagnosis.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/ce_ncu_probe.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
i=0
for pair in "one_pass=1:cross_entropy_one_pass" "one_pass=1,one_pass_warps=16,one_pass_stages=3:cross_entropy_one_pass" "default:_gradient_kernel" "default:_cross_entropy_kernel"; do
  v=${pair%%:*}; k=${pair##*:}; i=$((i+1))
  timeout 100 $NCU --clock-control none --kernel-name regex:$k --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum \
    --csv --page details python3 ce_ncu_probe.py "$v" > $OUT/ncu$i.csv 2> $OUT/ncu$i.err; echo "ncu $i $v rc=$? t=$((SECONDS-S))"
  grep -E "Duration|dram__bytes|hit_rate|lookup_hit|lookup_miss|Memory Throughput|L2 Hit|Issue Slots|Eligible|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" $OUT/ncu$i.csv | awk -F'","' '{print $(NF-2), $(NF-1), $NF}' | head -30
done
