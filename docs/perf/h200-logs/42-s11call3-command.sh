#!/bin/bash
# session 11 call 3: the asv tracked tier of HEAD (FastLaunch + one-launch parameter sums)
TAG=s11 DEADLINE=300 bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -3
