#!/bin/bash
# Session 54, call 12 (asked for an H200; an H100 came): docs/perf/h200-logs/planned-next-call.sh as of 59bf99f (git
# show 59bf99f:docs/perf/h200-logs/planned-next-call.sh), PART=ab through by-gpu.sh: ws_first_z's GPU tests and A/B.
H100_LIMIT=300 bash .carry/bygpu.sh
