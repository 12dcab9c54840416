#!/bin/bash
# asv on the offline H200 (through the device tool), for the commit in .carry/repo.bundle:
#   here:   git bundle create .carry/repo.bundle main   (and ../shared/device/carry-wheels.sh for .whl/)
#   device: DEADLINE=540 bash scripts/h200_asv.sh REGEX [REGEX ...]     carry: [".whl", ".carry"]
# Each REGEX is one `asv run -b REGEX HEAD^!`, in the order given (most important first), stopped when the
# DEADLINE (seconds from start) passes; asv keeps each finished benchmark in the results file.
# Leaves $OUT/results.tar.gz (results/ of the run) and $OUT/asv.log. Bring the results in with
#   python -m tools.merge_results <files_at>/results.tar.gz      (merges per benchmark; never unpack over results/:
# /tmp/gh is cloned afresh each call, so a call's file holds only that call's slices of the commit).
set -uo pipefail
start=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.whl PYTHONUNBUFFERED=1
rm -rf /tmp/gh && git clone -q -b main .carry/repo.bundle /tmp/gh && cd /tmp/gh || exit 1
git checkout -q -B main
machine=$(python3 -m tools.asv_machine --machine nvidia-h200) || exit 1
for regex in "$@"; do
  left=$(( ${DEADLINE:-540} - (SECONDS - start) ))
  if (( left < 20 )); then echo "deadline: not run: $regex" | tee -a "$OUT/asv.log"; continue; fi
  echo "=== asv run -b $regex (${left}s left)" | tee -a "$OUT/asv.log"
  timeout "$left" python3 -m asv run --machine "$machine" --record-samples --show-stderr -b "$regex" HEAD^! \
    >> "$OUT/asv.log" 2>&1
  echo "=== exit $? after $((SECONDS - start))s" | tee -a "$OUT/asv.log"
done
tar czf "$OUT/results.tar.gz" results/
grep -E "^\[|failed|Error" "$OUT/asv.log" | grep -v " ok$" | tail -n 40
