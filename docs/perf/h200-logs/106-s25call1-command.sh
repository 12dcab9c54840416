#!/bin/bash
# session 25 call 1: the one-pass CE kernel with rows shared by 2/4/8 programs now that sweep 2 reuses the last tile
# (split programs whose part of the row is one tile read it from HBM once), sweep CLI, one process, fla beside;
# then the GPU tests outside tests/nn.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
g='greyhound'
P="$g,$g[one_pass_split=2],$g[one_pass_split=4],$g[one_pass_split=4,one_pass_reuse=0],$g[one_pass_split=4,one_pass_tile_rows=4,one_pass_stages=6],$g[one_pass_split=8,one_pass_tile_rows=4,one_pass_stages=3],$g[one_pass_split=8,one_pass_tile_rows=4,one_pass_stages=5],$g[one_pass_split=8,one_pass_tile_rows=4,one_pass_stages=7],$g[one_pass_split=8,one_pass_tile_rows=2,one_pass_stages=8],$g[one_pass_split=4,one_pass_warps=8,one_pass_tile_rows=8,one_pass_stages=6],fla"
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 240 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep-ce.log 2>&1; echo "ce sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-ce.log | cut -c1-200)
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout $((560 - (SECONDS - S))) python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests --ignore=tests/nn --ignore=tests/ops/test_cross_entropy.py --ignore=tests/ops/test_linear_cross_entropy.py > $OUT/pytest-rest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-rest.log | tail -6 | cut -c1-300)
