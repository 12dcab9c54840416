# host-time diagnosis (not a reported figure): where a full call's host time goes, B=8 D=4096 L=2048 W=4 bf16 channel-last
import cProfile, pstats, time, torch, triton, triton.language as tl
from greyhound import causal_conv1d
from greyhound.ops import causal_conv1d as ops
B, D, L, W = 8, 4096, 2048, 4
x = torch.randn(B, L, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
w = torch.randn(D, W, device="cuda", dtype=torch.bfloat16).requires_grad_()
b = torch.randn(D, device="cuda", dtype=torch.bfloat16).requires_grad_()
g = torch.randn_like(x)
leaves = (x, w, b)
@triton.jit
def _empty(p, n, a, c, d, e, f, h, i, j, k, l, m, o, q, r, s, t, u, v, BLOCK: tl.constexpr):
    pass
part = torch.randn(B * 16, D, W, device="cuda")
class Nop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, bb, cc):
        return torch.empty_like(a)
    @staticmethod
    def backward(ctx, go):
        return torch.empty_like(go), None, None
def clear():
    for t in leaves: t.grad = None
cases = {
    "fwd (no grad)": lambda: causal_conv1d(x.detach(), w.detach(), b.detach(), activation="silu"),
    "full": lambda: (clear(), torch.autograd.backward([causal_conv1d(x, w, b, activation="silu")], [g])),
    "fwd with graph": lambda: causal_conv1d(x, w, b, activation="silu"),
    "launch_walk_backward": lambda: ops._launch_backward(x, w, b, None, None, g, True, 1, (True, True, True, False)),
    "launch_forward": lambda: ops._launch_forward(x, w, b, None, None, True, 1),
    "empty triton launch (20 args)": lambda: _empty[(64, 8, 16)](x, *range(19), BLOCK=16),
    "partial.sum(0).to(bf16) x2": lambda: (part.sum(0).to(torch.bfloat16), part[:, :, 0].sum(0).to(torch.bfloat16)),
    "autograd Nop full": lambda: (clear(), torch.autograd.backward([Nop.apply(x, w, b)], [g])),
    "empty_like x3": lambda: (torch.empty_like(x), torch.empty(B * 16, D, W, device="cuda"), torch.empty(B * 16, D, device="cuda")),
}
for name, f in cases.items():
    for _ in range(30): f()
    torch.cuda.synchronize(); n = 200; t = time.perf_counter()
    for _ in range(n): f()
    host = (time.perf_counter() - t) / n; torch.cuda.synchronize(); total = (time.perf_counter() - t) / n
    print(f"{name:32s} host {host*1e6:7.1f} us/call, with sync {total*1e6:7.1f} us/call", flush=True)
pr = cProfile.Profile(); pr.enable()
for _ in range(200): cases["full"]()
pr.disable(); torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("cumtime").print_stats(35)
