#!/bin/bash
# session 11 call 5: does FastLaunch slow the torch.compile'd causal_conv1d forward? sweep CLI, tracked shape,
# greyhound + greyhound-compiled forward, fast launch on / off / on (three processes, same GPU)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
for fast in 1 0 1; do
  GREYHOUND_FAST_LAUNCH=$fast timeout 100 python3 -m benchmarks causal_conv1d --mode forward,full --providers greyhound,greyhound-compiled --no-csv > $OUT/fast$fast-$SECONDS.log 2>&1
  echo "fast=$fast rc=$? t=$((SECONDS-S))"; grep -E "^\s+greyhound" $OUT/fast$fast-*.log | tail -4
done
