#!/bin/bash
# Session 54, call 11 (asked for an H200; an H100 came): docs/perf/h200-logs/planned-next-call.sh as of 0bb98f8 (git
# show 0bb98f8:docs/perf/h200-logs/planned-next-call.sh), PART=ab through by-gpu.sh: the staircase alone.
H100_LIMIT=240 bash .carry/bygpu.sh
