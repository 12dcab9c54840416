#!/bin/bash
# session 26 call 4: GPU tests the new defaults reach that no call has run yet: the chunked linear cross-entropy (its
# chunks now held on chip), the Cheri megakernel's tiny-call tile (the Gluon kernel and default-path tests)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 130 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_linear_cross_entropy.py tests/ops/test_logprobs.py > $OUT/pytest-lce.log 2>&1; echo "pytest lce rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-lce.log | tail -6 | cut -c1-300)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((290 - (SECONDS - S))) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "default_inference or gluon_kernel_matches or fp16_models_take or training_path_and_megakernel or megakernel" > $OUT/pytest-cheri.log 2>&1; echo "pytest cheri rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-cheri.log | tail -6 | cut -c1-300)
echo "done t=$((SECONDS-S))"
