#!/bin/bash
# asv on the offline H200 (through the device tool), for the commit in .carry/repo.bundle:
#   here:   git bundle create .carry/repo.bundle main   (and carry-wheels.sh for .whl/)
#   device: bash scripts/h200_asv.sh [-b REGEX ...]     carry: [".whl", ".carry"]
# Leaves $OUT/results.tar.gz (results/ of the run, to unpack over ours) and $OUT/asv.log.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.whl
rm -rf /tmp/gh && git clone -q .carry/repo.bundle /tmp/gh && cd /tmp/gh || exit 1
git checkout -q -B main
machine=$(python3 -m tools.asv_machine --machine nvidia-h200) || exit 1
python3 -m asv run --machine "$machine" --record-samples --show-stderr "$@" HEAD^! 2>&1 | tee "$OUT/asv.log" | grep -v '^\s*$' | tail -n 150
tar czf "$OUT/results.tar.gz" results/
