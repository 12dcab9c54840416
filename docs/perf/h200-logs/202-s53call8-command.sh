#!/bin/bash
# session 53, call 8 (log 202), on an H100 asked for by kind nvidia-h100-x1: planned-next-call.sh as of c26c119, copied to
# .carry/cmd.sh (`git show c26c119:docs/perf/h200-logs/planned-next-call.sh` prints it; ws_bf16_shifts was then the
# bf16 default, so its A, [ws_bf16_shifts=0], was the old default), run through by-gpu.sh, which took PART=ab there
bash .carry/bygpu.sh
