#!/bin/bash
# Session 39, call 1 (planned in sessions 37-38 as planned-next-call1-z-producer.sh). Two variants of the z producer
# beside the default: its L2 prefetch of x (ws_x_prefetch, 1 and 2 groups ahead) and the conv's taps in shared memory
# (ws_conv_smem), alone and together. Bit-equality first (N=64, ragged L, N=512), then the sweep CLI, one process a
# dtype, N=512/64, bf16 twice. Predictions (docs/perf/cheri_block.md, sessions 37 and 38): prefetch -3 to -6% at
# N=512; conv taps in shared memory -3 to -6% at N=512, level at N=64. Then the GPU tests of session 38's other
# changes: newton_schulz (fp64 norm), the Cheri training path (one-launch parameter gradients), the CE target
# statistics kernel and the linear CE.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
S=$SECONDS
# the working tree of the commit (clean) is what travels: this call carries no bundle (the repository's history is
# 22 MiB and would put the call over 64 MiB)
rm -rf /tmp/t && cp -a . /tmp/t && grep -m1 -o "session 39[^;]*" /tmp/t/docs/perf/h200-logs/157-s39call1-command.sh
nvidia-smi --query-gpu=uuid,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
cd /tmp/t && export PYTHONPATH=/tmp/site:/tmp/t PYTHONUNBUFFERED=1
timeout 120 python3 - > $OUT/equal.log 2>&1 <<'PY'
import torch
from greyhound import CheriBlock, _tuning
import greyhound.ops.cheri_conv_norm as ops
torch.manual_seed(0)
for dtype in (torch.bfloat16, torch.float16):
    block = CheriBlock(128, 3, 4, 4, device="cuda").to(dtype).eval()
    for n, L in ((64, 1024), (40, 1000), (512, 1024)):
        x = torch.randn(n, 128, L, device="cuda", dtype=dtype)
        with torch.no_grad():
            ref = block(x)
            for variant in (dict(ws_x_prefetch=1), dict(ws_x_prefetch=2), dict(ws_conv_smem=True),
                            dict(ws_conv_smem=True, ws_x_prefetch=1)):
                with _tuning.override(ops.TUNING_OP, **variant):
                    out = block(x)
                print(dtype, n, L, variant, "bit-equal", torch.equal(out, ref), flush=True)
PY
echo "equal rc=$? t=$((SECONDS-S))"; cat $OUT/equal.log | tail -12
W="layout=gluon_wsz,block_l=64,warps=4,block_e=64"
sweep() {
  timeout 150 python3 -m benchmarks cheri_block --mode forward --batch-size 512,64 --n-filters 128 --seq-len 1024 --dtype $2 --providers "$3" --no-csv > $OUT/$1.log 2>&1
  echo "$1 rc=$? t=$((SECONDS-S))"; grep -E '^  greyhound' $OUT/$1.log | sed -E 's/  +/ /g; s/layout=gluon_wsz,block_l=64,warps=4,block_e=64,//; s/ forward batch_size=([0-9]+).*dtype=[a-z0-9]+ / N=\1 /' | cut -c1-120
}
sweep z-bf16 bfloat16 "greyhound-megakernel,greyhound-megakernel[$W,stages=4,ws_x_prefetch=1],greyhound-megakernel[$W,stages=4,ws_x_prefetch=2],greyhound-megakernel[$W,stages=4,ws_conv_smem=1],greyhound-megakernel[$W,stages=4,ws_conv_smem=1,ws_x_prefetch=1],greyhound-megakernel[$W,stages=3]"
sweep z-fp16 float16 "greyhound-megakernel,greyhound-megakernel[$W,stages=4,ws_x_prefetch=1],greyhound-megakernel[$W,stages=4,ws_conv_smem=1],greyhound-megakernel[$W,stages=4,ws_conv_smem=1,ws_x_prefetch=1]"
sweep z-bf16-2 bfloat16 "greyhound-megakernel,greyhound-megakernel[$W,stages=4,ws_x_prefetch=1],greyhound-megakernel[$W,stages=4,ws_conv_smem=1],greyhound-megakernel[$W,stages=4,ws_conv_smem=1,ws_x_prefetch=1]"
# the GPU tests of session 38's other changes: newton_schulz (fp64 normalisation, slices only past the grid's limit)
# and the Cheri training path (the backward's one-launch parameter gradients)
PYTHONPATH=/tmp/site:/tmp/t timeout 130 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE \
  tests/ops/test_newton_schulz.py tests/nn/test_cheri_block.py -k "newton or training_path" > $OUT/pytest-s38.log 2>&1
echo "pytest rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-s38.log | tail -8 | cut -c1-300
PYTHONPATH=/tmp/site:/tmp/t timeout 130 python3 -m pytest -m gpu -q --tb=short -p no:cacheprovider -rfE \
  tests/ops/test_linear_cross_entropy.py tests/ops/test_cross_entropy.py \
  -k "linear or inplace or unchecked or upstream or vocabularies or large_vocab or int32" > $OUT/pytest-ce.log 2>&1
echo "pytest-ce rc=$? t=$((SECONDS-S))"; grep -E "passed|failed|FAILED|Error" $OUT/pytest-ce.log | tail -8 | cut -c1-300
