#!/bin/bash
# session 12 call 4 (the warm machine of call 2, GPU-28d65e0a, commit 6e3fdfa in /tmp/t): the linear CE forward's
# vocabulary chunk width, sweep CLI, two processes in opposite orders
cd /tmp/t && export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1; S=$SECONDS
for p in 'greyhound[vocab_chunk=4032],greyhound[vocab_chunk=4064],greyhound[vocab_chunk=4096],greyhound,greyhound[vocab_chunk=4080]' \
         'greyhound[vocab_chunk=4080],greyhound,greyhound[vocab_chunk=4096],greyhound[vocab_chunk=4064],greyhound[vocab_chunk=4032]'; do
  timeout 150 python3 -m benchmarks chunked_linear_cross_entropy --mode forward --providers "$p" --csv $OUT/lce-fwd-widths.csv 2>&1 | grep forward
  echo "t=$((SECONDS-S))"
done
