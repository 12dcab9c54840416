# diagnosis (not a reported figure): GPU kernel breakdown of the linear CE forward (vocab schedule) at the LM-head shape
import torch
from torch.profiler import profile, ProfilerActivity
from greyhound import chunked_linear_cross_entropy, _tuning
torch.manual_seed(0)
BT, H, V = 8192, 4096, 128256
x = (torch.randn(BT, H, device="cuda") * 0.5).bfloat16()
w = (torch.randn(V, H, device="cuda") * 0.02).bfloat16()
t = torch.randint(0, V, (BT,), device="cuda")
for name, over in (("default (4064)", {}), ("vocab_chunk=4096", {"vocab_chunk": 4096})):
    with _tuning.override("chunked_linear_cross_entropy", **over), torch.no_grad():
        for _ in range(3): chunked_linear_cross_entropy(x, w, t, check_target=False)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5): chunked_linear_cross_entropy(x, w, t, check_target=False)
            torch.cuda.synchronize()
    print(f"==== {name} (5 calls)")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=6, max_name_column_width=70))
    ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    ev.sort(key=lambda e: e.time_range.start)
    span = (ev[-1].time_range.end - ev[0].time_range.start) / 5
    busy = sum(e.time_range.end - e.time_range.start for e in ev) / 5
    print(f"per call: first-to-last kernel span {span/1e3:.3f} ms, kernel time {busy/1e3:.3f} ms, gaps {(span-busy)/1e3:.3f} ms")
