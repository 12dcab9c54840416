#!/bin/bash
# session 31 call 3: z from registers in the warp-specialised consumers (z_regs) and the consumers' register share
# beside the z producer (maxnreg): GPU bit-equality tests, the sweep CLI at N=512 / 64 (bf16, forward, one process),
# then ncu (throughput sections, one launch) of the default and of gluon_wsz with ws_pingpong=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/*.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
timeout 200 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "warp_specialised_kernel_matches and (gluon_wsz-1 or z_regs)" > $OUT/pytest-zregs.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-zregs.log | tail -6 | cut -c1-300
Z='greyhound-megakernel[layout=gluon_wsz,block_l=64,warps=4'
timeout $((400 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "greyhound-megakernel,$Z,block_e=64,stages=3,ws_pingpong=1],$Z,block_e=64,stages=4,ws_pingpong=1],$Z,block_e=64,stages=3,ws_pingpong=1,z_regs=1],$Z,block_e=64,stages=3,ws_pingpong=1,z_regs=1,maxnreg=176],$Z,block_e=64,stages=3,ws_pingpong=1,z_regs=1,maxnreg=184],$Z,block_e=32,stages=6,ws_pingpong=1,z_regs=1],$Z,block_e=32,stages=6,ws_pingpong=1,z_regs=1,maxnreg=168],$Z,block_e=64,stages=3,z_regs=1,maxnreg=184]" --no-csv > $OUT/sweep-bf16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -20 $OUT/sweep-bf16.log | cut -c1-250
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for name in default wsz; do
  case $name in default) opt=default;; wsz) opt="layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=3,ws_pingpong=1";; esac
  timeout 90 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
    --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --import-source no -f -o $OUT/$name python3 ncu_probe.py "$opt" > $OUT/ncu-$name.log 2>&1
  $NCU -i $OUT/$name.ncu-rep --page raw --csv > /tmp/$name-raw.csv 2>/dev/null
  python3 - /tmp/$name-raw.csv $name <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1]))); d = dict(zip(rows[0], rows[2]))
st = sorted(((k.replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", ""), float(v or 0))
             for k, v in d.items() if "issue_stalled" in k and k.endswith("per_issue_active.ratio")), key=lambda kv: -kv[1])
keys = [k for k in d if ("pct_of_peak_sustained" in k and ("l1tex__data" in k or "lsu" in k or "shared" in k or "pipe_tensor" in k or "inst_issued" in k)) or k in ("gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "smsp__cycles_active.avg")]
print(sys.argv[2], [f"{k.replace('smsp__average_warps_issue_stalled_','')} {v:.2f}" for k, v in st[:8]])
for k in sorted(keys): print("  ", k, d[k])
PY
  echo "t=$((SECONDS-S))"
done
