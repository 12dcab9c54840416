#!/bin/bash
# session 9 call 4: tracked tier of HEAD (asv), then causal_conv1d L/W/D x layout sweeps (sweep CLI, fla in the same
# process), linear CE forward chunk variants
S=$SECONDS
TAG=s9a DEADLINE=300 bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -5
echo "asv done t=$((SECONDS-S))"
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
run() { echo "+ $*" >> $OUT/sweep.log; timeout ${T:-90} python3 -m benchmarks "$@" --csv $OUT/sweep.csv >> $OUT/sweep.log 2>&1; echo "rc=$? t=$((SECONDS-S)) $1"; }
T=150 run causal_conv1d --mode forward,full,backward --providers greyhound,fla --batch-size 8 --dim 4096 --seq-len 512,2048,8192 --width 2,3,4 --layout channel_last,contiguous --dtype bfloat16
T=60 run causal_conv1d --mode forward,full,backward --providers greyhound,fla --batch-size 8 --dim 1024,8192 --seq-len 2048 --width 4 --layout channel_last,contiguous --dtype bfloat16
T=60 run chunked_linear_cross_entropy --mode forward --providers 'greyhound,greyhound[vocab_chunk=4096],greyhound[vocab_chunk=3072]' --batch-size 8192 --d-model 4096 --vocab-size 128256 --dtype bfloat16
echo "done t=$((SECONDS-S))"
