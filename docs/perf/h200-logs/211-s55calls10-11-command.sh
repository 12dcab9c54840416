#!/bin/bash
# Session 55, calls 10-11 (one warm H200, GPU-40ba286a), at 4735bed, from the repository root of the device's copy:
# call 10: PART=quick LIMIT=200 bash .carry/h200only.sh   (h200-only.sh and planned-next-call.sh as of 4735bed: the
#          16-bit defaults by the sweep CLI, two rounds, N=512 and 64, with and without .eval())
# call 11 (about 260 s of device time left, too little for CheriBlockSweep's ~290 s): the tracked tier alone
mkdir -p /tmp/out-s55t; OUT=/tmp/out-s55t TAG=s55t DEADLINE=205 bash scripts/h200_asv.sh "HEAD^! @tracked" > /dev/null 2>&1; echo rc=$?
grep -E "^===|deadline" /tmp/out-s55t/asv-s55t.log | head
mv /tmp/out-s55t/results-s55t.tar.gz $OUT/; tar czf $OUT/logs-s55t.tar.gz -C /tmp/out-s55t .; ls -la $OUT
