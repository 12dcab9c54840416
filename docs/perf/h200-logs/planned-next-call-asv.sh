#!/bin/bash
# PLANNED, NOT YET RUN (session 39's call 2 as planned; five failed machine starts left too little device time, and a
# tracked-tier asv of the tip ran instead: 158-s39call2-command.sh). After session 39 made bf16's default take the
# conv's taps in shared memory and the L2 prefetch of x: ring 3 under the new default (sweep CLI), asv of the tip
# (CheriBlockSweep and the tracked tier, peers in the same run) and bfd782c's tracked tier on the same GPU, so that
# tools.gate compares one machine's figures; last, the GPU test of the new default against the kernel with both off.
# Predictions: N=512 bf16 megakernel about 0.364 ms (0.373 at bfd782c); the Cheri training step's backward with four
# launches fewer: N=16 full-mode greyhound-train 3-6% lower where host-bound; newton_schulz (16, 1024, 1024) bf16 level
# within its spread; ring 3 under the new bf16 default level with ring 4 within 1%. Copy to .carry/cmd.sh, carry
# [".whl", ".carry"] (hide docs/public and docs/perf while it travels: the tree, the bundle and the wheels pass 64 MiB).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1)
# ring 3 under the new bf16 default (sessions 37 and 39 both read ring 3 1.3-1.8% under ring 4 at the old default)
if [[ -z ${NO_SWEEP:-} ]]; then  # NO_SWEEP=1: the asv runs only (a short lease)
  W="layout=gluon_wsz,block_l=64,warps=4,block_e=64"
  (cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 70 python3 -m benchmarks cheri_block --mode forward --batch-size 512 \
    --n-filters 128 --seq-len 1024 --dtype bfloat16 --no-csv --providers "greyhound-megakernel,greyhound-megakernel[$W,stages=3],greyhound-megakernel[$W,stages=4,ws_x_prefetch=0,ws_conv_smem=0],greyhound-megakernel[$W,stages=3,ws_x_prefetch=0]" > $OUT/r-bf16.log 2>&1)
  echo "sweep rc=$? t=$((SECONDS-S))"; grep -E '^  greyhound' $OUT/r-bf16.log | sed -E 's/  +/ /g; s/layout=gluon_wsz,block_l=64,warps=4,block_e=64,//' | cut -c1-120
fi
TAG=next DEADLINE=$((${LIMIT:-580} - 65 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" "bfd782c^! @tracked"
echo "asv rc=$? t=$((SECONDS-S))"; grep -E "^===|deadline|Error|error" $OUT/asv-next.log | head -20 | cut -c1-200
# last, in what the asv deadline leaves: the new bf16 default and the combined variant against the kernel with both off
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 60 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE \
  tests/nn/test_cheri_block.py -k "z_producer_variants and both" > $OUT/pytest-z.log 2>&1)
echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-z.log | tail -6 | cut -c1-300
