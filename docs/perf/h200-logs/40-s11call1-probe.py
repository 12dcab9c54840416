# diagnosis (not a reported figure): where a causal_conv1d full call's time goes when calls run back to back,
# B=8 D=4096 L=2048 W=4 bf16 channel-last. Phase stamps per call, then torch.profiler (CPU ops, CUDA runtime calls,
# GPU kernels) over 30 back-to-back calls.
import gc, json, os, sys, time, collections
import torch
from greyhound import causal_conv1d

OUT = os.environ.get("OUT", "/tmp")
B, D, L, W = 8, 4096, 2048, 4
x = torch.randn(B, L, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
w = (torch.randn(D, W, device="cuda", dtype=torch.bfloat16) / 2).requires_grad_()
b = torch.randn(D, device="cuda", dtype=torch.bfloat16).requires_grad_()
g = torch.randn_like(x)
leaves = (x, w, b)


def clear():
    for t in leaves:
        t.grad = None


def full():
    clear()
    torch.autograd.backward([causal_conv1d(x, w, b, activation="silu")], [g])


def full_keep():  # grads accumulate (no clear)
    torch.autograd.backward([causal_conv1d(x, w, b, activation="silu")], [g])


def full_grad():  # autograd.grad: no AccumulateGrad
    torch.autograd.grad([causal_conv1d(x, w, b, activation="silu")], [x, w, b], [g])


def loop(name, f, n=300):
    for _ in range(30):
        f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        f()
    host = (time.perf_counter() - t) / n
    torch.cuda.synchronize()
    total = (time.perf_counter() - t) / n
    print(f"{name:40s} host {host * 1e6:7.1f} us/call, with sync {total * 1e6:7.1f}", flush=True)


loop("full (clear grads)", full)
loop("full, grads accumulate", full_keep)
loop("forward + autograd.grad", full_grad)
gc.disable()
loop("full, gc disabled", full)
gc.enable()

# phase stamps, back to back
stamps = []
for i in range(330):
    t0 = time.perf_counter()
    clear()
    t1 = time.perf_counter()
    out = causal_conv1d(x, w, b, activation="silu")
    t2 = time.perf_counter()
    torch.autograd.backward([out], [g])
    t3 = time.perf_counter()
    del out
    t4 = time.perf_counter()
    if i >= 30:
        stamps.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3))
torch.cuda.synchronize()
med = [sorted(s[k] for s in stamps)[len(stamps) // 2] * 1e6 for k in range(4)]
mean = [sum(s[k] for s in stamps) / len(stamps) * 1e6 for k in range(4)]
print("phases (clear, forward, backward, del out) p50 us:", " ".join(f"{v:.1f}" for v in med))
print("phases mean us:", " ".join(f"{v:.1f}" for v in mean), flush=True)

print("allocator:", {k: v for k, v in torch.cuda.memory_stats().items()
                     if k in ("num_alloc_retries", "num_device_alloc", "num_device_free", "num_sync_all_streams")})

from torch.profiler import profile, ProfilerActivity
for _ in range(20):
    full()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(30):
        full()
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40), flush=True)
prof.export_chrome_trace(os.path.join(OUT, "s11-full-trace.json"))
# GPU busy vs wall over the 30 calls
events = json.load(open(os.path.join(OUT, "s11-full-trace.json")))["traceEvents"]
kern = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
kern.sort(key=lambda e: e["ts"])
if kern:
    span = kern[-1]["ts"] + kern[-1]["dur"] - kern[0]["ts"]
    busy = sum(e["dur"] for e in kern)
    print(f"GPU: {len(kern)} ops, busy {busy / 30:.1f} us/call over a span of {span / 30:.1f} us/call")
    names = collections.Counter()
    for e in kern:
        names[e["name"][:60]] += e["dur"]
    for n_, d in names.most_common(10):
        print(f"  {d / 30:8.1f} us/call  {n_}")
rt = collections.Counter()
cnt = collections.Counter()
for e in events:
    if e.get("cat") == "cuda_runtime" or e.get("cat") == "cuda_driver":
        rt[e["name"]] += e.get("dur", 0)
        cnt[e["name"]] += 1
print("CUDA runtime/driver calls per full call (count, us):")
for n_, d in rt.most_common(20):
    print(f"  {cnt[n_] / 30:5.1f} x {d / 30:8.1f} us  {n_}")
threads = collections.Counter()
for e in events:
    if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "python_function", "user_annotation"):
        threads[e.get("tid")] += 1
print("cpu events by thread:", dict(threads))
