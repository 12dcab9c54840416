#!/bin/bash
# session 21 call 4: the fp32-defaults GPU test (cut by call 3's timeout), then asv CheriBlockSweep on HEAD.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
(cd /tmp/t && PYTHONPATH=/tmp/site timeout 80 python3 -m pytest -q --tb=short -p no:cacheprovider tests/nn/test_cheri_block.py -k "fp32_models_take" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; tail -15 $OUT/pytest.log | cut -c1-300)
TAG=s21 DEADLINE=$((330 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep"
echo "asv t=$((SECONDS-S))"
