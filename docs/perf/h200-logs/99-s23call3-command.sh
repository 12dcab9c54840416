#!/bin/bash
# session 23 call 3: the one-pass CE kernel with bulk L2 prefetches carrying an eviction priority (Triton 3.6's
# cp.async drops the loads' hints), sweep CLI, one process, fla beside; then the fp32-defaults GPU test again.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
P='greyhound,greyhound[one_pass_l2_prefetch=1],greyhound[one_pass_l2_prefetch=2],greyhound[one_pass_l2_prefetch=3],fla'
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 300 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep-ce.log 2>&1; echo "ce sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-ce.log | cut -c1-200)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((470 - (SECONDS - S))) python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 32768 --dtype bfloat16 --providers "greyhound,greyhound[one_pass_l2_prefetch=1],greyhound[one_pass_l2_prefetch=2],fla" --no-csv > $OUT/sweep-ce32k.log 2>&1; echo "ce 32k rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-ce32k.log | cut -c1-200)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((560 - (SECONDS - S))) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn -k "fp32_models_take or bf16x3_keeps" > $OUT/pytest-nn.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-nn.log | tail -6 | cut -c1-300)
