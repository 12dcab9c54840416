# host-time diagnosis (not a reported figure): where a full call's host time goes at a GPU-trivial shape
import cProfile, pstats, time, sys, torch
from greyhound import causal_conv1d
B, D, L, W = 8, 4096, 512, 4
x = torch.randn(B, L, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
w = torch.randn(D, W, device="cuda", dtype=torch.bfloat16).requires_grad_()
b = torch.randn(D, device="cuda", dtype=torch.bfloat16).requires_grad_()
g = torch.randn_like(x)
def full():
    out = causal_conv1d(x, w, b, activation="silu"); torch.autograd.backward([out], [g])
def fwd():
    with torch.no_grad(): causal_conv1d(x, w, b, activation="silu")
def fla_full():
    from fla.modules.convolution import causal_conv1d as fc
    out = fc(x.transpose(1, 2), w, b, activation="silu")[0]; torch.autograd.backward([out], [g.transpose(1, 2)])
for name, f in (("fwd", fwd), ("full", full), ("fla_full", fla_full)):
    try:
        for _ in range(50): f()
        torch.cuda.synchronize(); n = 300; t = time.perf_counter()
        for _ in range(n): f()
        host = (time.perf_counter() - t) / n; torch.cuda.synchronize(); total = (time.perf_counter() - t) / n
        print(f"{name}: host {host*1e6:.0f} us/call, with sync {total*1e6:.0f} us/call", flush=True)
    except Exception as e:
        print(name, "failed", e)
pr = cProfile.Profile(); pr.enable()
for _ in range(300): full()
pr.disable(); torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
