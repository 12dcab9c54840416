#!/bin/bash
# session 23 call 4: asv CheriBlockSweep and the tracked tier on HEAD (peers in the same run).
S=$SECONDS
nvidia-smi --query-gpu=uuid --format=csv,noheader
TAG=s23d DEADLINE=585 bash scripts/h200_asv.sh "HEAD^! CheriBlockSweep" "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -8
echo "asv t=$((SECONDS-S))"
