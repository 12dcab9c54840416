#!/bin/bash
# Session 36 call 1 (written in sessions 34-35, which had no device; run as written). Copy to
# .carry/cmd.sh and rename to the next log number when it runs. (1) the tail schedule, the degree-2 GELU, every
# consumer thread releasing the ring (ws_thread_release) and lone last-round tiles (ws_balance) against
# the default, one process a dtype, twice; (2) d06a75b against the tip at fp16, alternating processes (session 33's
# open fp16 question); (3) the GPU tests session 33 wrote and could not run. About 400 s.
# Call 2 (asv): TAG=.. DEADLINE=.. bash scripts/h200_asv.sh "HEAD^! @tracked" "HEAD^! CheriBlockSweep"
# "HEAD^! CausalConv1dUpdateSweep" (the decode step, new in session 35; small); then here:
# python -m tools.merge_results <files_at>/results-TAG.tar.gz && python -m tools.export && python -m tools.plot --csv
# docs/data/benchmark_data.csv --out docs/public/assets && python -m tools.docs (CI checks that the committed plots
# are the CSV's), and python -m tools.gate f9beff7 <new commit>. Call 3: planned-next-call3-profile.sh.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t /tmp/w-* && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
git worktree add -q /tmp/w-d06a75b d06a75b
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
W="layout=gluon_wsz,block_l=64,warps=4,block_e=64"
sweep() {  # tree, log name, dtype, providers
  (cd $1 && PYTHONPATH=/tmp/site:$1 timeout 150 python3 -m benchmarks cheri_block --mode forward \
    --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype $3 --providers "$4" --no-csv > $OUT/$2.log 2>&1)
  echo "$2 rc=$? t=$((SECONDS-S))"; grep -E '^  greyhound' $OUT/$2.log | sed 's/  */ /g' | cut -c1-160
}
for i in 1 2; do
  sweep /tmp/t $i-variants-bf16 bfloat16 "greyhound-megakernel,greyhound-megakernel[$W,stages=3,ws_schedule=tail],greyhound-megakernel[$W,stages=4,gelu=poly2],greyhound-megakernel[$W,stages=3,ws_schedule=tail,gelu=poly2],greyhound-megakernel[$W,stages=4,ws_thread_release=1],greyhound-megakernel[$W,stages=3,ws_schedule=tail,gelu=poly2,ws_thread_release=1],greyhound-megakernel[$W,stages=4,ws_balance=1]"
  sweep /tmp/t $i-variants-fp16 float16 "greyhound-megakernel,greyhound-megakernel[$W,stages=3,ws_schedule=tail],greyhound-megakernel[$W,stages=4,ws_balance=1]"
  sweep /tmp/w-d06a75b $i-d06a75b-fp16 float16 greyhound-megakernel
done
cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 150 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_compile.py -k inductor > $OUT/pytest-compile.log 2>&1; echo "pytest compile rc=$? t=$((SECONDS-S))"; tail -3 $OUT/pytest-compile.log | cut -c1-300
cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((590 - (SECONDS - S))) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "degree_two or large_hidden or b1_by_wgmma or (warp_specialised_kernel_matches and (tail or thread_release or balance or not gluon_wsz)) or lone_last_round" > $OUT/pytest-cheri.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error|Timeout" $OUT/pytest-cheri.log | tail -8 | cut -c1-400
