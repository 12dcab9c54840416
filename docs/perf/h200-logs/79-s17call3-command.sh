#!/bin/bash
# session 17 call 3: the low-memory schedule's vocabulary chunk (sweep CLI, one process: backward time and peak
# memory at BT=8192, d_model 4096, V=128256 bf16), then the asv CheriBlockSweep at HEAD (N 16/64/512 x fp32/bf16/fp16,
# the published table's cells, peers in the same process)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
export PYTHONUNBUFFERED=1
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && (cd /tmp/t && git checkout -q -B main origin/main)
cd /tmp/t && git log --oneline -1
P='greyhound-low-memory[grad_vocab_chunk=2048],greyhound-low-memory,greyhound-low-memory[grad_vocab_chunk=4096],greyhound-low-memory[grad_vocab_chunk=6144],greyhound-low-memory[grad_vocab_chunk=8192]'
PYTHONPATH=/tmp/site:/tmp/t timeout 150 python3 -m benchmarks chunked_linear_cross_entropy --mode backward --batch-size 8192 --d-model 4096 --vocab-size 128256 --dtype bfloat16 --providers "$P" --no-csv > $OUT/sweep.log 2>&1; echo "sweep rc=$? t=$((SECONDS-S))"
tail -7 $OUT/sweep.log
cd - >/dev/null
left=$((585 - (SECONDS - S)))
TAG=s17c DEADLINE=$left bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" 2>&1 | grep -v "^WARNING" | tail -3
echo "asv t=$((SECONDS-S))"
