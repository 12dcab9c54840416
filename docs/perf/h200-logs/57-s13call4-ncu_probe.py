"""Session 13 diagnosis (not a timing): one Cheri megakernel launch per variant at N=512 bf16, for ncu to profile."""
import sys
import torch
from greyhound import _tuning
import greyhound.ops.cheri_conv_norm as ops
from greyhound import CheriBlock

variant = sys.argv[1]
options = {} if variant == "default" else dict(kv.split("=") for kv in variant.split(","))
options = {k: (v if k == "layout" else int(v)) for k, v in options.items()}
torch.manual_seed(0)
block = CheriBlock(128, 3, 4, 4, device="cuda").to(torch.bfloat16).eval()
x = torch.randn(512, 128, 1024, device="cuda", dtype=torch.bfloat16)
with torch.no_grad(), _tuning.override(ops.TUNING_OP, **options):
    for _ in range(3):
        block(x)
    torch.cuda.synchronize()
print("ok", variant)
