#!/bin/bash
# session 48, last device seconds: asv of the tip's megakernel forward at N=512, bf16 and fp16, with / without .eval()
# (no peers: too little device time), on whatever card comes.
nvidia-smi --query-gpu=uuid,name --format=csv,noheader
DEADLINE=${DEADLINE:-170} TAG=s48c bash scripts/h200_asv.sh "HEAD^! ^cheri_block\.CheriBlockSweep\.time_cheri_block\('greyhound\-megakernel(?:\-noeval)?',\ 'forward',\ 512,\ 128,\ 1024,\ '(?:bfloat16|float16)'\)$" > /dev/null 2>&1; echo "asv rc=$?"
grep -E "^===|greyhound-megakernel|Building|Setting" $OUT/asv-s48c.log | cut -c1-160 | tail -20
