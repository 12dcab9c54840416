"""Session 23 (CPU, fp64, run from the repository root): max-abs error of the bf16x3 split itself (hi + lo bf16
parts, the lo*lo product dropped, exact accumulation) at the fp32-defaults test's shape, per GEMM and both."""
import torch, sys
sys.path.insert(0, ".")
from tests.nn.test_cheri_block import make_block, fp64_twin
from greyhound.ops.cheri_conv_norm import conv_norm_reference
import torch.nn.functional as F
def split(t):
    hi = t.to(torch.bfloat16).double(); lo = (t - hi).to(torch.bfloat16).double(); return hi, lo
def x3(a, w):  # a @ w.T with bf16x3, exact accumulation
    ah, al = split(a); wh, wl = split(w)
    return ah @ wh.T + ah @ wl.T + al @ wh.T
for seed in range(3):
    torch.manual_seed(seed)
    b = make_block(128, 3, 4, expansion=4)
    x = torch.randn(2, 128, 1000)
    p = [t.double() for t in b._params()]
    xd = x.double()
    z = conv_norm_reference(xd, *p[:4], dilation=4, eps=1e-5)
    z = z if z.shape[-1] == 128 else z.transpose(1, 2)
    zf = z.float().double()  # fp32-rounded z
    W1, b1, W2, b2 = p[4:]
    exact = F.gelu(z @ W1.T + b1) @ W2.T + b2
    pre3 = x3(zf, W1) + b1
    h3 = F.gelu(pre3)
    h3f = h3.float().double()
    out3 = x3(h3f, W2) + b2
    pre_only = F.gelu(pre3) @ W2.T + b2
    print(seed, "z shape", tuple(z.shape), "split both GEMMs: %.2e" % (out3 - exact).abs().max().item(),
          "split GEMM1 only: %.2e" % (pre_only - exact).abs().max().item(),
          "split GEMM2 only: %.2e" % (x3(F.gelu(z @ W1.T + b1).float().double(), W2) + b2 - exact).abs().max().item(),
          "|mlp| max %.2f" % exact.abs().max().item())
