#!/bin/bash
# session 18 call 1: why are the small-N Cheri training-forward cells host-bound? Host time per call (perf_counter over
# 300 queued calls), device time per call (CUDA events behind a 100 ms head start), sync-debug warnings, cProfile and
# torch.profiler of the training forward, at HEAD and 4311716 (the last sweep with tight small-N cells), plus bisect
# points (two cells). A diagnosis, not a goal figure.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
nproc >> $OUT/gpu.log; lscpu | grep -E "Model name|MHz" >> $OUT/gpu.log
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main)
export PYTHONPATH=/tmp/site
for spec in HEAD:head 4311716:old; do
  c=${spec%%:*} l=${spec##*:}
  rm -rf /tmp/c-$l && git clone -q /tmp/t /tmp/c-$l && (cd /tmp/c-$l && git checkout -q $c)
  timeout 200 python3 .carry/diag_host.py /tmp/c-$l $l $OUT > $OUT/diag-$l.log 2>&1; echo "$l rc=$? t=$((SECONDS-S))"
  grep -E "host .* device" $OUT/diag-$l.log
done
for spec in 19471da^:pre-lib 19471da:lib ce8e27d:twins 80f72d0^:pre-fl 80f72d0:fl; do
  c=${spec%%:*} l=${spec##*:}
  (( SECONDS - S > 480 )) && break
  rm -rf /tmp/c-$l && git clone -q /tmp/t /tmp/c-$l && (cd /tmp/c-$l && git checkout -q $c)
  timeout 90 python3 .carry/diag_host.py /tmp/c-$l $l $OUT quick > $OUT/diag-$l.log 2>&1; echo "$l rc=$? t=$((SECONDS-S))"
  grep -E "host .* device" $OUT/diag-$l.log
done
gzip $OUT/trace-*.json 2>/dev/null
