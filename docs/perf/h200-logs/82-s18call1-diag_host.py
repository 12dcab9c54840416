"""Diagnosis (not a benchmark figure): host time and device time of one CheriBlock call at small N, per path.
usage: python diag_host.py ROOT LABEL OUTDIR  (ROOT: a checkout whose greyhound is imported)"""
import cProfile, gc, io, pstats, sys, time, warnings
root, label, outdir = sys.argv[1:4]
quick = len(sys.argv) > 4  # bisect points: two cells, no profiles
sys.path.insert(0, root)
import torch
from greyhound import CheriBlock

DT = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

def make(n, dtype):
    torch.manual_seed(0)
    block = CheriBlock(128, 3, 4, 4, device="cuda").to(DT[dtype])
    x = torch.randn(n, 128, 1024, device="cuda", dtype=DT[dtype])
    return block, x

def caller(block, x, mode):
    if mode == "train":
        block.train()
        def f():
            with torch.enable_grad():
                return block(x)
    elif mode == "noeval":
        block.train()
        def f():
            with torch.no_grad():
                return block(x)
    else:
        block.eval()
        def f():
            with torch.no_grad():
                return block(x)
    return f

def host_us(f, n=300):
    for _ in range(30):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6

def device_us(f, n=40):
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    torch.cuda._sleep(200_000_000)  # ~100 ms head start: the host is never the bound here
    for s, e in zip(starts, ends):
        s.record(); f(); e.record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))
    return t[len(t) // 2]

print(f"== {label}: torch {torch.__version__}")
cells = [(16, "float32"), (64, "bfloat16")] if quick else [(n, d) for n in (16, 64) for d in DT]
for n, dtype in cells:
        block, x = make(n, dtype)
        for mode in (("train", "noeval") if quick else ("train", "noeval", "eval")):
            f = caller(block, x, mode)
            h = host_us(f)
            gc.disable(); h_nogc = host_us(f); gc.enable()
            d = device_us(f)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                torch.cuda.set_sync_debug_mode("warn")
                f()
                torch.cuda.set_sync_debug_mode(0)
            syncs = len([m for m in w if "synchron" in str(m.message).lower()])
            print(f"{label} N={n:3d} {dtype:9s} {mode:6s} host {h:7.1f} us (gc off {h_nogc:7.1f})  device {d:7.1f} us  syncs {syncs}")
        del block, x
        torch.cuda.empty_cache()

for n, dtype in (() if quick else ((16, "float32"), (64, "bfloat16"))):
    block, x = make(n, dtype)
    f = caller(block, x, "train")
    host_us(f, 50)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(200):
        f()
    prof.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(18)
    print(f"---- cProfile {label} train N={n} {dtype}, 200 calls (tottime)\n" + s.getvalue()[-6000:])
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(10):
            f()
        torch.cuda.synchronize()
    print(f"---- torch.profiler {label} train N={n} {dtype}, 10 calls")
    print(p.key_averages().table(sort_by="cpu_time_total", row_limit=22, max_name_column_width=60))
    p.export_chrome_trace(f"{outdir}/trace-{label}-train-N{n}-{dtype}.json")
