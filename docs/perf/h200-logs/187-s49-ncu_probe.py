"""Session 49 diagnosis (not a timing): the Cheri megakernel's default at N=512, C=128, L=1024, K=3, dilation 4, in
argv[1]'s dtype (bfloat16 or float16), launched 3 times for ncu (120-s27-ncu_probe.py, with a dtype)."""
import sys
import torch
from greyhound import CheriBlock
dtype = getattr(torch, sys.argv[1])
torch.manual_seed(0)
block = CheriBlock(128, 3, 4, 4, device="cuda").to(dtype).eval()
x = torch.randn(512, 128, 1024, device="cuda", dtype=dtype)
with torch.no_grad():
    for _ in range(3):
        block(x)
    torch.cuda.synchronize()
print("ok", sys.argv[1])
