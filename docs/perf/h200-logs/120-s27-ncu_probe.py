"""Session 27 diagnosis (not a timing): one bf16 Cheri megakernel variant at N=512 launched 3 times, for ncu.
argv[1]: "default" or tuning options k=v,k=v (greyhound.ops.cheri_conv_norm's tunables)."""
import sys
import torch
from greyhound import CheriBlock, _tuning
import greyhound.ops.cheri_conv_norm as ops
variant = sys.argv[1] if len(sys.argv) > 1 else "default"
options = {} if variant == "default" else dict(kv.split("=") for kv in variant.split(","))
torch.manual_seed(0)
block = CheriBlock(128, 3, 4, 4, device="cuda").to(torch.bfloat16).eval()
x = torch.randn(512, 128, 1024, device="cuda", dtype=torch.bfloat16)
with torch.no_grad(), _tuning.override(ops.TUNING_OP, **options):
    for _ in range(3):
        block(x)
    torch.cuda.synchronize()
print("ok", variant)
