# diagnosis (not a reported figure): GPU kernel time breakdown of one linear CE full call and one CE full call
import torch
from torch.profiler import profile, ProfilerActivity
from greyhound import chunked_linear_cross_entropy, cross_entropy_with_grad, _tuning
torch.manual_seed(0)
BT, H, V = 8192, 4096, 128256
x = (torch.randn(BT, H, device="cuda") * 0.5).bfloat16().requires_grad_()
w = (torch.randn(V, H, device="cuda") * 0.02).bfloat16().requires_grad_()
t = torch.randint(0, V, (BT,), device="cuda")
def lce(**kw):
    chunked_linear_cross_entropy(x, w, t, check_target=False, **kw).backward()
    x.grad = None; w.grad = None
logits = (torch.randn(BT, V, device="cuda") * 3).bfloat16().requires_grad_()
def ce():
    cross_entropy_with_grad(logits, t, check_target=False).backward(); logits.grad = None
for name, fn, over in (("lce default", lce, {}), ("lce chunk8192", lambda: lce(chunk_size=8192), {}),
                       ("ce two-kernel", ce, {}), ("ce one-pass", ce, {"one_pass": True})):
    with _tuning.override("cross_entropy_with_grad", **over):
        for _ in range(3): fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3): fn()
            torch.cuda.synchronize()
    print(f"==== {name} (3 calls)")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=70))
