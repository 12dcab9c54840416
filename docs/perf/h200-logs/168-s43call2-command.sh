#!/bin/bash
# PLANNED, NOT YET RUN (written in session 42, after its asv of the tip on an H200, log 163). Two parts, H200 or H100.
# (1) The CE forward's two levels (cross_entropy.md, session 42): the sweep CLI at the tracked shape in fresh processes,
# the forward alone against the forward timed after the full mode (asv's order), for the tip and bfd782c. Each process
# also times the same loss kernel three more times under tuning names that force its defaults (prefetch=1,
# loss_warps=4, loss_block_v=2048: the same compiled kernel, fresh 2 GB logits each after the allocator's cache is
# emptied). Predicted: if the level is set by where the logits land, the four readings of one process split between
# ~0.536 and ~0.588 (H200); if by the process, they agree within 0.5% and the level moves only between processes
# (session 16: 0.540 fresh, 0.587 after full); if it follows the commit, it is the code after all. A third process
# (the tip only, for time) runs full,forward with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the allocator maps 2 MB pieces into
# one reserved range): if placement is the cause, its four readings should agree.
# (3) [PART=1 too] ncu of the megakernel's default and of ws_x_shuffle at N=512 bf16, session 37's sections and
# partition split (155-s37call1-command.sh): whether the z producer still sets the pace after sessions 38-41 (taps in
# shared memory, x's L2 prefetch), and where the shuffled variant's time went (it cut the z producer's load batches
# from three to one and measured level). Predicted: consumer 1's z_ready waits fall from 12% (session 37) to a few
# percent with the shuffle, and WARPGROUP.DEPBAR plus the warp-group barrier stay the consumers' top stalls.
# PART=1 runs (1) and (3) (~6 min), PART=2 runs (2). The sweep lines' ends show the harness's NVML power: "W" where the
# driver gives the instantaneous field (new in session 42, not yet run on a GPU; predicted ~400-600 W beside the CE
# forward's batch), "W avg" where it fell back to the one-second average.
# (2) The Cheri Block file's GPU tests that session 42's call 4 did not reach (log 166: the first 72 passed).
# Skip what already passed: grep PASSED docs/perf/h200-logs/166-s42call4-pytest-cheri.log | sed -E 's/ PASSED.*//'
# > .carry/passed-ids.txt. Copy to .carry/cmd.sh, carry [".whl", ".carry"]; hide docs/public and docs/perf while it travels (64 MiB).
S=$SECONDS R=$PWD
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for c in main bfd782c; do
  [[ ${PART:-1} == 2 && $c != main ]] && continue
  rm -rf /tmp/gh-$c && git clone -q .carry/repo.bundle /tmp/gh-$c && (cd /tmp/gh-$c && git checkout -q -B main origin/main && git checkout -q $c)
done
if [[ ${PART:-1} == 1 ]]; then
P="greyhound,fla,greyhound[prefetch=1],greyhound[loss_warps=4],greyhound[loss_block_v=2048]"
for round in 1; do
  for c in main bfd782c; do
    for modes in forward full,forward full,forward+expandable; do
      [[ $c != main && $modes == *+expandable ]] && continue  # (the tip's only: time)
      conf=; [[ $modes == *+expandable ]] && conf=expandable_segments:True
      (cd /tmp/gh-$c && PYTORCH_CUDA_ALLOC_CONF=$conf PYTHONPATH=/tmp/site:/tmp/gh-$c timeout 150 python3 -m benchmarks cross_entropy_with_grad \
        --mode ${modes%+*} --providers "$P" --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --no-csv 2>&1 \
        | grep -E '^  (greyhound|fla)' | sed -E 's/  +/ /g' | sed "s/^/r$round $c [$modes]/" | cut -c1-200)
    done
  done
  echo "t=$((SECONDS-S))"
done
L=/tmp/gh-main/docs/perf/h200-logs
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
W="layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4"
for name in default shuffle; do
  (( SECONDS - S > ${LIMIT:-580} - 170 )) && { echo "deadline: ncu $name not run"; continue; }
  variant=default; [[ $name == shuffle ]] && variant="$W,ws_x_shuffle=1"
  (cd /tmp/gh-main && PYTHONPATH=/tmp/site:/tmp/gh-main timeout 150 $NCU --clock-control none --kernel-name regex:cheri_block \
    --launch-skip 2 --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --import-source no -f -o /tmp/$name \
    python3 $L/120-s27-ncu_probe.py "$variant" > $OUT/ncu-$name.log 2>&1)
  echo "ncu $name rc=$? t=$((SECONDS-S))"; tail -2 $OUT/ncu-$name.log
  $NCU -i /tmp/$name.ncu-rep --page source --csv --print-source sass > $OUT/$name-sass.csv 2>/dev/null
  $NCU -i /tmp/$name.ncu-rep --page details --csv > $OUT/$name-details.csv 2>/dev/null
  PYTHONPATH=/tmp/site python3 $L/140-s31-partitions.py $OUT/$name-sass.csv '{}' > $OUT/partitions-$name.txt 2>&1
  grep -E "^[a-z].*samples" $OUT/partitions-$name.txt | cut -c1-200
done
gzip -f $OUT/*-sass.csv
fi
if [[ ${PART:-1} == 2 ]]; then
cd /tmp/gh-main 2>/dev/null || { git clone -q .carry/repo.bundle /tmp/gh-main && cd /tmp/gh-main && git checkout -q -B main origin/main; }
export PYTHONPATH=/tmp/site:/tmp/gh-main
skip=(); [[ -f $R/.carry/passed-ids.txt ]] && mapfile -t ids < "$R/.carry/passed-ids.txt" && for i in "${ids[@]}"; do skip+=(--deselect "$i"); done
timeout $(( ${LIMIT:-580} - (SECONDS - S) - 10 )) python3 -m pytest "${skip[@]}" -m gpu -v --tb=short -p no:cacheprovider -rfE \
  tests/nn/test_cheri_block.py -k "not (shuffled_conv_taps or degree_two or short_gelu)" > $OUT/pytest-cheri.log 2>&1
echo "pytest rc=$? t=$((SECONDS-S))"; grep -c PASSED $OUT/pytest-cheri.log; grep -E "FAILED|ERROR" $OUT/pytest-cheri.log | head
fi
