#!/bin/bash
# session 18 call 3: call 2's asv results did not come back (more than 8 files under $OUT), so again: asv
# CheriBlockSweep and the tracked tier at 5c0c06c (FastLaunch's key changed for every op), then the Cheri/launch GPU
# tests (the CheriBlock tests on CUDA, the plan tests included) with the time left. At most 6 files under $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
TAG=s18 DEADLINE=400 bash scripts/h200_asv.sh "5c0c06c^! CheriBlockSweep" "5c0c06c^! @tracked" > /dev/null 2>&1; echo "asv t=$((SECONDS-S))"
grep -E "^=== " $OUT/asv-s18.log
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q 5c0c06c
left=$(( 580 - (SECONDS - S) )); echo "pytest with ${left}s"
PYTHONPATH=/tmp/site timeout $left python3 -m pytest -q -x tests/test_launch.py tests/nn/test_cheri_block.py -k "not compiles_for_hopper and not register_budget" -p no:cacheprovider > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; tail -4 $OUT/pytest.log
