"""Session 21 diagnosis of the Gluon bf16x3 failures (log 88): per shape x config, the errors and where they sit."""
import sys, traceback
import torch
sys.path.insert(0, "tests/nn"); sys.path.insert(0, ".")
from test_cheri_block import make_block, fp64_twin, max_abs
from greyhound.ops import cheri_conv_norm as ops

torch.manual_seed(0)
shapes = [(128, 4, 3, 4, 1024), (64, 2, 2, 3, 1000), (32, 6, 4, 1, 333), (16, 4, 3, 2, 700)]
configs = [(64, 32, 4, 2), (64, 64, 4, 2), (128, 32, 8, 3), (64, 16, 4, 4), (64, 32, 4, 3), (128, 64, 8, 2)]
for (C, exp, K, dil, L) in shapes:
    block = make_block(C, K, dil, expansion=exp, device="cuda")
    x = torch.randn(3, C, L, device="cuda")
    ref = fp64_twin(block).reference_forward(x.double())
    params = block._params()
    with torch.no_grad():
        tri = ops.cheri_block_megakernel(x, *params, dilation=dil, config=(64, 32, 4, 2, "lc"))
        tri1 = ops.cheri_block_megakernel(x, *params, dilation=dil, config=(64, 32, 4, 2, "lc"), fp32_dot="bf16")
    print(f"shape C={C} E={C*exp} K={K} d={dil} L={L}: triton bf16x3 err {max_abs(tri, ref):.3g}", flush=True)
    for cfg in configs:
        if (C * exp) % cfg[1]:
            continue
        try:
            with torch.no_grad():
                g = ops.cheri_block_megakernel(x, *params, dilation=dil, config=cfg + ("gluon",))
                g2 = ops.cheri_block_megakernel(x, *params, dilation=dil, config=cfg + ("gluon",))
                g1 = ops.cheri_block_megakernel(x, *params, dilation=dil, config=cfg + ("gluon",), fp32_dot="bf16")
            torch.cuda.synchronize()
        except Exception as e:
            print(f"  {cfg}: EXCEPTION {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        d = (g.double() - ref).abs()
        bad = d > 1e-5
        n, c, l = [int(v) for v in torch.nonzero(d == d.max())[0]]
        by_row = d.amax(dim=(0, 1)).view(-1)
        per_tile = torch.nn.functional.pad(by_row, (0, (-L) % cfg[0])).view(-1, cfg[0])
        print(f"  {cfg}: err {d.max().item():.3g} (vs triton {max_abs(g, tri):.3g}), bad frac {bad.float().mean().item():.3g}, "
              f"deterministic {torch.equal(g, g2)}, max at n{n} c{c} l{l} (l%BL={l % cfg[0]}), "
              f"rows by l%BL max {per_tile.amax(0).view(-1, 16).amax(1).tolist()}, tiles>1e-5 {int((per_tile.amax(1) > 1e-5).sum())}/{per_tile.shape[0]}; "
              f"one-pass gluon vs triton {max_abs(g1, tri1):.3g}, vs ref {max_abs(g1, ref):.3g}", flush=True)
    for cfg in [(64, 32, 4, 2), (128, 32, 8, 2)]:
        if (C * exp) % cfg[1] or C < 32:
            continue
        try:
            w = ops.prepare_mlp_weights(block.fc1.weight, block.fc2.weight, training=True)
            args = (x, block.conv.weight, block.conv.bias, block.norm.weight, block.norm.bias, block.fc1.bias,
                    block.fc2.bias, w, dil, block.norm.eps)
            with torch.no_grad():
                gt = ops.run_fused(*args, training=True, config=cfg + ("gluon",))
                tt = ops.run_fused(*args, training=True, config=(64, 32, 4, 2, "lc"))
            print(f"  train {cfg}: out {max_abs(gt[0], tt[0]):.3g} (ref {max_abs(gt[0], ref):.3g}) hidden {max_abs(gt[1], tt[1]):.3g} "
                  f"mean {max_abs(gt[2], tt[2]):.3g} rstd {max_abs(gt[3], tt[3]):.3g}", flush=True)
        except Exception as e:
            print(f"  train {cfg}: EXCEPTION {type(e).__name__}: {str(e)[:300]}", flush=True)
