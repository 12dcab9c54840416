# diagnosis: does a causal_conv1d full call synchronise with the GPU, and where (B=8 D=4096 L=2048 W=4 bf16 channel-last)
import time, traceback, warnings, torch
from greyhound import causal_conv1d
B, D, L, W = 8, 4096, 2048, 4
x = torch.randn(B, L, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
w = torch.randn(D, W, device="cuda", dtype=torch.bfloat16).requires_grad_()
b = torch.randn(D, device="cuda", dtype=torch.bfloat16).requires_grad_()
g = torch.randn_like(x)
def clear():
    for t in (x, w, b): t.grad = None
def full():
    clear(); torch.autograd.backward([causal_conv1d(x, w, b, activation="silu")], [g])
for _ in range(20): full()
torch.cuda.synchronize()
torch.cuda.set_sync_debug_mode("warn")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    full(); full()
    torch.cuda.synchronize()
torch.cuda.set_sync_debug_mode(0)
print(len(caught), "sync warnings")
for c in caught[:6]:
    print(c.filename, c.lineno, str(c.message)[:200])
def timed(name, f, n=200):
    for _ in range(20): f()
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n): f()
    host = (time.perf_counter() - t) / n; torch.cuda.synchronize(); total = (time.perf_counter() - t) / n
    print(f"{name:40s} host {host*1e6:7.1f} us/call, with sync {total*1e6:7.1f} us/call", flush=True)
timed("full", full)
timed("forward with graph", lambda: causal_conv1d(x, w, b, activation="silu"))
def acc():
    torch.autograd.backward([causal_conv1d(x, w, b, activation="silu")], [g])
timed("full, grads accumulating", acc)
out = causal_conv1d(x, w, b, activation="silu")
timed("backward only (retain_graph)", lambda: (clear(), torch.autograd.backward([out], [g], retain_graph=True)))
print(torch.cuda.memory_stats()["num_alloc_retries"], "alloc retries;", torch.cuda.memory_stats()["num_device_alloc"], "device allocs")
