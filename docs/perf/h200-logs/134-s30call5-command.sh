#!/bin/bash
# session 30 call 5: asv ChunkedLinearCrossEntropy2DSweep of the tip (d_model 4096/8192 x V 65536/128256, every
# provider in one run; the forward and the low-memory schedule's forward now on the fused GEMM + lse kernel), then the
# sweep CLI over the fused kernel's ring/grouping at d_model 8192 (K = 8192), torch.compile in the process
S=$SECONDS
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
TAG=s30c5 DEADLINE=$((440 - (SECONDS - S))) bash scripts/h200_asv.sh "HEAD^! ChunkedLinearCrossEntropy2DSweep" 2>&1 | grep -v "^WARNING: Target"; echo "asv t=$((SECONDS-S))"
export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
rm -rf /tmp/t && git clone -q .carry/repo.bundle /tmp/t && cd /tmp/t && git checkout -q -B main origin/main
F='greyhound[fused'
timeout $(( 585 - (SECONDS - S) )) python3 -m benchmarks chunked_linear_cross_entropy --mode forward --batch-size 8192 --d-model 8192 --vocab-size 128256 --dtype bfloat16 --providers "greyhound,torch-compile,${F}_group_n=4],${F}_group_n=16],${F}_stages=3],greyhound" --no-csv > $OUT/sweep-d8192.log 2>&1
echo "sweep rc=$? t=$((SECONDS-S))"; grep -E "^\s+(greyhound|torch)|rror|arning" $OUT/sweep-d8192.log | cut -c1-220
