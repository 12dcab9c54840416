#!/bin/bash
# session 12 call 1: gpu tests of CE / linear CE (one-pass kernel, 64 MiB vocab schedule, one-chunk weight grad),
# sweeps of the variants beside the peers, a kernel-time profile (diagnosis)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.log
timeout 100 python3 -m benchmarks cross_entropy_with_grad --mode full --providers 'greyhound,greyhound[one_pass=1],greyhound[one_pass=1,pass_lag=2],greyhound[one_pass=1,pass_block_v=2048,pass_programs_per_sm=8],greyhound[one_pass=1,pass_block_v=8192,pass_warps=8,pass_programs_per_sm=2],greyhound[one_pass=1,pass_block_v=2048,pass_warps=2,pass_programs_per_sm=16],greyhound[one_pass=1,pass_block_v=4096,pass_warps=8,pass_programs_per_sm=2],fla' --csv $OUT/ce.csv > $OUT/ce.log 2>&1; echo "ce rc=$? t=$((SECONDS-S))"
grep -v "^ *$" $OUT/ce.log | tail -12
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rs -x tests/ops/test_cross_entropy.py tests/ops/test_linear_cross_entropy.py > $OUT/pytest-gpu.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
tail -4 $OUT/pytest-gpu.log
timeout 150 python3 -m benchmarks chunked_linear_cross_entropy --mode forward --providers 'greyhound,greyhound[vocab_chunk=4096],greyhound[overlap=1],torch-compile' --csv $OUT/lce-fwd.csv > $OUT/lce-fwd.log 2>&1; echo "lce fwd rc=$? t=$((SECONDS-S))"
grep -v "^ *$" $OUT/lce-fwd.log | tail -6
timeout 200 python3 -m benchmarks chunked_linear_cross_entropy --mode full --d-model 4096,8192 --providers 'greyhound,greyhound[chunk_rows=8192],greyhound[chunk_rows=2048],greyhound[cross_entropy_with_grad.one_pass=1],torch-compile' --csv $OUT/lce-full.csv > $OUT/lce-full.log 2>&1; echo "lce full rc=$? t=$((SECONDS-S))"
grep -v "^ *$" $OUT/lce-full.log | tail -12
timeout 80 python3 $OLDPWD/.carry/s12_prof.py > $OUT/prof.log 2>&1; echo "prof rc=$? t=$((SECONDS-S))"
echo "done t=$((SECONDS-S))"
