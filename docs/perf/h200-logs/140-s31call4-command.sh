#!/bin/bash
# session 31 call 4: GPU bit-equality of the z_regs cases (not selected in call 3), the ring depth of gluon_wsz with
# ws_pingpong=1 (sweep CLI, N=512 / 64 bf16 forward, one process), then ncu source-level stall sampling of
# gluon_wsz (64, 64, ring 4, ws_pingpong=1) at N=512 bf16, one launch: which SASS instructions its warps wait on
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/*.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
timeout 150 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "warp_specialised_kernel_matches and z_regs" > $OUT/pytest-zregs.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-zregs.log | tail -6 | cut -c1-300
Z='greyhound-megakernel[layout=gluon_wsz,block_l=64,warps=4'
timeout $((330 - (SECONDS - S))) python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16 --providers "greyhound-megakernel,$Z,block_e=64,stages=4,ws_pingpong=1],$Z,block_e=64,stages=5,ws_pingpong=1],$Z,block_e=64,stages=6,ws_pingpong=1],$Z,block_e=64,stages=4],$Z,block_e=64,stages=5]" --no-csv > $OUT/sweep-bf16.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; tail -12 $OUT/sweep-bf16.log | cut -c1-250
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
name=wsz; opt="layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4,ws_pingpong=1"
timeout 200 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/$name python3 ncu_probe.py "$opt" > $OUT/ncu-src-$name.log 2>&1
$NCU -i /tmp/$name.ncu-rep --page source --csv --print-source sass > $OUT/$name-sass.csv 2>/dev/null
python3 sass_top.py $OUT/$name-sass.csv > $OUT/sass-top-$name.txt 2>&1; echo "$name t=$((SECONDS-S))"; head -45 $OUT/sass-top-$name.txt | cut -c1-200
