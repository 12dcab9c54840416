#!/bin/bash
# session 12 call 2: the asv tracked tier of HEAD, every gpu test, the linear CE forward chunk A/B (two processes,
# both orders) and linear CE full at d_model 8192 beside torch.compile (sweep CLI)
S=$SECONDS
TAG=s12b DEADLINE=200 bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -4
echo "asv t=$((SECONDS-S))"
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main && git log --oneline -1
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests > $OUT/pytest-gpu.txt 2>&1; echo "pytest rc=$? t=$((SECONDS-S))"
grep -E "passed|failed|FAILED|Error" $OUT/pytest-gpu.txt | tail -8
for p in 'greyhound,greyhound[vocab_chunk=4096],torch-compile' 'greyhound[vocab_chunk=4096],greyhound'; do
  timeout 70 python3 -m benchmarks chunked_linear_cross_entropy --mode forward --providers "$p" --csv $OUT/lce-fwd.csv >> $OUT/lce-fwd.txt 2>&1; echo "lce fwd rc=$? t=$((SECONDS-S))"
done
grep -E "forward" $OUT/lce-fwd.txt
timeout 90 python3 -m benchmarks chunked_linear_cross_entropy --mode full --d-model 8192 --providers 'greyhound,torch-compile' --csv $OUT/lce-full.csv > $OUT/lce-full.txt 2>&1; echo "lce full rc=$? t=$((SECONDS-S))"
grep -E "full" $OUT/lce-full.txt
echo "done t=$((SECONDS-S))"
