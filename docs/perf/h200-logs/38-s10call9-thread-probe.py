# diagnosis: host time of the walk backward's launch on the main thread vs another thread (autograd runs CUDA backward
# on its own device thread), B=8 D=4096 L=2048 W=4 bf16 channel-last
import threading, time, torch
from greyhound.ops import causal_conv1d as ops
B, D, L, W = 8, 4096, 2048, 4
x = torch.randn(B, L, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
w = torch.randn(D, W, device="cuda", dtype=torch.bfloat16)
b = torch.randn(D, device="cuda", dtype=torch.bfloat16)
g = torch.randn_like(x)
f = lambda: ops._launch_backward(x, w, b, None, None, g, True, 1, (True, True, True, False))
def timed(name, n=100):
    for _ in range(10): f()
    torch.cuda.synchronize(); per = []
    for _ in range(n):
        t = time.perf_counter(); f(); per.append(time.perf_counter() - t); torch.cuda.synchronize()
    per.sort(); print(f"{name:30s} host p50 {per[n//2]*1e6:7.1f} us, p90 {per[int(n*.9)]*1e6:7.1f} us", flush=True)
timed("main thread")
th = threading.Thread(target=timed, args=("other thread",)); th.start(); th.join()
import cProfile, pstats
def other():
    pr = cProfile.Profile(); pr.enable()
    for _ in range(50): f(); torch.cuda.synchronize()
    pr.disable(); pstats.Stats(pr).sort_stats("tottime").print_stats(12)
th = threading.Thread(target=other); th.start(); th.join()
