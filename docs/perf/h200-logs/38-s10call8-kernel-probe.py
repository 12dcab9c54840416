# diagnosis: the GPU kernels of one causal_conv1d full call (B=8 D=4096 L=2048 W=4 bf16 channel-last), torch.profiler
import torch
from torch.profiler import profile, ProfilerActivity
from greyhound import causal_conv1d
B, D, L, W = 8, 4096, 2048, 4
x = torch.randn(B, L, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
w = torch.randn(D, W, device="cuda", dtype=torch.bfloat16).requires_grad_()
b = torch.randn(D, device="cuda", dtype=torch.bfloat16).requires_grad_()
g = torch.randn_like(x)
def full():
    for t in (x, w, b): t.grad = None
    torch.autograd.backward([causal_conv1d(x, w, b, activation="silu")], [g])
for _ in range(20): full()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(10): full()
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15, max_name_column_width=60))
print("x.grad strides", x.grad.stride(), "x strides", x.stride())
