#!/bin/bash
# asv on the offline H200 (through the device tool), on the commits in .carry/repo.bundle:
#   here:   bash scripts/carry_repo.sh pack [DEPTH]   (and ../shared/device/carry-wheels.sh for .whl/)
#   device: DEADLINE=540 bash scripts/h200_asv.sh "RANGE REGEX" ["RANGE REGEX" ...]     carry: [".whl", ".carry"]
# Each argument is one `asv run --record-samples -b REGEX RANGE` (e.g. "HEAD~4..HEAD @tracked"), run in the order
# given under one DEADLINE (seconds from start); asv 0.6.6 writes a commit's results file once its benchmarks are
# done, so a commit cut off by the deadline keeps its earlier file (and gets no gpus.csv row). REGEX
# @tracked / @sweep / @all stands for the exact combinations of that tier this machine serves (tools.bench).
# CHECKOUT=<commit> runs the suites of that commit (default: main); TAG names this call's files.
# Leaves $OUT/results-$TAG.tar.gz (results/ of the run, with <machine>/gpus.csv: commit -> GPU UUID), $OUT/asv-$TAG.log, $OUT/profile-$TAG.jsonl (every
# measurement's cost breakdown, benchmarks/harness.py) and $OUT/gpu-$TAG.log (nvidia-smi before and after each run:
# which GPU, its clocks and temperature; nothing is set). Bring the results in with
#   python -m tools.merge_results <files_at>/results-$TAG.tar.gz      (merges per benchmark; never unpack over results/)
# That is 4 files in $OUT a call, and the device tool returns at most 8 (past that, files are left behind, the results
# tarball among them): a command that runs this twice, or writes more beside it, gives each run its own OUT and keeps
# its results tarball and one tarball of its logs (docs/perf/h200-logs/planned-next-call.sh's asv()).
set -uo pipefail
start=$SECONDS
tag=${TAG:-run}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.whl PYTHONUNBUFFERED=1
export GREYHOUND_BENCH_PROFILE=$OUT/profile-$tag.jsonl
gpu_log() {
  echo "--- $1 t=$((SECONDS - start))s" >> "$OUT/gpu-$tag.log"
  nvidia-smi --query-gpu=uuid,pci.bus_id,clocks.sm,clocks.mem,temperature.gpu,power.draw,pstate,utilization.gpu \
    --format=csv >> "$OUT/gpu-$tag.log" 2>&1
}
dir=/tmp/gh-$tag
bash scripts/carry_repo.sh unpack "$dir" && cd "$dir" || exit 1
git checkout -q "${CHECKOUT:-main}" || exit 1
# the results folder is named after the GPU model that ran (nvidia-h200, or nvidia-h100-80gb-hbm3 where the device tool
# lends an H100 for an H200): never file one card's figures under the other's name. MACHINE=<name> overrides.
machine=$(python3 -m tools.asv_machine ${MACHINE:+--machine "$MACHINE"}) || exit 1
if [[ -z ${MACHINE:-} && $machine == cpu-* ]]; then  # nvidia-smi gave no GPU: never file GPU runs as a CPU machine
  echo "h200_asv.sh: no GPU model from nvidia-smi (machine would be $machine); set MACHINE=<name> to run anyway" >&2
  exit 1
fi
gpu_log "start"
for spec in "$@"; do
  range=${spec%% *} regex=${spec#* }
  left=$(( ${DEADLINE:-540} - (SECONDS - start) ))
  if (( left < 20 )); then echo "deadline: not run: $spec" | tee -a "$OUT/asv-$tag.log"; continue; fi
  echo "=== asv run -b $regex $range (${left}s left, t=$((SECONDS - start))s)" | tee -a "$OUT/asv-$tag.log"
  if [[ $regex == @* ]]; then
    mapfile -t selection < <(python3 -m tools.bench --tier "${regex#@}" --print-selection)
  else
    selection=("$regex")
  fi
  bench=()
  for r in "${selection[@]}"; do bench+=(-b "$r"); done
  marker=$(mktemp)  # (result files newer than this were written by this spec's run)
  timeout "$left" python3 -m asv run --machine "$machine" --record-samples --show-stderr "${bench[@]}" "$range" \
    >> "$OUT/asv-$tag.log" 2>&1
  echo "=== exit $? at t=$((SECONDS - start))s" | tee -a "$OUT/asv-$tag.log"
  gpu_log "after $spec"
  # which GPU measured which commit (tools.noise's between-machine spread; tools.merge_results adds the rows): only
  # commits whose result file this run wrote (a run cut off by the deadline before its first benchmark measured
  # nothing, and a row for it would move that commit's earlier figures onto this GPU)
  gpus=results/$machine/gpus.csv
  [[ -f $gpus ]] || echo "commit,gpu_uuid,measured_at" > "$gpus"
  uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n 1)
  for commit in $(git rev-list "$range"); do
    if [[ -n $(find "results/$machine" -maxdepth 1 -name "${commit:0:8}-*.json" -newer "$marker" 2>/dev/null) ]]; then
      echo "$commit,$uuid,$(date -u +%Y-%m-%dT%H:%MZ)" >> "$gpus"
    else
      echo "no result file written for $commit: no gpus.csv row" | tee -a "$OUT/asv-$tag.log"
    fi
  done
  rm -f "$marker"
done
tar czf "$OUT/results-$tag.tar.gz" results/
grep -E "^\[|failed|Error" "$OUT/asv-$tag.log" | grep -v " ok$" | tail -n 20
