#!/bin/bash
# session 22 call 2: asv CheriBlockSweep and the tracked tier on HEAD (peers in the same run).
S=$SECONDS
nvidia-smi --query-gpu=uuid --format=csv,noheader
TAG=s22b DEADLINE=585 bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -8
echo "asv t=$((SECONDS-S))"
