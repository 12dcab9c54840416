#!/bin/bash
# session 27 call 1 (diagnoses + one tuning sweep): (1) the default bf16 Cheri megakernel at N=512 against copies of
# itself with the weight refills / x's HBM reads / the GELU taken out (.carry/cheri_diag.py, do_bench in one process);
# (2) ncu of the default at N=512, throughput sections; (3) linear CE forward, the vocab row kernel's block and warps
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/*.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader
timeout 200 python3 cheri_diag.py 512 > $OUT/diag.log 2>&1; echo "diag rc=$? t=$((SECONDS-S))"; grep -v Warning $OUT/diag.log | tail -24
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 120 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
  --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --import-source no -f -o $OUT/mk python3 ncu_probe.py > $OUT/ncu.log 2>&1
echo "ncu rc=$? t=$((SECONDS-S))"; tail -2 $OUT/ncu.log
$NCU -i $OUT/mk.ncu-rep --page details --csv > $OUT/mk-details.csv 2>/dev/null
$NCU -i $OUT/mk.ncu-rep --page raw --csv > $OUT/mk-raw.csv 2>/dev/null
python3 - <<'PY'
import csv, os
rows = list(csv.reader(open(os.environ["OUT"] + "/mk-details.csv")))
h = rows[0]
for r in rows[1:]:
    d = dict(zip(h, r))
    print(f'{d.get("Section Name","")[:28]:28s} {d.get("Metric Name","")[:48]:48s} {d.get("Metric Unit","")[:12]:12s} {d.get("Metric Value","")}')
PY
echo "t=$((SECONDS-S))"
timeout $((570 - (SECONDS - S))) python3 -m benchmarks chunked_linear_cross_entropy --mode forward --batch-size 8192 --d-model 4096 --vocab-size 128256 --dtype bfloat16 --providers 'greyhound,greyhound[vocab_block_v=4096,vocab_warps=8],greyhound[vocab_block_v=4096,vocab_warps=4],greyhound[vocab_block_v=1024,vocab_warps=4],greyhound[vocab_block_v=2048,vocab_warps=8],torch-compile' --no-csv > $OUT/sweep-lce.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -14 $OUT/sweep-lce.log
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw --format=csv,noheader
