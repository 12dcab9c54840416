#!/bin/bash
# PLANNED, NOT YET RUN (session 44's call 5, whose machine stopped answering before it ran, plus the two Newton-Schulz
# tests session 43 did not reach). The GPU tests of the fp16 default's shuffled taps (4983637: the shuffled-taps test
# against loaded taps, the z producer variants, late residual, short GELU, the megakernel modes in fp16), then asv of
# the tip: tracked tier and CheriBlockSweep, peers in the same runs; then the Newton-Schulz Gram tests at shape2.
# Predicted: tests pass; megakernel + .eval() N=512 fp16 ~0.355 ms on an H200 (0.3648 at e69544c, log 172), bf16 level
# with e69544c (0.357). Copy to .carry/cmd.sh; git bundle create .carry/repo.bundle --all; carry [".whl", ".carry"];
# hide docs/public and docs/perf while it travels (64 MiB; the plotly wheel is not needed there).
# Part 0 (first, written to $OUT: session 44's call 2 lost its sweep output behind asv's): ws_split_ring (prepared in
# session 44, not yet timed) and ws_thread_release against the defaults, bf16 and fp16, N=512 and 64, two rounds.
# Predicted for ws_split_ring: -2 to -4% at N=512 (session 43's profile: consumer 0 waited on the weight ring in 8.1%
# of its samples, consumer 1 ~4%), more with thread release (its extra warp-group barrier a chunk gone); N=64 level.
# ws_cross_tile (each tile's first GEMM with the previous tile's last one, residual late): -1 to -2% at N=512, N=64
# -1 to -3% (a tile's first GEMM round trip off each tile's chain; bf16's late residual alone read +0.3% in log 173).
# ws_epilogue16 (session 45, offline only): the residual added in the accumulator's layout under the tile's last GEMM,
# the 16-bit output through shared memory to 16-byte stores: -0.5 to -1.5% at N=512 (the tile's tail after its last
# GEMM: 16 shared-memory accesses a thread instead of 32, 8 stores instead of 16, spills 168 -> 104 bytes), N=64 level;
# fp16 with it loads the residual early (12 bytes of spills, as the late default).
# Two calls: PART=1 the sweeps and the GPU tests (~360 s), PART=2 asv and the Newton-Schulz tests.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee $OUT/call.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/gh-t && git clone -q .carry/repo.bundle /tmp/gh-t && (cd /tmp/gh-t && git checkout -q -B main origin/main)
if [[ ${PART:-1} == 1 ]]; then
# the GPU tests first (the fp16 default's shuffled taps and every untimed variant's bit-equality; they compile the
# sweep's kernels too), then the sweep with what time is left
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout 200 python3 -m pytest -n 4 -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/nn/test_cheri_block.py -k "shuffled_conv_taps or z_producer_variants or late_residual or short_gelu or (training_path_and_megakernel_modes and dtype2)" \
  > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
grep -E "passed|failed" $OUT/pytest.log | tail -2 | cut -c1-250 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
V="greyhound-megakernel,greyhound-megakernel[ws_split_ring=1],greyhound-megakernel[ws_split_ring=1,ws_thread_release=1]"
V="$V,greyhound-megakernel[ws_thread_release=1],greyhound-megakernel[ws_cross_tile=1]"
V="$V,greyhound-megakernel[ws_epilogue16=1],greyhound-megakernel[ws_epilogue16=1,ws_split_ring=1]"
for r in 1 2; do for d in bfloat16 float16; do
  LEFT=$(( ${LIMIT:-585} - (SECONDS - S) - 10 )); (( LEFT < 30 )) && break 2
  (cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( LEFT < 120 ? LEFT : 120 )) python3 -m benchmarks cheri_block \
    --mode forward --providers "$V" --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype $d --no-csv 2>&1 \
    | grep -E '^  greyhound|rror' | sed -E 's/  +/ /g' | sed "s/^/$d-r$r /" | cut -c1-230 | tee -a $OUT/call.log)
done; done
else
TAG=s45 DEADLINE=$((${LIMIT:-585} - 120 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! @tracked" "HEAD^! CheriBlockSweep" > /dev/null 2>&1
echo "asv rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; grep -E "^===|deadline" $OUT/asv-s45.log | head | tee -a $OUT/call.log
(cd /tmp/gh-t && PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( ${LIMIT:-585} - (SECONDS - S) - 5 )) python3 -m pytest -n 2 -q \
  --tb=short -p no:cacheprovider -rfE "tests/ops/test_newton_schulz.py::test_bf16_gram_iteration_against_fp64" -k shape2 \
  > $OUT/pytest-ns.log 2>&1; echo "pytest ns rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log)
fi
