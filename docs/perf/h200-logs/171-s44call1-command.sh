#!/bin/bash
# Session 44 call 1: 58a286c (b2 from shared memory, each tile's offsets at its end: the consumers' per-tile spill
# reloads gone, offline) against 0c7309a, the sweep CLI in alternating processes on one GPU (megakernel + .eval(),
# N=512 and 64, bf16 and fp16, C=128, L=1024), two rounds in opposite order; then the gluon_wsz GPU tests (bit-equality
# of the z-producer kernel against the Gluon kernel and its own variants: the new code must change no bit).
# Predicted: N=512 bf16 and fp16 -2 to -4% (session 43's profile: ~3.5% of a consumer's samples on the spilled
# offsets' reload, ~1-3% on b2's load a tile), N=64 level or a little faster.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for c in old new; do rm -rf /tmp/gh-$c && git clone -q .carry/repo.bundle /tmp/gh-$c; done
(cd /tmp/gh-old && git checkout -q 0c7309a) && (cd /tmp/gh-new && git checkout -q -B main origin/main && git log --oneline -1 | cut -c1-60)
sweep() {  # $1 old|new, $2 round
  (( SECONDS - S > ${LIMIT:-585} - 300 )) && { echo "deadline: $1 r$2"; return; }
  (cd /tmp/gh-$1 && PYTHONPATH=/tmp/site:/tmp/gh-$1 timeout 100 python3 -m benchmarks cheri_block --mode forward \
    --providers greyhound-megakernel --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype bfloat16,float16 --no-csv 2>&1 \
    | grep -E '^  greyhound' | sed -E 's/  +/ /g' | sed "s/^/$1-r$2 /" | cut -c1-200)
  echo "t=$((SECONDS-S))"
}
sweep old 1; sweep new 1; sweep new 2; sweep old 2
cd /tmp/gh-new && PYTHONPATH=/tmp/site:/tmp/gh-new timeout $(( ${LIMIT:-585} - (SECONDS - S) - 10 )) python3 -m pytest -n 4 -q \
  --tb=short -p no:cacheprovider -rfE -m gpu tests/nn/test_cheri_block.py -k "z_producer or gluon_wsz or wsz" \
  > $OUT/pytest-wsz.log 2>&1
echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed" $OUT/pytest-wsz.log | tail -2 | cut -c1-250; grep " FAILED" $OUT/pytest-wsz.log | head
