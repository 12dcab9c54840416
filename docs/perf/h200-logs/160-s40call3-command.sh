#!/bin/bash
# Session 40, call 3, as it ran on the travelling working tree (e238aa7 + the uncommitted z_stages fix, carry [".whl"]),
# same warm H100 (GPU-d564c7ca) after call 2, 498 device-seconds left: the GPU tests of tests/nn and tests/ops in one
# 440 s window. It timed out after 70 tests passed (the first 70 of test_cheri_block.py's 346 GPU tests, in collection
# order; tests/ops has 346 more) and none failed; the rest did not run.
nvidia-smi --query-gpu=uuid,name --format=csv,noheader; git log --oneline -1; PYTHONPATH=/tmp/site:. timeout 440 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn tests/ops > $OUT/pytest-gpu.log 2>&1; echo rc=$?; tail -5 $OUT/pytest-gpu.log | cut -c1-300; grep -c PASS $OUT/pytest-gpu.log
