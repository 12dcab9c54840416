#!/bin/bash
# session 28 call 3 (a diagnosis): ncu source-level stall sampling of the pipelined warp-specialised kernel
# (ws_pipeline, 32 hidden columns, ring 6) at N=512 bf16, one launch: which SASS instructions its warps wait on
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cp .carry/*.py /tmp/t/ && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid --format=csv,noheader
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for name in ws_pipeline ws; do
  case $name in ws) opt="layout=gluon_ws,block_l=64,warps=4,block_e=64,stages=2";; ws_pipeline) opt="layout=gluon_ws,block_l=64,warps=4,block_e=32,stages=6,ws_pipeline=1";; esac
  timeout 150 $NCU --clock-control none --kernel-name regex:cheri_block --launch-skip 2 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/$name python3 ncu_probe.py "$opt" > $OUT/ncu-src-$name.log 2>&1
  $NCU -i /tmp/$name.ncu-rep --page source --csv --print-source sass > /tmp/$name-sass.csv 2>/dev/null
  python3 sass_top.py /tmp/$name-sass.csv > $OUT/sass-top-$name.txt 2>&1; echo "$name t=$((SECONDS-S))"; head -30 $OUT/sass-top-$name.txt | cut -c1-200
done
