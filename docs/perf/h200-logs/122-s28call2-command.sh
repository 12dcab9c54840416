#!/bin/bash
# session 28 call 2 (a diagnosis and a sweep): ncu of the default, the one-chunk warp-specialised kernel and the
# pipelined one (N=512 bf16, one launch each); then deeper rings and three pipelined consumers, sweep CLI, one process
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/*.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
W="layout=gluon_ws,block_l=64,warps=4"
for name in default ws ws_pipeline; do
  case $name in default) opt=default;; ws) opt="$W,block_e=64,stages=2";; ws_pipeline) opt="$W,block_e=32,stages=6,ws_pipeline=1";; esac
  timeout 100 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
    --section WarpStateStats --section SchedulerStats --section InstructionStats --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --import-source no -f -o $OUT/$name python3 ncu_probe.py "$opt" > $OUT/ncu-$name.log 2>&1
  $NCU -i $OUT/$name.ncu-rep --page raw --csv > $OUT/$name-raw.csv 2>/dev/null
  python3 - $OUT/$name-raw.csv $name <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1]))); d = dict(zip(rows[0], rows[2]))
st = sorted(((k.replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", ""), float(v or 0))
             for k, v in d.items() if "issue_stalled" in k and k.endswith("per_issue_active.ratio")), key=lambda kv: -kv[1])
pipes = {k: v for k, v in d.items() if k.startswith("sm__pipe_") and k.endswith("pct_of_peak_sustained_active") and float(v or 0) > 5}
print(sys.argv[2], "duration", d.get("gpu__time_duration.sum"), "issued", d.get("smsp__inst_issued.sum"),
      "issue active", d.get("sm__inst_issued.avg.pct_of_peak_sustained_active"),
      "cycles/issue", d.get("smsp__average_warp_latency_per_inst_issued.ratio"), [f"{k} {v:.2f}" for k, v in st[:9]], pipes)
PY
done
echo "t=$((SECONDS-S))"
G='greyhound-megakernel[layout=gluon_ws,block_l=64,warps=4'
timeout $((570 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "greyhound-megakernel,$G,block_e=32,stages=6,ws_pipeline=1],$G,block_e=32,stages=8,ws_pipeline=1],greyhound-megakernel[layout=gluon_ws3,block_l=64,warps=4,block_e=16,stages=6,ws_pipeline=1],greyhound-megakernel[layout=gluon_ws3,block_l=64,warps=4,block_e=32,stages=4]" --no-csv > $OUT/sweep-bf16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -10 $OUT/sweep-bf16.log | cut -c1-230
