#!/bin/bash
# session 18 call 6: the single-kernel small training forward (HEAD) against 960ff67 (split), sweep CLI on this GPU,
# one process after the other; GPU training-path tests first. At most 5 files under $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main)
rm -rf /tmp/old && git clone -q /tmp/t /tmp/old && (cd /tmp/old && git checkout -q 960ff67)
(cd /tmp/t && PYTHONPATH=/tmp/site timeout 70 python3 -m pytest -q -p no:cacheprovider tests/nn/test_cheri_block.py -k "gpu_training_path or small_training or gpu_odd_shape or training_path_values" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; tail -2 $OUT/pytest.log)
for l in old t; do
  (cd /tmp/$l && PYTHONPATH=/tmp/site:/tmp/$l timeout 50 python3 -m benchmarks cheri_block --mode forward --batch-size 16,64 --n-filters 128 --seq-len 1024 --dtype bfloat16,float16 --providers greyhound-train --no-csv > $OUT/sweep-$l.log 2>&1; echo "sweep $l rc=$? t=$((SECONDS-S))")
  grep -E "^\s+greyhound" $OUT/sweep-$l.log
done
nvidia-smi --query-gpu=uuid --format=csv,noheader > $OUT/gpu.log
