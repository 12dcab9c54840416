#!/bin/bash
# session 17 call 4: the asv tracked tier at HEAD (150f9c7; greyhound-low-memory's first tracked point)
S=$SECONDS
TAG=s17d DEADLINE=330 bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -3
echo "asv t=$((SECONDS-S))"
