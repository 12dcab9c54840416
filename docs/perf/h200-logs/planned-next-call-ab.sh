#!/bin/bash
# PLANNED, NOT YET RUN (session 40), after planned-next-call-asv.sh on the same GPU (it leaves /tmp/site and
# /tmp/gh-next). (1) The CE forward of bfd782c's and the tip's code, alternating processes (sweep CLI), to settle
# whether session 38's target statistics made the no-grad forward 12% faster (session 40 on an H100: 0.847 -> 0.744 ms
# in asv, full level); predicted level within 1% (then the H100's -12% was that run's, not the code's). (2) fp16 with
# the degree-2 GELU, a variant since session 40: predicted -2 to -4% at N=512. (3) The GPU tests of the degree-2 GELU
# (bf16 and fp16) and of the default short GELU fits. Copy to .carry/cmd.sh, carry [".whl", ".carry"].
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
[[ -d /tmp/gh-next ]] || { git clone -q .carry/repo.bundle /tmp/gh-next && (cd /tmp/gh-next && git checkout -q -B main origin/main); }
S=$SECONDS
for c in bfd782c main bfd782c main; do
  rm -rf /tmp/ab && git clone -q .carry/repo.bundle /tmp/ab && (cd /tmp/ab && git checkout -q -B main origin/main && git checkout -q $c)
  (cd /tmp/ab && PYTHONPATH=/tmp/site:/tmp/ab timeout 40 python3 -m benchmarks cross_entropy_with_grad --mode forward,full \
    --providers greyhound,fla --batch-size 8192 --vocab-size 128256 --dtype bfloat16 --no-csv 2>&1 | grep -E '^  (greyhound|fla)' | sed "s/^/$c /")
done
echo "ab t=$((SECONDS-S))"
# fp16 with the degree-2 GELU (a variant since session 40; offline 6824 instructions against 7080, spills level at 60
# bytes): predicted -2 to -4% at N=512 (bf16's poly2 gave -2.6 to -5.1%); bf16's default beside it as a control
W="layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4"
for dt in float16 float16 bfloat16; do
  (cd /tmp/gh-next && PYTHONPATH=/tmp/site:/tmp/gh-next timeout 40 python3 -m benchmarks cheri_block --mode forward \
    --batch-size 512 --n-filters 128 --seq-len 1024 --dtype $dt --no-csv \
    --providers "greyhound-megakernel,greyhound-megakernel[$W,gelu=poly2],greyhound-megakernel[$W,gelu=poly3]" 2>&1 \
    | grep -E '^  greyhound' | sed -E 's/  +/ /g; s/layout=gluon_wsz,block_l=64,warps=4,block_e=64,stages=4,//' | cut -c1-120)
done
echo "gelu t=$((SECONDS-S))"
(cd /tmp/gh-next && PYTHONPATH=/tmp/site:/tmp/gh-next timeout $((580 - (SECONDS - S))) python3 -m pytest -m gpu -q \
  --tb=short -p no:cacheprovider -rfE tests/nn/test_cheri_block.py -k "degree_two or short_gelu" > $OUT/pytest.log 2>&1)
echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest.log | tail -6 | cut -c1-300
