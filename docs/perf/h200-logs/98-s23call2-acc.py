"""Session 23 diagnostic (accuracy, not timing): max-abs error of the fp32 (bf16x3) megakernel against fp64, per tile,
over fresh seeds, at the fp32-defaults test's shape (2, 128, 1000) and at N=16, L=1024."""
import sys
import torch
sys.path.insert(0, ".")
from tests.nn.test_cheri_block import make_block, fp64_twin, max_abs
import greyhound.ops.cheri_conv_norm as ops

CONFIGS = {"gluon(64,32,4,2)": (64, 32, 4, 2, "gluon"), "gluon(128,64,8,2)": (128, 64, 8, 2, "gluon"),
           "lc(64,32,4,2)": (64, 32, 4, 2, "lc")}
for shape in [(2, 128, 1000), (16, 128, 1024)]:
    stats = {k: [] for k in CONFIGS}
    for seed in range(12):
        torch.manual_seed(seed)
        block = make_block(128, 3, 4, expansion=4, device="cuda")
        x = torch.randn(*shape, device="cuda")
        ref = fp64_twin(block).reference_forward(x.double()).detach()
        params = block._params()
        with torch.no_grad():
            for name, cfg in CONFIGS.items():
                out = ops.cheri_block_megakernel(x, *params, dilation=4, config=cfg)
                err = (out.double() - ref).abs()
                stats[name].append((err.max().item(), (err > 1e-5).sum().item(), ref.abs().max().item()))
    for name, s in stats.items():
        worst = max(e for e, _, _ in s)
        fails = sum(e >= 1e-5 for e, _, _ in s)
        print(f"{shape} {name:20s} max over seeds {worst:.3e}  seeds >= 1e-5: {fails}/12  "
              f"per seed: {' '.join(f'{e:.2e}/{n}' for e, n, _ in s)}")
