#!/bin/bash
# session 23 call 2: accuracy of the fp32 megakernel tiles over 12 seeds (a diagnosis of log 97's 1.013e-5)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
[ -d /tmp/t ] || (git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main)
cp .carry/s23acc.py /tmp/t/
nvidia-smi --query-gpu=uuid --format=csv,noheader
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 300 python3 s23acc.py > $OUT/acc.log 2>&1; echo "acc rc=$? t=$((SECONDS-S))"; cat $OUT/acc.log | cut -c1-400 | tail -12)
