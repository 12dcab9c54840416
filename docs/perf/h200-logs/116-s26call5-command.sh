#!/bin/bash
# session 26 call 5 (the warm machine of call 4, its clone of ce2b91b in /tmp/t): CE full at fp32, rows held on chip
# (the new default) against the ring
cd /tmp/t && export PYTHONPATH=/tmp/site:/tmp/t && mkdir -p $OUT && timeout 100 python3 -m benchmarks cross_entropy_with_grad --mode full --batch-size 8192 --vocab-size 65536,32768 --dtype float32 --providers "greyhound,greyhound[one_pass_hold=0],fla" --no-csv > $OUT/sweep-ce-fp32.log 2>&1; echo rc=$?; grep -E "^\s+(greyhound|fla)|rror" $OUT/sweep-ce-fp32.log | cut -c1-200
