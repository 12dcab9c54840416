#!/bin/bash
# session 25 call 3: split rows finished a row later (one_pass_defer): CE one-pass GPU tests, then the sweep CLI
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 240 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py -k "one_pass" > $OUT/pytest-ce.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-ce.log | tail -8 | cut -c1-300)
g='greyhound'; d='one_pass_defer=1'
P="$g,$g[one_pass_split=4],$g[one_pass_split=4,$d],$g[one_pass_split=4,$d,one_pass_tile_rows=4,one_pass_stages=6],$g[one_pass_split=8,$d,one_pass_tile_rows=4,one_pass_stages=3],$g[one_pass_split=8,$d,one_pass_tile_rows=4,one_pass_stages=4],$g[one_pass_split=8,$d,one_pass_tile_rows=4,one_pass_stages=6],$g[one_pass_split=2,$d],$g[one_pass_split=2,$d,one_pass_tile_rows=4,one_pass_stages=6],fla"
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 240 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep-ce.log 2>&1; echo "ce sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-ce.log | cut -c1-200)
