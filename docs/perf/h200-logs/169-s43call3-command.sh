#!/bin/bash
# Session 43 call 3: the GPU tests that failed under xdist in call 1 (tracebacks), the 8 it did not reach, then the
# allocator A/B through the sweep CLI: torch's default (PYTORCH_CUDA_ALLOC_CONF set empty) against the harness's new
# default (expandable segments), CE full+forward with fla, linear CE full+forward, the megakernel and training forward
# at N=512 bf16; two rounds in opposite order.
S=$SECONDS R=$PWD
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/gh-main && git clone -q .carry/repo.bundle /tmp/gh-main && cd /tmp/gh-main && git checkout -q -B main origin/main
git log --oneline -1 | cut -c1-80
export PYTHONPATH=/tmp/site:/tmp/gh-main
timeout 150 python3 -m pytest -q --tb=long -p no:cacheprovider -rfE \
  "tests/ops/test_logprobs.py::test_gpu_linear_with_bias" \
  "tests/ops/test_linear_cross_entropy.py::test_gpu_fused_lse_large_softcap_keeps_fp32_accuracy" > $OUT/pytest-failed.log 2>&1
echo "pytest failed-set rc=$? t=$((SECONDS-S))"; tail -15 $OUT/pytest-failed.log | cut -c1-250
timeout 200 python3 -m pytest -n 4 -v --tb=short -p no:cacheprovider -rfE \
  "tests/nn/test_cheri_block.py::test_gpu_gluon_chunk_loop_changes_no_bit[dtype10-True-128-4-3-4-1024-40]" \
  "tests/nn/test_cheri_block.py::test_gpu_gluon_chunk_loop_changes_no_bit[dtype11-True-64-2-2-3-1000-3]" \
  "tests/nn/test_cheri_block.py::test_gpu_gluon_chunk_loop_changes_no_bit[dtype8-True-128-4-3-4-1024-40]" \
  "tests/nn/test_cheri_block.py::test_gpu_gluon_chunk_loop_changes_no_bit[dtype9-True-64-2-2-3-1000-3]" \
  "tests/nn/test_cheri_block.py::test_gpu_warp_specialised_kernel_matches_the_gluon_kernel[32-2-gluon_ws-False-128-4-3-4-1024-40]" \
  "tests/ops/test_newton_schulz.py::test_bf16_gram_iteration_against_fp64" > $OUT/pytest-rest.log 2>&1
echo "pytest rest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed" $OUT/pytest-rest.log | tail -3 | cut -c1-250; grep -E " FAILED" $OUT/pytest-rest.log | head
run() {  # $1 label, then the env assignment (or nothing)
  for k in "cross_entropy_with_grad --mode full,forward --providers greyhound,fla" \
           "chunked_linear_cross_entropy --mode full,forward --providers greyhound" \
           "cheri_block --mode forward --providers greyhound-megakernel,greyhound-train --batch-size 512 --dtype bfloat16"; do
    (( SECONDS - S > ${LIMIT:-580} - 45 )) && { echo "deadline: $1 $k"; continue; }
    env $2 GREYHOUND_BENCH_PROFILE=$OUT/profile-$1.jsonl timeout 120 python3 -m benchmarks $k --no-csv 2>&1 \
      | grep -E '^  (greyhound|fla)' | sed -E 's/  +/ /g' | sed "s/^/$1 /" | cut -c1-210
  done
  echo "t=$((SECONDS-S))"
}
run torchdefault-r1 PYTORCH_CUDA_ALLOC_CONF=
run expandable-r1
run expandable-r2
run torchdefault-r2 PYTORCH_CUDA_ALLOC_CONF=
grep -ho '"expandable_segments": [a-z]*' $OUT/profile-*.jsonl | sort | uniq -c
