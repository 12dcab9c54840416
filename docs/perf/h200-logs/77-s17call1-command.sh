#!/bin/bash
# session 17 call 1: the linear CE d_model x vocab sweep through asv at HEAD (d9bdfd1), every provider in one process;
# last measured at 4311716, before the one-chunk full mode
S=$SECONDS
TAG=s17a DEADLINE=540 bash scripts/h200_asv.sh "HEAD^! ChunkedLinearCrossEntropy2DSweep" 2>&1 | grep -v "^WARNING" | tail -5
echo "asv t=$((SECONDS-S))"
