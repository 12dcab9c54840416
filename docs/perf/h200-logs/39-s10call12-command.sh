#!/bin/bash
# session 10 call 12: the asv tracked tier of HEAD (host-time cuts)
TAG=s10b DEADLINE=200 bash scripts/h200_asv.sh "HEAD^! @tracked" 2>&1 | grep -v "^WARNING" | tail -3
