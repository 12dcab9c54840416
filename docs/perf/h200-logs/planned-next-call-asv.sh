#!/bin/bash
# PLANNED, NOT YET RUN (written in session 40, after its three calls ran on an H100). For an H200 (results filed under
# nvidia-h200, whose history has bfd782c): asv of the tip (CheriBlockSweep and the tracked tier, peers in the same run),
# then bfd782c's tracked tier on the same GPU; then the CE forward of both commits' code, alternating processes
# (sweep CLI), to settle whether session 38's target statistics made the no-grad forward 12% faster (session 40 on an
# H100: 0.847 -> 0.744 ms in asv, full level). Predictions: N=512 bf16 megakernel + .eval() 0.360 +- 0.004 ms on the
# H200 (0.373 at bfd782c; the kernel is SM-bound, the H100 read 0.373 -> 0.359); fp16 level at 0.382; the CE forward
# A/B level within 1% (then the H100's -12% was that run's, not the code's). Copy to .carry/cmd.sh, carry
# [".whl", ".carry"]; hide docs/public and docs/perf while it travels (64 MiB).
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=next DEADLINE=$((${LIMIT:-585} - 90 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" "bfd782c^! @tracked"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-next.log | head -20 | cut -c1-200
for c in bfd782c main bfd782c main; do
  rm -rf /tmp/ab && git clone -q .carry/repo.bundle /tmp/ab && (cd /tmp/ab && git checkout -q -B main origin/main && git checkout -q $c)
  (cd /tmp/ab && PYTHONPATH=/tmp/site:/tmp/ab timeout 40 python3 -m benchmarks cross_entropy_with_grad --mode forward,full \
    --providers greyhound,fla --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --no-csv 2>&1 | grep -E '^  (greyhound|fla)' | sed "s/^/$c /")
done
echo "ab t=$((SECONDS-S))"
