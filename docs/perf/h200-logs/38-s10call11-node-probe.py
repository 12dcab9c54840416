# diagnosis: host time of the pieces of a causal_conv1d full call (B=8 D=4096 L=2048 W=4 bf16 channel-last)
import time, torch
from greyhound import causal_conv1d
B, D, L, W = 8, 4096, 2048, 4
x = torch.randn(B, L, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
w = torch.randn(D, W, device="cuda", dtype=torch.bfloat16).requires_grad_()
b = torch.randn(D, device="cuda", dtype=torch.bfloat16).requires_grad_()
g = torch.randn_like(x)
def timed(name, f, n=100):
    for _ in range(10): f()
    torch.cuda.synchronize(); per = []
    for _ in range(n):
        torch.cuda.synchronize(); t = time.perf_counter(); f(); per.append(time.perf_counter() - t)
    per.sort(); print(f"{name:45s} host p50 {per[n//2]*1e6:7.1f} us (synchronised before each call)", flush=True)
out = causal_conv1d(x, w, b, activation="silu")
node = out.grad_fn
print(type(node).__name__)
timed("grad_fn.apply(g) directly (no engine)", lambda: node.apply(g))
timed("autograd.grad(out, (x, w, b), g, retain)", lambda: torch.autograd.grad([out], [x, w, b], [g], retain_graph=True))
timed("autograd.backward(out, g, retain)", lambda: torch.autograd.backward([out], [g], retain_graph=True))
timed("forward with graph", lambda: causal_conv1d(x, w, b, activation="silu"))
def full():
    for t in (x, w, b): t.grad = None
    torch.autograd.backward([causal_conv1d(x, w, b, activation="silu")], [g])
timed("full", full)
def full_grad():
    torch.autograd.grad([causal_conv1d(x, w, b, activation="silu")], [x, w, b], [g])
timed("forward + autograd.grad", full_grad)
