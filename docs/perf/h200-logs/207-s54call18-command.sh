#!/bin/bash
# Session 54, call 18 (call 17 asked for an H200 through h200-only.sh with PART=quick, which stopped on this H100; the
# warm machine then ran this): docs/perf/h200-logs/planned-next-call.sh as of 2fdb1ce, PART=ab: ws_first_z's GPU
# tests and A/B on a second H100.
PART=ab LIMIT=280 bash .carry/cmd.sh
