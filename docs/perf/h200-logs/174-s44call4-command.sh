#!/bin/bash
# Session 44 call 4 (run inline on call 3's warm machine, the H100 GPU-f706dbb9): call 3's two leads again, two rounds,
# N=512 and 64: fp16 default against ws_x_shuffle (and with thread release), bf16 default against ws_thread_release
# (and with the L2 prefetch off).
cd /tmp/gh-new 2>/dev/null || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null; rm -rf /tmp/gh-new; git clone -q .carry/repo.bundle /tmp/gh-new; cd /tmp/gh-new; git checkout -q -B main origin/main; }
export PYTHONPATH=/tmp/site:/tmp/gh-new; nvidia-smi --query-gpu=uuid,name --format=csv,noheader | tee $OUT/s.log
for r in 1 2; do
  python3 -m benchmarks cheri_block --mode forward --providers "greyhound-megakernel,greyhound-megakernel[ws_x_shuffle=1],greyhound-megakernel[ws_x_shuffle=1,ws_thread_release=1]" --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype float16 --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g' | sed "s/^/fp16-r$r /" | cut -c1-200 | tee -a $OUT/s.log
  python3 -m benchmarks cheri_block --mode forward --providers "greyhound-megakernel,greyhound-megakernel[ws_thread_release=1],greyhound-megakernel[ws_thread_release=1,ws_x_prefetch=0]" --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16 --no-csv 2>&1 | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g' | sed "s/^/bf16-r$r /" | cut -c1-200 | tee -a $OUT/s.log
done
