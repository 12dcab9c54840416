#!/bin/bash
# session 21 call 6: A/B of the residual-after-the-loop change on the bf16/fp16 Gluon kernel (HEAD~1 vs HEAD, sweep
# CLI, one process each, alternating), then its GPU tests (Gluon vs Triton, warp-specialised vs Gluon bit for bit).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
for c in a b; do rm -rf /tmp/$c && git clone -q .carry/repo.bundle /tmp/$c && (cd /tmp/$c && git checkout -q -B main origin/main); done
(cd /tmp/a && git checkout -q HEAD~1 && git log --oneline | head -1); (cd /tmp/b && git log --oneline | head -1)
P='greyhound-megakernel'
for c in a b; do
  (cd /tmp/$c && PYTHONPATH=/tmp/site:/tmp/$c timeout 60 python3 -m benchmarks cheri_block --mode forward --batch-size 512 --n-filters 128 --seq-len 1024 --dtype bfloat16,float16 --providers "$P" --no-csv > $OUT/sweep-$c.log 2>&1; echo "sweep $c rc=$? t=$((SECONDS-S))"; grep -E "^\s+greyhound|rror" $OUT/sweep-$c.log | cut -c1-200)
done
(cd /tmp/b && PYTHONPATH=/tmp/site timeout $((150 - (SECONDS - S))) python3 -m pytest -q -x --tb=short -p no:cacheprovider tests/nn/test_cheri_block.py -k "gluon_kernel_matches_the_triton or warp_specialised_kernel_matches or default_inference_takes_the_gluon" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; tail -4 $OUT/pytest.log | cut -c1-300)
