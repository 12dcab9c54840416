#!/bin/bash
# session 53, calls 14 and 15, on the warm H100 (GPU-4e0185bf) after h200-only.sh stopped on it: planned-next-call.sh
# as of 66178ba (.carry/cmd.sh)
PART=ab LIMIT=150 bash .carry/cmd.sh        # call 14 (log 203)
PART=sweep LIMIT=280 bash .carry/cmd.sh     # call 15 (log 204)
