#!/bin/bash
# session 25 call 6: the new bf16/fp16 inference default ((64,32,4,2) maxnreg 168, z from registers): GPU tests,
# then asv of HEAD (CheriBlockSweep + tracked tier, peers in the same run) with what time is left.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 90 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfEs tests/nn/test_cheri_block.py -k "gluon_kernel_matches or z_from_registers or default_inference or fp16_models_take or training_path_and_megakernel" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))")
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest.log | tail -8 | cut -c1-300
TAG=s25 DEADLINE=$((350 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -6
echo "done t=$((SECONDS-S))"
