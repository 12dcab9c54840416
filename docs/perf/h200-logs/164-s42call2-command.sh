#!/bin/bash
# Session 42 call 2: GPU tests not yet run on the last code (ws_x_shuffle's ragged-end fix at L=995; the fp16 short-GELU
# test under the degree-2 default), then the sweep CLI at N=512 to see the harness's NVML readings at the end of each
# line (predicted: SM clock ~1980 MHz, no clock event reason but maybe gpu_idle/sw_power_cap), then the CE tests.
S=$SECONDS
nvidia-smi --query-gpu=uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
[[ -d /tmp/gh-c2 ]] || { git clone -q .carry/repo.bundle /tmp/gh-c2 && (cd /tmp/gh-c2 && git checkout -q -B main origin/main); }
cd /tmp/gh-c2 || exit 1
export PYTHONPATH=/tmp/site:/tmp/gh-c2
timeout 240 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py \
  -k "shuffled_conv_taps or degree_two or short_gelu" > $OUT/pytest-cheri.log 2>&1
echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-cheri.log | tail -8 | cut -c1-300
for dt in bfloat16 float16; do
  timeout 90 python3 -m benchmarks cheri_block --mode forward --batch-size 512 --n-filters 128 --seq-len 1024 \
    --dtype $dt --no-csv --providers greyhound-megakernel,torch-compile 2>&1 | tee -a $OUT/sweep.log | grep -E '^  (greyhound|torch)' | sed -E 's/  +/ /g' | cut -c1-260
  echo "t=$((SECONDS-S))"
done
left=$(( ${LIMIT:-580} - (SECONDS - S) - 10 ))
timeout $left python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE tests/ops/test_causal_conv1d.py \
  tests/ops/test_compile.py tests/ops/test_linear_cross_entropy.py tests/ops/test_logprobs.py tests/ops/test_newton_schulz.py \
  tests/test_timing_agreement.py > $OUT/pytest-ops.log 2>&1
echo "pytest ops rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-ops.log | tail -12 | cut -c1-300
left=$(( ${LIMIT:-580} - (SECONDS - S) - 10 ))
(( left > 40 )) && { timeout $left python3 -m pytest -m gpu -q --tb=line -p no:cacheprovider -rfE tests/ops/test_cross_entropy.py > $OUT/pytest-ce.log 2>&1
echo "pytest ce rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-ce.log | tail -12 | cut -c1-300; }
