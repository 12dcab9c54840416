#!/bin/bash
# session 27 call 4 (a diagnosis and a tuning sweep): ncu warp-state stalls of the looped chunk schedule and of its
# unrolled twin (same tile and ring) at N=512 bf16; then ring depths of the default tile, sweep CLI, one process
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/*.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
V="layout=gluon,block_l=64,block_e=32,warps=4,stages=3,maxnreg=168,z_regs=0"
for name in loop unrolled default; do
  case $name in loop) opt="$V,loop=1";; unrolled) opt="$V";; default) opt=default;; esac
  timeout 100 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
    --section WarpStateStats --section SchedulerStats --section InstructionStats --section SpeedOfLight \
    --import-source no -f -o $OUT/$name python3 ncu_probe.py "$opt" > $OUT/ncu-$name.log 2>&1
  $NCU -i $OUT/$name.ncu-rep --page raw --csv > $OUT/$name-raw.csv 2>/dev/null
  python3 - $OUT/$name-raw.csv $name <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1]))); d = dict(zip(rows[0], rows[2]))
st = sorted(((k.replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", ""), float(v or 0))
             for k, v in d.items() if "issue_stalled" in k and k.endswith("per_issue_active.ratio")), key=lambda kv: -kv[1])
print(sys.argv[2], "duration", d.get("gpu__time_duration.sum"), "issued", d.get("smsp__inst_issued.sum"),
      "cycles/issue", d.get("smsp__average_warp_latency_per_inst_issued.ratio"), [f"{k} {v:.2f}" for k, v in st[:8]])
PY
done
echo "t=$((SECONDS-S))"
G='greyhound-megakernel[layout=gluon,block_l=64,block_e=32,warps=4,maxnreg=168'
for dt in bfloat16 float16; do
timeout $((560 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype $dt --providers "greyhound-megakernel,$G,stages=2,w1_stages=3],$G,stages=3],$G,stages=2,w1_stages=4]" --no-csv > $OUT/sweep-$dt.log 2>&1
echo "sweep $dt rc=$? t=$((SECONDS-S))"; tail -8 $OUT/sweep-$dt.log | cut -c1-230
done
