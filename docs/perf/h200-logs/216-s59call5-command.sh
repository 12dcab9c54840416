#!/bin/bash
# Session 59. On an H200: planned-next-call.sh PART=lce (asv ChunkedLinearCrossEntropy2DSweep, ~370 s at fa66a6b).
# On any other GPU (session 58's plan, not yet run): the harness's checked head start (the event after the spin, re-measuring a batch the host fell
# behind in) on a GPU for the first time: (1) causal_conv1d at the tracked shape (greyhound, fla; backward and full:
# ~0.5-1.4 ms of host a call against 0.18-0.8 ms of device), with the head start as it is, starved (margin 0.02,
# minimum 1e4 cycles) with the check, and starved without it (retries 0): predicted, the first two read the device's
# time (greyhound backward ~0.180 ms, full ~0.290 on an H100) with host_ahead True, the third reads the host's pace
# with host_ahead False; (2) the timing-agreement GPU test.
S=$SECONDS
name=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader); echo "$name" | tee $OUT/call.log
if [[ $name == *H200* && -z $AB ]]; then PART=lce LIMIT=${LIMIT:-585} bash .carry/cmd.sh; exit; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
[ -d /tmp/gh-t ] || bash scripts/carry_repo.sh unpack /tmp/gh-t > /dev/null
cd /tmp/gh-t && git log --oneline -1 | cut -c1-80 | tee -a $OUT/call.log
PYTHONPATH=/tmp/site:/tmp/gh-t timeout ${STRESS_LIMIT:-200} python3 - > $OUT/stress.log 2>&1 <<'PY'
import statistics
from benchmarks import harness
from benchmarks.causal_conv1d import CausalConv1dTracked
shape = (8, 4096, 2048, 4, "channel_last", "bfloat16")
for label, margin, minimum, retries in (("as is", 1.5, 2_000_000, 3), ("starved+check", 0.02, 10_000, 3),
                                        ("starved-nocheck", 0.02, 10_000, 0)):
    harness.HEAD_START_MARGIN, harness.HEAD_START_CYCLES, harness.HEAD_START_RETRIES = margin, minimum, retries
    for provider in ("greyhound", "fla"):
        for mode in ("backward", "full"):
            m = CausalConv1dTracked().measure(provider, mode, *shape)
            ph, s = m["phases"], m["samples"]
            if not s:
                print(label, provider, mode, m["error"] or m["skipped"], flush=True)
                continue
            q = statistics.quantiles(s, n=10)
            print(f"{label:16s} {provider:9s} {mode:8s} p50 {statistics.median(s) * 1e3:.4f} p10 {q[0] * 1e3:.4f} "
                  f"p90 {q[-1] * 1e3:.4f} ms  host/call {ph.get('host_seconds_per_call', 0) * 1e3:.3f} ms  "
                  f"ahead {ph.get('host_ahead')} retries {ph.get('head_start_retries')} spin {ph.get('head_start_cycles')}",
                  flush=True)
PY
echo "stress rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log; cat $OUT/stress.log | grep -v Warning | tail -14 | tee -a $OUT/call.log
PYTHONPATH=/tmp/site:/tmp/gh-t timeout $(( ${LIMIT:-330} - (SECONDS - S) )) python3 -m pytest -q --tb=short -p no:cacheprovider -rfE \
  -m gpu tests/test_timing_agreement.py > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$((SECONDS-S))" | tee -a $OUT/call.log
grep -E "passed|failed" $OUT/pytest.log | tail -1 | tee -a $OUT/call.log; grep " FAILED" $OUT/pytest.log | head | tee -a $OUT/call.log
