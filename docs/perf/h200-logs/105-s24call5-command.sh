#!/bin/bash
# session 24 call 5: GPU tests of HEAD's Gluon kernel, the sweep CLI A/B (8c83c5a vs HEAD, one process each), then asv of
# HEAD (CheriBlockSweep + tracked tier, peers in the same run) with what time is left.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
rm -rf /tmp/t /tmp/base && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main && git log --oneline | head -1)
git clone -q .carry/repo.bundle /tmp/base && (cd /tmp/base && git checkout -q 8c83c5a)
nvidia-smi --query-gpu=uuid --format=csv,noheader
export PYTHONUNBUFFERED=1
(cd /tmp/t && PYTHONPATH=/tmp/site:/tmp/t timeout 110 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfEs tests/nn/test_cheri_block.py -k "gluon_kernel_matches or w1_ring or fp32_models_take" > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))")
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest.log | tail -8 | cut -c1-300
G='greyhound-megakernel'
sweep() {  # dir, log, args...
  local d=$1 log=$2; shift 2
  (cd $d && PYTHONPATH=/tmp/site:$d timeout 100 python3 -m benchmarks cheri_block --mode forward --n-filters 128 --seq-len 1024 --no-csv "$@" > $OUT/$log 2>&1; echo "$log rc=$? t=$((SECONDS-S))"; grep -E "^\s+greyhound|rror" $OUT/$log | cut -c1-200)
}
sweep /tmp/base base.log --batch-size 512,64 --dtype bfloat16,float16 --providers "$G"
sweep /tmp/t new.log --batch-size 512,64 --dtype bfloat16,float16 --providers "$G"
TAG=s24b DEADLINE=$((588 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -6
echo "done t=$((SECONDS-S))"
