#!/bin/bash
# session 18 call 2: the Cheri host-time cut (5c0c06c). GPU tests (Cheri, launch); sweep CLI at N=16/64 for the
# parent (a494a80) and 5c0c06c, one after the other on this GPU (the A/B); then asv CheriBlockSweep at 5c0c06c (every
# published cell, peers in one process); then the host/device diagnosis of call 1 at both commits if time is left.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main)
for spec in a494a80:old 5c0c06c:new; do
  c=${spec%%:*} l=${spec##*:}
  rm -rf /tmp/c-$l && git clone -q /tmp/t /tmp/c-$l && (cd /tmp/c-$l && git checkout -q $c)
done
(cd /tmp/c-new && PYTHONPATH=/tmp/site timeout 150 python3 -m pytest -q -m gpu tests/nn/test_cheri_block.py tests/test_launch.py -p no:cacheprovider > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; tail -3 $OUT/pytest.log)
for l in old new; do
  (cd /tmp/c-$l && PYTHONPATH=/tmp/site:/tmp/c-$l timeout 100 python3 -m benchmarks cheri_block --mode forward --batch-size 16,64 --n-filters 128 --seq-len 1024 --dtype float32,bfloat16,float16 --providers greyhound-train,greyhound-megakernel,greyhound-megakernel-noeval --no-csv > $OUT/sweep-$l.log 2>&1; echo "sweep $l rc=$? t=$((SECONDS-S))")
  grep -E "^\s+greyhound" $OUT/sweep-$l.log | head -20
done
left=$(( 560 - (SECONDS - S) )); echo "asv with ${left}s"
TAG=cheri DEADLINE=$left bash scripts/h200_asv.sh "5c0c06c^! CheriBlockSweep" > $OUT/asv-driver.log 2>&1; echo "asv t=$((SECONDS-S))"; tail -5 $OUT/asv-driver.log
for l in new old; do
  (( SECONDS - S > 540 )) && break
  timeout 40 python3 .carry/diag_host.py /tmp/c-$l $l $OUT quick > $OUT/diag-$l.log 2>&1; echo "$l rc=$? t=$((SECONDS-S))"
  grep -E "host .* device" $OUT/diag-$l.log
done
